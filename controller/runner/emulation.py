"""A scenario resolved once, at the emulation's scale: what `innet run` builds, sends and expects.

    >>> from controller.runner.scenario import parse_scenario
    >>> emulation = resolve(parse_scenario("name: nine-cities\\nmemory: [25.6MB, 1.6GB]\\n"
    ...     "schedules: [all-to-all, cliques-3]\\nnetworks: [plain, inna]"))  # at scale 100000
    >>> print(emulation.points[0].pool)
    25.6 MB (1 slot/bank)
    >>> [play.label for play in emulation.points[0].plays]  # plain once, at the first point
    ['plain all-to-all', 'plain cliques-3', 'inna all-to-all', 'inna cliques-3']
    >>> [f"{c.time_s:.3f}" for c in emulation.points[0].plays[3].plan.costs]  # inna's triples
    ['0.826', '0.946', '0.971', '0.950']
    >>> print("\\n".join(emulation.predictions()[:2]))  # what `innet run --check` prints
    ... # doctest: +NORMALIZE_WHITESPACE
    scenario nine-cities: 9 islands x 2 hosts, scale 100000, update 2432 values (76 chunks)
      per island per round
      plain, any memory: all-to-all: consensus in 1 round(s), 1.477 s predicted; round times
      ['1.477']

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

from controller.planner.compute import Compute
from controller.planner.cost import CostParams
from controller.planner.exceptions import PlanError
from controller.planner.optimise import DEFAULT_EPSILON, FamilyPlan, Planner
from controller.planner.schedule import Schedule
from controller.planner.utilisation import REFERENCE_FAMILY, one_building
from controller.runner.scenario import Scenario
from innet.packetformat import PacketFormat
from innet.units import format_size
from innet.vocabulary import NetworkMode
from topo.siteplan import JOB, SlotPool
from topo.wan import Wan
from workers import train
from workers.config import IslandConfig, TrainConfig

BOUND_EXPONENT = 3  # leaders send |x - theta0| <= 8, clipped and counted beyond


@dataclass(frozen=True, slots=True)
class Play:
    """One (network, schedule) to play at a memory point, and the planner's plan for it."""

    network: NetworkMode  # one of the scenario's networks, or ONE_DC
    plan: FamilyPlan

    @property
    def label(self) -> str:
        return f"{self.network} {self.plan.family}"

    @property
    def edges(self) -> NetworkMode:
        """What the switches are told to do (gloo runs over the plain network's edges)."""
        return planner_network(self.network)


def planner_network(network: NetworkMode) -> NetworkMode:
    """The planner's network for a scenario's: gloo is predicted as innet's own plain-WAN
    collectives (its measurement is put beside them, not modelled); one building runs what
    one building runs, ring all-reduce over routed edges."""
    return NetworkMode.PLAIN if network in (NetworkMode.GLOO, NetworkMode.ONE_DC) else network


@dataclass(frozen=True, slots=True)
class MemoryPoint:
    """One aggregator memory of the scenario: the switches' pool, the planner's parameters for
    it, and what is played there: every schedule with `inna`, and at the first point only, every
    schedule with each network that holds no partial sums."""

    memory_bytes: int  # full scale, as the scenario gives it
    pool: SlotPool
    params: CostParams
    plays: tuple[Play, ...]  # in the scenario's order: networks, then schedules
    wan: Wan | None = None  # where it is played: None for the scenario's WAN

    @property
    def label(self) -> str:
        return "one building" if self.wan is not None else f"{format_size(self.memory_bytes)}"

    @property
    def plans(self) -> tuple[FamilyPlan, ...]:
        return tuple(p.plan for p in self.plays)


@dataclass(frozen=True, slots=True)
class Emulation:
    """Everything a run needs, computed once from the scenario."""

    scenario: Scenario
    model_params: int  # the model's parameter count
    update_floats: int  # values each leader sends per round (a whole number of chunks)
    island: IslandConfig  # what every island process is given
    points: tuple[MemoryPoint, ...]
    reference: MemoryPoint | None = None  # the islands in one building (`one_dc`), played first
    compute: Compute | None = None  # the emulated system's step time (`compute`)

    @property
    def played(self) -> tuple[MemoryPoint, ...]:
        """Every point the run plays, in order: the one-building reference first."""
        return self.points if self.reference is None else (self.reference, *self.points)

    def wan_of(self, point: MemoryPoint) -> Wan:
        return self.scenario.wan if point.wan is None else point.wan

    def loss_of(self, point: MemoryPoint) -> float:
        """The share of frames each WAN link loses: none inside one building."""
        return self.scenario.wan_loss if point.wan is None else 0.0

    @property
    def round_compute_s(self) -> float | None:
        """C: the full-scale compute of one round (H inner steps), when the scenario says."""
        if self.compute is None:
            return None
        return self.compute.round_s(self.scenario.training.inner_steps)

    @property
    def packet_format(self) -> PacketFormat:
        """The scenario's: its switches', its island processes' and its planner's."""
        return self.scenario.packet_format

    @property
    def chunks(self) -> int:
        return self.update_floats // self.packet_format.lanes

    @property
    def update_bytes(self) -> int:
        """The full-scale update the planner is given."""
        return _full_scale_bytes(self.update_floats, self.scenario.scale)

    @property
    def rounds(self) -> int:
        """Rounds the run plays: every play at every memory point."""
        return sum(len(p.plays) for p in self.played) * self.scenario.training.rounds

    def frame_rate_bps(self, group_rate_bps: float) -> float:
        """A leader's pacing rate at emulation scale for the planner's full-scale group rate:
        the planner counts update bytes, the leader paces frames carrying a slot of them."""
        frames_per_update_bit = self.packet_format.frame_bits / (self.packet_format.slot_bytes * 8)
        return group_rate_bps / self.scenario.scale * frames_per_update_bit

    def wire_bytes(self, full_bytes: float) -> float:
        """Full-scale update bytes as the frames that carry them at emulation scale (a frame
        carries a slot of the update, scaled down)."""
        frames = full_bytes / self.scenario.scale / self.packet_format.slot_bytes
        return frames * self.packet_format.frame_bytes

    def tcp_warning(self) -> str | None:
        """With gloo in the run: where TCP at this scale is not TCP at full scale (docs/gloo.md),
        naming the scale and the largest faithful one for the WAN's round-trip times."""
        sc = self.scenario
        if NetworkMode.GLOO not in sc.networks:
            return None
        from workers.gloo import faithful_scale, tcp_fidelity  # torch: only with gloo

        n = sc.wan.n
        rtts = sorted({2 * float(sc.wan.delay[i, j]) for i in range(n) for j in range(n) if i != j})
        worst = [
            w
            for rtt in (rtts[0], rtts[-1])
            for w in tcp_fidelity(sc.scale, sc.bandwidth_bps, rtt, self.update_bytes)
        ]
        if not worst:
            return None
        faithful = faithful_scale(sc.bandwidth_bps, (rtts[0], rtts[-1]), self.update_bytes)
        return (
            f"gloo: TCP at scale {sc.scale:g} does not behave as at full scale (faithful up to "
            f"scale {faithful:.3g} for these round trips, update and bandwidth): gloo's round "
            f"times here are TCP-at-scale artefacts, not a measurement of TCP on this WAN; "
            f"{worst[0]}"
        )

    def slots_needed(self, memory_bytes: float) -> int:
        """The planner's memory need (full-scale bytes) in emulated slots."""
        return math.ceil(memory_bytes / self.scenario.scale / self.packet_format.slot_bytes)

    def predictions(self) -> list[str]:
        """What `innet run --check` prints: per memory point and schedule, the planner's view."""
        sc = self.scenario
        lines = [
            f"scenario {sc.name}: {sc.wan.n} islands x {sc.hosts} hosts, scale {sc.scale:g}, "
            f"update {self.update_floats} values ({self.chunks} chunks) per island per round"
        ]
        if sc.script is not None:
            lines.append(
                f"  training script {sc.script.path.name}, one rank per island: the schedules "
                f"are chosen for an update of {format_size(self.update_bytes)} (update_size); "
                "each of its collectives is priced for its own size as it is asked for"
            )
        if self.compute is not None:
            c = self.round_compute_s
            lines.append(
                f"  compute: {self.compute.step_time_s * 1e3:.4g} ms a step "
                f"({self.compute.source}), {c:.3f} s a round of "
                f"{sc.training.inner_steps}"
            )
        for point in self.played:
            for play in point.plays:
                plan = play.plan
                rounds = [f"{c.time_s:.3f}" for c in plan.costs]
                where = f"memory {point.label} -> pool {point.pool}"
                if play.network == NetworkMode.ONE_DC:
                    where = "one building (reference)"
                elif play.network != NetworkMode.INNA:
                    where = f"{play.network}, any memory"
                elif len(sc.networks) > 1:
                    where = f"inna, {where}"
                lines.append(
                    f"  {where}: {plan.family}: consensus in {plan.rounds} round(s), "
                    f"{plan.time_s:.3f} s predicted; round times {rounds}"
                )
        warning = self.tcp_warning()
        return [*lines, warning] if warning else lines


def train_config(sc: Scenario) -> TrainConfig:
    """What the island processes train with: the scenario's training section and its seed."""
    known = {f.name for f in dataclasses.fields(TrainConfig)}
    values = {k: v for k, v in dataclasses.asdict(sc.training).items() if k in known}
    return TrainConfig(**{**values, "seed": sc.seed})


def model_size(sc: Scenario) -> int:
    """The parameter count of the scenario's model."""
    model = train.model_for(train_config(sc))
    return sum(p.numel() for p in model.parameters())


def resolve(sc: Scenario, schedule: Schedule | None = None) -> Emulation:
    """The scenario at emulation scale; ScenarioError (file:line, key) for what cannot run.

    With `schedule`, that schedule is played at the scenario's one memory point instead of the
    scenario's families (the service's experiments play the testbed's schedule)."""
    params = model_size(sc)
    packet_format = sc.packet_format
    full = sc.update_bytes_for(math.ceil(params * packet_format.VALUE_BYTES * sc.scale))
    floats = max(params, math.ceil(full / sc.scale / packet_format.VALUE_BYTES))
    floats = math.ceil(floats / packet_format.lanes) * packet_format.lanes
    island = IslandConfig(
        islands=sc.wan.n,
        hosts=sc.hosts,
        seed=sc.seed,
        training=train_config(sc),
        update_floats=floats,
        bound_exponent=BOUND_EXPONENT,
        job=JOB,
        packet_format=packet_format,
    )
    planner = Planner(sc.wan)
    update_bytes = _full_scale_bytes(floats, sc.scale)
    points = []
    for i, memory in enumerate(sc.memory_bytes):
        pool = sc.pool(memory)
        cost = CostParams.for_pool(pool, update_bytes, sc.bandwidth_bps)
        plays = []
        for network in sc.networks:
            if network != NetworkMode.INNA and i > 0:
                continue  # nothing of it depends on the memory: played once, at the first
            params_n = dataclasses.replace(cost, network=planner_network(network))
            if schedule is not None:
                plan = planner.evaluate(planner.model(params_n), schedule, DEFAULT_EPSILON)
                plays.append(Play(network, plan))
            else:
                plays.extend(
                    Play(network, _plan(sc, planner, params_n, j)) for j in range(len(sc.schedules))
                )
        points.append(MemoryPoint(memory, pool, cost, tuple(plays)))
    reference = _one_building(sc, points[0], schedule) if sc.one_dc else None
    compute = None
    if sc.compute is not None:
        compute = sc.compute.resolve(update_bytes / PacketFormat.VALUE_BYTES)
    return Emulation(sc, params, floats, island, tuple(points), reference, compute)


def _one_building(sc: Scenario, first: MemoryPoint, schedule: Schedule | None) -> MemoryPoint:
    """The reference: the same islands in one building (a non-blocking fabric: every link
    carries all the islands' access rates), all-to-all or the given schedule, ring all-reduce."""
    building = one_building(sc.wan, sc.bandwidth_bps)
    planner = Planner(building)
    params = dataclasses.replace(first.params, network=planner_network(NetworkMode.ONE_DC))
    model = planner.model(params)
    chosen = schedule or planner.schedule_for(REFERENCE_FAMILY, model)
    plan = planner.evaluate(model, chosen, DEFAULT_EPSILON)
    plays = (Play(NetworkMode.ONE_DC, plan),)
    return MemoryPoint(first.memory_bytes, first.pool, first.params, plays, building)


def _full_scale_bytes(floats: int, scale: float) -> int:
    return round(floats * PacketFormat.VALUE_BYTES * scale)


def _plan(sc: Scenario, planner: Planner, params: CostParams, i: int) -> FamilyPlan:
    family = sc.schedules[i]
    try:
        return planner.plan(params, families=[family]).family(family)
    except PlanError as err:
        raise sc.fail(f"schedules[{i}]", f"{family}: {err}") from None
