"""Client deadlines in the P4Runtime server: refuse work whose deadline has passed.

A deadline is an instant on the server's clock (`time.monotonic()` unless the server was given
another; the service turns the client's gRPC deadline into one), or None for none.
`check_deadline` refuses with DEADLINE_EXCEEDED once the clock has reached it; `acquired` takes
a lock for at most the time left and checks again once it is held, so a request that waited for
the lock past its deadline does nothing at all. The clock alone says when a deadline has
passed: a lock is waited for in slices of at most RECHECK_S, the clock read after each, so a
simulated clock moved past the deadline ends the wait as the real one does.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from google.rpc import code_pb2

from p4switch.exceptions import P4RTError

Clock = Callable[[], float]  # seconds, never going back
RECHECK_S = 0.1  # the longest a lock wait goes without reading the clock again


def check_deadline(deadline: float | None, what: str, clock: Clock = time.monotonic) -> None:
    if deadline is not None and clock() >= deadline:
        raise P4RTError(code_pb2.DEADLINE_EXCEEDED, f"the client's deadline passed: {what}")


@contextmanager
def acquired(
    lock: threading.Lock | threading.RLock,
    deadline: float | None,
    what: str,
    clock: Clock = time.monotonic,
) -> Iterator[None]:
    """Hold `lock`: refused (DEADLINE_EXCEEDED, nothing done) if the deadline passes before it
    is free, or before the holder gets to run (checked again once it is held)."""
    check_deadline(deadline, what, clock)
    if deadline is None:
        lock.acquire()
    else:
        while not lock.acquire(timeout=min(max(0.0, deadline - clock()), RECHECK_S)):
            check_deadline(deadline, what, clock)
    try:
        check_deadline(deadline, what, clock)
        yield
    finally:
        lock.release()
