"""The island processes of a network split across machines, as the runner talks to them: the same
commands and events as on one machine (controller/runner/islands.py), carried by each machine's
agent.

    islands = RemoteIslands(cluster, network.node_of, wan.names, clocks, config_path)
    islands.start()                 # every agent starts its cities' island processes
    islands.broadcast(Reset())      # to every leader, through its machine's agent
    islands.expect(ResetDone, islands.clock() + 120, "reset")
    islands.stop()

Each machine's agent starts its cities' processes with pipes, as one machine does, and holds
their events; a thread here per machine asks it for them (`islands_events`) and queues each
for its leader. Times cross machines on the driver's clock: a `Go`'s start time is put on the
leader's machine's clock (its measured offset added) before it is sent, and a `Done`'s finish
time back on the driver's, so round times are the driver's whatever the machines' clocks say.
A machine lost (its agent gone, or silent) ends every one of its leaders: the runner's next
`expect` fails naming the machine and the islands it held, and the run stops there, its
results whole up to the last round recorded.
"""

from __future__ import annotations

import dataclasses
import logging
import queue
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from controller.cluster.agent import Agents
from controller.cluster.clocks import ClockOffset
from controller.cluster.raycluster import ClusterFailure
from controller.rundir import ProcessRecord
from controller.runner.exceptions import ExperimentError
from controller.runner.islands import Exited, LeaderChannel, LeaderEvents
from workers.protocol import Command, Done, Event, Go

log = logging.getLogger(__name__)

EVENT_WAIT_S = 0.2  # how long one ask for a machine's events waits for the first


class RemoteLeader:
    """One island's leader on another machine: commands through its machine's agent."""

    def __init__(self, island: int, name: str, machine: str, cluster: Agents, clock: ClockOffset):
        self.island, self.name, self.machine = island, name, machine
        self.cluster, self.offset = cluster, clock
        self.events: queue.Queue[Event | Exited] = queue.Queue()
        self.status: int | None = None

    def send(self, command: Command) -> None:
        if isinstance(command, Go):  # the start time on the leader's machine's clock
            command = dataclasses.replace(command, start_at=self.offset.to_node(command.start_at))
        agent = self.cluster.agent(self.machine)
        self.cluster.ask(
            self.machine,
            f"a command to {self.name}'s leader",
            agent.islands_send.remote(self.island, command),
        )

    def exit_status(self) -> int | None:
        return self.status

    def receive(self, event: Event | Exited) -> None:
        if isinstance(event, Done):  # its finish time on the driver's clock
            event = dataclasses.replace(event, done_at=self.offset.to_head(event.done_at))
        if isinstance(event, Exited):
            self.status = event.status
        self.events.put(event)


class RemoteIslands(LeaderEvents):
    """The leaders of every city, each on the machine `node_of` gives, as `Islands` offers
    them to the runner; `clocks` each machine's offset from the driver's clock."""

    def __init__(
        self,
        cluster: Agents,
        node_of: Sequence[str],
        names: tuple[str, ...],
        clocks: Mapping[str, ClockOffset],
        config: Path,
        logs: Path | None = None,
        *,
        clock: Callable[[], float] = time.time,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.cluster, self.node_of, self.names = cluster, tuple(node_of), names
        self.clocks, self.config, self.logs = dict(clocks), Path(config), logs
        self.clock, self.sleep = clock, sleep
        self.machines = tuple(dict.fromkeys(self.node_of))
        self.leaders: list[RemoteLeader] = []
        self.lost: dict[str, str] = {}  # machine -> why it was given up
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []

    def where_logs_are(self, leader: object) -> str:
        machine = getattr(leader, "machine", "?")
        return f"the island logs on machine {machine} (its agent's run directory)"

    def start(self) -> None:
        """Every machine starts its cities' island processes with the configuration in
        `config` (its text is sent); then the events are collected."""
        text = self.config.read_text()
        self.leaders = [
            RemoteLeader(u, self.names[u], m, self.cluster, self.clocks[m])
            for u, m in enumerate(self.node_of)
        ]
        asked = [self.cluster.agent(m).islands_start.remote(text) for m in self.machines]
        try:
            self.cluster.gather_from(self.machines, "its island processes started", asked)
        except ClusterFailure as err:
            for machine in err.lost:
                self.lost.setdefault(machine, str(err))
            if err.lost:
                lines = [self._lost_line(m, "the island processes' start-up") for m in err.lost]
                raise ExperimentError("; ".join(lines)) from err
            raise
        self._stop.clear()
        for machine in self.machines:
            thread = threading.Thread(
                target=self._collect, args=(machine,), name=f"events {machine}", daemon=True
            )
            thread.start()
            self._threads.append(thread)

    def _collect(self, machine: str) -> None:
        """Thread body: `machine`'s events, to their leaders' queues, until stopped; a machine
        whose agent is gone ends its leaders."""
        mine = {p.island: p for p in self.leaders if p.machine == machine}
        agent = self.cluster.agent(machine)
        while not self._stop.is_set():
            try:
                found = self.cluster.ask(
                    machine, "its leaders' events", agent.islands_events.remote(EVENT_WAIT_S)
                )
            except ClusterFailure as err:
                if self._stop.is_set():
                    return
                log.error("machine %s: %s", machine, err)
                if err.lost:
                    self.lost[machine] = str(err)
                for leader in mine.values():
                    leader.receive(Exited(None))
                return
            for island, event in found:
                mine[island].receive(event)

    def _next(self, leader: LeaderChannel, what: str) -> Event | None:
        """As on one machine; a leader on a machine lost names the machine and its islands."""
        machine = getattr(leader, "machine", "")
        if machine in self.lost:
            raise ExperimentError(self._lost_line(machine, what))
        return super()._next(leader, what)

    def _lost_line(self, machine: str, what: str) -> str:
        held = ", ".join(self.names[u] for u, m in enumerate(self.node_of) if m == machine)
        return f"machine {machine} lost during {what}, with island(s) {held}: {self.lost[machine]}"

    def _fetch_logs(self) -> None:
        """Every machine's island logs, appended to this run's `logs` folder (a machine lost
        keeps its own)."""
        if self.logs is None:
            return
        self.logs.mkdir(parents=True, exist_ok=True)
        for machine in self.machines:
            if machine in self.lost:
                continue
            agent = self.cluster.agent(machine)
            try:
                found = self.cluster.ask(machine, "its island logs", agent.islands_logs.remote())
            except ExperimentError as err:
                log.error("%s", err)
                continue
            for host, text in found.items():
                with (self.logs / f"{host}.log").open("a") as f:
                    f.write(text)

    def record(self) -> list[ProcessRecord]:
        """Nothing here: each machine's agent records its own processes."""
        return []

    def stop(self, grace_s: float | None = None) -> None:
        """The collectors end, then every machine stops its island processes (as
        `Islands.stop`) and hands their logs over; a machine that does not answer is logged,
        not raised (its janitor cleans)."""
        running = bool(self.leaders)
        self._stop.set()  # the collectors first: a machine's processes stopping is no loss
        for thread in self._threads:
            thread.join(timeout=EVENT_WAIT_S * 10)
        self._threads = []
        asked = [self.cluster.agent(m).islands_stop.remote(grace_s) for m in self.machines]
        try:
            self.cluster.gather_from(self.machines, "its island processes stopped", asked)
        except ExperimentError as err:
            log.error("%s", err)
        finally:
            if running:
                self._fetch_logs()
            self.leaders = []
