"""A scenario resolved once, at the emulation's scale: what `innet run` builds, sends and expects.

    >>> from controller.runner.scenario import load_scenario
    >>> from innet.paths import SCENARIOS
    >>> emulation = resolve(load_scenario(SCENARIOS / "nine-cities.yaml"))
    >>> print(emulation.points[0].pool)
    25.6 MB (1 slot/bank)
    >>> [f"{c.time_s:.3f}" for c in emulation.points[0].plans[1].costs]  # cliques-3's rounds there
    ['0.826', '0.946', '0.971', '0.950']
    >>> print("\\n".join(emulation.predictions()[:2]))  # what `innet run --check` prints
    ... # doctest: +NORMALIZE_WHITESPACE
    scenario nine-cities: 9 islands x 2 hosts, scale 100000, update 2432 values (76 chunks)
      per island per round
      memory 25.6 MB -> pool 25.6 MB (1 slot/bank): all-to-all: consensus in 1 round(s),
      8.477 s predicted; round times ['8.477']

The scenario's figures are full scale; bandwidths, memory and the update are divided by its
`scale` in the emulation, so planning at full scale gives the times the emulation should show.
The update is the model's parameters, zero-padded to `update_size` and to whole chunks. The
check (`innet run --check`), the runner and the results read only this object, so what is
predicted is what is run.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

from controller.planner.cost import CostParams
from controller.planner.exceptions import PlanError
from controller.planner.optimise import DEFAULT_EPSILON, FamilyPlan, Planner
from controller.planner.schedule import Schedule
from controller.runner.scenario import Scenario
from innet.units import format_size
from topo.siteplan import FRAME_BITS, JOB, LANES, SLOT_BYTES, VALUE_BYTES, SlotPool
from workers import train
from workers.config import IslandConfig, TrainConfig

BOUND_EXPONENT = 3  # leaders send |x - theta0| <= 8, clipped and counted beyond


@dataclass(frozen=True, slots=True)
class MemoryPoint:
    """One aggregator memory of the scenario: the switches' pool, the planner's parameters for
    it, and each schedule's plan (its rounds and their predicted times)."""

    memory_bytes: int  # full scale, as the scenario gives it
    pool: SlotPool
    params: CostParams
    plans: tuple[FamilyPlan, ...]  # in the scenario's order

    @property
    def label(self) -> str:
        return f"{format_size(self.memory_bytes)}"


@dataclass(frozen=True, slots=True)
class Emulation:
    """Everything a run needs, computed once from the scenario."""

    scenario: Scenario
    model_params: int  # the model's parameter count
    update_floats: int  # values each leader sends per round (a whole number of chunks)
    island: IslandConfig  # what every island process is given
    points: tuple[MemoryPoint, ...]

    @property
    def chunks(self) -> int:
        return self.update_floats // LANES

    @property
    def update_bytes(self) -> int:
        """The full-scale update the planner is given."""
        return _full_scale_bytes(self.update_floats, self.scenario.scale)

    @property
    def rounds(self) -> int:
        """Rounds the run plays: every schedule at every memory point."""
        return sum(len(p.plans) for p in self.points) * self.scenario.training.rounds

    def frame_rate_bps(self, group_rate_bps: float) -> float:
        """A leader's pacing rate at emulation scale for the planner's full-scale group rate:
        the planner counts update bytes, the leader paces frames carrying SLOT_BYTES of them."""
        return group_rate_bps / self.scenario.scale * FRAME_BITS / (SLOT_BYTES * 8)

    def slots_needed(self, memory_bytes: float) -> int:
        """The planner's memory need (full-scale bytes) in emulated slots."""
        return math.ceil(memory_bytes / self.scenario.scale / SLOT_BYTES)

    def predictions(self) -> list[str]:
        """What `innet run --check` prints: per memory point and schedule, the planner's view."""
        sc = self.scenario
        lines = [
            f"scenario {sc.name}: {sc.wan.n} islands x {sc.hosts} hosts, scale {sc.scale:g}, "
            f"update {self.update_floats} values ({self.chunks} chunks) per island per round"
        ]
        for point in self.points:
            for plan in point.plans:
                rounds = [f"{c.time_s:.3f}" for c in plan.costs]
                lines.append(
                    f"  memory {point.label} -> pool {point.pool}: {plan.family}: consensus in "
                    f"{plan.rounds} round(s), {plan.time_s:.3f} s predicted; round times {rounds}"
                )
        return lines


def model_size(sc: Scenario) -> int:
    """The parameter count of the scenario's model."""
    model = train.make_model(sc.training.hidden, sc.seed)
    return sum(p.numel() for p in model.parameters())


def resolve(sc: Scenario, schedule: Schedule | None = None) -> Emulation:
    """The scenario at emulation scale; ScenarioError (file:line, key) for what cannot run.

    With `schedule`, that schedule is played at the scenario's one memory point instead of the
    scenario's families (the service's experiments play the testbed's schedule)."""
    params = model_size(sc)
    full = sc.update_bytes_for(math.ceil(params * VALUE_BYTES * sc.scale))
    floats = max(params, math.ceil(full / sc.scale / VALUE_BYTES))
    floats = math.ceil(floats / LANES) * LANES
    training = {k: v for k, v in dataclasses.asdict(sc.training).items() if k != "rounds"}
    island = IslandConfig(
        islands=sc.wan.n,
        hosts=sc.hosts,
        seed=sc.seed,
        training=TrainConfig(**training, seed=sc.seed),
        update_floats=floats,
        bound_exponent=BOUND_EXPONENT,
        job=JOB,
    )
    planner = Planner(sc.wan)
    update_bytes = _full_scale_bytes(floats, sc.scale)
    points = []
    plans: tuple[FamilyPlan, ...]
    for memory in sc.memory_bytes:
        pool = sc.pool(memory)
        cost = CostParams.for_pool(pool, update_bytes, sc.bandwidth_bps)
        if schedule is not None:
            plans = (planner.evaluate(planner.model(cost), schedule, DEFAULT_EPSILON),)
        else:
            plans = tuple(_plan(sc, planner, cost, i) for i in range(len(sc.schedules)))
        points.append(MemoryPoint(memory, pool, cost, plans))
    return Emulation(sc, params, floats, island, tuple(points))


def _full_scale_bytes(floats: int, scale: float) -> int:
    return round(floats * VALUE_BYTES * scale)


def _plan(sc: Scenario, planner: Planner, params: CostParams, i: int) -> FamilyPlan:
    family = sc.schedules[i]
    try:
        return planner.plan(params, families=[family]).family(family)
    except PlanError as err:
        raise sc.fail(f"schedules[{i}]", f"{family}: {err}") from None
