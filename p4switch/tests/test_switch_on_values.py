"""`switch` on a value (bit<N>, enum, error): cases with constant labels, fall-through labels,
`default`, on both back ends; what it refuses, at its line."""

from __future__ import annotations

from pathlib import Path

import pytest

from p4switch.exceptions import P4CompileError
from p4switch.program import compile_file
from tests.eth_program import eth_program

PROGRAM = eth_program(
    """\
    const bit<8> SEVEN = 7;
    apply {
        s.egress_spec = 1;
        switch (h.eth.dst[7:0]) {
            1: { h.eth.eth_type = 0x0101; }
            2:
            3: { h.eth.eth_type = 0x0203; }
            SEVEN: { h.eth.eth_type = 0x0707; }
            8: { }
            default: { h.eth.eth_type = 0xdddd; }
        }
    }
"""
)
EXPECTED = {1: 0x0101, 2: 0x0203, 3: 0x0203, 7: 0x0707, 8: 0x0800, 9: 0xDDDD, 0: 0xDDDD}


def compiled(tmp_path: Path, text: str):
    path = tmp_path / "switch.p4"
    path.write_text(text)
    return compile_file(path)


def test_switch_on_a_value_takes_its_case(tmp_path: Path, backend: str) -> None:
    program = compiled(tmp_path, PROGRAM)
    pipe = program.pipeline(program.new_state())
    for low, eth_type in EXPECTED.items():
        ((_, out),) = pipe.process(0, bytes(5) + bytes([low]) + bytes(6) + b"\x08\x00" + b"data")
        assert int.from_bytes(out[12:14], "big") == eth_type, low


BAD = [
    ("            8: { }\n", "            1: { }\n", "appears twice"),
    ("switch (h.eth.dst[7:0])", "switch (h.eth.isValid())", "calls a method"),
    ("            SEVEN: {", "            h.eth.src[7:0]: {", "must be a constant"),
    ("            1: { h.eth.eth_type = 0x0101; }\n", "            default: { }\n", "last"),
]


@pytest.mark.parametrize(("old", "new", "words"), BAD)
def test_what_a_switch_on_a_value_refuses(tmp_path: Path, old: str, new: str, words: str) -> None:
    assert old in PROGRAM
    text = PROGRAM.replace(old, new, 1)
    with pytest.raises(P4CompileError) as err:
        compiled(tmp_path, text)
    assert words in err.value.what and err.value.line > 0
