"""The run directory of an innet service: its recorded state, and `clean` that undoes a run.

    <run dir>/state.json     service PID, API address, every process and interface it created
    <run dir>/service.log    the service's log
    <run dir>/switches/      p4switch control sockets and logs

The run directory is `--run-dir`, else `$INNET_RUN_DIR`, else `/run/innet` for root and
`$XDG_RUNTIME_DIR/innet` for others. `clean` signals exactly the recorded PIDs whose command
line is still the recorded one (a reused PID is left alone), deletes the recorded interfaces
that still exist, and removes the state file; run twice, the second run finds nothing to do.
"""

from __future__ import annotations

import json
import logging
import os
import signal
import subprocess
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)

STATE_FILE = "state.json"
STOP_GRACE_S = 5.0


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


def read_state(run_dir: Path) -> dict[str, Any] | None:
    try:
        return json.loads((run_dir / STATE_FILE).read_text())
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as err:
        raise RuntimeError(f"cannot read {run_dir / STATE_FILE}: {err}") from err


def write_state(run_dir: Path, state: dict[str, Any]) -> None:
    """Replace the state file atomically (a reader never sees half of it)."""
    run_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
    tmp = run_dir / f".{STATE_FILE}.{os.getpid()}"
    tmp.write_text(json.dumps(state, indent=2))
    tmp.replace(run_dir / STATE_FILE)


def occupied(run_dir: Path) -> str | None:
    """Why `run_dir` cannot take a new testbed (one runs there, or a crash left its state)."""
    state = read_state(run_dir)
    if state is None:
        return None
    owner = state.get("service", {"pid": -1})
    if same_process(owner):
        return (
            f"an innet {owner.get('role', 'service')} already runs (PID {owner['pid']}) "
            f"with run directory {run_dir}: 'innet net down' first, or wait for it to end"
        )
    return f"{run_dir / STATE_FILE} is left from an earlier run: 'innet clean' first"


def cmdline(pid: int) -> list[str] | None:
    """A process's argument list from /proc, None when it is gone."""
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return None
    return [a.decode(errors="replace") for a in raw.split(b"\0") if a] or None


def same_process(entry: dict[str, Any]) -> bool:
    """True when the recorded PID still runs the recorded command line."""
    now = cmdline(int(entry["pid"]))
    return now is not None and (entry.get("cmdline") is None or now == entry["cmdline"])


def recorded_processes(state: dict[str, Any]) -> list[dict[str, Any]]:
    procs = list(state.get("network", {}).get("processes", []))
    procs += state.get("experiment", {}).get("processes", [])
    if "service" in state:
        procs.insert(0, state["service"])
    return procs


def wait_gone(pids: list[int], deadline: float, alive: Callable[[int], bool]) -> list[int]:
    """Poll until none of `pids` is alive or the deadline passes; returns those still alive."""
    left = [p for p in pids if alive(p)]
    while left and time.monotonic() < deadline:
        time.sleep(0.05)  # polling interval while processes exit
        left = [p for p in left if alive(p)]
    return left


def clean(run_dir: Path) -> list[str]:
    """Stop the recorded processes, delete the recorded interfaces, remove the state file.

    Returns one line per thing done (empty when nothing was left)."""
    state = read_state(run_dir)
    if state is None:
        return []
    done: list[str] = []
    procs = [p for p in recorded_processes(state) if same_process(p)]
    by_pid = {int(p["pid"]): p for p in procs}
    for pid, entry in by_pid.items():
        try:
            os.kill(pid, signal.SIGTERM)
            done.append(f"sent SIGTERM to {entry.get('role', 'process')} (PID {pid})")
        except ProcessLookupError:
            pass

    def alive(pid: int) -> bool:
        return same_process(by_pid[pid])

    stubborn = wait_gone(list(by_pid), time.monotonic() + STOP_GRACE_S, alive)
    for pid in stubborn:
        try:
            os.kill(pid, signal.SIGKILL)
            done.append(f"sent SIGKILL to {by_pid[pid].get('role', 'process')} (PID {pid})")
        except ProcessLookupError:
            pass
    wait_gone(stubborn, time.monotonic() + STOP_GRACE_S, alive)
    for name in state.get("network", {}).get("interfaces", []):
        if Path("/sys/class/net", name).exists():
            result = subprocess.run(["ip", "link", "del", name], capture_output=True, text=True)
            if result.returncode == 0:
                done.append(f"deleted interface {name}")
            elif Path("/sys/class/net", name).exists():
                done.append(f"could not delete interface {name}: {result.stderr.strip()}")
    (run_dir / STATE_FILE).unlink(missing_ok=True)
    done.append(f"removed {run_dir / STATE_FILE}")
    return done
