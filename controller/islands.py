"""The island processes of one experiment: one per Mininet host, the leaders on pipes.

`Islands` starts `python -m workers.island` in every host of a network (host 1 of each island is
its leader, with its stdin and stdout on pipes; the others log to files), sends the leaders JSON
commands, collects their JSON events with a deadline and names the islands that did not answer,
and stops exactly the processes it started.
"""

from __future__ import annotations

import contextlib
import json
import logging
import queue
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from controller.rundir import cmdline

log = logging.getLogger(__name__)


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
