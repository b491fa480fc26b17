"""Controls applied inside controls (with constructor arguments, tables of their own named
`Outer.instance.table` in P4Info), and parsers applied inside parsers, on both back ends.
What is refused, at its line."""

from __future__ import annotations

from pathlib import Path

import pytest

from p4switch import runtime as rt
from p4switch.exceptions import P4CompileError
from p4switch.program import compile_file

NESTED_CONTROLS = """\
#include <core.p4>
#include <v1model.p4>
header eth_t { bit<48> dst; bit<48> src; bit<16> eth_type; }
struct headers { eth_t eth; }
struct meta { }
parser P(packet_in p, out headers h, inout meta m, inout standard_metadata_t s) {
    state start { p.extract(h.eth); transition accept; }
}
control V(inout headers h, inout meta m) { apply { } }

control Acl(inout headers h, inout standard_metadata_t s)(bit<16> blocked) {
    action deny() { mark_to_drop(s); }
    table acl {
        key = { h.eth.src: exact; }
        actions = { deny; NoAction; }
        default_action = NoAction();
    }
    apply {
        if (h.eth.eth_type == blocked) { mark_to_drop(s); } else { acl.apply(); }
    }
}

control Count(in bit<16> t, inout bit<8> n) {
    bit<8> step = 1;
    apply { if (t == 0x0800) { n = n + step; } }
}

control I(inout headers h, inout meta m, inout standard_metadata_t s) {
    Acl(0x86dd) acl_v6;
    Count() counter;
    bit<8> seen = 0;
    apply {
        s.egress_spec = 1;
        acl_v6.apply(h, s);
        counter.apply(h.eth.eth_type, seen);
        counter.apply(h.eth.eth_type, seen);
        h.eth.dst[7:0] = seen;
    }
}
control E(inout headers h, inout meta m, inout standard_metadata_t s) { apply { } }
control C(inout headers h, inout meta m) { apply { } }
control D(packet_out p, in headers h) { apply { p.emit(h.eth); } }
V1Switch(P(), V(), I(), E(), C(), D()) main;
"""

SRC = bytes.fromhex("0200000000b2")


def compiled(tmp_path: Path, text: str, name: str = "nested.p4"):
    path = tmp_path / name
    path.write_text(text)
    return compile_file(path)


def test_a_control_applied_inside_another(tmp_path: Path, backend: str) -> None:
    program = compiled(tmp_path, NESTED_CONTROLS)
    assert [t.preamble.name for t in program.p4info.tables] == ["I.acl_v6.acl"]
    assert "I.acl_v6.deny" in [a.preamble.name for a in program.p4info.actions]
    state = program.new_state()
    pipe = program.pipeline(state)
    ((port, out),) = list(pipe.process(0, bytes(6) + SRC + b"\x08\x00"))
    assert port == 1 and out[5] == 2  # Count applied twice: its inout parameter is seen
    ((_, out),) = list(pipe.process(0, bytes(6) + SRC + b"\x08\x06"))
    assert out[5] == 0
    assert list(pipe.process(0, bytes(6) + SRC + b"\x86\xdd")) == []  # the constructor argument
    deny = rt.ActionCall("I.acl_v6.deny", ())
    state.table("I.acl_v6.acl").insert(rt.TableEntry((rt.exact(int(SRC.hex(), 16), 48),), deny))
    assert list(pipe.process(0, bytes(6) + SRC + b"\x08\x00")) == []  # its own table


def test_a_control_applied_again_with_other_arguments(tmp_path: Path, backend: str) -> None:
    """Count, which declares only a variable, counts into `seen` twice, then into dst[15:8]."""
    again = "h.eth.dst[7:0] = seen;\n        counter.apply(h.eth.eth_type, h.eth.dst[15:8]);"
    program = compiled(tmp_path, NESTED_CONTROLS.replace("h.eth.dst[7:0] = seen;", again))
    pipe = program.pipeline(program.new_state())
    ((_, out),) = list(pipe.process(0, bytes([0, 0, 0, 0, 7, 0]) + SRC + b"\x08\x00"))
    assert (out[4], out[5]) == (8, 2)


BAD = [
    (
        "acl_v6.apply(h, s);",
        "acl_v6.apply(h, s);\n        headers copy = h;\n        acl_v6.apply(copy, s);",
        "only for a block declaring nothing but variables and constants",
    ),
    ("Acl(0x86dd) acl_v6;", "Acl() acl_v6;", "takes 1 argument(s), got 0"),
    ("Acl(0x86dd) acl_v6;", "Acl(h.eth.eth_type) acl_v6;", "must be a constant"),
    ("acl_v6.apply(h, s);", "acl_v6.apply(h.eth, s);", "parameter h is headers"),
    ("acl_v6.apply(h, s);", "acl_v6.run(h, s);", "has no method 'run'"),
    ("if (t == 0x0800) { n = n + step; }", "if (t == 0x0800) { return; }", "return in a control"),
    ("if (t == 0x0800) { n = n + step; }", "t = 1;", "read-only"),
]


@pytest.mark.parametrize(("old", "new", "words"), BAD)
def test_what_nested_controls_refuse(tmp_path: Path, old: str, new: str, words: str) -> None:
    assert old in NESTED_CONTROLS
    with pytest.raises(P4CompileError) as err:
        compiled(tmp_path, NESTED_CONTROLS.replace(old, new, 1))
    assert words in err.value.what and err.value.line > 0, err.value


INSTANCE_ARGS = (
    NESTED_CONTROLS.replace(
        "control I(",
        """\
control step_t(in bit<16> t, inout bit<8> n);
control Twice(in bit<16> t, inout bit<8> n)(step_t step) {
    apply { step.apply(t, n); step.apply(t, n); }
}
control Once(in bit<16> t, inout bit<8> n)(Count step) {
    apply { step.apply(t, n); }
}
control I(""",
    )
    .replace(
        "    Count() counter;\n",
        "    Count() counter;\n    Twice(counter) twice;\n    Once(counter) once;\n",
    )
    .replace(
        "counter.apply(h.eth.eth_type, seen);\n        counter.apply(h.eth.eth_type, seen);",
        "twice.apply(h.eth.eth_type, seen);\n        once.apply(h.eth.eth_type, seen);",
    )
)


def test_a_control_instance_as_a_constructor_argument(tmp_path: Path, backend: str) -> None:
    """As p4c's issue1566-bmv2.p4: `Twice(counter) twice;` gives Twice the instance itself,
    which it applies (a parameter of a control type, or of the control's own type)."""
    assert "Twice(counter) twice;" in INSTANCE_ARGS and "once.apply" in INSTANCE_ARGS
    program = compiled(tmp_path, INSTANCE_ARGS)
    pipe = program.pipeline(program.new_state())
    ((_, out),) = list(pipe.process(0, bytes(6) + SRC + b"\x08\x00"))
    assert out[5] == 3  # counter applied three times, into `seen`
    for old, new, words in [
        ("Once(counter) once;", "Once(1) once;", "expected an instance of control type Count"),
        ("Once(counter) once;", "Once(acl_v6) once;", "Acl's parameters are not those of Count"),
        ("step_t(in bit<16> t,", "step_t(in bit<8> t,", "Count's parameters are not those"),
    ]:
        with pytest.raises(P4CompileError) as err:
            compiled(tmp_path, INSTANCE_ARGS.replace(old, new))
        assert words in err.value.what and err.value.line > 0, err.value


SUB_PARSERS = """\
#include <core.p4>
#include <v1model.p4>
header eth_t { bit<48> dst; bit<48> src; bit<16> eth_type; }
header vlan_t { bit<16> tci; bit<16> eth_type; }
header ipv4_t { bit<8> ttl; bit<8> proto; }
struct headers { eth_t eth; vlan_t vlan; ipv4_t ipv4; }
struct meta { bit<16> inner_type; bit<8> tags; }

parser Tags(packet_in p, inout headers h, inout meta m, in bit<16> outer_type) {
    state start {
        transition select(outer_type) { 0x8100: tag; default: accept; }
    }
    state tag { p.extract(h.vlan); m.tags = m.tags + 1; transition accept; }
}
parser L3(packet_in p, inout headers h)(bit<16> ipv4_type) {
    state start {
        transition select(h.vlan.isValid() ? h.vlan.eth_type : h.eth.eth_type) {
            ipv4_type: ipv4;
            0xdead: reject;
            default: accept;
        }
    }
    state ipv4 { p.extract(h.ipv4); transition accept; }
}
parser P(packet_in p, out headers h, inout meta m, inout standard_metadata_t s) {
    Tags() tags;
    L3(0x0800) l3;
    state start {
        p.extract(h.eth);
        tags.apply(p, h, m, h.eth.eth_type);
        m.inner_type = h.vlan.isValid() ? h.vlan.eth_type : h.eth.eth_type;
        l3.apply(p, h);
        transition accept;
    }
}
control V(inout headers h, inout meta m) { apply { } }
control I(inout headers h, inout meta m, inout standard_metadata_t s) {
    apply {
        s.egress_spec = 1;
        if (h.ipv4.isValid()) { h.ipv4.ttl = h.ipv4.ttl - 1; }
        h.eth.src[15:0] = m.inner_type;
        h.eth.src[23:16] = m.tags;
    }
}
control E(inout headers h, inout meta m, inout standard_metadata_t s) { apply { } }
control C(inout headers h, inout meta m) { apply { } }
control D(packet_out p, in headers h) { apply { p.emit(h); } }
V1Switch(P(), V(), I(), E(), C(), D()) main;
"""


@pytest.mark.parametrize(
    ("after_eth", "expected"),
    [
        # untagged IPv4: L3 extracts it, TTL down
        (b"\x08\x00" + b"\x40\x11", b"\x08\x00" + b"\x3f\x11"),
        # one VLAN tag, then IPv4 behind it
        (b"\x81\x00" + b"\x00\x05\x08\x00" + b"\x40\x11", b"\x81\x00\x00\x05\x08\x00\x3f\x11"),
        # not IPv4: nothing more extracted, the rest is payload
        (b"\x86\xdd" + b"\x40\x11", b"\x86\xdd" + b"\x40\x11"),
    ],
)
def test_parsers_applied_inside_a_parser(
    tmp_path: Path, backend: str, after_eth: bytes, expected: bytes
) -> None:
    program = compiled(tmp_path, SUB_PARSERS)
    pipe = program.pipeline(program.new_state())
    ((_, out),) = list(pipe.process(0, bytes(12) + after_eth))
    assert out[12:] == expected
    tagged = after_eth[:2] == b"\x81\x00"
    inner = after_eth[4:6] if tagged else after_eth[:2]
    assert out[10:12] == inner and out[9] == (1 if tagged else 0)


def test_a_sub_parser_rejecting_rejects_the_packet(tmp_path: Path, backend: str) -> None:
    program = compiled(tmp_path, SUB_PARSERS)
    pipe = program.pipeline(program.new_state())
    list(pipe.process(0, bytes(12) + b"\xde\xad"))
    assert pipe.counts.get("parser_error.NoError") == 1  # `reject` with no error set


SUB_BAD = [
    ("L3(0x0800) l3;", "L3() l3;", "takes 1 argument(s), got 0"),
    (
        "Tags() tags;",
        "Tags() tags;\n    register<bit<8>>(1) r;",
        "only parsers can be instantiated",
    ),
    (
        "tags.apply(p, h, m, h.eth.eth_type);",
        "tags.apply(h, h, m, h.eth.eth_type);",
        "expected the packet_in here",
    ),
]


@pytest.mark.parametrize(("old", "new", "words"), SUB_BAD)
def test_what_sub_parsers_refuse(tmp_path: Path, old: str, new: str, words: str) -> None:
    assert old in SUB_PARSERS
    with pytest.raises(P4CompileError) as err:
        compiled(tmp_path, SUB_PARSERS.replace(old, new, 1))
    assert words in err.value.what and err.value.line > 0, err.value


DIRECT = SUB_PARSERS.replace("    Tags() tags;\n", "").replace(
    "tags.apply(p, h, m, h.eth.eth_type);", "Tags.apply(p, h, m, h.eth.eth_type);"
)
DIRECT_CONTROL = NESTED_CONTROLS.replace("    Count() counter;\n", "").replace(
    "counter.apply(h.eth.eth_type, seen);", "Count.apply(h.eth.eth_type, seen);"
)


TWICE = """\
#include <core.p4>
#include <v1model.p4>
header eth_t { bit<48> dst; bit<48> src; bit<16> eth_type; }
header tag_t { bit<16> v; }
struct headers { eth_t eth; tag_t t1; tag_t t2; }
struct meta { }
parser Tag(packet_in p, out tag_t t, inout bit<8> count) {
    state start {
        p.extract(t);
        count = count + 1;
        transition select(t.v) { 0: reject; default: accept; }
    }
}
parser P(packet_in p, out headers h, inout meta m, inout standard_metadata_t s) {
    Tag() tag;
    bit<8> n = 0;
    state start {
        p.extract(h.eth);
        tag.apply(p, h.t1, n);
        tag.apply(p, h.t2, n);
        h.eth.eth_type = (bit<16>) n;
        transition accept;
    }
}
control V(inout headers h, inout meta m) { apply { } }
control I(inout headers h, inout meta m, inout standard_metadata_t s) {
    apply { s.egress_spec = 1; }
}
control E(inout headers h, inout meta m, inout standard_metadata_t s) { apply { } }
control C(inout headers h, inout meta m) { apply { } }
control D(packet_out p, in headers h) { apply { p.emit(h); } }
V1Switch(P(), V(), I(), E(), C(), D()) main;
"""


def test_a_sub_parser_applied_again_with_other_arguments(tmp_path: Path, backend: str) -> None:
    program = compiled(tmp_path, TWICE)
    pipe = program.pipeline(program.new_state())
    ((_, out),) = list(pipe.process(0, bytes(14) + b"\x00\x05\x00\x06\xff"))
    assert out[12:] == b"\x00\x02\x00\x05\x00\x06\xff"  # both tags, counted twice
    list(pipe.process(0, bytes(14) + b"\x00\x05\x00\x00"))  # the second tag rejects
    assert pipe.counts.get("parser_error.NoError") == 1


def test_a_type_applied_directly(tmp_path: Path, backend: str) -> None:
    """`T.apply(...)` of a parser or control type, without declaring an instance (P4_16
    allows it): an instance is made there, named as the type."""
    assert "Tags.apply(" in DIRECT and "Count.apply(" in DIRECT_CONTROL
    program = compiled(tmp_path, DIRECT, "direct.p4")
    pipe = program.pipeline(program.new_state())
    ((_, out),) = list(pipe.process(0, bytes(12) + b"\x81\x00\x00\x05\x08\x00\x40\x11"))
    assert out[9] == 1 and out[12:] == b"\x81\x00\x00\x05\x08\x00\x3f\x11"
    program = compiled(tmp_path, DIRECT_CONTROL, "direct_control.p4")
    pipe = program.pipeline(program.new_state())
    ((_, out),) = list(pipe.process(0, bytes(6) + SRC + b"\x08\x00"))
    assert out[5] == 2  # applied twice, with the same arguments


def test_a_type_with_constructor_parameters_needs_an_instance(tmp_path: Path) -> None:
    text = SUB_PARSERS.replace("l3.apply(p, h);", "L3.apply(p, h);")
    with pytest.raises(P4CompileError) as err:
        compiled(tmp_path, text)
    assert "L3 takes constructor arguments: declare an instance" in err.value.what
