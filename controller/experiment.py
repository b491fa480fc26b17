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

import contextlib
import dataclasses
import json
import logging
import math
import os
import queue
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from controller.planner.cost import DEFAULT_SLOT_BYTES, CostParams
from controller.planner.optimise import DEFAULT_EPSILON, FamilyPlan, Planner
from controller.planner.schedule import Round
from controller.rundir import STATE_FILE, cmdline, default_run_dir, read_state, same_process
from controller.rundir import write_state as _write_state
from controller.scenario import Scenario
from workers.island import IslandConfig
from workers.quantise import LANES
from workers.stream import FRAME_BITS

log = logging.getLogger("controller.experiment")

JOB = 1  # the Testbed's job id: the membership entries it installs carry it
START_MARGIN_S = 0.25  # 'go' reaches every leader well before the common start time
BOUND_EXPONENT = 3  # leaders send |x - theta0| <= 8, clipped and counted beyond
CPU_LAG_FLOOR_S = 0.005  # lag below this is never called CPU-bound
CPU_LAG_FRACTION = 0.05  # ... nor below this share of the predicted round time
PREPARE_TIMEOUT_S = 120.0


class ExperimentError(RuntimeError):
    """The run cannot go on (a process died, a round missed its deadline): says which island."""


@dataclass
class IslandProcess:
    island: int
    name: str  # the island's city
    host: int
    proc: subprocess.Popen[str]
    events: queue.Queue[dict[str, Any]] = field(default_factory=queue.Queue)

    def send(self, command: dict[str, Any]) -> None:
        assert self.proc.stdin is not None
        try:
            self.proc.stdin.write(json.dumps(command) + "\n")
            self.proc.stdin.flush()
        except (BrokenPipeError, OSError) as err:
            code = self.proc.poll()
            raise ExperimentError(
                f"island {self.name}: its leader is gone (exit status {code}; {err})"
            ) from err

    def read_events(self) -> None:
        """Thread body: the leader's stdout lines, as events, until it closes."""
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            try:
                self.events.put(json.loads(line))
            except ValueError:
                log.warning("island %d said %r", self.island, line.rstrip())
        self.events.put({"event": "exited"})


class Islands:
    """The island processes of one network: leaders with pipes, the other hosts beside them."""

    def __init__(self, net: Any, names: tuple[str, ...], config_path: Path, logs: Path) -> None:
        self.net, self.names, self.config_path, self.logs = net, names, config_path, logs
        self.leaders: list[IslandProcess] = []
        self.others: list[subprocess.Popen[str]] = []
        self._files: list[Any] = []

    def start(self) -> None:
        self.logs.mkdir(parents=True, exist_ok=True)
        for u, hosts in enumerate(self.net.hosts):
            for k, host in enumerate(hosts, start=1):
                argv = [
                    sys.executable,
                    "-m",
                    "workers.island",
                    str(self.config_path),
                    "--island",
                    str(u),
                    "--host",
                    str(k),
                ]
                err = open(self.logs / f"{host.name}.log", "a")  # noqa: SIM115 (closed in stop)
                self._files.append(err)
                if k == 1:
                    proc = host.popen(
                        argv,
                        stdin=subprocess.PIPE,
                        stdout=subprocess.PIPE,
                        stderr=err,
                        text=True,
                        bufsize=1,
                    )
                    leader = IslandProcess(u, self.names[u], k, proc)
                    threading.Thread(target=leader.read_events, daemon=True).start()
                    self.leaders.append(leader)
                else:
                    self.others.append(host.popen(argv, stdout=err, stderr=err, text=True))

    @property
    def processes(self) -> list[subprocess.Popen[str]]:
        return [p.proc for p in self.leaders] + self.others

    def record(self) -> list[dict[str, Any]]:
        return [
            {
                "role": f"island process {' '.join(p.args[3:])}",
                "pid": p.pid,
                "cmdline": cmdline(p.pid),
            }
            for p in self.processes
        ]

    def expect(self, kind: str, deadline: float, what: str) -> dict[int, dict[str, Any]]:
        """Every leader's next event of `kind` (or 'failed'), by the deadline; else name who not."""
        got: dict[int, dict[str, Any]] = {}
        while len(got) < len(self.leaders):
            for leader in self.leaders:
                if leader.island in got:
                    continue
                try:
                    event = leader.events.get_nowait()
                except queue.Empty:
                    continue
                if event["event"] == "exited":
                    code = leader.proc.wait()
                    raise ExperimentError(
                        f"island {self.names[leader.island]}: its leader exited (status {code}) "
                        f"during {what}; see {self.logs}"
                    )
                if event["event"] in (kind, "failed", "error"):
                    got[leader.island] = event
            if len(got) < len(self.leaders):
                if time.time() > deadline:
                    missing = [self.names[p.island] for p in self.leaders if p.island not in got]
                    raise ExperimentError(
                        f"{what}: no answer from island(s) {', '.join(missing)} by the deadline"
                    )
                time.sleep(0.01)  # polling interval of the leaders' event queues
        return got

    def broadcast(self, command: dict[str, Any]) -> None:
        for leader in self.leaders:
            leader.send(command)

    def stop(self) -> None:
        """Stop every process this object started (by PID), then close the log files."""
        for leader in self.leaders:
            if leader.proc.poll() is None:
                with contextlib.suppress(ExperimentError):
                    leader.send({"cmd": "stop"})
        for proc in self.processes:
            try:
                proc.wait(timeout=5.0)
            except subprocess.TimeoutExpired:
                proc.terminate()
        for proc in self.processes:
            try:
                proc.wait(timeout=5.0)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        for f in self._files:
            f.close()
        self.leaders, self.others, self._files = [], [], []


# --- what the leaders are told -------------------------------------------------------------------


def local_lag(delay: Any, members: tuple[int, ...], offsets: tuple[float, ...], me: int) -> float:
    """When the first remote copy of a chunk reaches `me`'s edge, after `me` sent its own."""
    at = {m: o for m, o in zip(members, offsets, strict=True)}
    first = min(at[i] + float(delay[i][me]) for i in members if i != me)
    return first - at[me]


def send_policy(
    group_rate_bps: float,
    offset_s: float,
    lag_s: float,
    span_s: float,
    chunks: int,
    deadline_s: float,
) -> dict[str, Any]:
    """A leader's SendPolicy for one round, as JSON: rate-paced, whole update in flight."""
    frame_s = FRAME_BITS / group_rate_bps
    timeout = max(0.2, 2.0 * span_s + 8 * frame_s)
    return {
        "window": max(1, chunks),
        "rate_bps": group_rate_bps,
        "start_s": max(0.0, offset_s),
        "local_lag_s": lag_s,
        "timeout_s": timeout,
        "max_timeout_s": 4 * timeout,
        "deadline_s": deadline_s,
        "linger_s": min(2.0, 3 * timeout),
    }


# --- counters ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Snapshot:
    """Every switch's counters at one moment; a switch that could not be read is left out."""

    tx_bytes: dict[int, dict[int, int]]  # switch u -> neighbour v -> bytes sent toward v
    stats: dict[int, dict[str, int]]  # switch u -> innet.p4 counters
    lag_s: float  # worst port lateness since the previous snapshot
    unread: tuple[int, ...] = ()


def snapshot(testbed: Any, wan_ports: Callable[[int], dict[int, int]]) -> Snapshot:
    from controller.testbed import TestbedError
    from p4switch.control import ControlError, control_request

    tx: dict[int, dict[int, int]] = {}
    stats: dict[int, dict[str, int]] = {}
    lag, unread = 0.0, []
    for site in testbed.network.sites:
        u = site.city
        try:
            if site.control_path is None:  # BMv2: the kernel's counters of its interfaces
                ports = _kernel_ports(testbed.network.net.switches[u].port_interfaces())
            else:
                reply = control_request(site.control_path, {"cmd": "stats", "reset_peaks": True})
                ports = reply.get("stats", {}).get("ports", {}) if reply.get("ok") else {}
            counters = testbed.counters(testbed.wan.names[u])["stats"]
        except (ControlError, TestbedError, OSError) as err:  # dead, being restarted
            log.warning("switch %s unreadable: %s", site.name, err)
            unread.append(u)
            continue
        tx[u] = {
            v: int((ports.get(str(port)) or {}).get("tx_bytes", 0))
            for v, port in wan_ports(u).items()
        }
        lag = max([lag, *(float(e.get("lateness_max_s", 0.0)) for e in ports.values())])
        stats[u] = {label: int(value) for label, value in counters.items()}
    return Snapshot(tx, stats, lag, tuple(unread))


def _kernel_ports(interfaces: dict[int, str]) -> dict[str, dict[str, int]]:
    """Port -> {"tx_bytes": ...} from /sys/class/net (for switches without a control channel)."""
    return {
        str(port): {"tx_bytes": int(Path("/sys/class/net", name, "statistics", "tx_bytes")
                                    .read_text())}
        for port, name in interfaces.items()
    }  # fmt: skip


def _delta(before: dict[Any, int] | None, after: dict[Any, int]) -> dict[Any, int]:
    """Counts over an interval; a switch restarted in it (a counter went down) counts from 0."""
    if before is None or any(after[k] < before.get(k, 0) for k in after):
        return dict(after)
    return {k: after[k] - before.get(k, 0) for k in after}


def counted(before: Snapshot, after: Snapshot) -> tuple[dict[tuple[int, int], int], dict[str, int]]:
    """(bytes per WAN link u->v, innet.p4 counters summed) between two snapshots."""
    links: dict[tuple[int, int], int] = {}
    totals: dict[str, int] = {}
    for u, tx in after.tx_bytes.items():
        for v, n in _delta(before.tx_bytes.get(u), tx).items():
            links[(u, v)] = n
        for label, n in _delta(before.stats.get(u), after.stats[u]).items():
            totals[label] = totals.get(label, 0) + n
    return links, totals


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
        records: list[dict[str, Any]] = []
        self._done, self._total = 0, len(sc.memory_bytes) * len(sc.schedules) * sc.training.rounds
        self.progress("single-process baseline", 0, self._total)
        self.baseline = baseline(sc)
        self._cycles: dict[str, tuple[int, int]] = {}
        for memory in sc.memory_bytes:
            records += self._memory_point(sc.wan, memory)
        self.summary = summarise(records, self._cycles, self.baseline)
        self.writer.finish(self.summary, self.baseline)
        return self.folder

    def on_testbed(self, testbed: Any, net: Any, on_processes: Callable[[list], None]) -> None:
        """The testbed's current schedule for `training.rounds` rounds on a running network
        (the service's experiments): its own island processes, the same records and summary."""
        from controller.results import ResultsWriter, collect_versions
        from topo.mininet_net import wan_ports

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
        islands = Islands(net, testbed.wan.names, config_path, self.folder / "logs")
        records: list[dict[str, Any]] = []
        try:
            islands.start()
            on_processes(islands.record())
            islands.expect("ready", time.time() + PREPARE_TIMEOUT_S, "start-up")
            ports = {u: wan_ports(testbed.wan, u, sc.hosts) for u in range(testbed.wan.n)}
            records = self._schedule(
                testbed, islands, plan, memory, testbed.slots, ports.__getitem__
            )
        finally:
            islands.stop()
            on_processes([])
            cycle = {plan.family: (plan.rounds or 0, len(plan.costs))}
            self.summary = summarise(records, cycle, self.baseline)
            self.writer.finish(self.summary, self.baseline)

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

    def _memory_point(self, wan: Any, memory: int) -> list[dict[str, Any]]:
        from controller.mininet_network import MininetNetwork
        from controller.testbed import Testbed, Watchdog
        from topo.mininet_net import build_network, wan_ports

        sc = self.scenario
        slots = sc.slots_for(memory)
        params = cost_params(sc, memory, self.update_floats)
        run_dir = (self.run_dir or default_run_dir()).resolve()
        state = self._claim_run_dir(run_dir)
        net = testbed = watchdog = islands = None
        records: list[dict[str, Any]] = []
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
            )
            network = MininetNetwork(net)
            state["network"] = network.record()
            _write_state(run_dir, state)
            planner = Planner(wan)
            plans = {f: planner.plan(params, families=[f]).family(f) for f in sc.schedules}
            first = plans[sc.schedules[0]].schedule
            testbed = Testbed.start(wan, network, params, slots=slots, schedule=first,
                                    target=self.target, build_dir=run_dir / "build")  # fmt: skip
            watchdog = Watchdog(testbed)
            watchdog.start()
            config_path = self.folder / "island-config.json"
            self._island_config(wan).write(config_path)
            islands = Islands(net, wan.names, config_path, self.folder / "logs")
            islands.start()
            state["network"]["processes"] += islands.record()
            _write_state(run_dir, state)
            islands.expect("ready", time.time() + PREPARE_TIMEOUT_S, "start-up")
            ports = {u: wan_ports(wan, u, sc.hosts) for u in range(wan.n)}
            for family in sc.schedules:
                plan = plans[family]
                self._cycles[family] = (plan.rounds or 0, len(plan.costs))
                try:
                    records += self._schedule(
                        testbed, islands, plan, memory, slots, ports.__getitem__
                    )
                except ExperimentError as err:
                    self.failures.append(f"{family} at {memory} B: {err}")
                    log.error("%s", err)
                    islands.stop()  # a dead island: start every process afresh
                    islands = Islands(net, wan.names, config_path, self.folder / "logs")
                    islands.start()
                    state["network"]["processes"] = network.record()["processes"] + islands.record()
                    _write_state(run_dir, state)
                    islands.expect("ready", time.time() + PREPARE_TIMEOUT_S, "start-up")
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
        return records

    def _claim_run_dir(self, run_dir: Path) -> dict[str, Any]:
        previous = read_state(run_dir)
        if previous is not None:
            owner = previous.get("service", {"pid": -1})
            if same_process(owner):
                raise ExperimentError(
                    f"innet already runs (PID {owner['pid']}, run directory {run_dir}): "
                    "'innet net down' or wait for it"
                )
            raise ExperimentError(f"{run_dir / STATE_FILE} is left from a crash: 'innet clean'")
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
    ) -> list[dict[str, Any]]:
        testbed.set_schedule(plan.schedule)
        islands.broadcast({"cmd": "reset"})
        islands.expect("reset", time.time() + PREPARE_TIMEOUT_S, "reset")
        began = time.time()
        records = []
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
            records.append(record)
            self.writer.record(record)
            self._done += 1
            self.progress(f"{plan.family} @ {memory / 1e6:g} MB", self._done, self._total)
            if record["status"] != "ok":
                raise ExperimentError(f"round {r}: {record['status']}")
        return records

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
        healed = testbed.heal()  # a switch found dead between rounds is back before this one
        if healed:
            log.warning("round %d: reinstalled %s first", r, ", ".join(healed))
        installed = testbed.advance()
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
                    rate = gc.rate_bps / sc.scale * FRAME_BITS / (LANES * 4 * 8)
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
            "slots_needed": math.ceil(cost.memory_bytes / self.scenario.scale / DEFAULT_SLOT_BYTES),
            "train_loss": sum(e["train_loss"] for e in prepared.values()) / len(prepared),
            "test_loss": sum(e.get("test_loss", 0.0) for e in ok.values()) / n,
            "accuracy": sum(e.get("accuracy", 0.0) for e in ok.values()) / n,
            "cpu_lag_ms": lag * 1e3,
            "cpu_bound": lag > threshold,
            "status": "ok" if not failed else f"failed: {'; '.join(failed)}",
        }


def train_config(sc: Scenario) -> dict[str, Any]:
    """workers.train.TrainConfig's fields from the scenario's training section and seed."""
    fields = dataclasses.asdict(sc.training)
    fields.pop("rounds")
    return {**fields, "seed": sc.seed}


def update_floats(sc: Scenario) -> int:
    """Values each leader sends per round: the model, padded to update_size, whole chunks."""
    from workers import train

    model = train.make_model(sc.training.hidden, sc.seed)
    n_params = sum(p.numel() for p in model.parameters())
    full = sc.update_bytes_for(math.ceil(n_params * 4 * sc.scale))
    floats = max(n_params, math.ceil(full / sc.scale / 4))
    return math.ceil(floats / LANES) * LANES


def cost_params(sc: Scenario, memory: int, floats: int) -> CostParams:
    """The planner's parameters at full scale for one memory point (rate pacing, offsets).

    One emulated slot stands for 128 x scale bytes of full-scale memory: the planner is given
    that slot size, so its bound R <= (M - slot) / skew keeps the slot being merged as the
    emulated pool has it (with one slot per bank, that slot is half the memory).
    """
    return CostParams(
        update_bytes=round(floats * 4 * sc.scale),
        memory_bytes=sc.effective_memory(memory),
        access_bps=sc.bandwidth_bps,
        slot_bytes=round(DEFAULT_SLOT_BYTES * sc.scale),
    )


def baseline(sc: Scenario) -> dict[str, Any]:
    """The same training in one process, all islands averaged exactly every round."""
    from workers import train

    cfg = train.TrainConfig(**train_config(sc))
    split = train.split_digits(sc.wan.n, sc.hosts, sc.seed)
    rows = train.baseline(split, cfg, sc.training.rounds, sc.hosts)
    last = rows[-1]
    keys = ("train_loss", "test_loss", "accuracy")
    return {**{k: last[k] for k in keys}, "rounds": rows}


def predictions(sc: Scenario) -> list[str]:
    """What `innet run --check` prints: per memory point and schedule, the planner's view."""
    floats = update_floats(sc)
    lines = [
        f"scenario {sc.name}: {sc.wan.n} islands x {sc.hosts} hosts, scale {sc.scale:g}, "
        f"update {floats} values ({floats // LANES} chunks) per island per round"
    ]
    planner = Planner(sc.wan)
    for memory in sc.memory_bytes:
        params = cost_params(sc, memory, floats)
        slots = sc.slots_for(memory)
        for family in sc.schedules:
            plan = planner.plan(params, families=[family]).family(family)
            rounds = [f"{c.time_s:.3f}" for c in plan.costs]
            lines.append(
                f"  memory {memory / 1e6:g} MB ({slots} slot(s)/bank): {family}: consensus in "
                f"{plan.rounds} round(s), {plan.time_s:.3f} s predicted; round times {rounds}"
            )
    return lines


def summarise(
    records: list[dict[str, Any]], cycles: dict[str, tuple[int, int]], base: dict[str, Any] | None
) -> list[dict[str, Any]]:
    from controller.results import summarise as rows

    out = rows(records, cycles)
    if base is not None:
        for row in out:
            row.setdefault("baseline_accuracy", base["accuracy"])
    return out
