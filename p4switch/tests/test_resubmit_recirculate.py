"""resubmit_preserving_field_list and recirculate_preserving_field_list (v1model, as BMv2
simple_switch): the packet goes through the pipeline again, with the metadata of its field list
kept and instance_type 6 (resubmit) or 4 (recirculate); bounded passes. The python back end runs
them; the native one refuses them by name (the switch then runs python, saying so)."""

from __future__ import annotations

from pathlib import Path

import pytest

from p4switch.compiler.v1model import MAX_PASSES
from p4switch.exceptions import NativeUnsupported, P4CompileError
from p4switch.program import compile_file

PROGRAM = """\
#include <core.p4>
#include <v1model.p4>
header eth_t { bit<48> dst; bit<48> src; bit<16> eth_type; }
struct headers { eth_t eth; }
struct meta {
    @field_list(1) bit<8> passes;
    bit<8> forgotten;
}
parser P(packet_in p, out headers h, inout meta m, inout standard_metadata_t s) {
    state start { p.extract(h.eth); transition accept; }
}
control V(inout headers h, inout meta m) { apply { } }
control I(inout headers h, inout meta m, inout standard_metadata_t s) {
    apply {
        s.egress_spec = 2;
        h.eth.src[7:0] = h.eth.src[7:0] + 1;  // lost on a resubmit: the packet as it came in
        if (h.eth.eth_type == 0x0001 && m.passes < h.eth.dst[7:0]) {
            m.passes = m.passes + 1;
            m.forgotten = 0xff;
            resubmit_preserving_field_list(1);
        }
        h.eth.src[15:8] = m.passes;
        h.eth.src[23:16] = m.forgotten;
        h.eth.src[31:24] = (bit<8>) s.instance_type;
    }
}
control E(inout headers h, inout meta m, inout standard_metadata_t s) {
    apply {
        if (h.eth.eth_type == 0x0002 && m.passes < h.eth.dst[7:0]) {
            m.passes = m.passes + 1;
            recirculate_preserving_field_list(1);
        }
        h.eth.src[47:40] = (bit<8>) s.instance_type;
    }
}
control C(inout headers h, inout meta m) { apply { } }
control D(packet_out p, in headers h) { apply { p.emit(h.eth); } }
V1Switch(P(), V(), I(), E(), C(), D()) main;
"""


def compiled(tmp_path: Path, text: str = PROGRAM):
    path = tmp_path / "passes.p4"
    path.write_text(text)
    return compile_file(path)


def frame(times: int, eth_type: int) -> bytes:
    return bytes(5) + bytes([times]) + bytes(6) + eth_type.to_bytes(2, "big")


def test_resubmit_runs_ingress_again_on_the_packet_as_it_came(tmp_path: Path) -> None:
    program = compiled(tmp_path)
    pipe = program.pipeline(program.new_state())
    ((port, out),) = list(pipe.process(0, frame(3, 0x0001)))
    assert port == 2
    src = out[6:12]
    assert src[5] == 1  # incremented once: each pass started from the original packet
    assert src[4] == 3  # the preserved field counted three resubmits
    assert src[3] == 0  # a field outside the field list was reset
    assert src[2] == 6  # the last pass was a resubmitted one
    assert src[0] == 6  # egress saw it so


def test_recirculate_runs_the_deparsed_packet_again(tmp_path: Path) -> None:
    program = compiled(tmp_path)
    pipe = program.pipeline(program.new_state())
    ((port, out),) = list(pipe.process(0, frame(2, 0x0002)))
    assert port == 2
    src = out[6:12]
    assert src[5] == 3  # three passes, each on what the one before sent out
    assert src[4] == 2 and src[2] == 4 and src[0] == 4  # two recirculations, then out


def test_passes_are_bounded(tmp_path: Path) -> None:
    program = compiled(tmp_path)
    pipe = program.pipeline(program.new_state())
    assert list(pipe.process(0, frame(255, 0x0001))) == []
    assert list(pipe.process(0, frame(255, 0x0002))) == []
    assert pipe.counts == {"drop.resubmit_depth": 1, "drop.recirculate_depth": 1}
    assert MAX_PASSES < 255


def test_the_native_back_end_refuses_them_by_name(tmp_path: Path) -> None:
    program = compiled(tmp_path)
    with pytest.raises(NativeUnsupported) as err:
        program.pipeline(program.new_state(), backend="native")
    assert "resubmit_preserving_field_list" in str(err.value)


def test_a_field_list_index_is_a_constant_byte(tmp_path: Path) -> None:
    text = PROGRAM.replace(
        "resubmit_preserving_field_list(1);", "resubmit_preserving_field_list(m.passes);"
    )
    with pytest.raises(P4CompileError) as err:
        compiled(tmp_path, text)
    assert "compile-time integer constant" in err.value.what
