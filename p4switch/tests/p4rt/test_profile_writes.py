"""Action profiles and selectors over P4Runtime: ActionProfileMember and ActionProfileGroup
written and read back, table entries pointing at members and groups, the packets they forward
(a group's member at crc16(selector keys) % n, by BMv2's handle order), and the status code of
each refusal."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest
from p4.v1 import p4runtime_pb2

from p4switch.p4rt.codec import InstalledPipeline
from p4switch.p4rt.reconcile import carry_over
from p4switch.p4rt.schema import P4InfoIndex
from p4switch.program import CompiledProgram, compile_file
from p4switch.runtime import ActionCall, ProfileRef, TableEntry, lpm
from tests.ecmp_program import (
    PROGRAM,
    crc16_arc,
    ipv4_frame,
    mac_frame,
    selector_fields,
)
from tests.p4rt.fixtures.p4rt_client import (
    Client,
    code_names,
    serving,
    write_errors,
)

Update = p4runtime_pb2.Update
FLOWS = [(0x0A000001 + i, 0x0A0000FE, 6, 1000 + 7 * i, 80) for i in range(40)]


@pytest.fixture
def switch(tmp_path: Path) -> Iterator[tuple[Client, CompiledProgram, object]]:
    path = tmp_path / "ecmp.p4"
    path.write_text(PROGRAM)
    program = compile_file(path)
    state = program.new_state()
    with serving(program, PROGRAM, state) as client:
        yield client, program, program.pipeline(state)


def ids(program: CompiledProgram) -> dict[str, int]:
    info = program.p4info
    objects = [*info.action_profiles, *info.tables, *info.actions]
    return {o.preamble.name: o.preamble.id for o in objects}


def member(program, member_id: int, port: int, profile: str = "I.ecmp_selector"):
    msg = p4runtime_pb2.ActionProfileMember(action_profile_id=ids(program)[profile])
    msg.member_id = member_id
    msg.action.action_id = ids(program)["I.set_port"]
    msg.action.params.add(param_id=1, value=bytes([port]))  # canonical: as read back
    return msg


def group(program, group_id: int, members, max_size: int = 0, weight: int = 1):
    msg = p4runtime_pb2.ActionProfileGroup(
        action_profile_id=ids(program)["I.ecmp_selector"], group_id=group_id, max_size=max_size
    )
    for m in members:
        msg.members.add(member_id=m, weight=weight)
    return msg


def ecmp_entry(program, prefix: int = 10, **action: int) -> p4runtime_pb2.TableEntry:
    te = p4runtime_pb2.TableEntry(table_id=ids(program)["I.ecmp"])
    lpm = te.match.add(field_id=1).lpm
    lpm.value, lpm.prefix_len = bytes([prefix, 0, 0, 0]), 8
    for field, value in action.items():
        setattr(te.action, field, value)
    return te


def update(kind: int, msg) -> p4runtime_pb2.Update:
    u = Update(type=kind)
    field = {
        p4runtime_pb2.ActionProfileMember: "action_profile_member",
        p4runtime_pb2.ActionProfileGroup: "action_profile_group",
        p4runtime_pb2.TableEntry: "table_entry",
    }[type(msg)]
    getattr(u.entity, field).CopyFrom(msg)
    return u


def refused(client: Client, *updates: Update) -> list[tuple[str, str]]:
    with pytest.raises(grpc.RpcError) as caught:
        client.write(*updates)
    errors = write_errors(caught.value)
    return list(zip(code_names(errors), (e.message for e in errors), strict=True))


def egress(pipe, frame: bytes) -> int:
    ((port, _),) = list(pipe.process(0, frame))
    return port


@pytest.fixture
def ecmp(switch):
    """Members 1, 2, 3 (ports 1, 2, 3), group 7 of them listed 3, 1, 2, 10.0.0.0/8 -> group 7."""
    client, program, pipe = switch
    client.write(*(update(Update.INSERT, member(program, m, m)) for m in (1, 2, 3)))
    client.write(update(Update.INSERT, group(program, 7, [3, 1, 2])))
    client.write(update(Update.INSERT, ecmp_entry(program, action_profile_group_id=7)))
    return client, program, pipe


def test_a_group_forwards_each_flow_to_its_hashed_member(ecmp) -> None:
    _, _, pipe = ecmp
    for flow in FLOWS:
        expected = (1, 2, 3)[crc16_arc(selector_fields(*flow)) % 3]  # by handle, not as listed
        assert egress(pipe, ipv4_frame(*flow)) == expected


def test_members_groups_and_entries_read_back_as_written(ecmp) -> None:
    client, program, _ = ecmp
    query = p4runtime_pb2.Entity()
    query.action_profile_member.action_profile_id = ids(program)["I.ecmp_selector"]
    members = [e.action_profile_member for e in client.read(query)]
    assert members == [member(program, m, m) for m in (1, 2, 3)]
    everything = p4runtime_pb2.Entity()
    everything.action_profile_group.SetInParent()  # every group of every profile
    (back,) = [e.action_profile_group for e in client.read(everything)]
    assert back == group(program, 7, [3, 1, 2])
    one = p4runtime_pb2.Entity()
    one.action_profile_member.CopyFrom(
        p4runtime_pb2.ActionProfileMember(action_profile_id=ids(program)["mac_profile"])
    )
    assert client.read(one) == []  # a profile without members
    entries = p4runtime_pb2.Entity()
    entries.table_entry.table_id = ids(program)["I.ecmp"]
    (entry,) = [e.table_entry for e in client.read(entries)]
    assert entry.action.action_profile_group_id == 7
    assert entry.match == ecmp_entry(program).match


def test_modifying_a_group_and_a_member_moves_traffic(ecmp) -> None:
    client, program, pipe = ecmp
    client.write(update(Update.MODIFY, group(program, 7, [2])))
    client.write(update(Update.MODIFY, member(program, 2, 9)))
    assert {egress(pipe, ipv4_frame(*flow)) for flow in FLOWS} == {9}


def test_an_action_profile_table_points_at_members(switch) -> None:
    client, program, pipe = switch
    client.write(update(Update.INSERT, member(program, 4, 12, profile="mac_profile")))
    te = p4runtime_pb2.TableEntry(table_id=ids(program)["I.macs"])
    te.match.add(field_id=1).exact.value = (0xAB).to_bytes(6, "big")
    te.action.action_profile_member_id = 4
    client.write(update(Update.INSERT, te))
    assert egress(pipe, mac_frame(0xAB)) == 12
    query = p4runtime_pb2.Entity()
    query.table_entry.table_id = ids(program)["I.macs"]
    query.table_entry.action.action_profile_member_id = 4  # entries filtered by their member
    assert [e.table_entry.action.action_profile_member_id for e in client.read(query)] == [4]


def test_a_failed_atomic_batch_leaves_profiles_as_they_were(ecmp) -> None:
    client, program, _ = ecmp
    with pytest.raises(grpc.RpcError):
        client.write(
            update(Update.INSERT, member(program, 5, 5)),
            update(Update.MODIFY, group(program, 7, [5])),
            update(Update.DELETE, member(program, 99, 0)),  # no such member: all undone
            atomicity=p4runtime_pb2.WriteRequest.ROLLBACK_ON_ERROR,
        )
    query = p4runtime_pb2.Entity()
    query.action_profile_group.action_profile_id = ids(program)["I.ecmp_selector"]
    (back,) = [e.action_profile_group for e in client.read(query)]
    assert back == group(program, 7, [3, 1, 2])
    query = p4runtime_pb2.Entity()
    query.action_profile_member.action_profile_id = ids(program)["I.ecmp_selector"]
    assert [e.action_profile_member.member_id for e in client.read(query)] == [1, 2, 3]


REFUSALS = [
    (lambda p: update(Update.INSERT, member(p, 1, 1)), "ALREADY_EXISTS", "already exists"),
    (lambda p: update(Update.MODIFY, member(p, 8, 1)), "NOT_FOUND", "no member 8"),
    (lambda p: update(Update.DELETE, member(p, 1, 1)), "FAILED_PRECONDITION", "is in group 7"),
    (
        lambda p: update(Update.DELETE, group(p, 7, [])),
        "FAILED_PRECONDITION",
        "used by table entries",
    ),
    (lambda p: update(Update.INSERT, group(p, 8, [1, 9])), "NOT_FOUND", "no member 9"),
    (lambda p: update(Update.INSERT, group(p, 7, [1])), "ALREADY_EXISTS", "already exists"),
    (
        lambda p: update(Update.INSERT, group(p, 8, [1, 2], max_size=1)),
        "RESOURCE_EXHAUSTED",
        "at most 1 members",
    ),
    (
        lambda p: update(Update.INSERT, group(p, 8, [1], weight=2)),
        "UNIMPLEMENTED",
        "members of weight 1",
    ),
    (
        lambda p: update(Update.INSERT, group(p, 8, [1], weight=0)),
        "INVALID_ARGUMENT",
        "weight of 1 or more",
    ),
    (
        lambda p: update(Update.INSERT, ecmp_entry(p, 11, action_profile_member_id=9)),
        "NOT_FOUND",
        "no member 9",
    ),
    (
        lambda p: update(Update.INSERT, ecmp_entry(p, 12, action_profile_group_id=8)),
        "NOT_FOUND",
        "no group 8",
    ),
]


@pytest.mark.parametrize(("make", "code", "words"), REFUSALS)
def test_what_profile_writes_refuse(ecmp, make, code: str, words: str) -> None:
    client, program, _ = ecmp
    ((got, message),) = refused(client, make(program))
    assert got == code and words in message, message


def test_what_profiles_refuse_beside_the_selector(ecmp) -> None:
    client, program, _ = ecmp
    client.write(update(Update.INSERT, group(program, 8, [])))  # an empty group is fine...
    te = ecmp_entry(program, 13, action_profile_group_id=8)
    assert refused(client, update(Update.INSERT, te))[0][0] == "FAILED_PRECONDITION"  # ...to aim at
    mac_group = group(program, 1, [])
    mac_group.action_profile_id = ids(program)["mac_profile"]
    assert refused(client, update(Update.INSERT, mac_group))[0] == (
        "INVALID_ARGUMENT",
        "mac_profile is an action profile: it has no groups",
    )
    direct = ecmp_entry(program, 14)
    direct.action.action.action_id = ids(program)["I.set_port"]
    assert refused(client, update(Update.INSERT, direct))[0][0] == "INVALID_ARGUMENT"
    one_shot = ecmp_entry(program, 15)
    one_shot.action.action_profile_action_set.SetInParent()
    assert refused(client, update(Update.INSERT, one_shot))[0][0] == "UNIMPLEMENTED"
    default = p4runtime_pb2.TableEntry(table_id=ids(program)["I.ecmp"], is_default_action=True)
    default.action.action_profile_member_id = 1
    assert refused(client, update(Update.MODIFY, default))[0][0] == "UNIMPLEMENTED"
    unknown = member(program, 1, 1)
    unknown.action_profile_id = 0x11FFFFFF
    assert refused(client, update(Update.INSERT, unknown))[0][0] == "NOT_FOUND"
    bad_action = member(program, 6, 1)
    bad_action.action.action_id = ids(program)["NoAction"] + 1
    assert refused(client, update(Update.INSERT, bad_action))[0][0] == "INVALID_ARGUMENT"


def test_reconcile_carries_members_groups_and_their_entries(ecmp) -> None:
    """RECONCILE_AND_COMMIT keeps a profile's members (in handle order), groups and the entries
    pointing at them: the new program forwards every flow as the old one did."""
    _, program, old_pipe = ecmp
    server_state = program.new_state()  # programmed as `ecmp` programmed the server's
    old = InstalledPipeline(P4InfoIndex.bind(program.p4info, server_state), server_state)
    profile = server_state.profile("I.ecmp_selector")
    for m in (1, 2, 3):
        profile.insert_member(m, ActionCall("I.set_port", (m,)))
    profile.insert_group(7, [3, 1, 2])
    server_state.table("I.ecmp").insert(TableEntry((lpm(10 << 24, 8, 32),), ProfileRef(7, True)))
    fresh = program.new_state()
    carry_over(old, InstalledPipeline(P4InfoIndex.bind(program.p4info, fresh), fresh))
    assert fresh.profile("I.ecmp_selector").groups == profile.groups
    new_pipe = program.pipeline(fresh)
    for flow in FLOWS:
        assert egress(new_pipe, ipv4_frame(*flow)) == egress(old_pipe, ipv4_frame(*flow))
