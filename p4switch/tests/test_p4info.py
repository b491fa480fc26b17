"""P4Info: names, aliases and ids as p4c gives them, stable across runs."""

from __future__ import annotations

from pathlib import Path

import pytest
from p4.config.v1 import p4info_pb2

from p4switch import EXAMPLES
from p4switch.cli import main as p4switch_main
from p4switch.exceptions import UsageError
from p4switch.p4info import jenkins_hash, read_p4info, write_p4info
from p4switch.p4rt.schema import P4InfoIndex
from p4switch.program import compile_file

PROGRAMS = Path(__file__).parent / "programs"
P = p4info_pb2.P4Ids


@pytest.fixture(scope="module")
def info() -> p4info_pb2.P4Info:
    return compile_file(PROGRAMS / "p4info_full.p4").p4info


def by_name(items, name):
    return next(i for i in items if i.preamble.name == name)


def test_ids_are_p4cs_for_the_tutorial_names() -> None:
    """The basic IPv4 tutorial program: these are the ids p4c gives its P4Info."""
    info = compile_file(PROGRAMS / "ipv4_lpm.p4").p4info
    ids = {o.preamble.name: o.preamble.id for o in (*info.tables, *info.actions)}
    assert ids["MyIngress.ipv4_lpm"] == 37375156
    assert ids["MyIngress.ipv4_forward"] == 28792405
    assert ids["MyIngress.drop"] == 25652968
    assert ids["NoAction"] == 21257015


def test_id_is_type_prefix_and_name_hash(info: p4info_pb2.P4Info) -> None:
    kinds = [
        (info.tables, P.TABLE),
        (info.actions, P.ACTION),
        (info.direct_counters, P.DIRECT_COUNTER),
        (info.registers, P.REGISTER),
    ]
    for items, prefix in kinds:
        for o in items:
            assert o.preamble.id == (prefix << 24) | (jenkins_hash(o.preamble.name) & 0xFFFFFF)
    packet_in = by_name(info.controller_packet_metadata, "packet_in")
    assert packet_in.preamble.id >> 24 == P.CONTROLLER_HEADER
    assert packet_in.preamble.id & 0xFFFFFF == jenkins_hash("packet_in_header_t") & 0xFFFFFF


def test_id_annotation_wins(info: p4info_pb2.P4Info) -> None:
    assert by_name(info.counters, "MyIngress.port_bytes").preamble.id == 0x12000ABC


def test_ids_are_stable_across_compilations(info: p4info_pb2.P4Info) -> None:
    again = compile_file(PROGRAMS / "p4info_full.p4").p4info
    assert again.SerializeToString() == info.SerializeToString()


def test_names_and_aliases(info: p4info_pb2.P4Info) -> None:
    tables = {t.preamble.name: t.preamble.alias for t in info.tables}
    assert tables == {"MyIngress.l2": "l2", "MyIngress.acl_table": "acl_table"}
    actions = {a.preamble.name for a in info.actions}
    assert actions == {"NoAction", "MyIngress.forward", "MyIngress.punt", "MyIngress.drop"}
    assert {r.preamble.name for r in info.registers} == {"MyIngress.rx", "global_bytes"}
    forward = by_name(info.actions, "MyIngress.forward")
    assert [(p.id, p.name, p.bitwidth) for p in forward.params] == [(1, "port", 9)]


def test_table_details(info: p4info_pb2.P4Info) -> None:
    l2 = by_name(info.tables, "MyIngress.l2")
    fields = [(f.id, f.name, f.bitwidth, f.match_type) for f in l2.match_fields]
    assert fields == [
        (1, "hdr.ethernet.dstAddr", 48, p4info_pb2.MatchField.EXACT),
        (2, "ether_type", 16, p4info_pb2.MatchField.TERNARY),
    ]
    assert l2.size == 4096
    drop = by_name(info.actions, "MyIngress.drop").preamble.id
    assert l2.const_default_action_id == drop
    drop_ref = next(r for r in l2.action_refs if r.id == drop)
    assert drop_ref.scope == p4info_pb2.ActionRef.DEFAULT_ONLY
    assert list(drop_ref.annotations) == ["@defaultonly"]
    counter = by_name(info.direct_counters, "MyIngress.l2_hits")
    assert list(l2.direct_resource_ids) == [counter.preamble.id]
    assert counter.direct_table_id == l2.preamble.id
    assert counter.spec.unit == p4info_pb2.CounterSpec.BOTH


def test_noaction_is_added_as_default_only_like_p4c(info: p4info_pb2.P4Info) -> None:
    acl = by_name(info.tables, "MyIngress.acl_table")
    refs = {r.id: r for r in acl.action_refs}
    noaction = by_name(info.actions, "NoAction")
    assert refs[noaction.preamble.id].scope == p4info_pb2.ActionRef.DEFAULT_ONLY
    forward = by_name(info.actions, "MyIngress.forward").preamble.id
    assert refs[forward].scope == p4info_pb2.ActionRef.TABLE_ONLY
    assert list(noaction.preamble.annotations) == ['@noWarn("unused")']


def test_counters_and_registers(info: p4info_pb2.P4Info) -> None:
    packets = by_name(info.counters, "MyIngress.port_packets")
    assert (packets.size, packets.spec.unit) == (64, p4info_pb2.CounterSpec.PACKETS)
    assert by_name(info.counters, "MyIngress.port_bytes").spec.unit == p4info_pb2.CounterSpec.BYTES
    rx = by_name(info.registers, "MyIngress.rx")
    assert (rx.size, rx.type_spec.bitstring.bit.bitwidth) == (128, 32)
    assert by_name(info.registers, "global_bytes").type_spec.bitstring.bit.bitwidth == 64


def test_controller_packet_metadata(info: p4info_pb2.P4Info) -> None:
    packet_in = by_name(info.controller_packet_metadata, "packet_in")
    assert packet_in.preamble.alias == "packet_in"
    assert list(packet_in.preamble.annotations) == ['@controller_header("packet_in")']
    assert [(m.id, m.name, m.bitwidth) for m in packet_in.metadata] == [
        (1, "ingress_port", 9),
        (2, "_pad", 7),
    ]
    packet_out = by_name(info.controller_packet_metadata, "packet_out")
    assert [m.name for m in packet_out.metadata] == ["egress_port", "_pad", "magic"]


def test_signed_register_type() -> None:
    info = compile_file(PROGRAMS / "agg32.p4").p4info
    lane = by_name(info.registers, "AggIngress.lane00")
    assert lane.type_spec.bitstring.int.bitwidth == 32
    assert lane.size == 1024


@pytest.mark.parametrize("suffix", [".txt", ".bin"])
def test_write_and_read_back(tmp_path: Path, info: p4info_pb2.P4Info, suffix: str) -> None:
    path = tmp_path / f"p4info{suffix}"
    write_p4info(info, path)
    assert read_p4info(path) == info
    if suffix == ".txt":
        assert 'name: "MyIngress.l2"' in path.read_text()


def test_write_refuses_an_unknown_suffix(
    tmp_path: Path, info: p4info_pb2.P4Info, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(UsageError, match=r"\.txt or \.bin"):
        write_p4info(info, tmp_path / "p4info.json")
    # the command line: one line and status 2, nothing written
    out = tmp_path / "p4info.json"
    assert (
        p4switch_main(
            ["--p4", str(PROGRAMS / "p4info_full.p4"), "--check", "--p4info-out", str(out)]
        )
        == 2
    )
    err = capsys.readouterr().err.strip()
    assert err.startswith("p4switch: error: ") and "\n" not in err and not out.exists()


def test_runtime_specs_match_p4info() -> None:
    compiled = compile_file(PROGRAMS / "p4info_full.p4")
    l2 = next(t for t in compiled.tables if t.name == "MyIngress.l2")
    assert [(k.name, k.match_kind, k.bitwidth) for k in l2.keys] == [
        ("hdr.ethernet.dstAddr", "exact", 48),
        ("ether_type", "ternary", 16),
    ]
    assert l2.const_default and l2.default_action.name == "MyIngress.drop"
    assert l2.default_only == {"MyIngress.drop"} and l2.direct_counter == "MyIngress.l2_hits"
    acl = next(t for t in compiled.tables if t.name == "MyIngress.acl_table")
    assert acl.default_action.name == "NoAction" and acl.table_only == {"MyIngress.forward"}
    assert {c.name: c.unit for c in compiled.counters} == {
        "MyIngress.port_packets": "packets",
        "MyIngress.port_bytes": "bytes",
    }
    state = compiled.new_state()
    assert state.register("global_bytes").spec.bitwidth == 64


def test_const_entries_make_a_const_table() -> None:
    info = compile_file(PROGRAMS / "features.p4").p4info
    assert by_name(info.tables, "FeatureIngress.ops").is_const_table
    assert not compile_file(EXAMPLES / "l2.p4").p4info.tables[0].is_const_table


def test_key_names_are_p4cs(tmp_path: Path) -> None:
    """p4c names an isValid() key `$valid$` (what P4Runtime expects), a masked key by its
    expression and a constant in its base without its width; @name wins over all."""
    l2 = (EXAMPLES / "l2.p4").read_text()
    old = "key = { hdr.ethernet.dstAddr: exact; }"
    assert old in l2
    keys = (
        "key = { hdr.ethernet.isValid(): exact; "
        "hdr.ethernet.dstAddr & 48w0x10101010101: ternary; "
        "hdr.ethernet.srcAddr[15:0]: exact; "
        'hdr.ethernet.etherType: exact @name("eth_type"); }'
    )
    path = tmp_path / "keys.p4"
    path.write_text(l2.replace(old, keys))
    table = compile_file(path).p4info.tables[0]
    assert [f.name for f in table.match_fields] == [
        "hdr.ethernet.$valid$",
        "hdr.ethernet.dstAddr & 0x10101010101",
        "hdr.ethernet.srcAddr[15:0]",
        "eth_type",
    ]
    assert [f.bitwidth for f in table.match_fields] == [1, 48, 16, 16]


def test_a_struct_fields_name_annotation_names_the_key(tmp_path: Path) -> None:
    """p4c names a member by its field's @name (a `.`-name stands alone, without the left)."""
    l2 = (EXAMPLES / "l2.p4").read_text()
    text = l2.replace(
        "struct metadata_t { }",
        'struct metadata_t { @name("vrf_id") bit<8> vrf; @name(".global_bd") bit<8> bd; }',
    ).replace(
        "key = { hdr.ethernet.dstAddr: exact; }",
        "key = { meta.vrf: exact; meta.bd: exact; hdr.ethernet.dstAddr: exact; }",
    )
    path = tmp_path / "named.p4"
    path.write_text(text)
    names = [f.name for f in compile_file(path).p4info.tables[0].match_fields]
    assert names == ["meta.vrf_id", "global_bd", "hdr.ethernet.dstAddr"]


def test_a_header_fields_name_annotation_names_valid_and_stack_keys_too(tmp_path: Path) -> None:
    """p4c 1.2.5 writes `ipv4.$valid$` and `vlan[0].vid` for these keys, the headers' field
    `@name(".ipv4")` and `@name(".vlan")` standing alone (as in p4c's switch_p4_16.p4)."""
    text = (EXAMPLES / "l2.p4").read_text()
    header = "header ethernet_t {"
    headers = "struct headers_t {"
    assert header in text and headers in text
    text = text.replace(header, "header vlan_t { bit<12> vid; bit<4> pcp; }\n" + header)
    text = text.replace(headers, headers + ' @name(".vlan") vlan_t[2] tags; @name(".eth")')
    text = text.replace(
        "key = { hdr.ethernet.dstAddr: exact; }",
        "key = { hdr.tags[0].vid: exact; hdr.ethernet.isValid(): exact; }",
    )
    path = tmp_path / "named.p4"
    path.write_text(text)
    names = [f.name for f in compile_file(path).p4info.tables[0].match_fields]
    assert names == ["vlan[0].vid", "eth.$valid$"]


ACTION_USES = """
#include <core.p4>
#include <v1model.p4>
header eth_t { bit<48> dst; bit<48> src; bit<16> type; }
struct h_t { eth_t eth; }
struct m_t { }
parser P(packet_in p, out h_t h, inout m_t m, inout standard_metadata_t s) {
    state start { p.extract(h.eth); transition accept; }
}
control V(inout h_t h, inout m_t m) { apply { } }
control I(inout h_t h, inout m_t m, inout standard_metadata_t s) {
    action direct_only() { s.egress_spec = 2; }
    action inner(bit<9> p) { s.egress_spec = p; }
    action outer() { inner(3); }
    action both() { s.egress_spec = 5; }
    action twice() { both(); }
    action unused() { s.egress_spec = 4; }
    table t { key = { h.eth.dst: exact; } actions = { outer; twice; } }
    apply { direct_only(); t.apply(); both(); }
}
control E(inout h_t h, inout m_t m, inout standard_metadata_t s) { apply { } }
control C(inout h_t h, inout m_t m) { apply { } }
control D(packet_out p, in h_t h) { apply { p.emit(h.eth); } }
V1Switch(P(), V(), I(), E(), C(), D()) main;
"""


def test_actions_only_other_actions_call_are_left_out_as_p4c_inlines_them(
    tmp_path: Path,
) -> None:
    """p4c 1.2.5 lists the actions a table lists or a control calls: one that only other
    actions call is inlined into them (`inner`), one never called is removed (`unused`);
    `both` stays, a control calls it besides `twice`."""
    path = tmp_path / "uses.p4"
    path.write_text(ACTION_USES)
    program = compile_file(path)
    names = [a.preamble.name for a in program.p4info.actions]
    assert names == ["NoAction", "I.direct_only", "I.outer", "I.both", "I.twice"]
    assert "I.inner" in {a.name for a in program.program.actions}  # still run when outer is


@pytest.fixture(scope="module")
def details() -> p4info_pb2.P4Info:
    return compile_file(PROGRAMS / "p4info_p4c_details.p4").p4info


def test_every_table_has_its_initial_default_action_with_arguments_as_p4c(
    details: p4info_pb2.P4Info,
) -> None:
    """p4c 1.2.5 writes `initial_default_action` for every table, NoAction included; each
    argument is as many bytes as its parameter's width takes (bit<9> 5: two bytes)."""
    l2 = by_name(details.tables, "DetailsIngress.l2◕‿◕")
    set_port = by_name(details.actions, "DetailsIngress.set_port")
    default = l2.initial_default_action
    assert default.action_id == set_port.preamble.id
    assert [(a.param_id, a.value) for a in default.arguments] == [
        (1, b"\x00\x05"),
        (2, b"\x01\x02"),
    ]
    errors = by_name(details.tables, "DetailsIngress.errors")
    noaction = by_name(details.actions, "NoAction")
    assert errors.initial_default_action.action_id == noaction.preamble.id
    assert not errors.initial_default_action.arguments


def test_const_entries_are_initial_entries_too_as_p4c_says(details: p4info_pb2.P4Info) -> None:
    """p4c 1.2.5 sets both `is_const_table` and `has_initial_entries` for `const entries`
    (and neither for an empty list, as for p4c's issue2905-bmv2.p4)."""
    table = by_name(details.tables, "DetailsIngress.ether_types")
    assert table.is_const_table and table.has_initial_entries
    assert not by_name(details.tables, "DetailsIngress.errors").has_initial_entries


def test_key_hidden_is_kept_and_action_ref_name_left_out_as_p4c(
    details: p4info_pb2.P4Info,
) -> None:
    """p4c 1.2.5 keeps a key's `@hidden` among its annotations and leaves an action
    reference's `@name` out (p4c's graph-annotationless-key.p4,
    name_annotations_to_p4info-bmv2.p4)."""
    l2 = by_name(details.tables, "DetailsIngress.l2◕‿◕")
    assert [list(f.annotations) for f in l2.match_fields] == [[], ["@hidden"]]
    assert [list(r.annotations) for r in l2.action_refs] == [[], []]


def test_a_mask_constant_is_named_without_leading_zeros_as_p4c(
    details: p4info_pb2.P4Info,
) -> None:
    """p4c 1.2.5 names `dstAddr & 0x00ff00ff00ff` by the constant's value in its base."""
    l2 = by_name(details.tables, "DetailsIngress.l2◕‿◕")
    assert l2.match_fields[0].name == "hdr.ethernet.dstAddr & 0xff00ff00ff"


def test_a_non_ascii_name_is_kept_as_written(details: p4info_pb2.P4Info) -> None:
    """p4c 1.2.5 keeps `@name("l2◕‿◕")` as UTF-8 (p4c's nonstandard_table_names-bmv2.p4)."""
    names = [t.preamble.name for t in details.tables]
    assert names[0] == "DetailsIngress.l2\u25d5\u203f\u25d5"
    assert details.tables[0].preamble.alias == "l2◕‿◕"


def test_selector_size_semantics_are_fields_not_annotations_as_p4c(
    details: p4info_pb2.P4Info,
) -> None:
    """p4c 1.2.5 turns `@selector_size_semantics("sum_of_members") @max_member_weight(100)`
    into the selector's `sum_of_members { max_member_weight: 100 }`, annotations dropped."""
    (selector,) = details.action_profiles
    assert selector.with_selector and selector.HasField("sum_of_members")
    assert selector.sum_of_members.max_member_weight == 100
    assert list(selector.preamble.annotations) == []


def test_a_table_matching_an_error_lists_the_errors_as_p4c(details: p4info_pb2.P4Info) -> None:
    """p4c 1.2.5 writes type_info's `error` (every member) when a key is an error."""
    assert list(details.type_info.error.members)[:3] == ["NoError", "PacketTooShort", "NoMatch"]
    assert by_name(details.tables, "DetailsIngress.errors").match_fields[0].bitwidth == 0


def test_a_struct_in_a_controller_header_is_its_fields_as_p4c(
    details: p4info_pb2.P4Info,
) -> None:
    """p4c 1.2.5 lists a struct field of a controller header member by member, `field.member`
    (p4c's issue3329-bmv2.p4)."""
    (packet_out,) = details.controller_packet_metadata
    assert [(m.id, m.name, m.bitwidth) for m in packet_out.metadata] == [
        (1, "ports.port", 9),
        (2, "ports.spare", 7),
        (3, "reason", 8),
    ]


def test_pkginfo_and_platform_property_fill_pkg_info_as_p4c(details: p4info_pb2.P4Info) -> None:
    """p4c 1.2.5 writes `@pkginfo(key = "...")` and `@platform_property(key = n)` on `main`
    into pkg_info (p4c's pkginfo_annotation.p4)."""
    pkg = details.pkg_info
    assert (pkg.arch, pkg.name, pkg.version) == ("v1model", "details", "1.0")
    assert pkg.url == "https://example.org/details" and not pkg.organization
    assert pkg.platform_properties.multicast_group_table_size == 16


def test_an_action_no_table_lists_has_no_parameters_as_p4c(tmp_path: Path) -> None:
    """p4c 1.2.5 writes an action only the control calls without parameters (they become
    locals set from the call's arguments: p4c's issue323.p4); listed by a table, it keeps
    them."""
    path = tmp_path / "direct.p4"
    path.write_text(
        ACTION_USES.replace("action direct_only() {", "action direct_only(bit<9> p) {")
        .replace("s.egress_spec = 2;", "s.egress_spec = p;")
        .replace("apply { direct_only();", "apply { direct_only(7);")
    )
    info = compile_file(path).p4info
    assert list(by_name(info.actions, "I.direct_only").params) == []
    outer = by_name(compile_file(PROGRAMS / "p4info_full.p4").p4info.actions, "MyIngress.forward")
    assert [p.name for p in outer.params] == ["port"]
    compiled = compile_file(path)
    P4InfoIndex.bind(compiled.p4info, compiled.new_state())  # the P4Runtime server takes it


@pytest.fixture(scope="module")
def named() -> p4info_pb2.P4Info:
    return compile_file(PROGRAMS / "named_types.p4").p4info


def test_a_new_type_is_named_in_type_name_as_p4c(named: p4info_pb2.P4Info) -> None:
    """p4c 1.2.5 writes a `type`'s name in the type_name of a match field, an action parameter
    and a controller header field, and its bit<N> in type_info.new_types; a `type` of a
    `type` is named after the outer one."""
    ports = by_name(named.tables, "ingress.ports")
    key = ports.match_fields[0]
    assert (key.name, key.bitwidth, key.type_name.name) == ("ingress_port", 9, "port_id_t")
    param = by_name(named.actions, "ingress.forward").params[0]
    assert (param.name, param.bitwidth, param.type_name.name) == ("port", 9, "egress_port_t")
    (packet_in,) = named.controller_packet_metadata
    assert [(m.name, m.type_name.name) for m in packet_in.metadata] == [
        ("ingress_port", "port_id_t"),
        ("pad", ""),
        ("verdict", ""),
    ]
    new_types = named.type_info.new_types
    assert new_types["port_id_t"].original_type.bitstring.bit.bitwidth == 9
    assert new_types["egress_port_t"].original_type.bitstring.bit.bitwidth == 9


def test_a_translated_type_has_the_controller_s_width_as_p4c(named: p4info_pb2.P4Info) -> None:
    """p4c 1.2.5 writes `@p4runtime_translation("uri", 32)` on a `type bit<12>` as the field's
    and parameter's bitwidth 32 (a default argument 4 bytes), and the URI and width in
    type_info.new_types; a typedef of it is named after it."""
    key = by_name(named.tables, "ingress.ports").match_fields[1]
    assert (key.name, key.bitwidth, key.type_name.name) == ("hdr.vlan.tenant", 32, "tenant_t")
    param = by_name(named.actions, "ingress.set_tenant").params[0]
    assert (param.bitwidth, param.type_name.name) == (32, "tenant_t")
    default = by_name(named.tables, "ingress.tenants").initial_default_action
    assert default.arguments[0].value == b"\x00\x00\x00\x05"  # the value untranslated
    translated = named.type_info.new_types["tenant_t"].translated_type
    assert (translated.uri, translated.sdn_bitwidth) == ("example.org/p4switch/tenant_t", 32)
    assert not named.type_info.new_types["tenant_t"].annotations


def test_serializable_enums_are_described_as_p4c(named: p4info_pb2.P4Info) -> None:
    """p4c 1.2.5 writes a register and a digest field of a serializable enum as
    `serializable_enum`, a key of one as its bit<N> without type_name, and describes the
    enums these or a controller header field use in type_info.serializable_enums, each
    member's value as many bytes as the width takes."""
    register = by_name(named.registers, "ingress.last_ether_type")
    assert register.type_spec.serializable_enum.name == "ether_type_t"
    members = named.type_info.structs["learn_t"].members
    assert [m.type_spec.WhichOneof("type_spec") for m in members] == [
        "bitstring",
        "new_type",
        "serializable_enum",
    ]
    key = by_name(named.tables, "ingress.tenants").match_fields[1]
    assert (key.bitwidth, key.type_name.name) == (16, "")
    enums = named.type_info.serializable_enums
    assert sorted(enums) == ["ether_type_t", "verdict_t"]  # not color_t: only in metadata
    assert enums["ether_type_t"].underlying_type.bitwidth == 16
    assert [(m.name, m.value) for m in enums["ether_type_t"].members] == [
        ("IPV4", b"\x08\x00"),
        ("ARP", b"\x08\x06"),
    ]


def test_a_new_type_s_other_annotations_are_kept_as_p4c(tmp_path: Path) -> None:
    """p4c 1.2.5 keeps a new type's annotations but @p4runtime_translation in
    type_info.new_types (p4c's p416-type-use3.p4)."""
    source = (PROGRAMS / "named_types.p4").read_text()
    path = tmp_path / "annotated.p4"
    path.write_text(source.replace("type bit<9> port_id_t;", '@note("x")\ntype bit<9> port_id_t;'))
    info = compile_file(path).p4info
    assert list(info.type_info.new_types["port_id_t"].annotations) == ['@note("x")']


def test_direct_counters_and_meters_keep_their_annotations_as_p4c() -> None:
    """p4c 1.2.5 writes a direct counter's and a direct meter's annotations (here @min_width)
    in their preambles, as it does for indexed ones (p4c's switch_p4_16.p4 has one)."""
    info = compile_file(Path(__file__).parent / "programs" / "direct_annotations.p4").p4info
    assert [list(d.preamble.annotations) for d in info.direct_counters] == [["@min_width(32)"]]
    assert [list(d.preamble.annotations) for d in info.direct_meters] == [["@min_width(16)"]]
