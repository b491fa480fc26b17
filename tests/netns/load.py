"""Busy loops beside a test, counted with the work already on the machine.

A test that means "the machine this busy" adds only the loops other work does not already
stand for: on a CI machine that runs the suite beside a busy loop of its own, that loop is one
of them, so the machine is as busy as the test means and not busier (a run's machine check
would otherwise see one core more than the test was written for).
"""

from __future__ import annotations

import time

from controller.runner.probes import cpu_seconds
from innet.cpuload import CpuHogs


def others_busy_cores(span_s: float = 2.0) -> float:
    """The cores other work keeps busy now, over `span_s` (as the machine check counts them)."""
    everyone, own = cpu_seconds()
    time.sleep(span_s)  # a measuring window, not a wait for readiness
    everyone_after, own_after = cpu_seconds()
    return max(0.0, (everyone_after - everyone) - (own_after - own)) / span_s


def loops_to_add(loops: int, busy_cores: float) -> int:
    """How many busy loops bring `busy_cores` of other work up to `loops` (a core's worth of
    other work counts as one loop; half a core or more rounds up).

    >>> loops_to_add(2, 0.0), loops_to_add(2, 0.98), loops_to_add(2, 0.3), loops_to_add(1, 1.6)
    (2, 1, 2, 0)
    """
    return max(0, loops - int(busy_cores + 0.5))


def topped_up(loops: int) -> tuple[CpuHogs, float]:
    """Busy loops (not yet started) that bring the other work on this machine up to `loops`
    cores, and the other work measured before them."""
    busy = others_busy_cores()
    return CpuHogs(loops_to_add(loops, busy)), busy
