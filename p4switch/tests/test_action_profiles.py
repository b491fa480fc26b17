"""Action profiles and action selectors (v1model, as BMv2 runs them), in process: members and
groups programmed through `SwitchState.profile`, a group's member chosen at crc16(selector
keys) % n over its members in BMv2's handle order (computed here with an independent
CRC-16/ARC); P4Info as p4c writes it; what the front end refuses. The python back end runs
them; the native one refuses them by name (the switch then runs python)."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from p4.config.v1 import p4info_pb2

from p4switch import runtime as rt
from p4switch.backends import build_pipeline
from p4switch.exceptions import (
    FailedPrecondition,
    InvalidArgument,
    NativeUnsupported,
    P4CompileError,
)
from p4switch.program import CompiledProgram, compile_file
from tests.ecmp_program import (
    PROGRAM,
    crc16_arc,
    ipv4_frame,
    mac_frame,
    selector_fields,
)
from tests.eth_program import eth_program

NET = rt.lpm(10 << 24, 8, 32)  # 10.0.0.0/8


def compiled(tmp_path: Path, text: str = PROGRAM) -> CompiledProgram:
    path = tmp_path / "profiles.p4"
    path.write_text(text)
    return compile_file(path)


def flows(n: int = 200) -> list[tuple[int, int, int, int, int]]:
    rng = random.Random(7)
    return [
        (
            rng.getrandbits(32),
            (10 << 24) | rng.getrandbits(24),
            rng.choice((6, 17)),
            rng.getrandbits(16),
            rng.getrandbits(16),
        )
        for _ in range(n)
    ]


def egress(pipe, frame: bytes) -> int:
    ((port, _),) = list(pipe.process(0, frame))
    return port


def test_the_independent_crc_is_crc16_arc() -> None:
    assert crc16_arc(b"123456789") == 0xBB3D


@pytest.fixture
def ecmp(tmp_path: Path):
    program = compiled(tmp_path)
    state = program.new_state()
    selector = state.profile("I.ecmp_selector")
    for member_id, port in ((1, 1), (2, 2), (3, 3)):
        selector.insert_member(member_id, rt.ActionCall("I.set_port", (port,)))
    selector.insert_group(10, [3, 1, 2])  # BMv2 orders them by handle: 1, 2, 3
    state.table("I.ecmp").insert(rt.TableEntry((NET,), rt.group(10)))
    return state, selector, program.pipeline(state)


def test_a_group_picks_the_member_at_crc16_modulo_its_size(ecmp) -> None:
    _, _, pipe = ecmp
    seen = set()
    for flow in flows():
        expected = (1, 2, 3)[crc16_arc(selector_fields(*flow)) % 3]
        assert egress(pipe, ipv4_frame(*flow)) == expected, flow
        seen.add(expected)
    assert seen == {1, 2, 3}


def test_changing_a_group_moves_flows_as_bmv2_would(ecmp) -> None:
    """Member 2 out: flows spread over 1 and 3 (h % 2). Member 2 deleted and member 4 added:
    4 takes the lowest free handle, 2's, so the order is 1, 4, 3."""
    _, selector, pipe = ecmp
    selector.modify_group(10, [1, 3])
    for flow in flows(60):
        assert egress(pipe, ipv4_frame(*flow)) == (1, 3)[crc16_arc(selector_fields(*flow)) % 2]
    selector.delete_member(2)
    selector.insert_member(4, rt.ActionCall("I.set_port", (4,)))
    selector.modify_group(10, [1, 3, 4])
    for flow in flows(60):
        expected = (1, 4, 3)[crc16_arc(selector_fields(*flow)) % 3]
        assert egress(pipe, ipv4_frame(*flow)) == expected


def test_an_empty_group_runs_nothing_and_takes_no_new_entries(ecmp) -> None:
    state, selector, pipe = ecmp
    selector.modify_group(10, [])
    assert egress(pipe, ipv4_frame(*flows(1)[0])) == 100  # BMv2's empty action: a no-op
    with pytest.raises(FailedPrecondition, match="group 10 is empty"):
        state.table("I.ecmp").insert(rt.TableEntry((rt.lpm(11 << 24, 8, 32),), rt.group(10)))


def test_a_member_or_group_in_use_cannot_be_deleted(ecmp) -> None:
    state, selector, _ = ecmp
    with pytest.raises(FailedPrecondition, match="member 1 is in group 10"):
        selector.delete_member(1)
    with pytest.raises(FailedPrecondition, match="group 10 is used by table entries"):
        selector.delete_group(10)
    state.table("I.ecmp").delete((NET,), 0)
    selector.delete_group(10)
    selector.delete_member(1)
    assert sorted(selector.members) == [2, 3]


def test_a_table_miss_runs_the_declared_default(ecmp) -> None:
    _, _, pipe = ecmp
    assert egress(pipe, ipv4_frame(1, 11 << 24, 6, 1, 2)) == 100  # 11.0.0.0: no entry


def test_an_action_profile_table_runs_its_members(tmp_path: Path) -> None:
    program = compiled(tmp_path)
    state = program.new_state()
    profile = state.profile("mac_profile")
    profile.insert_member(5, rt.ActionCall("I.set_port", (7,)))
    macs = state.table("I.macs")
    for dst in (0xA, 0xB):
        macs.insert(rt.TableEntry((rt.exact(dst, 48),), rt.member(5)))
    pipe = program.pipeline(state)
    assert [egress(pipe, mac_frame(d)) for d in (0xA, 0xB, 0xC)] == [7, 7, 100]
    profile.modify_member(5, rt.ActionCall("I.set_port", (8,)))  # every entry follows
    assert [egress(pipe, mac_frame(d)) for d in (0xA, 0xB)] == [8, 8]
    with pytest.raises(InvalidArgument, match="no groups"):
        profile.insert_group(1, [5])
    with pytest.raises(InvalidArgument, match="takes a member or group"):
        macs.insert(rt.TableEntry((rt.exact(0xC, 48),), rt.ActionCall("I.set_port", (1,))))
    with pytest.raises(InvalidArgument, match=r"cannot run action 'I\.nope'"):
        profile.insert_member(6, rt.ActionCall("I.nope"))


def test_the_native_back_end_refuses_action_selectors_by_name(tmp_path: Path) -> None:
    program = compiled(tmp_path)
    with pytest.raises(NativeUnsupported) as err:
        program.pipeline(program.new_state(), backend="native")
    assert "action selector I.ecmp_selector" in str(err.value)
    built = build_pipeline(
        program, program.new_state(), None, cpu_port=None, parser_reject="ingress"
    )
    assert built.choice.name == "python"


# --- P4Info ----------------------------------------------------------------------------------


def test_p4info_lists_the_profiles_as_p4c_does(tmp_path: Path) -> None:
    info = compiled(tmp_path).p4info
    tables = {t.preamble.name: t for t in info.tables}
    profiles = {p.preamble.name: p for p in info.action_profiles}
    assert set(profiles) == {"I.ecmp_selector", "mac_profile"}  # in-table: its @name, as is
    selector, macs = profiles["I.ecmp_selector"], profiles["mac_profile"]
    assert (selector.with_selector, selector.size, selector.max_group_size) == (True, 1024, 0)
    assert (macs.with_selector, macs.size) == (False, 4)
    assert list(selector.table_ids) == [tables["I.ecmp"].preamble.id]
    assert tables["I.ecmp"].implementation_id == selector.preamble.id
    assert selector.preamble.id >> 24 == p4info_pb2.P4Ids.ACTION_PROFILE
    # selector keys are the selector's inputs, not match fields
    assert [(f.name, f.match_type) for f in tables["I.ecmp"].match_fields] == [
        ("h.ipv4.dst", p4info_pb2.MatchField.LPM)
    ]


SHARED = eth_program(
    """\
    action fwd(bit<9> port) { s.egress_spec = port; }
    @max_group_size(8) action_selector(HashAlgorithm.crc16, 32w16, 32w14) sel;
    action_profile(32w16) ap;
    table t1 {
        key = { h.eth.dst: exact; h.eth.src: selector; }
        actions = { fwd; NoAction; }
        implementation = sel;
    }
    table t2 {
        key = { h.eth.src: exact; }
        actions = { fwd; NoAction; }
        implementation = ap;
    }
    table t3 {
        key = { h.eth.eth_type: exact; }
        actions = { fwd; NoAction; }
        implementation = ap;
    }
    apply { t1.apply(); t2.apply(); t3.apply(); }
"""
)


def test_a_shared_profile_lists_its_tables(tmp_path: Path) -> None:
    info = compiled(tmp_path, SHARED).p4info
    ids = {t.preamble.name: t.preamble.id for t in info.tables}
    profiles = {p.preamble.name: p for p in info.action_profiles}
    assert list(profiles["I.ap"].table_ids) == [ids["I.t2"], ids["I.t3"]]
    assert profiles["I.sel"].max_group_size == 8
    assert not profiles["I.sel"].preamble.annotations  # p4c leaves @max_group_size out


P4C_SAMPLE = eth_program(
    """\
    action drop() { mark_to_drop(s); }
    table indirect {
        key = { }
        actions = { drop; NoAction; }
        const default_action = NoAction();
        @name("ap") implementation = action_profile(32w128);
    }
    table indirect_ws {
        key = { h.eth.src: selector; }
        actions = { drop; NoAction; }
        const default_action = NoAction();
        @name("ap_ws") implementation = action_selector(HashAlgorithm.identity, 32w1024, 32w10);
    }
    apply { indirect.apply(); indirect_ws.apply(); }
"""
)


def test_in_table_profiles_are_named_and_numbered_as_p4c_does(tmp_path: Path) -> None:
    """p4c's testdata action_profile-bmv2.p4 (its P4Info: "ap" 294074782, size 128; "ap_ws"
    300324846, with selector, size 1024; NoAction a const default)."""
    info = compiled(tmp_path, P4C_SAMPLE).p4info
    got = [(p.preamble.name, p.preamble.id, p.with_selector, p.size) for p in info.action_profiles]
    assert got == [("ap", 294074782, False, 128), ("ap_ws", 300324846, True, 1024)]
    assert [t.implementation_id for t in info.tables] == [294074782, 300324846]
    assert [t.const_default_action_id for t in info.tables] == [21257015] * 2
    assert not any(t.match_fields for t in info.tables)


BAD = [
    (
        "key = { h.eth.src: exact; }",
        "key = { h.eth.src: exact; h.eth.dst: selector; }",
        "need an action_selector, I.ap is an action_profile",
    ),
    (
        "key = { h.eth.eth_type: exact; }\n        actions = { fwd; NoAction; }",
        "key = { h.eth.eth_type: exact; }\n        actions = { NoAction; }",
        "must list the same actions as table I.t2",
    ),
    (
        "implementation = sel;",
        "implementation = sel;\n        default_action = fwd(1);",
        "default action can only be NoAction",
    ),
    (
        "implementation = sel;",
        "implementation = sel;\n        entries = { 48w1: fwd(1); }",
        "it cannot have entries",
    ),
    (
        "implementation = sel;",
        "implementation = action_selector(HashAlgorithm.crc16, 4, 14);",
        "needs a name",
    ),
    ("implementation = sel;", "implementation = fwd;", "must name an action_profile"),
    ("HashAlgorithm.crc16, 32w16", "HashAlgorithm.random, 32w16", "not supported"),
    ("implementation = sel;", "", "`selector` keys need `implementation = action_selector`"),
]


@pytest.mark.parametrize(("old", "new", "words"), BAD)
def test_what_action_profiles_refuse(tmp_path: Path, old: str, new: str, words: str) -> None:
    assert old in SHARED
    with pytest.raises(P4CompileError) as err:
        compiled(tmp_path, SHARED.replace(old, new, 1))
    assert words in err.value.what and err.value.line > 0 and err.value.col > 0, err.value
