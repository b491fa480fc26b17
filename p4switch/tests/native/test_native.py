"""The native back end's own pieces: the generator's refusals, the build cache and its errors,
the hashes, table lookup rules, state shared with the control plane, and the C entry point."""

from __future__ import annotations

import ctypes
import functools
import threading
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from p4switch import EXAMPLES, native
from p4switch import runtime as rt
from p4switch.compiler.support import HASHES
from p4switch.exceptions import NativeBuildError, NativeUnsupported
from p4switch.native import NativePipeline, build, toolchain
from p4switch.native.cmodule import generate_c
from p4switch.native.pipeline import FRAME_MAX, Out
from p4switch.program import CompiledProgram, compile_file

needs_gcc = pytest.mark.skipif(native.available() is not None, reason=f"{native.available()}")

PROGRAMS = Path(__file__).resolve().parents[1] / "programs"
EXTRAS = Path(__file__).resolve().parent / "programs"
ALGORITHMS = ("crc16", "crc32", "csum16", "xor16", "identity")


@functools.cache
def program(path: Path) -> CompiledProgram:
    return compile_file(path)


def l2_frame(dst: int, ether_type: int = 0x0800, body: bytes = bytes(50)) -> bytes:
    return dst.to_bytes(6, "big") + bytes(6) + ether_type.to_bytes(2, "big") + body


# --- what the generator refuses ------------------------------------------------------------------


def test_a_field_wider_than_64_bits_is_refused_naming_it_and_the_file() -> None:
    wide = program(EXTRAS / "wide.p4")
    with pytest.raises(NativeUnsupported, match=r"wide\.p4.*hdr\.ethernet\.wide of type bit<128>"):
        generate_c(wide.program)
    with pytest.raises(NativeUnsupported):
        wide.pipeline(wide.new_state(), backend="native")


def test_an_unknown_backend_is_refused() -> None:
    l2 = program(EXAMPLES / "l2.p4")
    with pytest.raises(ValueError, match="backend must be 'python' or 'native'"):
        l2.pipeline(l2.new_state(), backend="fpga")


# --- build, cache, errors ----------------------------------------------------------------------


def test_without_gcc_available_says_why_and_a_build_fails_clearly(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))  # no gcc there
    assert native.available() == "no C compiler (gcc) on PATH"
    with pytest.raises(NativeBuildError, match="no C compiler"):
        toolchain.library("int x;")


@needs_gcc
def test_the_library_is_cached_by_source_and_a_second_build_reuses_it(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("P4SWITCH_CACHE", str(tmp_path))
    source = generate_c(program(EXAMPLES / "l2.p4").program).source
    first = toolchain.library(source)
    assert first.parent == tmp_path and first.suffix == ".so"
    stamp = first.stat().st_mtime_ns
    assert toolchain.library(source) == first
    assert first.stat().st_mtime_ns == stamp  # not rebuilt
    assert toolchain.library(source + "\n/* changed */\n") != first
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]  # no temporaries left


@needs_gcc
def test_a_failed_compile_raises_and_keeps_the_c_file(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("P4SWITCH_CACHE", str(tmp_path))
    with pytest.raises(
        NativeBuildError,
        match=r"building the native pipeline failed \(.*\.c kept for inspection\): .*error",
    ) as info:
        toolchain.library("int broken( {\n")
    kept = [p for p in tmp_path.glob("*.c")]
    assert len(kept) == 1 and str(kept[0]) in str(info.value)
    assert not list(tmp_path.glob("*.so"))


def test_the_cache_directory_follows_the_environment(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.delenv("P4SWITCH_CACHE", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert toolchain.cache_dir() == tmp_path / "p4switch"
    monkeypatch.setenv("P4SWITCH_CACHE", str(tmp_path / "here"))
    assert toolchain.cache_dir() == tmp_path / "here"


# --- hashes -----------------------------------------------------------------------------------


@needs_gcc
@settings(max_examples=200, deadline=None)
@given(data=st.binary(max_size=40))
def test_hashes_are_bit_exact_with_the_python_ones(data: bytes) -> None:
    lib = build(program(EXAMPLES / "l2.p4").program).lib
    for i, name in enumerate(ALGORITHMS):
        expected = HASHES[name](data) & (2**64 - 1)
        assert lib.p4s_hash(i, data, len(data)) == expected, name


# --- tables ------------------------------------------------------------------------------------


@needs_gcc
def test_ternary_priority_then_default_and_direct_packet_counts() -> None:
    extras = program(EXTRAS / "extras.p4")
    state = extras.new_state()
    pipe = NativePipeline(extras.program, state, parser_reject="ingress")
    table = state.table("ExIngress.classify")
    any_op, any_mac = rt.FieldMatch(0, 0), rt.FieldMatch(0, 0)
    low = rt.TableEntry((any_op, any_mac), rt.ActionCall("ExIngress.to", (2, 0x22)), priority=1)
    high = rt.TableEntry(
        (rt.FieldMatch(1, 0xFF), any_mac), rt.ActionCall("ExIngress.to", (3, 0x33)), priority=9
    )
    table.insert(low)
    table.insert(high)
    probe = bytes([1, 0]) + bytes(30)
    frame = l2_frame(5, 0x88B6, probe)
    assert [port for port, _ in pipe.process(1, frame)] == [3]
    other = l2_frame(5, 0x88B6, bytes([7]) + probe[1:])
    assert [port for port, _ in pipe.process(1, other)] == [2]
    table.delete(low.match, low.priority)
    assert pipe.process(1, other) == []  # the default: drop
    with state.lock:
        assert (high.packets, high.bytes) == (1, 0)  # a packets-only counter
        assert (table.default_packets, table.default_bytes) == (1, 0)


@needs_gcc
def test_random_stays_in_range_and_a_seed_repeats_its_sequence() -> None:
    extras = program(EXTRAS / "extras.p4")

    def draws(seed: int) -> list[int]:
        state = extras.new_state()
        state.table("ExIngress.classify").set_default(rt.ActionCall("ExIngress.to", (1, 0)))
        pipe = NativePipeline(extras.program, state, seed=seed)
        probe = bytes([0, 0]) + (10).to_bytes(2, "big") + (20).to_bytes(2, "big") + bytes(26)
        frames = [pipe.process(1, l2_frame(0, 0x88B6, probe))[0][1] for _ in range(200)]
        return [int.from_bytes(f[14 + 8 : 14 + 12], "big") for f in frames]

    values = draws(1)
    assert set(values) == set(range(10, 21))  # every value of 10..20, none outside
    assert draws(1) == values and draws(2) != values


# --- state shared with the control plane -------------------------------------------------------


@needs_gcc
def test_registers_and_counters_are_c_memory_seen_by_both_sides() -> None:
    compiled = program(PROGRAMS / "register_counter.p4")
    state = compiled.new_state()
    pipe = compiled.pipeline(state, backend="native")
    (register,) = state.registers.values()
    register.write(1, 5)
    assert isinstance(register.cells, ctypes.Array)
    for _ in range(3):
        pipe.process(1, l2_frame(1))
    python_state = compiled.new_state()
    python_state.registers[register.spec.name].write(1, 5)
    python = compiled.pipeline(python_state)
    for _ in range(3):
        python.process(1, l2_frame(1))
    assert list(register.cells) == list(python_state.registers[register.spec.name].cells)
    register.cells[:] = [0] * len(register.cells)  # as reconcile.py copies cells over
    assert set(register.cells) == {0}


@needs_gcc
def test_two_native_pipelines_on_one_state_share_it() -> None:
    compiled = program(PROGRAMS / "multicast.p4")
    state = compiled.new_state()
    first = compiled.pipeline(state, backend="native")
    second = compiled.pipeline(state, backend="native")
    state.pre.insert_group(1, [rt.Replica(2, 1), rt.Replica(3, 2)])
    for pipe in (first, second):
        out = pipe.process(1, l2_frame(0x01))
        assert out == compiled.pipeline(_copy_groups(compiled, state)).process(1, l2_frame(0x01))


def _copy_groups(compiled: CompiledProgram, state: rt.SwitchState) -> rt.SwitchState:
    other = compiled.new_state()
    for group, replicas in state.pre.groups.items():
        other.pre.insert_group(group, list(replicas))
    return other


@needs_gcc
def test_holding_the_state_lock_holds_the_packet_path() -> None:
    compiled = program(EXAMPLES / "l2.p4")
    state = compiled.new_state()
    pipe = NativePipeline(compiled.program, state)
    state.table("L2Ingress.dmac").insert(
        rt.TableEntry((rt.exact(1, 48),), rt.ActionCall("L2Ingress.forward", (4,)))
    )
    got: list[list[tuple[int, bytes]]] = []
    ctx_fn, ctx = pipe.native_entry
    process = ctypes.CFUNCTYPE(
        ctypes.c_int,
        ctypes.c_void_p,
        ctypes.c_uint32,
        ctypes.c_char_p,
        ctypes.c_uint32,
        ctypes.c_void_p,
    )(ctx_fn)
    out = Out()

    def run() -> None:
        frame = l2_frame(1)
        assert process(ctx, 1, frame, len(frame), ctypes.byref(out)) == 0
        got.append([(out.port[0], bytes(out.data[0][: out.len[0]]))])

    with state.lock:
        worker = threading.Thread(target=run)
        worker.start()
        worker.join(0.2)
        assert worker.is_alive() and not got  # waiting for the lock
    worker.join(10)  # a hang guard
    assert got == [[(4, l2_frame(1))]]
    assert out.len[0] <= FRAME_MAX


@needs_gcc
def test_counts_read_from_c_and_oversized_frames_are_dropped_not_crashed() -> None:
    compiled = program(EXAMPLES / "l2.p4")
    state = compiled.new_state()
    state.table("L2Ingress.dmac").insert(
        rt.TableEntry((rt.exact(0, 48),), rt.ActionCall("L2Ingress.forward", (2,)))
    )
    pipe = compiled.pipeline(state, backend="native", parser_reject="drop")
    assert pipe.process(1, bytes(5)) == []
    assert pipe.process(1, l2_frame(9)) == []  # no entry: the default drops
    assert pipe.process(1, bytes(FRAME_MAX)) == [(2, bytes(FRAME_MAX))]
    assert pipe.process(1, bytes(FRAME_MAX + 1)) == []  # more than an output frame holds
    assert pipe.counts == {
        "parser_error.PacketTooShort": 1,
        "drop.ingress": 1,
        "drop.internal_error": 1,
    }


@needs_gcc
def test_direct_counts_set_under_the_lock_reach_c_and_c_counts_read_back() -> None:
    """As a P4Runtime write of a DirectCounterEntry, then frames run by a native I/O loop (the C
    entry, no Python per frame), then a read: the counts go both ways through the lock."""
    extras = program(EXTRAS / "extras.p4")
    state = extras.new_state()
    pipe = NativePipeline(extras.program, state)
    table = state.table("ExIngress.classify")
    entry = rt.TableEntry(
        (rt.FieldMatch(0, 0), rt.FieldMatch(0, 0)), rt.ActionCall("ExIngress.to", (2, 0)), 1
    )
    table.insert(entry)
    with state.lock:
        entry.packets = 100
        table.default_packets = 7
    fn, ctx = pipe.native_entry
    process = ctypes.CFUNCTYPE(
        ctypes.c_int,
        ctypes.c_void_p,
        ctypes.c_uint32,
        ctypes.c_char_p,
        ctypes.c_uint32,
        ctypes.c_void_p,
    )(fn)
    out = Out()
    frame = l2_frame(0, 0x88B6, bytes(32))
    for _ in range(3):
        assert process(ctx, 1, frame, len(frame), ctypes.byref(out)) == 0
        assert out.n == 1 and out.port[0] == 2
    assert entry.packets == 100  # C counted; Python reads it back when it takes the lock
    with state.lock:
        assert (entry.packets, table.default_packets) == (103, 7)
