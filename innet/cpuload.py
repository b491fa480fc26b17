"""Busy loops that share the CPU with an emulation, for tests and benchmarks of a busy machine.

`CpuHogs(n)` starts n processes that spin on the CPU (each a Python busy loop, as another
user's job would), remembers their PIDs and stops exactly those. Used as a context manager:

    >>> with CpuHogs(1) as hogs:
    ...     len(hogs.pids)
    1
    >>> hogs.pids
    ()

Nothing here is used by an experiment itself: innet's own runs never start hogs.
"""

from __future__ import annotations

import subprocess
import sys
from types import TracebackType

from innet.exceptions import InnetError

BUSY_LOOP = "while True: pass"
STOP_TIMEOUT_S = 5.0


class CpuLoadError(InnetError):
    """Busy loops that could not be started."""


class CpuHogs:
    """n busy-loop processes, started on entry and stopped (SIGTERM, then SIGKILL) on exit."""

    def __init__(self, n: int) -> None:
        if isinstance(n, bool) or not isinstance(n, int) or n < 0:
            raise CpuLoadError(f"the number of busy loops must be a whole number >= 0, not {n!r}")
        self.n = n
        self._procs: list[subprocess.Popen[bytes]] = []

    @property
    def pids(self) -> tuple[int, ...]:
        return tuple(p.pid for p in self._procs)

    def start(self) -> CpuHogs:
        try:
            for _ in range(self.n):
                self._procs.append(subprocess.Popen([sys.executable, "-c", BUSY_LOOP]))
        except OSError as err:
            self.stop()
            raise CpuLoadError(f"cannot start a busy loop: {err}") from err
        return self

    def stop(self) -> None:
        for proc in self._procs:
            proc.terminate()
        for proc in self._procs:
            try:
                proc.wait(STOP_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        self._procs.clear()

    def __enter__(self) -> CpuHogs:
        return self.start()

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        self.stop()
