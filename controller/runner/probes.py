"""What this machine gives a run now, as the machine check (controller/runner/calibration.py)
probes it: how late short sleeps wake, the share of a core a busy loop gets, the CPU time other
processes take, the cores this process may use.

    >>> 0 <= cpu_share(0.01) <= 1.5 and cores() >= 1
    True
"""

from __future__ import annotations

import os
import time
from pathlib import Path

TIMER_SLEEP_S = 0.001  # one short sleep, as a paced sender's
TIMER_SPAN_S = 0.3  # sleeping that long in all
CPU_SPAN_S = 0.15  # the busy loop


def timer_lateness(span_s: float = TIMER_SPAN_S, sleep_s: float = TIMER_SLEEP_S) -> list[float]:
    """How late each of many `sleep_s` sleeps woke, in seconds, over `span_s`."""
    late: list[float] = []
    end = time.perf_counter() + span_s
    while (start := time.perf_counter()) < end:
        time.sleep(sleep_s)  # the sleep whose lateness is measured
        late.append(max(0.0, time.perf_counter() - start - sleep_s))
    return late


def cpu_share(span_s: float = CPU_SPAN_S) -> float:
    """This thread's CPU time over wall time in a busy loop of `span_s`."""
    wall, cpu = time.perf_counter(), time.thread_time()
    while time.perf_counter() - wall < span_s:
        pass
    return (time.thread_time() - cpu) / (time.perf_counter() - wall)


def cpu_seconds() -> tuple[float, float]:
    """(CPU seconds every process has used on this machine, those this process and its waited
    children have), since boot: their difference over an interval is the other work's."""
    fields = Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]
    user, nice, system, _idle, _iowait, irq, softirq, steal = (int(x) for x in fields[:8])
    everyone = (user + nice + system + irq + softirq + steal) / os.sysconf("SC_CLK_TCK")
    own = os.times()
    return everyone, own.user + own.system + own.children_user + own.children_system


def cores() -> int:
    """The cores this process may run on."""
    return len(os.sched_getaffinity(0))
