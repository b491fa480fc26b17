"""Every v1model HashAlgorithm: crc16_custom and crc32_custom are crc16 and crc32 (BMv2's
starting parameters), random is base plus a random value below max; on both back ends."""

from __future__ import annotations

import zlib
from pathlib import Path

import pytest

from p4switch.compiler.support import crc16
from p4switch.exceptions import P4CompileError
from p4switch.program import compile_file
from tests.eth_program import eth_program

PROGRAM = eth_program(
    """\
    apply {
        s.egress_spec = 1;
        bit<16> c16; bit<32> c32; bit<8> r;
        hash(c16, HashAlgorithm.crc16_custom, 16w0, { h.eth.dst }, 32w65536);
        hash(c32, HashAlgorithm.crc32_custom, 32w0, { h.eth.dst }, 64w4294967296);
        hash(r, HashAlgorithm.random, 8w100, { h.eth.dst }, 32w10);
        h.eth.src = c16 ++ c32;
        h.eth.eth_type = 8w0 ++ r;
    }
"""
)


def compiled(tmp_path: Path, text: str):
    path = tmp_path / "hashes.p4"
    path.write_text(text)
    return compile_file(path)


def test_custom_crcs_and_random(tmp_path: Path, backend: str) -> None:
    program = compiled(tmp_path, PROGRAM)
    pipe = program.pipeline(program.new_state())
    dst = bytes.fromhex("0a0b0c0d0e0f")
    randoms = set()
    for _ in range(100):
        ((_, out),) = list(pipe.process(0, dst + bytes(8)))
        assert int.from_bytes(out[6:8], "big") == crc16(dst)
        assert int.from_bytes(out[8:12], "big") == zlib.crc32(dst)
        randoms.add(out[13])
    assert randoms <= set(range(100, 110)) and len(randoms) > 1


def test_a_random_hash_needs_a_constant_max(tmp_path: Path) -> None:
    text = PROGRAM.replace("{ h.eth.dst }, 32w10)", "{ h.eth.dst }, (bit<32>) h.eth.eth_type)")
    with pytest.raises(P4CompileError) as err:
        compiled(tmp_path, text)
    line = next(i for i, x in enumerate(text.splitlines(), 1) if "HashAlgorithm.random" in x)
    assert "needs a constant max" in err.value.what and err.value.line == line


def test_a_checksum_cannot_be_random(tmp_path: Path) -> None:
    text = PROGRAM.replace(
        "s.egress_spec = 1;",
        "update_checksum(true, { h.eth.dst }, h.eth.eth_type, HashAlgorithm.random);",
    )
    with pytest.raises(P4CompileError) as err:
        compiled(tmp_path, text)
    assert "HashAlgorithm.random is not supported" in err.value.what
