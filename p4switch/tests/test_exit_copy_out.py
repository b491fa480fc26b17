"""`exit` inside an action still copies its out and inout arguments out (P4_16: copy-in/copy-out
happens however the action is left), on both back ends; nested actions copy out at each level,
and nothing after the call runs."""

from __future__ import annotations

from pathlib import Path

import pytest

from p4switch.program import compile_file
from tests.eth_program import eth_program

PROGRAM = eth_program(
    """\
    action inner(inout bit<16> v, out bit<8> o) { v = v + 1; o = 9; exit; }
    action outer(inout bit<16> v, out bit<8> o) { v = v + 2; inner(v, o); v = 100; }
    action set_and_exit(inout bit<16> v) { v = 3; exit; }
    apply {
        s.egress_spec = 1;
        if (h.eth.dst[7:0] == 1) {
            set_and_exit(h.eth.eth_type);
        } else {
            outer(h.eth.eth_type, h.eth.src[7:0]);
        }
        h.eth.eth_type = 7;  // never reached: the action exits
    }
"""
)


@pytest.fixture
def program(tmp_path: Path):
    path = tmp_path / "exit_inout.p4"
    path.write_text(PROGRAM)
    return compile_file(path)


def frame(dst_low: int, eth_type: int) -> bytes:
    return bytes(5) + bytes([dst_low]) + bytes(6) + eth_type.to_bytes(2, "big") + b"payload"


def test_exit_copies_an_inout_argument_out(program, backend: str) -> None:
    pipe = program.pipeline(program.new_state())
    ((port, out),) = pipe.process(0, frame(1, 0x0800))
    assert port == 1 and out[12:14] == (3).to_bytes(2, "big")


def test_nested_actions_copy_out_at_each_level(program, backend: str) -> None:
    pipe = program.pipeline(program.new_state())
    ((port, out),) = pipe.process(0, frame(2, 0x0800))
    assert port == 1
    # outer adds 2, inner adds 1 and exits: both copy out; outer's `v = 100` never runs
    assert out[12:14] == (0x0803).to_bytes(2, "big")
    assert out[11] == 9  # inner's out argument, through outer's, into src[7:0]
