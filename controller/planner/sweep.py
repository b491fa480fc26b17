"""Time to consensus per family across aggregator memory sizes, and where the winner changes.

Only `inna` uses aggregator memory: the other networks (`plain`, `multicast`) are planned once,
as baselines, and the sweep says from which memory `inna`'s fastest family beats the fastest
over a plain WAN.

With a jitter margin (`margin.Band`) every memory point is planned again at the band's other
jitters, and each point says whether one family is fastest across the band (`Sweep.choices`).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from controller.planner.cost import CostParams
from controller.planner.exceptions import PlanError
from controller.planner.margin import Band, Choice, plans_choice
from controller.planner.optimise import DEFAULT_EPSILON, Plan, Planner
from innet.vocabulary import NetworkMode

# Each point is a full plan (tens of ms for nine cities, more for 32): 256 log-spaced points
# already resolve a 1MB..8GB sweep to 7% steps, and bound the sweep to seconds, not hours.
MAX_SWEEP_POINTS = 256


@dataclass(frozen=True)
class Crossover:
    """Between two neighbouring memory points the best family changes."""

    memory_bytes: float  # refined by bisection
    below: str  # best family under it
    above: str  # best family over it


@dataclass(frozen=True)
class Sweep:
    plans: tuple[Plan, ...]  # inna, one per memory point
    crossovers: tuple[Crossover, ...]
    baselines: tuple[Plan, ...] = ()  # the networks that use no memory, planned once
    # the memory from which inna's fastest is faster than plain's fastest (None: never, or
    # already at the lowest point: see `beats_plain_everywhere`); refined by bisection
    inna_beats_plain_bytes: float | None = None
    # per memory point, what the jitter band allows (empty: not asked, see `with_choices`)
    choices: tuple[Choice, ...] = ()

    def baseline(self, network: NetworkMode) -> Plan | None:
        return next((p for p in self.baselines if p.params.network == network), None)

    @property
    def beats_plain_everywhere(self) -> bool:
        plain = self.baseline(NetworkMode.PLAIN)
        return plain is not None and self.plans[0].best.time_s < plain.best.time_s

    @property
    def families(self) -> tuple[str, ...]:
        return tuple(f.family for f in self.plans[0].families)


def memory_points(low: int, high: int, points: int) -> list[int]:
    """Log-spaced memory sizes from low to high, both included (at most MAX_SWEEP_POINTS)."""
    if points > MAX_SWEEP_POINTS:
        raise PlanError(
            f"{points} memory points: a sweep takes at most {MAX_SWEEP_POINTS} (each is a full "
            "plan); narrow the memory range instead"
        )
    if points < 2 or low == high:
        return [low]
    ratio = (high / low) ** (1 / (points - 1))
    return [round(low * ratio**i) for i in range(points - 1)] + [high]


def sweep(
    planner: Planner,
    base: CostParams,
    memories: Sequence[int],
    epsilon: float = DEFAULT_EPSILON,
    families: Sequence[str] | None = None,
    refine_steps: int = 12,
    baselines: Sequence[NetworkMode] = (NetworkMode.PLAIN, NetworkMode.MULTICAST),
    progress: Callable[[int, int], None] | None = None,
) -> Sweep:
    """Plan at every memory point (`progress(done, total)` after each), then the baselines,
    then refine where the best family changes."""
    base = replace(base, network=NetworkMode.INNA)
    plans_made = []
    for done, m in enumerate(memories, 1):
        plans_made.append(planner.plan(replace(base, memory_bytes=m), epsilon, families))
        if progress is not None:
            progress(done, len(memories))
    plans = tuple(plans_made)
    others = tuple(planner.plan(replace(base, network=n), epsilon, families) for n in baselines)
    crossovers = []
    for lo, hi in itertools.pairwise(plans):
        below, above = lo.best.family, hi.best.family
        if below == above:
            continue
        a, b = lo.params.memory_bytes, hi.params.memory_bytes
        for _ in range(refine_steps):  # geometric bisection, only the two families involved
            mid = round((a * b) ** 0.5)
            if mid in (a, b):
                break
            if (
                planner.plan(replace(base, memory_bytes=mid), epsilon, [below, above]).best.family
                == below
            ):
                a = mid
            else:
                b = mid
        crossovers.append(Crossover((a * b) ** 0.5, below, above))
    result = Sweep(plans, tuple(crossovers), others)
    plain = result.baseline(NetworkMode.PLAIN)
    if plain is None or result.beats_plain_everywhere:
        return result
    target = plain.best.time_s
    for lo, hi in itertools.pairwise(plans):
        if lo.best.time_s >= target > hi.best.time_s:
            a, b = lo.params.memory_bytes, hi.params.memory_bytes
            for _ in range(refine_steps):
                mid = round((a * b) ** 0.5)
                if mid in (a, b):
                    break
                if (
                    planner.plan(replace(base, memory_bytes=mid), epsilon, families).best.time_s
                    < target
                ):
                    b = mid
                else:
                    a = mid
            return replace(result, inna_beats_plain_bytes=(a * b) ** 0.5)
    return result


def with_choices(
    result: Sweep,
    planners: Sequence[Planner],
    band: Band,
    progress: Callable[[int, int], None] | None = None,
) -> Sweep:
    """The sweep with a choice per memory point: `planners` plan on the WAN at each of the
    band's shifts, in order (the one at shift 0 made `result`, whose plans are reused)."""
    if len(planners) != len(band.shifts):
        raise PlanError(f"{len(planners)} planners for a band of {len(band.shifts)} points")
    centre = band.shifts.index(0.0)
    choices = []
    for done, plan in enumerate(result.plans, 1):
        names = [f.family for f in plan.families]
        points = [
            [plan] if k == centre else [planner.plan(plan.params, plan.epsilon, names)]
            for k, planner in enumerate(planners)
        ]
        choices.append(plans_choice(points, band))
        if progress is not None:
            progress(done, len(result.plans))
    return replace(result, choices=tuple(choices))
