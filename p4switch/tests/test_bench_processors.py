"""The benchmarks' processors (bench/processors.py): the native variants forward and aggregate as
the python ones, and the C port swap sends 1 to 2 and 2 to 1 behind the native calling
convention."""

from __future__ import annotations

import ctypes
import shutil

import pytest

from bench.pipeline import agg_frame
from bench.processors import agg32, agg32_native, l2, l2_native, portswap_c
from p4switch import native
from p4switch.native.pipeline import Out

pytestmark = pytest.mark.skipif(shutil.which("gcc") is None, reason="needs gcc to build them")


def frames() -> list[bytes]:
    """agg32 frames h1 -> h2 on slots 0, 1, 2 and again, as the forwarding benchmark sends."""
    h1, h2 = bytes.fromhex("02000a000001"), bytes.fromhex("02000a000002")
    return [h2 + h1 + agg_frame(slot % 3, list(range(1, 33)))[12:] for slot in range(7)]


def test_the_native_variants_forward_and_aggregate_as_the_python_ones() -> None:
    reason = native.available()
    if reason is not None:
        pytest.skip(f"the native back end cannot run here: {reason}")
    for python, compiled in ((l2(), l2_native()), (agg32(), agg32_native())):
        outputs = [python.process(1, frame) for frame in frames()]
        assert [compiled.process(1, frame) for frame in frames()] == outputs
        assert all(port == 2 for out in outputs for port, _ in out) and any(outputs)


def test_the_c_port_swap_sends_1_to_2_and_2_to_1_and_drops_the_rest() -> None:
    swap = portswap_c()
    function, ctx = swap.native_entry
    call = ctypes.CFUNCTYPE(
        ctypes.c_int,
        ctypes.c_void_p,
        ctypes.c_uint32,
        ctypes.c_char_p,
        ctypes.c_uint32,
        ctypes.POINTER(Out),
    )(function)
    out = Out()
    seen = []
    for port in (1, 2, 3):
        frame = bytes([port]) * 60
        assert call(ctx, port, frame, len(frame), ctypes.byref(out)) == 0
        seen.append([(out.port[i], bytes(out.data[i][: out.len[i]])) for i in range(out.n)])
    assert seen == [[(2, b"\x01" * 60)], [(1, b"\x02" * 60)], []]
    assert swap.process(1, b"x") == [(2, b"x")] and swap.process(3, b"x") == []
