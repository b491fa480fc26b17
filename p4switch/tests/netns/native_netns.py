"""Helpers for the native-switch netns tests: sockets opened inside a namespace from this
process, and a frame reader that puts back the VLAN tag the kernel took off.

`in_netns` runs a function on a short-lived thread moved into a namespace (setns affects only
that thread), so sockets it opens are bound to that namespace's interfaces and stay usable from
every thread afterwards.
"""

from __future__ import annotations

import ctypes
import os
import select
import threading
from collections.abc import Callable
from typing import TypeVar

from p4switch.ports import MAX_FRAME_BYTES, Port, open_port
from p4switch.vlan import AUXDATA_SPACE, as_on_wire

T = TypeVar("T")
CLONE_NEWNET = 0x40000000


def in_netns(namespace: str, work: Callable[[], T]) -> T:
    """`work()` run on a thread inside network namespace `namespace`; its result or error."""
    libc = ctypes.CDLL(None, use_errno=True)
    outcome: dict[str, object] = {}

    def target() -> None:
        fd = os.open(f"/var/run/netns/{namespace}", os.O_RDONLY | os.O_CLOEXEC)
        try:
            if libc.setns(fd, CLONE_NEWNET) != 0:
                raise OSError(ctypes.get_errno(), f"setns into {namespace} failed")
        finally:
            os.close(fd)
        try:
            outcome["value"] = work()
        except BaseException as err:  # handed to the caller's thread
            outcome["error"] = err

    thread = threading.Thread(target=target, name=f"setns-{namespace}")
    thread.start()
    thread.join()
    if "error" in outcome:
        raise outcome["error"]  # type: ignore[misc]
    return outcome["value"]  # type: ignore[return-value]


def open_in(namespace: str, interface: str) -> Port:
    return in_netns(namespace, lambda: open_port(interface))


def receive_raw(port: Port, ethertype: int, count: int, timeout: float = 3.0) -> list[bytes]:
    """Up to `count` frames of `ethertype` (after any outer tag), as on the wire, in `timeout`."""
    import time

    found: list[bytes] = []
    deadline = time.monotonic() + timeout
    while len(found) < count and (left := deadline - time.monotonic()) > 0:
        if not select.select([port.sock], [], [], left)[0]:
            break
        data, ancdata, _, _ = port.sock.recvmsg(MAX_FRAME_BYTES, AUXDATA_SPACE + 64)
        frame = as_on_wire(data, ancdata)
        inner = 16 if frame[12:14] in (b"\x81\x00", b"\x88\xa8") else 12
        if frame[inner : inner + 2] == ethertype.to_bytes(2, "big"):
            found.append(frame)
    return found
