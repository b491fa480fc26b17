"""What the python switch's I/O loop waits on: its ports' sockets and a wake-up pipe.

`Readiness(fds)` waits up to a timeout for any of `fds` to be readable and returns those that
are; `wake()`, from any thread, ends a wait at once through a `WakePipe` (its bytes are drained
here, never returned; the native loop waits on a `WakePipe` of its own, in C). select() sleeps
to within tens of microseconds of its timeout, poll() only to whole milliseconds (rounded up),
which would make every shaped frame up to 1 ms late: select() is used unless a descriptor is
too large for it.
"""

from __future__ import annotations

import os
import select
from collections.abc import Callable, Sequence

FD_SETSIZE = 1024  # select() handles descriptors below this


class WakePipe:
    """A non-blocking pipe whose write end wakes whoever waits on its read end (`read_fd`)."""

    def __init__(self) -> None:
        self.read_fd, self._write_fd = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
        self._closed = False

    def wake(self) -> None:
        """Safe from any thread, and after `close` (then it does nothing)."""
        if self._closed:
            return  # the descriptor may be another file's by now
        try:
            os.write(self._write_fd, b"\0")
        except BlockingIOError:
            pass  # the pipe is full: the waiter is awake already
        except OSError:
            pass  # closed meanwhile: nothing to wake

    def drain(self) -> None:
        try:
            while os.read(self.read_fd, 4096):
                pass
        except BlockingIOError:
            pass

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            os.close(self.read_fd)
            os.close(self._write_fd)


class Readiness:
    """Waits for readable descriptors, or for `wake`."""

    def __init__(self, fds: Sequence[int]) -> None:
        self._pipe = WakePipe()
        self._wait = _waiter([*fds, self._pipe.read_fd])

    def wait(self, timeout: float) -> list[int]:
        """The descriptors readable within `timeout` s ([] once woken or timed out)."""
        ready = self._wait(timeout)
        if self._pipe.read_fd in ready:
            self._pipe.drain()
            ready = [fd for fd in ready if fd != self._pipe.read_fd]
        return ready

    def wake(self) -> None:
        """End the current (or next) wait at once; safe from any thread, and after `close`."""
        self._pipe.wake()

    def close(self) -> None:
        self._pipe.close()


def _waiter(fds: list[int]) -> Callable[[float], list[int]]:
    if max(fds) < FD_SETSIZE:
        no_fds: list[int] = []
        return lambda timeout: select.select(fds, no_fds, no_fds, timeout)[0]
    poller = select.poll()
    for fd in fds:
        poller.register(fd, select.POLLIN)
    return lambda timeout: [fd for fd, _ in poller.poll(timeout * 1000)]
