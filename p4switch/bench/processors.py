"""P4 programs as processors for bench/io_loop.py (`--processor bench.processors:l2`).

Each factory compiles a program and installs the entries that forward between two hosts (h1 on
port 1, h2 on port 2), as a controller would. `l2` (the example l2.p4) and `agg32`
(tests/programs/agg32.p4) run on the python back end; `l2_native` and `agg32_native` are the
same programs and entries on the native back end (`p4switch.native`). `portswap_c` is no P4 at
all: 1 <-> 2 in C (bench/native/portswap.c), which the native I/O loop calls as it calls a
native pipeline.
"""

from __future__ import annotations

import ctypes
from pathlib import Path

from bench.native_build import build_library
from p4switch import EXAMPLES
from p4switch import runtime as rt
from p4switch.dataplane import PacketProcessor
from p4switch.program import CompiledProgram, compile_file

PROGRAMS = Path(__file__).resolve().parents[1] / "tests" / "programs"
HOSTS = {1: ("02:00:0a:00:00:01", "10.0.0.1"), 2: ("02:00:0a:00:00:02", "10.0.0.2")}


def _mac(text: str) -> int:
    return int(text.replace(":", ""), 16)


def _ip(text: str) -> int:
    a, b, c, d = (int(x) for x in text.split("."))
    return a << 24 | b << 16 | c << 8 | d


def _l2_program() -> tuple[CompiledProgram, rt.SwitchState]:
    program = compile_file(EXAMPLES / "l2.p4")
    state = program.new_state()
    for port, (mac, _) in HOSTS.items():
        action = rt.ActionCall("L2Ingress.forward", (port,))
        state.table("L2Ingress.dmac").insert(rt.TableEntry((rt.exact(_mac(mac), 48),), action))
    return program, state


def _agg32_program() -> tuple[CompiledProgram, rt.SwitchState]:
    program = compile_file(PROGRAMS / "agg32.p4")
    state = program.new_state()
    for port, (_, ip) in HOSTS.items():
        action = rt.ActionCall("AggIngress.forward", (port,))
        state.table("AggIngress.route").insert(rt.TableEntry((rt.exact(_ip(ip), 32),), action))
    return program, state


def l2() -> PacketProcessor:
    """(a) L2 forwarding: one exact match on the destination MAC."""
    program, state = _l2_program()
    return program.pipeline(state)


def agg32() -> PacketProcessor:
    """(b) Ethernet/IPv4/UDP plus 32 int32 values added into 32 register lanes, then routed."""
    program, state = _agg32_program()
    return program.pipeline(state)


def l2_native() -> PacketProcessor:
    """`l2` on the native back end (a `p4switch.native.NativePipeline`)."""
    program, state = _l2_program()
    return program.pipeline(state, backend="native")


def agg32_native() -> PacketProcessor:
    """`agg32` on the native back end (a `p4switch.native.NativePipeline`)."""
    program, state = _agg32_program()
    return program.pipeline(state, backend="native")


class PortSwap:
    """1 <-> 2 in C: `native_entry` for the native I/O loop, `process` the same in Python."""

    def __init__(self, library: Path) -> None:
        self._lib = ctypes.CDLL(str(library))
        function = ctypes.cast(self._lib.portswap_process, ctypes.c_void_p).value or 0
        self.native_entry = (function, 0)

    def process(self, ingress_port: int, data: bytes) -> list[tuple[int, bytes]]:
        return [(3 - ingress_port, data)] if ingress_port in (1, 2) else []


def portswap_c() -> PortSwap:
    """bench/native/portswap.c, built into build/bench/ when its source is newer."""
    return PortSwap(build_library("portswap"))
