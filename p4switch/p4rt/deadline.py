"""Client deadlines in the P4Runtime server: refuse work whose deadline has passed.

A deadline is a `time.monotonic()` instant (the service turns the client's gRPC deadline into
one), or None for none. `check_deadline` refuses with DEADLINE_EXCEEDED once it has passed;
`acquired` takes a lock for at most the time left and checks again once it is held, so a request
that waited for the lock past its deadline does nothing at all.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

from google.rpc import code_pb2

from p4switch.exceptions import P4RTError


def check_deadline(deadline: float | None, what: str) -> None:
    if deadline is not None and time.monotonic() >= deadline:
        raise P4RTError(code_pb2.DEADLINE_EXCEEDED, f"the client's deadline passed: {what}")


@contextmanager
def acquired(
    lock: threading.Lock | threading.RLock, deadline: float | None, what: str
) -> Iterator[None]:
    """Hold `lock`: refused (DEADLINE_EXCEEDED, nothing done) if the deadline passes before it
    is free, or before the holder gets to run (checked again once it is held)."""
    check_deadline(deadline, what)
    timeout = -1.0
    if deadline is not None:
        timeout = min(max(0.0, deadline - time.monotonic()), threading.TIMEOUT_MAX)
    if not lock.acquire(timeout=timeout):
        check_deadline(deadline, what)
        raise P4RTError(code_pb2.DEADLINE_EXCEEDED, f"the client's deadline passed: {what}")
    try:
        check_deadline(deadline, what)
        yield
    finally:
        lock.release()
