"""A running testbed under one controller: switches, fabric, schedule, rounds, counters, health.

    pool = SlotPool(slots_per_bank=64, scale=1000)
    network = MininetNetwork(build_network(wan, hosts_per_city=1, workdir=run, slots=64))
    testbed = Testbed.start(wan, network, params, pool=pool)  # pipeline + base plan on each edge
    testbed.advance()            # round 0 on every switch (or on none)
    testbed.advance()            # round 1 beside round 0
    testbed.counters("Tokyo")    # port counters (control channel) + innet `stats` (P4Runtime)
    testbed.close()              # fabric closed, network stopped

The network part is a `Network`: `MininetNetwork` wraps `topo.mininet_net.TestbedNet`; tests
give in-process P4Runtime servers. Every public method takes the testbed's one lock.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from controller.p4rt import (
    Fabric,
    P4RuntimeError,
    SwitchConnection,
    deadline_after,
)
from controller.planner.cost import CostParams
from controller.planner.optimise import DEFAULT_EPSILON, Plan, Planner
from controller.planner.schedule import Round, Schedule, ScheduleError
from controller.rounds import STATS, STATS_COUNTER, Addressing, RoundDriver
from p4switch.control import ControlError, control_request
from p4switch.program import compile_file
from topo.siteplan import JOB, SlotPool

log = logging.getLogger(__name__)

REPO = Path(__file__).resolve().parents[1]
INNET_P4 = REPO / "p4src" / "innet.p4"
LIVE_RECONNECT_S = 3.0  # how long heal() tries a switch whose process runs but whose stream ended
# the controller's election id: above any shell started read-only with `innet shell` (0, 1)
ELECTION_ID = (2, 0)


class TestbedError(RuntimeError):
    """A request the testbed cannot carry out; the message says why and what to do."""

    __test__ = False


class UnknownCityError(TestbedError, KeyError):
    def __str__(self) -> str:
        return str(self.args[0])


@dataclass(frozen=True)
class SwitchSite:
    """One edge switch as the controller reaches it."""

    city: int
    name: str  # the fabric's name for it
    grpc_addr: str
    device_id: int
    control_path: Path | None  # p4switch control socket, None when there is none


class Network(Protocol):
    """The switches' side of a testbed: where they are, whether they run, how to restart one."""

    sites: tuple[SwitchSite, ...]
    hosts_per_city: int

    def process_alive(self, city: int) -> bool: ...

    def restart(self, city: int, deadline: float) -> None: ...

    def stop(self) -> None: ...


@dataclass
class HistoryEntry:
    number: int
    groups: tuple[tuple[str, ...], ...]
    installed_at: float  # time.time()
    install_s: float
    retired_at: float | None = None


@dataclass
class Testbed:
    """One network, its fabric, the current schedule and the rounds installed from it."""

    __test__ = False

    wan: Any  # topo.wan.Wan
    network: Network
    fabric: Fabric
    params: CostParams
    plan_result: Plan | None
    schedule_: Schedule
    pool: SlotPool
    epsilon: float = DEFAULT_EPSILON
    driver: RoundDriver = field(init=False)
    _history: list[HistoryEntry] = field(default_factory=list)
    _cycle_start: int = 0
    _lock: threading.RLock = field(default_factory=threading.RLock)
    _closed: bool = False

    def __post_init__(self) -> None:
        addressing = Addressing.default(self.wan.n, self.network.hosts_per_city)
        self.driver = RoundDriver(
            self.fabric,
            self.wan,
            self.schedule_,
            job=JOB,
            addressing=addressing,
            switches=[s.name for s in self.network.sites],
        )

    # --- life cycle -----------------------------------------------------------------------

    @classmethod
    def start(
        cls,
        wan: Any,
        network: Network,
        params: CostParams,
        *,
        pool: SlotPool,
        schedule: Schedule | None = None,
        program: Path = INNET_P4,
        connect_timeout: float = 30.0,
        target: str = "p4switch",
        build_dir: Path | None = None,
    ) -> Testbed:
        """Connect to every switch, set the pipeline, install the base plan; no round yet.

        The pipeline is the P4 source for p4switch; for `target` bmv2, p4c's BMv2 JSON and
        P4Info, compiled into `build_dir` (topo/bmv2.py)."""
        p4info, device_config = pipeline(program, pool.slots_per_bank, target, build_dir)
        conns = [
            SwitchConnection(s.name, s.grpc_addr, s.device_id, ELECTION_ID) for s in network.sites
        ]
        fabric = Fabric(conns, p4info, device_config)
        try:
            fabric.connect(deadline_after(connect_timeout))
            plan = None
            if schedule is None:
                plan = Planner(wan).plan(params)
                schedule = plan.best.schedule
            testbed = cls(wan, network, fabric, params, plan, schedule, pool)
            testbed.driver.setup()
        except BaseException:
            fabric.close()
            raise
        log.info("testbed programmed: %d switches, schedule %s", wan.n, schedule.family)
        return testbed

    def close(self) -> None:
        """Close the fabric and stop the network (idempotent)."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            try:
                self.fabric.close()
            finally:
                self.network.stop()

    # --- lookups --------------------------------------------------------------------------

    def city(self, name: str) -> int:
        """City index by name or code; UnknownCityError lists the known ones."""
        try:
            return self.wan.index(name)
        except (ValueError, KeyError):
            known = ", ".join(self.wan.names)
            raise UnknownCityError(f"unknown city {name!r}; known: {known}") from None

    def names_of(self, rnd: Round) -> tuple[tuple[str, ...], ...]:
        return tuple(tuple(self.wan.names[i] for i in g) for g in rnd.groups)

    def topology(self) -> dict[str, Any]:
        wan = self.wan
        return {
            "name": wan.name,
            "cities": [
                {"index": i, "name": c.name, "code": c.code} for i, c in enumerate(wan.cities)
            ],
            "links": [
                {
                    "a": link.a,
                    "b": link.b,
                    "delay_s": link.delay_s,
                    "capacity_bps": link.capacity_bps,
                }
                for link in wan.links
            ],
            "hosts_per_city": self.network.hosts_per_city,
            "slots": self.pool.slots_per_bank,
            "memory_bytes": self.pool.memory_bytes,
            "scale": self.pool.scale,
            "switches": [
                {
                    "city": wan.names[s.city],
                    "name": s.name,
                    "grpc_addr": s.grpc_addr,
                    "device_id": s.device_id,
                }
                for s in self.network.sites
            ],
            **getattr(self.network, "describe", dict)(),
        }

    # --- schedule -------------------------------------------------------------------------

    def schedule(self) -> dict[str, Any]:
        with self._lock:
            sched = self.schedule_
            return {
                "family": sched.family,
                "rounds": [self.names_of(r) for r in sched.rounds],
                "cycle_start": self._cycle_start,
                "params": {
                    "memory_bytes": self.params.memory_bytes,
                    "update_bytes": self.params.update_bytes,
                    "bandwidth_bps": self.params.access_bps,
                },
            }

    def set_schedule(self, schedule: Schedule) -> dict[str, Any]:
        """Use `schedule` from the next round on (its first round is played next)."""
        if schedule.n != self.wan.n:
            raise ScheduleError(f"the schedule has {schedule.n} islands, the WAN {self.wan.n}")
        for rnd in schedule.rounds:
            rnd.check(self.wan.n)
        with self._lock:
            start = self._next_number()
            length = len(schedule.rounds)
            # round_at(number) must give rounds[(number - start) % length]
            shifted = tuple(schedule.rounds[(i - start) % length] for i in range(length))
            self.schedule_ = schedule
            self._cycle_start = start
            self.driver.schedule = Schedule(schedule.family, schedule.n, shifted)
            log.info("schedule %s from round %d on", schedule.family, start)
            return self.schedule()

    def plan(
        self,
        params: CostParams,
        families: Sequence[str] | None = None,
        epsilon: float = DEFAULT_EPSILON,
    ) -> dict[str, Any]:
        """Plan for these parameters and use the best schedule from the next round on."""
        result = Planner(self.wan).plan(params, epsilon, families)
        with self._lock:
            self.params, self.plan_result, self.epsilon = params, result, epsilon
            best = result.best
            out = self.set_schedule(best.schedule)
        out["plan"] = [
            {
                "family": f.family,
                "time_s": f.time_s,
                "rounds": f.rounds,
                "exact": f.exact,
                "memory_bytes": f.memory_bytes,
            }
            for f in result.families
        ]
        return out

    # --- rounds ---------------------------------------------------------------------------

    def _next_number(self) -> int:
        installed = self.driver.installed
        return max(installed) + 1 if installed else len(self._history)

    def current_round(self) -> dict[str, Any] | None:
        with self._lock:
            installed = self.driver.installed
            if not installed:
                return None
            number = max(installed)
            return {
                "number": number,
                "groups": self.names_of(self.driver.schedule.round_at(number)),
                "installed": sorted(installed),
            }

    def advance(self) -> dict[str, Any]:
        """Install the next round on every switch (or none); retire those before the previous."""
        with self._lock:
            number = self._next_number()
            began = time.monotonic()
            rnd = self.driver.install(number)  # all-or-none: raises with nothing installed
            took = time.monotonic() - began
            self._history.append(HistoryEntry(number, self.names_of(rnd), time.time(), took))
            for old in sorted(n for n in self.driver.installed if n < number - 1):
                self.driver.retire(old)
                for entry in self._history:
                    if entry.number == old:
                        entry.retired_at = time.time()
            log.info("round %d installed in %.3f s", number, took)
            current = self.current_round()
            assert current is not None
            return {**current, "install_s": took}

    def history(self) -> list[dict[str, Any]]:
        with self._lock:
            return [vars(e).copy() for e in self._history]

    # --- counters and health --------------------------------------------------------------

    def counters(self, name: str) -> dict[str, Any]:
        """A city's edge: port counters (control channel), innet statistics (P4Runtime)."""
        city = self.city(name)
        site = self.network.sites[city]
        ports: dict[str, Any] | None = None
        if site.control_path is not None:
            try:
                reply = control_request(site.control_path, {"cmd": "stats"})
                ports = reply.get("stats", {}).get("ports") if reply.get("ok") else None
            except ControlError as err:
                raise TestbedError(f"{self.wan.names[city]}: control channel: {err}") from err
        with self._lock:
            conn = self.fabric.connection(site.name)
            query = self.fabric.schema.counter_entry(STATS_COUNTER)
            try:
                cells = conn.read([query])
            except P4RuntimeError as err:
                raise TestbedError(f"{self.wan.names[city]}: reading counters: {err}") from err
        packets = {e.counter_entry.index.index: e.counter_entry.data.packet_count for e in cells}
        stats = {label: packets.get(i, 0) for i, label in enumerate(STATS)}
        return {"city": self.wan.names[city], "switch": site.name, "stats": stats, "ports": ports}

    def health(self) -> dict[str, Any]:
        """Each switch: process alive, P4Runtime stream alive, control channel answering."""
        switches = []
        for site in self.network.sites:
            control = None
            if site.control_path is not None:
                try:
                    control = (
                        control_request(site.control_path, {"cmd": "ping"}, timeout=1.0).get("ok")
                        is True
                    )
                except ControlError:
                    control = False
            process = self.network.process_alive(site.city)
            p4rt = self.fabric.connection(site.name).alive
            switches.append(
                {
                    "city": self.wan.names[site.city],
                    "switch": site.name,
                    "process": process,
                    "p4runtime": p4rt,
                    "control": control,
                    "ok": process and p4rt and control is not False,
                }
            )
        return {"ok": all(s["ok"] for s in switches), "switches": switches}

    def heal(self, timeout: float = 60.0) -> list[str]:
        """Restart dead switch processes and reinstall every switch that lost its state."""
        healed = []
        with self._lock:
            for site in self.network.sites:
                conn = self.fabric.connection(site.name)
                dead = not self.network.process_alive(site.city)
                if dead:
                    log.warning("switch %s: process gone, restarting it", site.name)
                    self.network.restart(site.city, deadline_after(timeout))
                if dead:
                    self.fabric.reinstall(site.name, deadline_after(timeout))
                    healed.append(self.wan.names[site.city])
                elif not conn.alive:
                    # The stream ended but the process runs: it restarted its server, or it is
                    # on its way out (a SIGTERM's shutdown, or a kill not yet reaped). Try
                    # briefly; a dying process is found dead and restarted at the next check.
                    try:
                        self.fabric.reinstall(site.name, deadline_after(LIVE_RECONNECT_S))
                    except P4RuntimeError as err:
                        log.warning("switch %s: %s; checking again", site.name, err)
                        continue
                    healed.append(self.wan.names[site.city])
        return healed


def pipeline(program: Path, slots: int, target: str, build_dir: Path | None) -> tuple[Any, bytes]:
    """(P4Info, device config) of `program` with `slots` for the target's switches."""
    if target == "bmv2":
        from p4switch.p4info_diff import load
        from topo.bmv2 import compile_bmv2

        out = build_dir if build_dir is not None else Path(program).parent.parent / "build" / "p4"
        compiled = compile_bmv2(program, out, {"SLOTS": str(slots)})
        return load(compiled.p4info), compiled.json.read_bytes()
    compiled = compile_file(program, defines={"SLOTS": str(slots)})
    return compiled.p4info, program.read_bytes()


class Watchdog:
    """A thread that heals the testbed when a switch dies (checks every `period` seconds)."""

    def __init__(
        self,
        testbed: Testbed,
        period: float = 1.0,
        on_heal: Callable[[list[str]], None] | None = None,
    ) -> None:
        self.testbed, self.period, self.on_heal = testbed, period, on_heal
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="innet-watchdog", daemon=True)
        self.healed: list[tuple[float, list[str]]] = []

    def start(self) -> None:
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(self.period):
            try:
                healed = self.testbed.heal()
            except Exception:  # keep watching; the next check tries again
                log.exception("watchdog: healing failed")
                continue
            if healed:
                log.warning("watchdog: reinstalled %s", ", ".join(healed))
                self.healed.append((time.time(), healed))
                if self.on_heal is not None:
                    self.on_heal(healed)

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(10.0)
