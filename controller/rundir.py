"""The run directory of an innet process: its recorded state, and `clean` that undoes a run.

    <run dir>/state.json     the owner's PID, API address, every process and interface it created
    <run dir>/service.log    the service's log
    <run dir>/switches/      p4switch control sockets and logs

The run directory is `--run-dir`, else `$INNET_RUN_DIR`, else `/run/innet` for root and
`$XDG_RUNTIME_DIR/innet` for others. One process owns it at a time (`RunDir.claim`): the testbed
service or an `innet run`. `clean` signals exactly the recorded PIDs whose command line is still
the recorded one (a reused PID is left alone), deletes the recorded interfaces that still exist,
and removes the state file; run twice, the second run finds nothing to do.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import logging
import os
import signal
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from controller.exceptions import RunDirError
from innet.jsontypes import JSONObject

log = logging.getLogger(__name__)

STATE_FILE = "state.json"
STOP_GRACE_S = 5.0
OWNER_GRACE_S = 30.0  # a service tears its testbed down on SIGTERM: switches, hosts, Mininet


def default_run_dir() -> Path:
    env = os.environ.get("INNET_RUN_DIR")
    if env:
        return Path(env)
    if os.geteuid() == 0:
        return Path("/run/innet")
    runtime = os.environ.get("XDG_RUNTIME_DIR")
    if runtime:
        return Path(runtime, "innet")
    return Path(tempfile.gettempdir(), f"innet-{os.getuid()}")


def cmdline(pid: int) -> tuple[str, ...] | None:
    """A process's argument list from /proc, None when it is gone."""
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return None
    return tuple(a.decode(errors="replace") for a in raw.split(b"\0") if a) or None


# --- what the state file records ----------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ProcessRecord:
    """A process innet started: what it is, its PID, and its command line when recorded."""

    role: str
    pid: int
    cmdline: tuple[str, ...] | None

    @classmethod
    def of(cls, role: str, pid: int) -> ProcessRecord:
        return cls(role, pid, cmdline(pid))

    def running(self) -> bool:
        """True when the recorded PID still runs the recorded command line."""
        now = cmdline(self.pid)
        return now is not None and (self.cmdline is None or now == self.cmdline)

    def to_json(self) -> JSONObject:
        return {
            "role": self.role,
            "pid": self.pid,
            "cmdline": None if self.cmdline is None else list(self.cmdline),
        }

    @classmethod
    def from_json(cls, data: Any) -> ProcessRecord:
        line = data.get("cmdline")
        return cls(
            str(data.get("role", "process")),
            int(data["pid"]),
            None if line is None else tuple(str(a) for a in line),
        )


@dataclass(frozen=True, slots=True)
class NetworkRecord:
    """What an emulated network created: its processes, root-namespace interfaces, work dir."""

    processes: tuple[ProcessRecord, ...]
    interfaces: tuple[str, ...]
    workdir: str

    def to_json(self) -> JSONObject:
        return {
            "processes": [p.to_json() for p in self.processes],
            "interfaces": list(self.interfaces),
            "workdir": self.workdir,
        }

    @classmethod
    def from_json(cls, data: Any) -> NetworkRecord:
        return cls(
            tuple(ProcessRecord.from_json(p) for p in data.get("processes", [])),
            tuple(str(i) for i in data.get("interfaces", [])),
            str(data.get("workdir", "")),
        )


@dataclass(frozen=True, slots=True)
class RunState:
    """The state file: who owns the run directory, and everything it started."""

    owner: ProcessRecord  # "service" in the file: the testbed service or an innet run
    status: str  # building, serving, running
    api: str | None = None  # the service's REST API
    token_file: str | None = None
    topology: str | None = None  # the WAN file the service was started with (None: built-in)
    network: NetworkRecord | None = None
    experiment: tuple[ProcessRecord, ...] = ()  # island processes of the running experiment

    def processes(self) -> list[ProcessRecord]:
        """Every recorded process, the owner first."""
        network = self.network.processes if self.network is not None else ()
        return [self.owner, *network, *self.experiment]

    def to_json(self) -> JSONObject:
        out: JSONObject = {"service": self.owner.to_json(), "status": self.status}
        for key in ("api", "token_file", "topology"):
            value = getattr(self, key)
            if value is not None:
                out[key] = value
        if self.network is not None:
            out["network"] = self.network.to_json()
        out["experiment"] = {"processes": [p.to_json() for p in self.experiment]}
        return out

    @classmethod
    def from_json(cls, data: Any) -> RunState:
        network = data.get("network")
        experiment = data.get("experiment", {}).get("processes", [])
        return cls(
            owner=ProcessRecord.from_json(data["service"]),
            status=str(data.get("status", "")),
            api=data.get("api"),
            token_file=data.get("token_file"),
            topology=data.get("topology"),
            network=None if network is None else NetworkRecord.from_json(network),
            experiment=tuple(ProcessRecord.from_json(p) for p in experiment),
        )


# --- the directory --------------------------------------------------------------------------------


class RunDir:
    """One run directory: read its state, claim it for this process, record, release, clean."""

    def __init__(self, path: Path | None = None) -> None:
        self.path = (path or default_run_dir()).resolve()
        self.state_file = self.path / STATE_FILE
        self.state: RunState | None = None  # this process's, once claimed
        self._lock = threading.Lock()

    def read(self) -> RunState | None:
        """The recorded state (None without a state file); RunDirError if it is unreadable."""
        try:
            data = json.loads(self.state_file.read_text())
            return RunState.from_json(data)
        except FileNotFoundError:
            return None
        except (OSError, ValueError, KeyError, TypeError, AttributeError) as err:
            raise RunDirError(
                f"cannot read {self.state_file}: {err}; 'innet clean' cannot use it either: "
                "stop what it lists by hand, then delete it"
            ) from err

    def running_owner(self) -> RunState | None:
        """The recorded state if its owner still runs, else None."""
        state = self.read()
        return state if state is not None and state.owner.running() else None

    def occupied(self) -> str | None:
        """Why this directory cannot take a new testbed (one runs there, or a crash left its
        state), or None when it can."""
        state = self.read()
        if state is None:
            return None
        if state.owner.running():
            return (
                f"an innet {state.owner.role} already runs (PID {state.owner.pid}) "
                f"with run directory {self.path}: 'innet net down' first, or wait for it to end"
            )
        return f"{self.state_file} is left from an earlier run: 'innet clean' first"

    def claim(
        self,
        role: str,
        status: str,
        *,
        api: str | None = None,
        token_file: str | None = None,
        topology: str | None = None,
    ) -> RunState:
        """Record this process as the owner; RunDirError if another owns it or left state."""
        busy = self.occupied()
        if busy is not None:
            raise RunDirError(busy)
        owner = ProcessRecord.of(role, os.getpid())
        state = RunState(owner, status, api=api, token_file=token_file, topology=topology)
        self._write(state)
        return state

    def update(
        self,
        *,
        status: str | None = None,
        network: NetworkRecord | None = None,
        experiment: tuple[ProcessRecord, ...] | None = None,
    ) -> RunState:
        """Change this process's state (the fields given) and write it (any thread)."""
        with self._lock:
            if self.state is None:
                raise RunDirError(f"{self.path} is not claimed by this process")
            state = dataclasses.replace(
                self.state,
                status=self.state.status if status is None else status,
                network=self.state.network if network is None else network,
                experiment=self.state.experiment if experiment is None else experiment,
            )
            self._write(state)
            return state

    def release(self) -> None:
        """Remove the state file (what it listed has been stopped)."""
        with self._lock:
            self.state = None
            self.state_file.unlink(missing_ok=True)

    def _write(self, state: RunState) -> None:
        """Replace the state file atomically (a reader never sees half of it)."""
        self.path.mkdir(parents=True, exist_ok=True, mode=0o700)
        tmp = self.path / f".{STATE_FILE}.{os.getpid()}"
        tmp.write_text(json.dumps(state.to_json(), indent=2))
        tmp.replace(self.state_file)
        self.state = state

    def clean(self) -> list[str]:
        """Stop the recorded processes, delete the recorded interfaces, remove the state file.

        Returns one line per thing done (empty when nothing was left)."""
        state = self.read()
        if state is None:
            return []
        # The owner first, alone: a live service tears its own testbed down on SIGTERM, and
        # its watchdog would restart switches killed beside it (new PIDs this read misses).
        owner = {state.owner.pid: state.owner} if state.owner.running() else {}
        done = self._stop(owner, OWNER_GRACE_S)
        later = self.read() or state  # what the owner recorded until it stopped
        processes = {p.pid: p for s in (state, later) for p in s.processes()[1:]}
        done += self._stop({pid: p for pid, p in processes.items() if p.running()})
        interfaces = {*_interfaces(state), *_interfaces(later)}
        done += _delete_interfaces(sorted(interfaces))
        self.state_file.unlink(missing_ok=True)
        done.append(f"removed {self.state_file}")
        return done

    @staticmethod
    def _stop(by_pid: dict[int, ProcessRecord], grace: float = STOP_GRACE_S) -> list[str]:
        """SIGTERM these processes, SIGKILL those still there after `grace` seconds."""
        done = _signal(by_pid, signal.SIGTERM)

        def alive(pid: int) -> bool:
            return by_pid[pid].running()

        stubborn = wait_gone(list(by_pid), time.monotonic() + grace, alive)
        done += _signal({pid: by_pid[pid] for pid in stubborn}, signal.SIGKILL)
        wait_gone(stubborn, time.monotonic() + STOP_GRACE_S, alive)
        return done


def _interfaces(state: RunState) -> tuple[str, ...]:
    return state.network.interfaces if state.network is not None else ()


def terminate(processes: Iterable[ProcessRecord]) -> None:
    """SIGTERM to each of these processes that still runs (the same process, not its PID
    reused)."""
    for process in processes:
        if process.running():
            with contextlib.suppress(ProcessLookupError):
                os.kill(process.pid, signal.SIGTERM)


def _signal(processes: dict[int, ProcessRecord], signum: signal.Signals) -> list[str]:
    done = []
    for pid, entry in processes.items():
        try:
            os.kill(pid, signum)
            done.append(f"sent {signum.name} to {entry.role} (PID {pid})")
        except ProcessLookupError:
            pass
    return done


def _delete_interfaces(names: Sequence[str]) -> list[str]:
    done = []
    for name in names:
        if Path("/sys/class/net", name).exists():
            result = subprocess.run(["ip", "link", "del", name], capture_output=True, text=True)
            if result.returncode == 0:
                done.append(f"deleted interface {name}")
            elif Path("/sys/class/net", name).exists():
                done.append(f"could not delete interface {name}: {result.stderr.strip()}")
    return done


def wait_gone(pids: list[int], deadline: float, alive: Callable[[int], bool]) -> list[int]:
    """Poll until none of `pids` is alive or the deadline passes; returns those still alive."""
    left = [p for p in pids if alive(p)]
    while left and time.monotonic() < deadline:
        time.sleep(0.05)  # polling interval while processes exit
        left = [p for p in left if alive(p)]
    return left
