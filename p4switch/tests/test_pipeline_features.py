"""Language semantics of the compiled code, checked against plain Python arithmetic."""

from __future__ import annotations

import struct
import zlib
from pathlib import Path

import pytest

from p4switch import native
from p4switch import runtime as rt
from p4switch.compiler.support import crc16, csum16
from p4switch.compiler.v1model import Pipeline
from p4switch.exceptions import PermissionDenied
from p4switch.native import NativePipeline
from p4switch.program import compile_file
from tests.backends import BACKENDS

PROGRAMS = Path(__file__).parent / "programs"
ETHERNET = bytes.fromhex("0000000000aa0000000000bb88b5")
INPUT = struct.Struct("!BBBbbHI")
RESULT = struct.Struct("!8I")
AnyPipeline = Pipeline | NativePipeline


@pytest.fixture(scope="module", params=BACKENDS)
def pipe(request: pytest.FixtureRequest) -> AnyPipeline:
    """The program on each back end (module scope: hypothesis runs many examples on one)."""
    if request.param == "native" and native.available() is not None:
        pytest.skip(f"native back end: {native.available()}")
    program = compile_file(PROGRAMS / "features.p4")
    return program.pipeline(program.new_state(), backend=request.param)


def run(
    pipe: AnyPipeline,
    op: int,
    a8: int = 0,
    b8: int = 0,
    s8: int = 0,
    t8: int = 0,
    x16: int = 0,
    x32: int = 0,
) -> bytes:
    out = pipe.process(1, ETHERNET + INPUT.pack(op, a8, b8, s8, t8, x16, x32))
    assert [port for port, _ in out] == [1]
    return out[0][1]


def results(frame: bytes) -> tuple[int, ...]:
    return RESULT.unpack_from(frame, 14 + INPUT.size)


def u32(value: int) -> int:
    return value & 0xFFFFFFFF


def sat8(value: int) -> int:
    return max(-128, min(127, value))


def wrap8(value: int) -> int:
    return ((value + 128) % 256) - 128


@pytest.mark.parametrize(("a", "b"), [(0, 0), (200, 100), (3, 250), (255, 255), (17, 0)])
def test_unsigned_arithmetic_wraps_and_saturates(pipe: AnyPipeline, a: int, b: int) -> None:
    frame = run(pipe, 1, a8=a, b8=b)
    assert frame[12:14] == b"\x00\x01"
    assert results(frame) == (
        (a + b) & 0xFF,
        (a - b) & 0xFF,
        (a * b) & 0xFF,
        min(a + b, 255),
        max(a - b, 0),
        ~a & 0xFF,
        -a & 0xFF,
        (a & 0x0F) | (b ^ 0x80),
    )


@pytest.mark.parametrize(
    ("s", "t", "a", "b"),
    [(-5, 3, 1, 2), (100, 100, 200, 7), (-128, 1, 0, 0), (127, -128, 255, 254), (-1, -1, 9, 9)],
)
def test_signed_values(pipe: AnyPipeline, s: int, t: int, a: int, b: int) -> None:
    frame = run(pipe, 2, a8=a, b8=b, s8=s, t8=t)
    assert frame[12:14] == b"\x00\x02"
    assert results(frame) == (
        u32(s),
        int(s < t),
        u32(s >> 2),
        int(a < b),
        u32(sat8(s + t)),
        u32(wrap8(s - t)),
        s & 0xFF,
        u32(sat8(s - t)),
    )


BITS_CASES = [(0, 0, 0), (4, 0xBEEF, 0x12345678), (31, 0xFFFF, 0xFFFFFFFF), (40, 7, 0x80000001)]


@pytest.mark.parametrize(("a", "x16", "x32"), BITS_CASES)
def test_bits_slices_concatenation_and_hashes(
    pipe: AnyPipeline, a: int, x16: int, x32: int
) -> None:
    frame = run(pipe, 3, a8=a, x16=x16, x32=x32)
    assert frame[12:14] == b"\x00\x02"  # fell through from the signed_ops label
    r3 = (x32 & 0x0FFFFF00) | 0xFF | ((x16 & 0xF) << 28)
    assert results(frame) == (
        ((x32 >> 8) & 0xFF) << 16 | x16,
        u32(x32 << a) if a < 32 else 0,
        x32 >> 4,
        r3,
        0x0300 | a,  # lookahead<bit<16>>: op and a8, before they were extracted
        crc16(x32.to_bytes(4, "big")),
        zlib.crc32(x32.to_bytes(4, "big") + x16.to_bytes(2, "big")),
        100 + crc16(bytes([a])) % 10,
    )


def test_hash_and_checksum_helpers_match_the_standard_check_values() -> None:
    assert crc16(b"123456789") == 0xBB3D  # CRC-16/ARC, BMv2's crc16
    header = bytes.fromhex("450000730000400040110000c0a80001c0a800c7")
    assert csum16(header) == 0xB861


@pytest.mark.parametrize(("op", "a", "b"), [(4, 20, 1), (4, 5, 1), (0x13, 200, 0)])
def test_out_and_inout_parameters_setvalid_and_bools(
    pipe: AnyPipeline, op: int, a: int, b: int
) -> None:
    frame = run(pipe, op, a8=a, b8=b)
    assert frame[12:14] == b"\x00\x03"
    flag = int(a > 10 and b != 0)
    assert results(frame)[:4] == ((2 * a) & 0xFF, 100 + a, flag, flag)
    assert frame[14 + INPUT.size + RESULT.size :] == b"\xca\xfe"


def test_exit_skips_the_rest_of_the_control(pipe: AnyPipeline) -> None:
    assert run(pipe, 0x20)[6:12] == bytes.fromhex("0000000000bb")
    assert run(pipe, 0x21)[6:12] == (1).to_bytes(6, "big")


def test_truncate(pipe: AnyPipeline) -> None:
    assert len(run(pipe, 5)) == 16


@pytest.mark.usefixtures("backend")
def test_parser_verify_with_a_program_error() -> None:
    program = compile_file(PROGRAMS / "features.p4")
    pipe = program.pipeline(program.new_state(), parser_reject="drop")
    assert pipe.process(1, ETHERNET + INPUT.pack(0xFF, 0, 0, 0, 0, 0, 0)) == []
    assert pipe.counts["parser_error.BadOp"] == 1


def test_const_entries_are_installed_with_priorities() -> None:
    program = compile_file(PROGRAMS / "features.p4")
    entries = list(program.new_state().table("FeatureIngress.ops").entries())
    assert len(entries) == 6
    assert sorted(e.priority for e in entries) == [1, 2, 3, 4, 5, 6]
    first = max(entries, key=lambda e: e.priority)
    assert first.action.name == "FeatureIngress.arith"
    assert (first.match[0].value, first.match[0].mask) == (1, 0xFF)


def test_const_entries_cannot_be_changed_by_the_control_plane() -> None:
    program = compile_file(PROGRAMS / "features.p4")
    table = program.new_state().table("FeatureIngress.ops")
    first = next(iter(table.entries()))
    with pytest.raises(PermissionDenied, match="const entries"):
        table.delete(first.match, first.priority)
    with pytest.raises(PermissionDenied):
        table.insert(rt.TableEntry(first.match, first.action, first.priority + 100))
    with pytest.raises(PermissionDenied):
        table.modify(first)
    assert len(list(table.entries())) == 6
