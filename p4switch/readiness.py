"""What the python switch's I/O loop waits on: its ports' sockets and a wake-up pipe.

`Readiness(fds)` waits up to a timeout for any of `fds` to be readable and returns those that
are; `wake()`, from any thread, ends a wait at once (the pipe's bytes are drained here, never
returned). select() sleeps to within tens of microseconds of its timeout, poll() only to whole
milliseconds (rounded up), which would make every shaped frame up to 1 ms late: select() is used
unless a descriptor is too large for it.
"""

from __future__ import annotations

import os
import select
from collections.abc import Callable, Sequence

FD_SETSIZE = 1024  # select() handles descriptors below this


class Readiness:
    """Waits for readable descriptors, or for `wake`."""

    def __init__(self, fds: Sequence[int]) -> None:
        self._wake_r, self._wake_w = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
        self._wait = _waiter([*fds, self._wake_r])

    def wait(self, timeout: float) -> list[int]:
        """The descriptors readable within `timeout` s ([] once woken or timed out)."""
        ready = self._wait(timeout)
        if self._wake_r in ready:
            self._drain_wake()
            ready = [fd for fd in ready if fd != self._wake_r]
        return ready

    def wake(self) -> None:
        """End the current (or next) wait at once; safe from any thread, and after `close`."""
        try:
            os.write(self._wake_w, b"\0")
        except BlockingIOError:
            pass  # the pipe is full: the waiter is awake already
        except OSError:
            pass  # closed: nothing to wake

    def close(self) -> None:
        os.close(self._wake_r)
        os.close(self._wake_w)

    def _drain_wake(self) -> None:
        try:
            while os.read(self._wake_r, 4096):
                pass
        except BlockingIOError:
            pass


def _waiter(fds: list[int]) -> Callable[[float], list[int]]:
    if max(fds) < FD_SETSIZE:
        no_fds: list[int] = []
        return lambda timeout: select.select(fds, no_fds, no_fds, timeout)[0]
    poller = select.poll()
    for fd in fds:
        poller.register(fd, select.POLLIN)
    return lambda timeout: [fd for fd, _ in poller.poll(timeout * 1000)]
