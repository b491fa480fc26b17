"""`innet run SCENARIO`: train through the emulated WAN with every schedule, and write the results.

For each aggregator memory of the scenario the runner builds the Mininet network (switches
compiled with that memory's slot pool), starts one process per host (`workers.island`: the
leader of each island talks to its edge, the others train beside it), and for each schedule:

1. asks the planner for the schedule and its per-round prediction at the scenario's sizes
   (rate pacing, aligned offsets: what the leaders do);
2. plays `training.rounds` rounds. A round: install it on every switch (all or none), let every
   island run its local phase ("prepare"), then start every leader at one Unix time ("go") with
   its group, the group's rate, its send offset and its just-in-time lag, and wait for every
   leader's sum (the round's deadline);
3. records the round: measured and predicted time, bytes per WAN link (the switches' port
   counters), drops and slot conflicts (innet.p4's counters), the leaders' retransmissions,
   loss and accuracy, and the worst processing lag of any switch or leader: where that lag is a
   noticeable part of the round, the round is marked `cpu_bound` (the measured time is then the
   CPU's, not the network's).

Sizes. The scenario's figures are full scale; the emulation divides bandwidths, memory and the
update by `scale` and keeps the delays, so the planner's times at full scale are the times the
emulation should show. The update is the model's parameters (zero-padded to `update_size`).
The planner counts update bytes; the leaders pace 186-byte frames carrying 128 bytes of it, so
the access rate is the update's rate and the 58 header bytes ride above it.

Stopping. Ctrl-C or SIGTERM tears the network down and stops every process the run started;
the round records written so far stay (one JSON line each, flushed as written).
"""

from __future__ import annotations

import logging
import math
import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from controller.emulation import baseline, cost_params, train_config, update_floats
from controller.islands import ExperimentError, Islands
from controller.leaders import local_lag, send_policy
from controller.planner.optimise import DEFAULT_EPSILON, FamilyPlan, Planner
from controller.planner.schedule import Round
from controller.round_counters import Snapshot, counted, snapshot
from controller.rundir import STATE_FILE, cmdline, default_run_dir, occupied
from controller.rundir import write_state as _write_state
from controller.scenario import Scenario
from topo.siteplan import FRAME_BITS, JOB, LANES, SLOT_BYTES
from workers.island import IslandConfig

log = logging.getLogger("controller.experiment")

START_MARGIN_S = 0.25  # 'go' reaches every leader well before the common start time
BOUND_EXPONENT = 3  # leaders send |x - theta0| <= 8, clipped and counted beyond
CPU_LAG_FLOOR_S = 0.005  # lag below this is never called CPU-bound
CPU_LAG_FRACTION = 0.05  # ... nor below this share of the predicted round time
PREPARE_TIMEOUT_S = 120.0
INSTALL_ATTEMPTS = 3


# --- the run ----------------------------------------------------------------------------------


@dataclass
class Run:
    """One `innet run`: the scenario, where results go, and how progress is shown."""

    scenario: Scenario
    folder: Path
    progress: Callable[[str, int, int], None] = lambda _what, _done, _total: None
    run_dir: Path | None = None
    shaping: str = "auto"
    grpc_base_port: int = 50000
    target: str = "p4switch"  # or "bmv2" (simple_switch_grpc, where installed)
    stop_event: threading.Event | None = None  # set: no further round starts (API's stop)
    failures: list[str] = field(default_factory=list)

    def execute(self) -> Path:
        """Every memory point, every schedule; results in `self.folder`. Returns it."""
        from controller.results import ResultsWriter, collect_versions

        sc = self.scenario
        self.update_floats = update_floats(sc)
        self.writer = ResultsWriter(self.folder, sc.to_dict(), collect_versions())
        self._done, self._total = 0, len(sc.memory_bytes) * len(sc.schedules) * sc.training.rounds
        self.progress("single-process baseline", 0, self._total)
        self.baseline = baseline(sc)
        self._cycles: dict[str, tuple[int, int]] = {}
        try:
            for memory in sc.memory_bytes:
                self._memory_point(sc.wan, memory)
        finally:  # after Ctrl-C too: the summary and plots of the rounds recorded so far
            self.summary = summarise(list(self.writer.records), self._cycles, self.baseline)
            self.writer.finish(self.summary, self.baseline)
        return self.folder

    def on_testbed(self, testbed: Any, net: Any, on_processes: Callable[[list], None]) -> None:
        """The testbed's current schedule for `training.rounds` rounds on a running network
        (the service's experiments): its own island processes, the same records and summary."""
        from controller.results import ResultsWriter, collect_versions
        from topo.siteplan import wan_ports

        sc = self.scenario
        self.update_floats = update_floats(sc)
        self.writer = ResultsWriter(self.folder, sc.to_dict(), collect_versions())
        self._done, self._total = 0, sc.training.rounds
        self.baseline = baseline(sc)
        memory = sc.memory_bytes[0]
        planner = Planner(testbed.wan)
        model = planner.model(cost_params(sc, memory, self.update_floats))
        plan = planner.evaluate(model, testbed.schedule_, DEFAULT_EPSILON)
        config_path = self.folder / "island-config.json"
        self._island_config(testbed.wan).write(config_path)
        islands = self._islands_up(net, testbed.wan.names, config_path, on_processes)
        try:
            ports = {u: wan_ports(testbed.wan, u, sc.hosts) for u in range(testbed.wan.n)}
            slots = testbed.pool.slots_per_bank
            self._schedule(testbed, islands, plan, memory, slots, ports.__getitem__)
        finally:
            islands.stop()
            on_processes([])
            cycle = {plan.family: (plan.rounds or 0, len(plan.costs))}
            self.summary = summarise(list(self.writer.records), cycle, self.baseline)
            self.writer.finish(self.summary, self.baseline)

    def _islands_up(
        self, net: Any, names: tuple[str, ...], config: Path, record: Callable[[list], None]
    ) -> Islands:
        """Every host's island process started, recorded (for `innet clean`) and ready."""
        islands = Islands(net, names, config, self.folder / "logs")
        try:
            islands.start()
            record(islands.record())
            islands.expect("ready", time.time() + PREPARE_TIMEOUT_S, "start-up")
        except BaseException:
            islands.stop()
            raise
        return islands

    def _island_config(self, wan: Any) -> IslandConfig:
        sc = self.scenario
        return IslandConfig(
            islands=wan.n,
            hosts=sc.hosts,
            seed=sc.seed,
            training=train_config(sc),
            update_floats=self.update_floats,
            bound_exponent=BOUND_EXPONENT,
            job=JOB,
        )

    def _memory_point(self, wan: Any, memory: int) -> None:
        from controller.mininet_network import MininetNetwork
        from controller.testbed import Testbed, Watchdog
        from topo.mininet_net import build_network
        from topo.siteplan import wan_ports

        sc = self.scenario
        pool = sc.pool(memory)
        slots = pool.slots_per_bank
        params = cost_params(sc, memory, self.update_floats)
        run_dir = (self.run_dir or default_run_dir()).resolve()
        state = self._claim_run_dir(run_dir)
        net = testbed = watchdog = islands = None
        try:
            net = build_network(
                wan,
                sc.hosts,
                run_dir / "switches",
                slots=slots,
                scale=sc.scale,
                shaping=self.shaping,
                grpc_base_port=self.grpc_base_port,
                target=self.target,
                loss=sc.wan_loss,
            )
            network = MininetNetwork(net)
            state["network"] = network.record()
            _write_state(run_dir, state)
            planner = Planner(wan)
            plans = {f: planner.plan(params, families=[f]).family(f) for f in sc.schedules}
            first = plans[sc.schedules[0]].schedule
            testbed = Testbed.start(wan, network, params, pool=pool, schedule=first,
                                    target=self.target, build_dir=run_dir / "build")  # fmt: skip
            watchdog = Watchdog(testbed)
            watchdog.start()
            config_path = self.folder / "island-config.json"
            self._island_config(wan).write(config_path)

            def record(processes: list[dict[str, Any]]) -> None:
                state["network"]["processes"] = network.record()["processes"] + processes
                _write_state(run_dir, state)

            islands = self._islands_up(net, wan.names, config_path, record)
            ports = {u: wan_ports(wan, u, sc.hosts) for u in range(wan.n)}
            for family in sc.schedules:
                plan = plans[family]
                self._cycles[family] = (plan.rounds or 0, len(plan.costs))
                try:
                    self._schedule(testbed, islands, plan, memory, slots, ports.__getitem__)
                except ExperimentError as err:
                    self.failures.append(f"{family} at {memory} B: {err}")
                    log.error("%s", err)
                    islands.stop()  # a dead island: start every process afresh
                    islands = None
                    islands = self._islands_up(net, wan.names, config_path, record)
        finally:
            if islands is not None:
                islands.stop()
            if watchdog is not None:
                watchdog.stop()
            if testbed is not None:
                testbed.close()
            elif net is not None:
                net.stop()
            (run_dir / STATE_FILE).unlink(missing_ok=True)

    def _claim_run_dir(self, run_dir: Path) -> dict[str, Any]:
        busy = occupied(run_dir)
        if busy is not None:
            raise ExperimentError(busy)
        state = {
            "service": {"role": "innet run", "pid": os.getpid(), "cmdline": cmdline(os.getpid())},
            "status": "running",
        }
        _write_state(run_dir, state)
        return state

    def _schedule(
        self,
        testbed: Any,
        islands: Islands,
        plan: FamilyPlan,
        memory: int,
        slots: int,
        wan_ports: Callable[[int], dict[int, int]],
    ) -> None:
        """The schedule's rounds, each recorded as it ends (results.ResultsWriter)."""
        testbed.set_schedule(plan.schedule)
        islands.broadcast({"cmd": "reset"})
        islands.expect("reset", time.time() + PREPARE_TIMEOUT_S, "reset")
        began = time.time()
        for r in range(self.scenario.training.rounds):
            if self.stop_event is not None and self.stop_event.is_set():
                log.info("stopped before round %d of %s", r, plan.family)
                break
            try:
                record = self._round(testbed, islands, plan, r, memory, slots, wan_ports, began)
            except ExperimentError as err:
                record = self._failed(testbed.wan, plan, r, memory, slots, began, str(err))
                self.writer.record(record)
                raise
            self.writer.record(record)
            self._done += 1
            self.progress(f"{plan.family} @ {memory / 1e6:g} MB", self._done, self._total)
            if record["status"] != "ok":
                raise ExperimentError(f"round {r}: {record['status']}")

    def _round(
        self,
        testbed: Any,
        islands: Islands,
        plan: FamilyPlan,
        r: int,
        memory: int,
        slots: int,
        wan_ports: Callable[[int], dict[int, int]],
        began: float,
    ) -> dict[str, Any]:
        """Install, local phase, the synchronised exchange; the round's record."""
        sc = self.scenario
        wan = testbed.wan
        rnd = plan.schedule.round_at(r)
        cost = plan.costs[r % len(plan.costs)]
        installed = install_round(testbed, r)
        if [list(g) for g in installed["groups"]] != [
            [wan.names[i] for i in g] for g in rnd.groups
        ]:
            raise ExperimentError(f"round {r}: the switches got {installed['groups']}, not {rnd}")
        islands.broadcast({"cmd": "prepare", "round": r})
        prepared = islands.expect("prepared", time.time() + PREPARE_TIMEOUT_S, f"round {r}")
        refused = {u: e["error"] for u, e in prepared.items() if e["event"] != "prepared"}
        if refused:
            u = min(refused)
            raise ExperimentError(f"round {r}: island {wan.names[u]}: {refused[u]}")
        before = snapshot(testbed, wan_ports)
        start_at = time.time() + START_MARGIN_S
        chunks = self.update_floats // LANES
        for g, gc in enumerate(cost.groups):
            members = tuple(gc.members)
            for m, offset in zip(members, gc.offsets, strict=True):
                command: dict[str, Any] = {
                    "cmd": "go",
                    "round": r,
                    "number": installed["number"],
                    "group": g,
                    "members": list(members),
                    "start_at": start_at,
                }
                if len(members) > 1:
                    rate = gc.rate_bps / sc.scale * FRAME_BITS / (SLOT_BYTES * 8)
                    lag = local_lag(wan.delay, members, gc.offsets, m)
                    command["policy"] = send_policy(
                        rate, offset, lag, gc.span_s, chunks, sc.round_deadline_s
                    )
                islands.leaders[m].send(command)
        done = islands.expect("done", start_at + sc.round_deadline_s + 5.0, f"round {r}")
        after = snapshot(testbed, wan_ports)
        return self._record(
            testbed, rnd, r, memory, slots, plan, cost, began, start_at, prepared, done,
            before, after,
        )  # fmt: skip

    def _failed(
        self, wan: Any, plan: FamilyPlan, r: int, memory: int, slots: int, began: float,
        reason: str,
    ) -> dict[str, Any]:  # fmt: skip
        """The record of a round that did not finish: what was planned, and why it failed."""
        rnd = plan.schedule.round_at(r)
        return {
            "memory": memory, "slots": slots, "schedule": plan.family, "round": r,
            "groups": [[wan.names[i] for i in g] for g in rnd.groups], "started": None,
            "time_s": None, "predicted_s": plan.costs[r % len(plan.costs)].time_s,
            "wall_s": time.time() - began, "wan_bytes": {}, "drops": {},
            "retransmissions": None, "nacks": None, "slot_conflicts": None,
            "slots_needed": None, "train_loss": None, "test_loss": None, "accuracy": None,
            "cpu_lag_ms": None, "cpu_bound": None,
            "status": f"failed: {' '.join(reason.split())}",
        }  # fmt: skip

    def _record(
        self,
        testbed: Any,
        rnd: Round,
        r: int,
        memory: int,
        slots: int,
        plan: FamilyPlan,
        cost: Any,
        began: float,
        start_at: float,
        prepared: dict[int, dict[str, Any]],
        done: dict[int, dict[str, Any]],
        before: Snapshot,
        after: Snapshot,
    ) -> dict[str, Any]:
        wan = testbed.wan
        ok = {u: e for u, e in done.items() if e["event"] == "done"}
        finished = max((e["done_at"] for e in ok.values()), default=time.time())
        measured = finished - start_at
        links, diff = counted(before, after)
        wan_bytes = {
            f"{wan.names[u]}->{wan.names[v]}": n for (u, v), n in sorted(links.items()) if n
        }
        stat = [e.get("stats", {}) for e in ok.values()]
        pacing_lag = max((e.get("pacing_lag_s", 0.0) for e in ok.values()), default=0.0)
        lag = max(after.lag_s, pacing_lag)
        predicted = cost.time_s
        threshold = max(CPU_LAG_FLOOR_S, CPU_LAG_FRACTION * predicted)
        n = len(ok) or 1
        failed = [
            f"island {wan.names[u]}: {' '.join(str(e.get('error')).split())}"
            for u, e in sorted(done.items())
            if e["event"] != "done"
        ]
        return {
            "memory": memory,
            "slots": slots,
            "schedule": plan.family,
            "round": r,
            "groups": [[wan.names[i] for i in g] for g in rnd.groups],
            "started": start_at,
            "time_s": measured,
            "predicted_s": predicted,
            "wall_s": finished - began,
            "wan_bytes": wan_bytes,
            "drops": {k: v for k, v in diff.items() if k != "contribution" and v},
            "retransmissions": sum(s.get("retransmitted", 0) for s in stat),
            "nacks": sum(s.get("nacks_sent", 0) for s in stat),
            "slot_conflicts": diff.get("slot_conflict", 0),
            "slots_needed": math.ceil(cost.memory_bytes / self.scenario.scale / SLOT_BYTES),
            "train_loss": sum(e["train_loss"] for e in prepared.values()) / len(prepared),
            "test_loss": sum(e.get("test_loss", 0.0) for e in ok.values()) / n,
            "accuracy": sum(e.get("accuracy", 0.0) for e in ok.values()) / n,
            "cpu_lag_ms": lag * 1e3,
            "cpu_bound": lag > threshold,
            "status": "ok" if not failed else f"failed: {'; '.join(failed)}",
        }


def install_round(testbed: Any, r: int, attempts: int = INSTALL_ATTEMPTS) -> dict[str, Any]:
    """Heal the switches, then install the next round on all of them (all or none).

    A switch can die between the check and the install; the install is then refused with
    nothing installed anywhere, and the next attempt heals that switch first."""
    from controller.p4rt import P4RuntimeError

    for attempt in range(1, attempts + 1):
        try:
            healed = testbed.heal()
            if healed:
                log.warning("round %d: reinstalled %s first", r, ", ".join(healed))
            return testbed.advance()
        except P4RuntimeError as err:
            if attempt == attempts:
                raise ExperimentError(
                    f"round {r}: not installed after {attempts} attempts: {err}"
                ) from err
            log.warning("round %d: install refused (%s); healing and trying again", r, err)
    raise AssertionError("unreachable")


def summarise(
    records: list[dict[str, Any]], cycles: dict[str, tuple[int, int]], base: dict[str, Any] | None
) -> list[dict[str, Any]]:
    from controller.results import summarise as rows

    out = rows(records, cycles)
    if base is not None:
        for row in out:
            row["baseline_accuracy"] = base["accuracy"]
    return out
