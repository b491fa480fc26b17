"""Check the cost model against the discrete-event simulator, round by round."""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from controller.planner.cost import CostModel, RoundCost
from controller.planner.exceptions import PlanError
from controller.planner.optimise import FamilyPlan
from controller.planner.simulate import MAX_EVENTS, SimResult, simulate_round

MIN_SLOTS = 16  # memory must hold this many simulated chunks for the check to resolve skew
MAX_SIM_EVENTS = 4 * MAX_EVENTS  # what one `innet plan simulate` may spend, all families
MAX_CHUNKS = 20_000  # chunks simulated per stream, at most (the update is scaled down to fit)


@dataclass(frozen=True)
class RoundCheck:
    index: int
    update_bytes: int  # what was simulated (scaled down when chunks would be too many)
    model: RoundCost
    sim: SimResult

    @property
    def time_error(self) -> float:
        """(simulated - model) / model."""
        return (self.sim.time_s - self.model.time_s) / self.model.time_s


def check_family(
    model: CostModel,
    fam: FamilyPlan,
    chunks: int,
    rate_factor: float = 1.0,
    max_chunks: int = MAX_CHUNKS,
    max_events: int = MAX_SIM_EVENTS,
    seed: int = 0,
) -> tuple[RoundCheck, ...]:
    """Simulate each distinct round the family plays on its way to consensus (the cycle repeats
    after its last round) and pair it with the model's cost.

    Chunks must be small beside the memory (at least MIN_SLOTS fit), so the chunk is the smaller
    of update/chunks and memory/MIN_SLOTS; if that makes more than max_chunks chunks, the update
    is scaled down (the model's rates do not depend on the update size) and both sides are
    evaluated at the scaled size. The rounds share `max_events` simulated events (each at most
    simulate.MAX_EVENTS); PlanError names the budget when they would need more. The WAN's
    jitter, if any, is drawn from `seed` (round t from seed + t).
    """
    p = model.params
    chunk = max(1, min(math.ceil(p.update_bytes / chunks), p.memory_bytes // MIN_SLOTS))
    update = min(p.update_bytes, chunk * max_chunks)
    scaled = model.with_params(replace(model.params, update_bytes=update, slot_bytes=chunk))
    checks, given = [], max_events
    for t in range(min(fam.rounds or len(fam.costs), len(fam.costs))):
        cost = scaled.round_cost(fam.costs[t].round)
        if all(len(g.members) < 2 for g in cost.groups):
            continue
        if max_events <= 0:
            raise PlanError(
                f"the simulations used their budget of {given:,} events before round "
                f"{t + 1} of {fam.family}; lower --chunks or --rate-factor, or pick families "
                "with --family"
            )
        budget = min(max_events, MAX_EVENTS)
        sim = simulate_round(
            model.wan, cost, scaled.params, chunk, rate_factor, budget, seed=seed + t
        )
        max_events -= sim.events
        checks.append(RoundCheck(t, update, cost, sim))
    return tuple(checks)
