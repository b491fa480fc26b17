"""A P4Runtime switch process this program started: connect once it answers, stop it by its PID.

`connect_started` polls the process and its unix-domain socket until the server answers (a
gRPC channel to a missing socket backs off for a second), raising `SwitchStartFailed` with the
tail of the switch's log if the process exits or the deadline passes. Used by the machine
check's BMv2 measurement and by the forwarding benchmark's BMv2 rows.
"""

from __future__ import annotations

import subprocess
import time
from pathlib import Path
from typing import Any

from controller.p4rt.connection import SwitchConnection
from controller.p4rt.exceptions import P4RuntimeError

STOP_GRACE_S = 5.0


class SwitchStartFailed(P4RuntimeError):
    """The started switch exited, or did not answer over P4Runtime in time."""


def connect_started(
    proc: subprocess.Popen[bytes], address: str, device_id: int, log_path: Path, startup_s: float
) -> SwitchConnection:
    """A connection to the switch `proc` serving P4Runtime at `address` (`unix:PATH`)."""
    deadline = time.monotonic() + startup_s
    socket_path = Path(address.removeprefix("unix:"))
    while True:
        if proc.poll() is not None:
            raise SwitchStartFailed(
                f"the switch exited with status {proc.returncode}: {log_tail(log_path)}"
            )
        if socket_path.exists():
            conn = SwitchConnection("started", address, device_id)
            try:
                conn.connect(min(deadline, time.monotonic() + 1.0))
                return conn
            except P4RuntimeError:
                pass
        if time.monotonic() > deadline:
            raise SwitchStartFailed(
                f"no P4Runtime answer at {address} in {startup_s:.0f} s: {log_tail(log_path)}"
            )
        time.sleep(0.05)  # polling the process and its socket, with a deadline


def stop_started(proc: subprocess.Popen[Any], grace_s: float = STOP_GRACE_S) -> None:
    """SIGTERM, SIGKILL after `grace_s`, and wait (its CPU time then counts as a child's)."""
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(grace_s)
        except subprocess.TimeoutExpired:
            proc.kill()
    proc.wait()


def log_tail(log_path: Path, lines: int = 5) -> str:
    """The last `lines` lines of a log, on one line."""
    try:
        text = log_path.read_text(errors="replace").strip().splitlines()
    except OSError:
        return "(no log)"
    return " | ".join(text[-lines:]) or "(empty log)"
