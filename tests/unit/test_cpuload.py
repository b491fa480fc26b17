"""Busy loops for tests of a busy machine: started, counted, and stopped by PID."""

from __future__ import annotations

import os
import time

import pytest

from innet.cpuload import CpuHogs, CpuLoadError

HANG_S = 60.0  # hang guard: no duration is asserted


def command_line(pid: int) -> bytes:
    """The process's arguments once the kernel shows them. Popen returns as soon as the exec
    has begun (its error pipe closes then), and /proc/PID/cmdline reads empty until the new
    image's arguments are in place: on a busy machine, a while later."""
    deadline = time.monotonic() + HANG_S
    while True:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            found = f.read()
        if found or time.monotonic() > deadline:
            return found
        time.sleep(0.01)  # polling interval


def test_hogs_run_while_entered_and_are_gone_after() -> None:
    with CpuHogs(2) as hogs:
        pids = hogs.pids
        assert len(pids) == 2
        for pid in pids:
            assert b"while True: pass" in command_line(pid)
            os.kill(pid, 0)  # still running: the loop does not end
    assert hogs.pids == ()
    for pid in pids:
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)


@pytest.mark.parametrize("n", [-1, 1.5, True, "2"])
def test_a_bad_count_is_refused(n: object) -> None:
    with pytest.raises(CpuLoadError, match="whole number"):
        CpuHogs(n)  # type: ignore[arg-type]
