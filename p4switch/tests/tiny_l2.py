"""A tiny L2 processor written in C against the native pipeline's calling convention: what
tests of the native I/O loop run instead of a compiled P4 program. `TinyL2` builds it with gcc
and exposes `native_entry`.
"""

from __future__ import annotations

import ctypes
import subprocess
from pathlib import Path

import p4switch.native

NATIVE = Path(p4switch.native.__file__).resolve().parent  # abi.h
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
