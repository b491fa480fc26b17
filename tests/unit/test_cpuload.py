"""Busy loops for tests of a busy machine: started, counted, and stopped by PID."""

from __future__ import annotations

import os

import pytest

from innet.cpuload import CpuHogs, CpuLoadError


def test_hogs_run_while_entered_and_are_gone_after() -> None:
    with CpuHogs(2) as hogs:
        pids = hogs.pids
        assert len(pids) == 2
        for pid in pids:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                assert b"while True: pass" in f.read()
    assert hogs.pids == ()
    for pid in pids:
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)


@pytest.mark.parametrize("n", [-1, 1.5, True, "2"])
def test_a_bad_count_is_refused(n: object) -> None:
    with pytest.raises(CpuLoadError, match="whole number"):
        CpuHogs(n)  # type: ignore[arg-type]
