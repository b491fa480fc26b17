"""`innet run SCENARIO`: train through the emulated WAN with every schedule, and write the results.

    emulation = resolve(load_scenario(path))
    run = Run(emulation, folder, built_testbeds(emulation, RunDir()))
    rows = run.execute()        # every memory point, every schedule; results in `folder`

For each memory point of the emulation the run brings a testbed up (`built_testbeds`: the
Mininet network with that point's slot pool, programmed and watched; or, for the service's
experiments, the service's own testbed), starts one process per host (`workers.island`: the
leader of each island talks to its edge, the others train beside it), and plays every
schedule for `training.rounds` rounds (controller/runner/play.py), recording each round as it
ends. Before the first, the same training runs in one process with exact averaging: the
baseline every schedule is compared with.

The machine check. With `calibration` "refuse" or "warn", `calibrate()` (which `execute()`
calls first, before anything starts) measures the machine against what the plan needs
(controller/runner/calibration.py) and logs one line; "refuse" raises CalibrationRefused for a
plan that does not fit, leaving nothing built or written. The run writes the check to
`calibration.json` in its folder. "off" (the default here; `innet run` defaults to "refuse")
skips it.

Stopping. Ctrl-C or SIGTERM (a KeyboardInterrupt, innet/stopping.py) tears the network
down and stops every process the run started, at once (no round is waited for); the round
records written so far stay (one JSON line each, fsynced as written), and summary.csv covers
them (the plots are left out: seconds of a busy CPU). Teardowns and records are `held()`: a
signal never cuts one short. `phase` says what the run is doing (the progress shows it too),
`built` how many networks it began to bring up. `stop_event` (the service's stop) lets the
current round finish and starts no other.
"""

from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from controller.bringup import RunningTestbed, running_testbed
from controller.planner.schedule import Schedule
from controller.rundir import ProcessRecord, RunDir
from controller.runner import calibration as machine_check
from controller.runner.calibration import Calibration
from controller.runner.emulation import Emulation, MemoryPoint, Play
from controller.runner.exceptions import ExperimentError
from controller.runner.islands import Islands, LeaderEvents
from controller.runner.play import PREPARE_TIMEOUT_S, RoundContext, play_round
from controller.runner.records import Baseline, RoundRecord
from controller.runner.results import (
    Cycle,
    ResultsWriter,
    SummaryRow,
    collect_versions,
    summarise,
)
from controller.runner.results.gap import GapRow, TrainingTarget, gap_rows
from controller.testbed import Testbed
from innet.jsontypes import JSONObject
from innet.stopping import held, interrupted
from innet.vocabulary import Backend, NetworkMode, P4Target, Shaping
from topo.mininet_hosts import shape_uplink
from topo.mininet_net import NetworkSpec
from topo.shaping import switch_shape
from topo.siteplan import GRPC_BASE_PORT
from workers import inprocess, train
from workers.protocol import Failed, Join, Joined, Ready, Reset, ResetDone

log = logging.getLogger(__name__)

CLUSTER_FILE = "cluster.json"  # a run on a cluster: its machines, placement, clocks and wires

Progress = Callable[[str, int, int], None]  # (what, rounds done, rounds in all)


class UpTestbed(Protocol):
    """A testbed that is up, as a run plays on it: on one machine (`OneMachine`) or across a
    cluster's (controller/cluster/bringup.py)."""

    @property
    def testbed(self) -> Testbed: ...

    def islands(self, config: Path, logs: Path) -> LeaderEvents:
        """The island processes of its hosts (not started yet): `config` their configuration,
        `logs` where their logs go."""
        ...

    def shape_leaders(self, rate_bps: float | None) -> None:
        """Hold every leader's uplink to `rate_bps` (None: release it)."""
        ...

    def record_processes(self, processes: Sequence[ProcessRecord]) -> None:
        """Record processes started on its hosts for `innet clean` (empty: all stopped)."""
        ...


@dataclass(frozen=True)
class OneMachine:
    """A testbed up on this machine (controller/bringup.py's), as a run plays on it."""

    up: RunningTestbed

    @property
    def testbed(self) -> Testbed:
        return self.up.testbed

    def islands(self, config: Path, logs: Path) -> Islands:
        return Islands(self.up.net.hosts, self.testbed.wan.names, config, logs)

    def shape_leaders(self, rate_bps: float | None) -> None:
        for hosts in self.up.net.hosts:
            shape_uplink(hosts[0], rate_bps)

    def record_processes(self, processes: Sequence[ProcessRecord]) -> None:
        self.up.record_processes(processes)


Testbeds = Callable[[MemoryPoint], AbstractContextManager[UpTestbed]]


def _quiet(_what: str, _done: int, _total: int) -> None:
    return None


class Run:
    """One run of an emulation: every memory point, every schedule, one results folder."""

    def __init__(
        self,
        emulation: Emulation,
        folder: Path,
        testbeds: Testbeds,
        *,
        progress: Progress = _quiet,
        stop_event: threading.Event | None = None,
        calibration: str = "off",
        backend: Backend | None = None,
        target: P4Target = P4Target.P4SWITCH,
        cluster: JSONObject | None = None,
        clocks_flag: str = "",
    ) -> None:
        machine_check.check_mode(calibration)
        self.cluster = cluster  # on a cluster: its machines, clocks, wires, placement
        self.clocks_flag = clocks_flag  # why every round is flagged for its clocks ("": none)
        self.backend = backend  # the switches' back end (None: their own choice), for the check
        self.target = target  # the switches' target: the check measures innet.p4 on it
        self.emulation = emulation
        self.folder = Path(folder)
        self.testbeds = testbeds  # brings up the testbed of one memory point, and down
        self.progress = progress
        self.stop_event = stop_event if stop_event is not None else threading.Event()
        self.writer: ResultsWriter | None = None  # opened by execute()
        self.baseline: Baseline | None = None
        self.cycles: dict[tuple[str, str], Cycle] = {}  # (network, family) ->
        self.summary: list[SummaryRow] = []
        self.gap: list[GapRow] | None = None  # with `compute`: the gap to one building
        self.failures: list[str] = []  # schedules that failed, with why
        self.done = 0  # rounds played
        self.calibration_mode = calibration  # refuse, warn or off (calibration.MODES)
        self.calibration: Calibration | None = None  # the machine check, once made
        self.calibration_warning: str | None = None  # what the check warns of, if anything
        self.phase = "start-up"  # what the run is doing now, as the progress shows it
        self.built = 0  # networks whose start-up began (and were torn down, or are up)

    def _enter_round(self, phase: str) -> None:
        if not interrupted():  # (the progress says when a round ends)
            self.phase = phase

    def _enter(self, phase: str) -> None:
        """Say (in the progress) what the run does now; once stopped by a signal, `phase`
        keeps the one it came in."""
        if not interrupted():
            self.phase = phase
        self.progress(phase, self.done, self.emulation.rounds)

    @property
    def records(self) -> tuple[RoundRecord, ...]:
        return self.writer.records if self.writer is not None else ()

    def calibrate(self) -> Calibration | None:
        """The machine check (made once; None when off): CalibrationRefused when the plan does
        not fit this machine and the mode is refuse (again on every call: a refusal stands), a
        warning logged when it is not "fits"."""
        if self.calibration_mode == "off":
            return None
        first = self.calibration is None
        if self.calibration is None:
            self._enter("the machine check")
            self.calibration = machine_check.calibrate(self.emulation, self.backend, self.target)
            log.info("%s", self.calibration.summary)
        self.calibration_warning = machine_check.enforce(self.calibration, self.calibration_mode)
        if first and self.calibration_warning:
            log.warning("%s", self.calibration_warning)
        return self.calibration

    def execute(self) -> list[SummaryRow]:
        """Every memory point, every schedule; returns the summary (also in `self.summary`)."""
        em = self.emulation
        self.calibrate()  # before anything starts; refuses a plan that does not fit
        self.writer = ResultsWriter(self.folder, em.scenario.to_dict(), collect_versions())
        if self.cluster is not None:
            self.writer.record_file(CLUSTER_FILE, self.cluster)
        if self.calibration is not None:
            machine_check.write(self.calibration, self.calibration_mode, self.folder)
        self._enter("the single-process baseline")
        self.baseline = baseline(em)
        try:
            for point in em.played:  # the one-building reference first, when asked for
                self._memory_point(point)
        finally:  # after Ctrl-C too: the summary of the rounds recorded so far
            with held():
                self._finish()
        return self.summary

    def _finish(self) -> None:
        """summary.csv and the plots of the rounds recorded (gap.csv with `compute`); a run
        stopped by a signal skips the plots (seconds of a busy CPU)."""
        assert self.writer is not None and self.baseline is not None
        em = self.emulation
        self._enter("the summary")
        self.summary = summarise(self.writer.records, self.cycles, self.baseline.accuracy)
        self.gap = self._gap()
        gap = (
            None
            if self.gap is None
            else (self.gap, em.round_compute_s or 0.0, em.scenario.training.overlap)
        )
        self.writer.finish(self.summary, self.baseline, gap, plots=not interrupted())

    def _gap(self) -> list[GapRow] | None:
        """With `compute`: utilisation and time to target per row, against one building."""
        c = self.emulation.round_compute_s
        if c is None or self.writer is None:
            return None
        training = self.emulation.scenario.training
        target = TrainingTarget(training.target_accuracy, training.target_loss)
        return gap_rows(self.writer.records, c, training.overlap, target)

    def _memory_point(self, point: MemoryPoint) -> None:
        config = self.folder / "island-config.json"
        self.emulation.island.write(config)
        self._enter(f"the network's start-up @ {point.label}")
        self.built += 1
        with self.testbeds(point) as up, self._islands(up, config, point) as islands:
            assert self.writer is not None
            facts = up.testbed.network.facts()
            sc, wan = self.emulation.scenario, self.emulation.wan_of(point)
            loss = self.emulation.loss_of(point)
            self.writer.record_network(
                point.label,
                {
                    "target": facts.target,
                    "shaping": facts.shaping,
                    "scale": facts.scale,
                    # per city: what ran the program and moved the frames ("native/native", ...)
                    "engines": dict(zip((c.name for c in wan.cities), facts.engines, strict=False)),
                    # each WAN link as its ports are shaped (delay, rate, jitter, loss), each way
                    "wan_links": {
                        f"{link.a}-{link.b}": switch_shape(link, sc.scale, loss)
                        for link in wan.links
                    },
                },
            )
            for play in point.plays:
                plan = play.plan
                self.cycles[play.network, plan.family] = Cycle(plan.rounds or 0, len(plan.costs))
                if self.stop_event.is_set():
                    break
                try:
                    self._schedule(up, islands, point, play)
                except ExperimentError as err:
                    self.failures.append(f"{play.label} at {point.label}: {err}")
                    log.error("%s", err)
                    islands.stop()  # a dead island: start every process afresh ...
                    if self.stop_event.is_set():  # ... unless the run is stopped
                        break
                    self._start(islands, up)

    @contextlib.contextmanager
    def _islands(self, up: UpTestbed, config: Path, point: MemoryPoint) -> Iterator[LeaderEvents]:
        self._enter(f"the island processes' start-up @ {point.label}")
        islands = up.islands(config, self.folder / "logs")
        try:
            self._start(islands, up)
            yield islands
        finally:
            with held():
                self._enter(f"the teardown @ {point.label}")
                # interrupted: no round is waited for, the processes are stopped at once
                islands.stop(grace_s=0.0 if interrupted() else None)
                up.record_processes([])

    def _start(self, islands: LeaderEvents, up: UpTestbed) -> None:
        """Every host's island process started, recorded (for `innet clean`) and ready."""
        islands.start()
        up.record_processes(islands.record())
        islands.expect(Ready, islands.clock() + PREPARE_TIMEOUT_S, "start-up")

    def _schedule(
        self, up: UpTestbed, islands: LeaderEvents, point: MemoryPoint, play: Play
    ) -> None:
        """The schedule's rounds in the play's network, each recorded as it ends."""
        assert self.writer is not None
        plan = play.plan
        up.testbed.set_network(play.edges)
        up.testbed.set_schedule(plan.schedule)
        islands.broadcast(Reset())
        islands.expect(ResetDone, islands.clock() + PREPARE_TIMEOUT_S, "reset")
        if play.network == NetworkMode.GLOO:
            _join_gloo(islands, plan.schedule)
        ctx = RoundContext(
            self.emulation,
            point,
            plan,
            up.testbed,
            islands,
            islands.clock(),
            play.network,
            self.clocks_flag,
        )
        with access_shaped(up, self.emulation, play.network == NetworkMode.GLOO):
            self._rounds(ctx, point, play)

    def _rounds(self, ctx: RoundContext, point: MemoryPoint, play: Play) -> None:
        assert self.writer is not None
        for r in range(self.emulation.scenario.training.rounds):
            if self.stop_event.is_set():
                log.info("stopped before round %d of %s", r, play.label)
                break
            self._enter_round(f"round {r} of {play.label} @ {point.label}")
            try:
                record = play_round(ctx, r)
            except ExperimentError as err:
                with held():
                    took = ctx.islands.clock() - ctx.began
                    self.writer.record(ctx.planned(r, took, str(err)))
                raise
            with held():
                self.writer.record(record)
                self.done += 1
            self.progress(f"{play.label} @ {point.label}", self.done, self.emulation.rounds)
            if record.status != "ok":
                raise ExperimentError(f"round {r}: {record.status}")


@contextlib.contextmanager
def access_shaped(up: UpTestbed, em: Emulation, on: bool) -> Iterator[None]:
    """While `on`: every leader's uplink held to the access rate at emulation scale (gloo's
    TCP is not paced as innet's leaders are)."""
    if not on:
        yield
        return
    try:
        up.shape_leaders(em.scenario.bandwidth_bps / em.scenario.scale)
        yield
    finally:
        with held():
            up.shape_leaders(None)


def _join_gloo(islands: LeaderEvents, schedule: Schedule) -> None:
    """Every leader a gloo rank, with a process group for every group the schedule plays."""
    groups = sorted({g for rnd in schedule.rounds for g in rnd.groups if len(g) > 1})
    islands.broadcast(Join(tuple(groups)))
    joined = islands.expect(Joined, islands.clock() + PREPARE_TIMEOUT_S, "joining gloo")
    failed = {u: e.error for u, e in joined.items() if isinstance(e, Failed)}
    if failed:
        u = min(failed)
        raise ExperimentError(f"gloo: island {u} could not join: {failed[u]}")


def baseline(em: Emulation) -> Baseline:
    """The same training in one process, all islands averaged exactly every round."""
    sc = em.scenario
    cfg = em.island.training
    split = train.split_for(cfg, sc.wan.n, sc.hosts)
    rows = inprocess.baseline(split, cfg, sc.training.rounds, sc.hosts)
    last = rows[-1]
    return Baseline(
        float(last["train_loss"]), float(last["test_loss"]), float(last["accuracy"]), tuple(rows)
    )


def built_testbeds(
    em: Emulation,
    run_dir: RunDir,
    *,
    shaping: Shaping = Shaping.AUTO,
    target: P4Target = P4Target.P4SWITCH,
    backend: Backend | None = None,
    grpc_base_port: int = GRPC_BASE_PORT,
) -> Testbeds:
    """The testbed of each memory point built for the run in `run_dir` (claimed while it is
    up), switches compiled with that point's slot pool."""

    @contextlib.contextmanager
    def testbed(point: MemoryPoint) -> Iterator[UpTestbed]:
        spec = point_spec(
            em,
            point,
            shaping=shaping,
            target=target,
            backend=backend,
            grpc_base_port=grpc_base_port,
        )
        run_dir.claim("innet run", "running")
        try:
            first = point.plays[0].plan.schedule
            with running_testbed(spec, point.params, run_dir, schedule=first) as up:
                yield OneMachine(up)
        finally:
            with held():
                run_dir.release()

    return testbed


def point_spec(em: Emulation, point: MemoryPoint, **options: Any) -> NetworkSpec:
    """The network of one memory point: the emulation's WAN, hosts, scale, packet format and
    loss there, its slot pool; `options` the rest of `NetworkSpec` (target, shaping...)."""
    sc = em.scenario
    return NetworkSpec(
        em.wan_of(point),
        sc.hosts,
        slots=point.pool.slots_per_bank,
        scale=sc.scale,
        packet_format=em.packet_format,
        loss=em.loss_of(point),
        **options,
    )
