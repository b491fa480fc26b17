"""Helpers for the native-switch netns tests: sockets opened inside a namespace from this
process, and a tiny L2 processor written in C against the pipeline's calling convention.

`in_netns` runs a function on a short-lived thread moved into a namespace (setns affects only
that thread), so sockets it opens are bound to that namespace's interfaces and stay usable from
every thread afterwards. `TinyL2` compiles `TINY_L2_C` with gcc and exposes `native_entry`.
"""

from __future__ import annotations

import ctypes
import os
import select
import subprocess
import threading
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from p4switch.ports import MAX_FRAME_BYTES, Port, open_port
from p4switch.vlan import AUXDATA_SPACE, as_on_wire

T = TypeVar("T")
CLONE_NEWNET = 0x40000000
NATIVE = Path(__file__).resolve().parents[2] / "p4switch" / "native"  # abi.h
CPU_PORT = 255
TO_CPU_ETHERTYPE = 0x88B5  # the tiny processor sends these to the CPU port
DROP_ETHERTYPE = 0x88B7  # and drops these

TINY_L2_C = r"""
#include <stdatomic.h>
#include <string.h>
#include "abi.h"

typedef struct { uint32_t cpu_port; atomic_ulong calls; } tiny_ctx;
tiny_ctx tiny_context = {255, 0};

/* 1 <-> 2; ethertype 0x88b5 -> the CPU port, 0x88b7 dropped; packet-outs leave by port 2. */
int tiny_process(void *ctx, uint32_t ingress, const uint8_t *data, uint32_t len, p4s_out *out)
{
    tiny_ctx *c = ctx;
    atomic_fetch_add(&c->calls, 1);
    if (len < 14 || len > P4S_FRAME_MAX)
        return -1;
    uint16_t type = (uint16_t)(data[12] << 8 | data[13]);
    uint32_t egress;
    if (type == 0x88b7)
        return 0;
    if (ingress == c->cpu_port)
        egress = 2;
    else if (type == 0x88b5)
        egress = c->cpu_port;
    else if (ingress == 1 || ingress == 2)
        egress = 3 - ingress;
    else
        return 0;
    out->n = 1;
    out->port[0] = egress;
    out->len[0] = len;
    memcpy(out->data[0], data, len);
    return 0;
}
"""


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


class TinyL2:
    """The tiny C processor, built into `directory`; `native_entry` is what NativeSwitch calls."""

    def __init__(self, directory: Path) -> None:
        source = directory / "tiny_l2.c"
        library = directory / "tiny_l2.so"
        source.write_text(TINY_L2_C)
        subprocess.run(
            [
                "gcc",
                "-std=c11",
                "-O2",
                "-fPIC",
                "-shared",
                "-Wall",
                "-Wextra",
                "-Werror",
                f"-I{NATIVE}",
                "-o",
                str(library),
                str(source),
            ],
            check=True,
            capture_output=True,
            text=True,
        )
        self._lib = ctypes.CDLL(str(library))
        self._function = ctypes.cast(self._lib.tiny_process, ctypes.c_void_p).value or 0
        self._context = ctypes.addressof(ctypes.c_uint32.in_dll(self._lib, "tiny_context"))
        self._calls = ctypes.c_ulong.from_address(self._context + 8)

    @property
    def native_entry(self) -> tuple[int, int]:
        return self._function, self._context

    @property
    def calls(self) -> int:
        return self._calls.value

    def process(self, ingress_port: int, data: bytes) -> list[tuple[int, bytes]]:
        raise AssertionError("a native processor must be called through native_entry only")
