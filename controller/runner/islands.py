"""The island processes of one experiment: one per Mininet host, the leaders on pipes.

`Islands` starts `python -m workers.island` in every host of a network (host 1 of each island is
its leader, with its stdin and stdout on pipes; the others log to files), sends the leaders
commands, collects their events with a deadline and names the islands that did not answer, and
stops exactly the processes it started. Commands and events are workers/protocol.py's messages.
"""

from __future__ import annotations

import abc
import contextlib
import logging
import queue
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, Protocol, TypeVar

from mininet.node import Host

from controller.rundir import ProcessRecord
from controller.runner.exceptions import ExperimentError
from innet.stopping import hurried, interrupted
from topo.siteplan import LEADER_HOST
from workers.exceptions import ProtocolError
from workers.protocol import Command, Event, Failed, Refused, Stop, decode_event, encode

log = logging.getLogger(__name__)

E = TypeVar("E", bound=Event)
P = TypeVar("P", bound="subprocess.Popen[Any]")  # a process, text or bytes
POLL_S = 0.01  # polling interval of the leaders' event queues
STOP_GRACE_S = 5.0  # the processes end on their own (leaders told to stop) within this
KILL_AFTER_S = 2.0  # ... and after SIGTERM within this, else SIGKILL


@dataclass(frozen=True, slots=True)
class Exited:
    """The leader's stdout closed: it is gone (the runner's own marker, not a message);
    `status` its exit status where the one who saw it go knows it (a leader on another
    machine), else read from the process."""

    status: int | None = None


@dataclass
class IslandProcess:
    island: int
    name: str  # the island's city
    host: int
    proc: subprocess.Popen[str]
    events: queue.Queue[Event | Exited] = field(default_factory=queue.Queue)

    @property
    def role(self) -> str:
        return f"--island {self.island} --host {self.host}"

    def exit_status(self) -> int | None:
        return self.proc.wait()

    def send(self, command: Command) -> None:
        assert self.proc.stdin is not None
        try:
            self.proc.stdin.write(encode(command) + "\n")
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
                self.events.put(decode_event(line))
            except ProtocolError as err:
                log.warning("island %s said %r (%s)", self.name, line.rstrip(), err)
        self.events.put(Exited())


class LeaderChannel(Protocol):
    """One island's leader as the runner talks to it: commands in, events out."""

    island: int
    name: str  # the island's city
    events: queue.Queue[Event | Exited]

    def send(self, command: Command) -> None: ...

    def exit_status(self) -> int | None:
        """Once it is gone (an Exited event came): its exit status, where known."""
        ...


class LeaderEvents(abc.ABC):
    """Commands to every leader and their events collected by a deadline, whatever carries
    them (pipes here, a cluster's agents in controller/cluster/islands.py).

    `clock` (Unix seconds) is what the deadlines of `expect` are read on, and `sleep` how it
    waits between polls: a test passes a simulated clock and a sleep that advances it."""

    leaders: Sequence[LeaderChannel]
    names: tuple[str, ...]
    clock: Callable[[], float]
    sleep: Callable[[float], None]

    @abc.abstractmethod
    def where_logs_are(self, leader: LeaderChannel) -> str:
        """Where a gone leader's log is, for the error that says it is gone."""

    @abc.abstractmethod
    def start(self) -> None:
        """Start every island's processes."""

    @abc.abstractmethod
    def stop(self, grace_s: float | None = None) -> None:
        """Stop every process started (the leaders told to stop, `grace_s` to end)."""

    @abc.abstractmethod
    def record(self) -> list[ProcessRecord]:
        """The processes started, for the run directory's state (`innet clean`)."""

    def expect(self, kind: type[E], deadline: float, what: str) -> dict[int, E | Failed]:
        """Every leader's next event of `kind` (or Failed), by `deadline` (on `clock`); else
        name who did not answer, at the first poll after it.

        A Refused event (a command the leader could not read) fails the run: it is a bug."""
        got: dict[int, E | Failed] = {}
        while len(got) < len(self.leaders):
            for leader in self.leaders:
                if leader.island not in got:
                    event = self._next(leader, what)
                    if isinstance(event, (kind, Failed)):
                        got[leader.island] = event
            if len(got) < len(self.leaders):
                if self.clock() > deadline:
                    missing = [self.names[p.island] for p in self.leaders if p.island not in got]
                    raise ExperimentError(
                        f"{what}: no answer from island(s) {', '.join(missing)} by the deadline"
                    )
                self.sleep(POLL_S)
        return got

    def _next(self, leader: LeaderChannel, what: str) -> Event | None:
        try:
            event = leader.events.get_nowait()
        except queue.Empty:
            return None
        if isinstance(event, Exited):
            code = event.status if event.status is not None else leader.exit_status()
            raise ExperimentError(
                f"island {leader.name}: its leader exited (status {code}) during {what}; "
                f"see {self.where_logs_are(leader)}"
            )
        if isinstance(event, Refused):
            raise ExperimentError(f"island {leader.name} refused a command: {event.error}")
        return event

    def broadcast(self, command: Command) -> None:
        for leader in self.leaders:
            leader.send(command)


class Islands(LeaderEvents):
    """The island processes of one network: leaders with pipes, the other hosts beside them.

    `hosts` are per island, of the islands `cities` (the WAN's city numbers; default 0, 1, ...
    as many as `hosts`): a machine of a cluster runs its own cities' islands."""

    def __init__(
        self,
        hosts: Sequence[Sequence[Host]],
        names: tuple[str, ...],
        config: Path,
        logs: Path,
        *,
        cities: Sequence[int] | None = None,
        clock: Callable[[], float] = time.time,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.hosts, self.names, self.config, self.logs = hosts, names, config, logs
        self.cities = tuple(range(len(hosts)) if cities is None else cities)
        self.clock, self.sleep = clock, sleep
        self.leaders: list[IslandProcess] = []
        self.others: list[IslandProcess] = []  # hosts but the leaders: no pipes, their logs
        self._files: list[IO[str]] = []

    def where_logs_are(self, leader: LeaderChannel) -> str:
        return str(self.logs)

    def argv(self, island: int, host: int) -> list[str]:
        return [
            sys.executable,
            "-m",
            "workers.island",
            str(self.config),
            "--island",
            str(island),
            "--host",
            str(host),
        ]

    def start(self) -> None:
        self.logs.mkdir(parents=True, exist_ok=True)
        for u, hosts in zip(self.cities, self.hosts, strict=True):
            for k, host in enumerate(hosts, start=1):
                err = open(self.logs / f"{host.name}.log", "a")  # noqa: SIM115 (closed in stop)
                self._files.append(err)
                if k == LEADER_HOST:
                    pipes = {"stdin": subprocess.PIPE, "stdout": subprocess.PIPE}
                    proc = host.popen(self.argv(u, k), **pipes, stderr=err, text=True, bufsize=1)
                    leader = IslandProcess(u, self.names[u], k, proc)
                    threading.Thread(target=leader.read_events, daemon=True).start()
                    self.leaders.append(leader)
                else:
                    proc = host.popen(self.argv(u, k), stdout=err, stderr=err, text=True)
                    self.others.append(IslandProcess(u, self.names[u], k, proc))

    @property
    def processes(self) -> list[subprocess.Popen[str]]:
        return [p.proc for p in [*self.leaders, *self.others]]

    def record(self) -> list[ProcessRecord]:
        """Every process started, for the run directory's state (and `innet clean`): leaders
        first, then the other hosts, each in city order."""
        started = [*self.leaders, *self.others]
        return [ProcessRecord.of(f"island process {p.role}", p.proc.pid) for p in started]

    def stop(self, grace_s: float | None = None) -> None:
        """Stop every process this object started (by PID), then close the log files.

        The leaders are told to stop and every process gets `grace_s` (default STOP_GRACE_S)
        to end, all together; then those left get SIGTERM and KILL_AFTER_S more, then SIGKILL.
        With `grace_s` 0 (an interrupted run) they get SIGTERM at once; a stop signal during
        the grace ends it (innet/stopping.py), a second one the wait after SIGTERM."""
        grace = STOP_GRACE_S if grace_s is None else grace_s
        if grace > 0:
            for leader in self.leaders:
                if leader.proc.poll() is None:
                    with contextlib.suppress(ExperimentError):
                        leader.send(Stop())
            wait_all(self.processes, time.monotonic() + grace, interrupted)
        left = [p for p in self.processes if p.poll() is None]
        for proc in left:
            proc.terminate()
        left = wait_all(left, time.monotonic() + KILL_AFTER_S, hurried)
        for proc in left:
            proc.kill()
        for proc in left:
            proc.wait()
        for f in self._files:
            f.close()
        self.leaders, self.others, self._files = [], [], []


def wait_all(procs: Sequence[P], deadline: float, enough: Callable[[], bool]) -> list[P]:
    """Wait for every process until `deadline` (time.monotonic()) or until `enough()`; those
    still running."""
    left = [p for p in procs if p.poll() is None]
    while left and time.monotonic() < deadline and not enough():
        time.sleep(POLL_S)  # polling interval while the processes end
        left = [p for p in left if p.poll() is None]
    return left
