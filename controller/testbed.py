"""A running testbed under one controller: switches, fabric, schedule, rounds, counters, health.

    pool = SlotPool(slots_per_bank=64, scale=1000, packet_format=PacketFormat())
    spec = NetworkSpec(wan, hosts_per_city=1, slots=pool.slots_per_bank, scale=pool.scale)
    network = MininetNetwork(build_network(spec, run))
    testbed = Testbed.start(wan, network, params, pool=pool)  # pipeline + base entries
    testbed.advance()            # round 0 on every switch (or on none)
    testbed.advance()            # round 1 beside round 0
    testbed.counters("Tokyo")    # innet's statistics (P4Runtime) and port counters (network)
    testbed.close()              # fabric closed, network stopped

The switches are a `controller.network.Network`; the controller talks to them over P4Runtime
only, and asks the network for what P4Runtime does not carry. Every public method but `health`
takes the testbed's one lock. The JSON views are the service's (`controller.service.views`).

Health per switch: process, stream, control channel, `primary`, `state`, `write`. `heal` (the
watchdog's check) restarts what died, asks to be primary again where no client is, reconciles a
diverged switch, and restarts one that stays diverged.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

from controller.exceptions import TestbedError
from controller.network import Network
from controller.p4rt import Fabric, SwitchConnection, deadline_after
from controller.p4rt.exceptions import P4RuntimeError, ReconcileError
from controller.p4rt.health import ask_primary_again, control_health
from controller.planner.cost import CostParams
from controller.planner.exceptions import ScheduleError
from controller.planner.optimise import DEFAULT_EPSILON, Plan, Planner
from controller.planner.schedule import Round, Schedule
from controller.rounds import STATS, STATS_COUNTER, Addressing, RoundDriver
from innet.vocabulary import EntityState, NetworkMode, P4Target, PrimaryState, WriteState
from topo.exceptions import SwitchControlError, UnknownCityError
from topo.p4node import PortCounters
from topo.siteplan import JOB, SlotPool
from topo.wan import Wan

log = logging.getLogger(__name__)

LIVE_RECONNECT_S = 3.0  # how long heal() tries a switch whose process runs but whose stream ended
# the controller's election id: above any shell started read-only with `innet shell` (0, 1)
ELECTION_ID = (2, 0)
RECONCILE_ATTEMPTS = 3  # failed reconciles of a diverged switch before heal() restarts it


@runtime_checkable
class StoppableNetwork(Protocol):
    """A network that can stop one switch's process (so that `restart` starts a fresh one)."""

    def stop_switch(self, city: int) -> None: ...


Groups = tuple[tuple[str, ...], ...]  # a round's groups by city name


@dataclass
class HistoryEntry:
    """One round as installed: when, how long it took, and when it was retired."""

    number: int
    groups: Groups
    installed_at: float  # time.time()
    install_s: float
    retired_at: float | None = None


@dataclass(frozen=True, slots=True)
class InstalledRound:
    """The newest round on the switches, and every round installed now."""

    number: int
    groups: Groups
    installed: tuple[int, ...]
    install_s: float | None = None  # set by advance(): how long the install took


@dataclass(frozen=True, slots=True)
class EdgeCounters:
    """A city's edge: innet.p4's statistics and (where the network reads them) its ports."""

    city: str
    switch: str
    stats: dict[str, int]  # STATS label -> packets
    ports: PortCounters | None


@dataclass(frozen=True, slots=True)
class SwitchHealth:
    city: str
    switch: str
    process: bool  # the switch process runs
    p4runtime: bool  # the controller's stream to it is up
    control: bool | None  # its control channel answers (None: it has none)
    primary: PrimaryState = PrimaryState.OK  # LOST: the controller is not the switch's primary
    state: EntityState = EntityState.OK  # DIVERGED: its entities may differ from the desired
    write: WriteState = WriteState.OK  # TIMED_OUT: a write to it ended with an unknown outcome
    reason: str = ""  # what is wrong, when something is

    @property
    def ok(self) -> bool:
        p4runtime = (self.primary, self.state, self.write) == (
            PrimaryState.OK,
            EntityState.OK,
            WriteState.OK,
        )
        return p4runtime and self.process and self.p4runtime and self.control is not False


@dataclass
class Testbed:
    """One network, its fabric, the current schedule and the rounds installed from it."""

    __test__ = False  # a testbed, not a pytest test class

    wan: Wan
    network: Network
    fabric: Fabric
    params: CostParams
    plan_result: Plan | None
    schedule: Schedule
    pool: SlotPool
    epsilon: float = DEFAULT_EPSILON
    cycle_start: int = 0  # the round number the schedule's first round was played at
    driver: RoundDriver = field(init=False)
    _history: list[HistoryEntry] = field(default_factory=list)
    _lock: threading.RLock = field(default_factory=threading.RLock)
    _closed: bool = False

    def __post_init__(self) -> None:
        addressing = Addressing.default(self.wan.n, self.network.hosts_per_city)
        self.driver = RoundDriver(
            self.fabric,
            self.wan,
            self.schedule,
            job=JOB,
            addressing=addressing,
            switches=[s.name for s in self.network.sites],
        )

    # --- life cycle -----------------------------------------------------------------------

    @classmethod
    def start(
        cls,
        wan: Wan,
        network: Network,
        params: CostParams,
        *,
        pool: SlotPool,
        schedule: Schedule | None = None,
        connect_timeout: float = 30.0,
    ) -> Testbed:
        """Connect to every switch, set the network's pipeline, install the base entries; no
        round yet. Without `schedule`, the planner's best for `params` is played."""
        pipeline = network.pipeline()
        conns = [
            SwitchConnection(s.name, s.grpc_addr, s.device_id, ELECTION_ID) for s in network.sites
        ]
        # BMv2 keeps a group's replication nodes across a pipeline push: clear them first
        clear_groups = network.facts().target == P4Target.BMV2
        fabric = Fabric(conns, pipeline.p4info, pipeline.device_config, clear_groups=clear_groups)
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
        except UnknownCityError:
            known = ", ".join(self.wan.names)
            raise UnknownCityError(f"unknown city {name!r}; known: {known}") from None

    def names_of(self, rnd: Round) -> Groups:
        return tuple(tuple(self.wan.names[i] for i in g) for g in rnd.groups)

    # --- schedule -------------------------------------------------------------------------

    def set_network(self, network: NetworkMode) -> None:
        """What the edges do in the rounds installed from now on: `inna` merges, `multicast`
        only replicates, `plain` installs nothing per round (docs/protocol.md)."""
        with self._lock:
            self.driver.network = network

    def set_schedule(self, schedule: Schedule) -> None:
        """Play `schedule` from the next round on (its first round is played next)."""
        if schedule.n != self.wan.n:
            raise ScheduleError(f"the schedule has {schedule.n} islands, the WAN {self.wan.n}")
        for rnd in schedule.rounds:
            rnd.check(self.wan.n)
        with self._lock:
            start = self._next_number()
            length = len(schedule.rounds)
            # round_at(number) must give rounds[(number - start) % length]
            shifted = tuple(schedule.rounds[(i - start) % length] for i in range(length))
            self.schedule = schedule
            self.cycle_start = start
            self.driver.schedule = Schedule(schedule.family, schedule.n, shifted)
            log.info("schedule %s from round %d on", schedule.family, start)

    def plan(
        self,
        params: CostParams,
        families: Sequence[str] | None = None,
        epsilon: float = DEFAULT_EPSILON,
    ) -> Plan:
        """Plan for these parameters and play the best schedule from the next round on."""
        result = Planner(self.wan).plan(params, epsilon, families)
        with self._lock:
            self.params, self.plan_result, self.epsilon = params, result, epsilon
            self.set_schedule(result.best.schedule)
        return result

    # --- rounds ---------------------------------------------------------------------------

    def _next_number(self) -> int:
        installed = self.driver.installed
        return max(installed) + 1 if installed else len(self._history)

    def current_round(self) -> InstalledRound | None:
        with self._lock:
            installed = self.driver.installed
            if not installed:
                return None
            number = max(installed)
            groups = self.names_of(self.driver.schedule.round_at(number))
            return InstalledRound(number, groups, tuple(sorted(installed)))

    def advance(self) -> InstalledRound:
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
            installed = tuple(sorted(self.driver.installed))
            return InstalledRound(number, self.names_of(rnd), installed, took)

    def install_group(self, members: Sequence[int]) -> tuple[int, int]:
        """Install a round of one group (every other island alone) under the next number, for
        a collective a script asked for; its number and the group's id in it. Earlier rounds
        stay installed until `retire` (their members may still answer NACKs)."""
        with self._lock:
            alone = [[u] for u in range(self.wan.n) if u not in members]
            rnd = Round.of([members, *alone])
            rnd.check(self.wan.n)
            number = self._next_number()
            began = time.monotonic()
            self.driver.install(number, rnd)
            took = time.monotonic() - began
            self._history.append(HistoryEntry(number, self.names_of(rnd), time.time(), took))
            return number, rnd.groups.index(tuple(sorted(members)))

    def retire(self, number: int) -> None:
        """Delete an installed round's entries (`install_group`'s)."""
        with self._lock:
            self.driver.retire(number)
            for entry in self._history:
                if entry.number == number:
                    entry.retired_at = time.time()

    def history(self) -> tuple[HistoryEntry, ...]:
        with self._lock:
            return tuple(HistoryEntry(**vars(e)) for e in self._history)

    # --- counters and health --------------------------------------------------------------

    def counters(self, city: int | str) -> EdgeCounters:
        """A city's edge: innet's statistics (P4Runtime), port counters (the network)."""
        u = city if isinstance(city, int) else self.city(city)
        try:
            ports = self.network.port_counters(u)
        except SwitchControlError as err:
            raise TestbedError(str(err)) from err
        return EdgeCounters(self.wan.names[u], self.network.sites[u].name, self.stats(u), ports)

    def stats(self, u: int) -> dict[str, int]:
        """City u's edge: innet.p4's statistics counter, read over P4Runtime."""
        site = self.network.sites[u]
        with self._lock:
            conn = self.fabric.connection(site.name)
            query = self.fabric.schema.counter_entry(STATS_COUNTER)
            try:
                cells = conn.read([query])
            except P4RuntimeError as err:
                raise TestbedError(f"{self.wan.names[u]}: reading counters: {err}") from err
        packets = {e.counter_entry.index.index: e.counter_entry.data.packet_count for e in cells}
        return {label: int(packets.get(i, 0)) for i, label in enumerate(STATS)}

    def health(self) -> tuple[SwitchHealth, ...]:
        """Each switch's health (never waits for an install in progress)."""
        return tuple(self._switch_health(site.city, site.name) for site in self.network.sites)

    def _switch_health(self, city: int, name: str) -> SwitchHealth:
        seen = control_health(self.fabric, name)
        process = self.network.process_alive(city)
        control = self.network.control_alive(city)
        reasons = [] if process else ["the switch process is not running"]
        reasons += seen.reasons
        if control is False:
            reasons.append("its control channel does not answer")
        return SwitchHealth(
            city=self.wan.names[city],
            switch=name,
            process=process,
            p4runtime=self.fabric.connection(name).alive,
            control=control,
            primary=seen.primary,
            state=seen.state,
            write=seen.write,
            reason="; ".join(reasons),
        )

    def heal(self, timeout: float = 60.0) -> list[str]:
        """Restart dead link emulators and switch processes, reinstall every switch that lost
        its state, ask to be primary again where no client is, reconcile diverged switches
        (restarting one that stays diverged); the names of what was healed."""
        healed = self.network.restart_links(deadline_after(timeout))
        with self._lock:
            for site in self.network.sites:
                conn = self.fabric.connection(site.name)
                if not self.network.process_alive(site.city):
                    log.warning("switch %s: process gone, restarting it", site.name)
                    self.network.restart(site.city, deadline_after(timeout))
                    self.fabric.reinstall(site.name, deadline_after(timeout))
                elif not conn.alive:
                    # The stream ended but the process runs: it restarted its server, or it is
                    # on its way out (a SIGTERM's shutdown, or a kill not yet reaped). Try
                    # briefly; a dying process is found dead and restarted at the next check.
                    try:
                        self.fabric.reinstall(site.name, deadline_after(LIVE_RECONNECT_S))
                    except P4RuntimeError as err:
                        log.warning("switch %s: %s; checking again", site.name, err)
                        continue
                elif not ask_primary_again(conn, deadline_after(LIVE_RECONNECT_S)):
                    continue  # another client is primary (health says so), or backing off
                elif not self._settle(site.city, timeout):
                    continue
                healed.append(self.wan.names[site.city])
        return healed

    def _settle(self, city: int, timeout: float) -> bool:
        """Reconcile a diverged switch, restart it after RECONCILE_ATTEMPTS failures; True if
        it is settled now."""
        name = self.network.sites[city].name
        if not self.fabric.status(name).diverged:
            return False
        try:
            self.fabric.reconcile(name)  # it logs what it changed
        except ReconcileError as err:
            failures = self.fabric.status(name).reconcile_failures
            log.warning("%s", err)
            if failures < RECONCILE_ATTEMPTS:
                return False
            try:
                self._restart(city, failures, timeout)
            except P4RuntimeError as restart_err:
                log.error("switch %s: restarting failed: %s", name, restart_err)
                return False
            return True
        return True

    def _restart(self, city: int, failures: int, timeout: float) -> None:
        """The last resort: a fresh process (or pipeline) and every remembered entity again."""
        name = self.network.sites[city].name
        what = "its process" if isinstance(self.network, StoppableNetwork) else "its pipeline"
        log.error("switch %s: diverged after %d reconciles: restarting %s", name, failures, what)
        if isinstance(self.network, StoppableNetwork):
            self.network.stop_switch(city)
            self.network.restart(city, deadline_after(timeout))
        self.fabric.connection(name).close()  # reinstall connects again, to a fresh stream
        self.fabric.reinstall(name, deadline_after(timeout))


class Watchdog:
    """A thread that heals the testbed (checks every `period` seconds): restarts a switch that
    died, re-arbitrates a lost primary, reconciles a diverged switch (`Testbed.heal`)."""

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
                log.warning("watchdog: healed %s", ", ".join(healed))
                self.healed.append((time.time(), healed))
                if self.on_heal is not None:
                    self.on_heal(healed)

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(10.0)
