"""Write: what each update does to the switch state, and how refusals are reported."""

from __future__ import annotations

from collections.abc import Iterator

import grpc
import pytest
from p4.v1 import p4runtime_pb2

from p4switch.runtime import ActionCall, FieldMatch, Replica, SwitchState
from tests.p4rt.fixtures import entities as E
from tests.p4rt.fixtures.p4rt_client import (
    Client,
    Running,
    code_names,
    primary_client,
    running_server,
    write_errors,
)

WriteRequest = p4runtime_pb2.WriteRequest
TEN_SLASH_8 = bytes([10, 0, 0, 0])


@pytest.fixture
def switch() -> Iterator[tuple[Running, Client]]:
    with running_server() as running, primary_client(running) as client:
        yield running, client


def state_of(running: Running) -> SwitchState:
    active = running.dataplane.active
    assert active is not None
    return active.state


def refused(client: Client, *updates: p4runtime_pb2.Update, **kw: int) -> list[str]:
    """The per-update codes of a Write the server refuses (and it must refuse it)."""
    return [code for code, _ in refusals(client, *updates, **kw)]


def refusals(client: Client, *updates: p4runtime_pb2.Update, **kw: int) -> list[tuple[str, str]]:
    """(code, message) of each update of a Write the server refuses."""
    with pytest.raises(grpc.RpcError) as caught:
        client.write(*updates, **kw)
    assert caught.value.code() == grpc.StatusCode.UNKNOWN
    errors = write_errors(caught.value)
    assert len(errors) == len(updates)
    return list(zip(code_names(errors), (e.message for e in errors), strict=True))


def test_write_before_a_pipeline_is_set_fails_precondition() -> None:
    with running_server() as running:
        client = Client(running.port, 1)
        try:
            client.arbitrate()
            with pytest.raises(grpc.RpcError) as caught:
                client.write(E.update(E.INSERT, E.l2(b"\x02")))
            assert caught.value.code() == grpc.StatusCode.FAILED_PRECONDITION
        finally:
            client.close()


def test_batch_with_one_good_and_one_bad_update(switch) -> None:
    running, client = switch
    good = E.update(E.INSERT, E.l2(b"\x00\x00\x00\x00\x00\x02", port=3))
    bad = E.update(E.INSERT, E.lpm(b"\x0a\x00\x00\x00", 8, port=0x200))  # port is bit<9>
    with pytest.raises(grpc.RpcError) as caught:
        client.write(good, bad)
    err = caught.value
    assert err.code() == grpc.StatusCode.UNKNOWN
    errors = write_errors(err)
    assert code_names(errors) == ["OK", "INVALID_ARGUMENT"]
    assert errors[0].message == "" and "port" in errors[1].message
    table = state_of(running).table("MyIngress.l2")
    assert table.lookup([2])[0] == ActionCall("MyIngress.forward", (3,))  # the good one applied


def test_rollback_on_error_undoes_the_batch(switch) -> None:
    running, client = switch
    client.write(E.update(E.INSERT, E.l2(b"\x01")))
    updates = [
        E.update(E.INSERT, E.l2(b"\x02")),
        E.update(E.DELETE, E.l2(b"\x01")),
        E.update(E.INSERT, E.group(7, 1, 2)),
        E.update(E.INSERT, E.l2(b"\x02")),  # duplicate: fails
        E.update(E.INSERT, E.l2(b"\x03")),
    ]
    codes = refused(client, *updates, atomicity=WriteRequest.ROLLBACK_ON_ERROR)
    assert codes == ["ABORTED", "ABORTED", "ABORTED", "ALREADY_EXISTS", "ABORTED"]
    state = state_of(running)
    assert [e.match[0].value for e in state.table("MyIngress.l2").entries()] == [1]
    assert state.pre.groups == {}
    client.write(*updates[:3], atomicity=WriteRequest.DATAPLANE_ATOMIC)
    assert {e.match[0].value for e in state.table("MyIngress.l2").entries()} == {2}


@pytest.mark.parametrize(
    ("entry", "code"),
    [
        (E.lpm(b"\x0a\x00\x00\x00", 0), "INVALID_ARGUMENT"),  # don't care must be omitted
        (E.lpm(b"\x0a\x00\x00\x00", 33), "INVALID_ARGUMENT"),  # longer than the field
        (E.lpm(b"\x0a\x00\x00\x01", 24), "INVALID_ARGUMENT"),  # bits beyond the prefix
        (E.lpm(b"\x01\x0a\x00\x00\x00", 8), "INVALID_ARGUMENT"),  # wider than bit<32>
        (E.lpm(b"", 8), "INVALID_ARGUMENT"),  # empty value
        (E.acl(b"\x0a", b"\xff", 0), "INVALID_ARGUMENT"),  # ternary without priority
        (E.acl(b"\x0b", b"\x0a", 5), "INVALID_ARGUMENT"),  # value outside the mask
        (E.acl(b"\x00", b"\x00", 5), "INVALID_ARGUMENT"),  # zero mask must be omitted
        (p4runtime_pb2.TableEntry(table_id=E.L2, action=E.drop()), "INVALID_ARGUMENT"),
        (p4runtime_pb2.TableEntry(table_id=0x02FFFFFF, action=E.drop()), "NOT_FOUND"),
        (p4runtime_pb2.TableEntry(table_id=0, action=E.drop()), "INVALID_ARGUMENT"),
    ],
)
def test_malformed_entries_are_refused(switch, entry, code) -> None:
    _, client = switch
    assert refused(client, E.update(E.INSERT, entry)) == [code]


def test_padded_values_are_accepted_and_read_back_canonical(switch) -> None:
    _, client = switch
    entry = E.lpm(b"\x00\x00\x0a\x00\x01\x00", 24, port=2)  # leading zero bytes
    client.write(E.update(E.INSERT, entry))
    (read,) = client.read(E.entity(p4runtime_pb2.TableEntry(table_id=E.IPV4_LPM)))
    assert read.table_entry.match[0].lpm.value == b"\x0a\x00\x01\x00"
    assert read.table_entry.action.action.params[0].value == b"\x02"


def test_action_checks(switch) -> None:
    _, client = switch
    wrong_table = E.l2(b"\x01")
    wrong_table.action.action.action_id = 0x01FFFFFF
    missing_param = E.l2(b"\x02")
    del missing_param.action.action.params[:]
    extra_param = E.l2(b"\x03")
    extra_param.action.action.params.add(param_id=9, value=b"\x01")
    default_only = E.acl(b"\x0a", b"\xff", 1)
    default_only.action.action.action_id = E.NO_ACTION  # @defaultonly in acl
    no_action = E.l2(b"\x04")
    no_action.ClearField("action")
    codes = refused(
        client,
        *(E.update(E.INSERT, e) for e in (wrong_table, missing_param, extra_param, default_only)),
        E.update(E.INSERT, no_action),
    )
    assert codes == ["INVALID_ARGUMENT"] * 3 + ["PERMISSION_DENIED", "INVALID_ARGUMENT"]


def test_duplicates_missing_entries_and_a_full_table(switch) -> None:
    _, client = switch
    client.write(*(E.update(E.INSERT, E.acl(bytes([i]), b"\xff", 1)) for i in range(4)))
    assert refused(
        client,
        E.update(E.INSERT, E.acl(b"\x00", b"\xff", 1)),  # duplicate
        E.update(E.INSERT, E.acl(b"\x09", b"\xff", 1)),  # acl holds 4 entries
        E.update(E.INSERT, E.acl(b"\x00", b"\xff", 2)),  # another priority: another entry
        E.update(E.MODIFY, E.acl(b"\x09", b"\xff", 1)),
        E.update(E.DELETE, E.acl(b"\x09", b"\xff", 1)),
    ) == ["ALREADY_EXISTS", "RESOURCE_EXHAUSTED", "RESOURCE_EXHAUSTED", "NOT_FOUND", "NOT_FOUND"]


def test_modify_replaces_action_and_metadata_keeps_counters(switch) -> None:
    running, client = switch
    entry = E.l2(b"\x05", port=1)
    entry.metadata, entry.controller_metadata = b"cookie", 42
    client.write(E.update(E.INSERT, entry))
    state_entry = state_of(running).table("MyIngress.l2").get((FieldMatch(5, (1 << 48) - 1),), 0)
    assert state_entry is not None and state_entry.metadata == b"cookie"
    state_entry.packets, state_entry.bytes = 3, 300
    client.write(E.update(E.MODIFY, E.l2(b"\x05", port=4)))
    assert state_entry.action == ActionCall("MyIngress.forward", (4,))
    assert (state_entry.metadata, state_entry.controller_metadata) == (b"", 0)
    assert (state_entry.packets, state_entry.bytes) == (3, 300)
    counters = E.l2(b"\x05")
    counters.ClearField("action")  # a MODIFY without action keeps it
    counters.counter_data.packet_count = 0
    client.write(E.update(E.MODIFY, counters))
    assert state_entry.action.args == (4,) and state_entry.packets == 0


def test_delete_looks_at_the_key_only(switch) -> None:
    running, client = switch
    client.write(E.update(E.INSERT, E.l2(b"\x06")))
    key_only = E.l2(b"\x06")
    key_only.action.action.action_id = 12345  # nonsense, and ignored
    client.write(E.update(E.DELETE, key_only))
    assert state_of(running).table("MyIngress.l2").entry_count() == 0


def test_default_entry_set_and_reset(switch) -> None:
    running, client = switch
    table = state_of(running).table("MyIngress.ipv4_lpm")
    default = p4runtime_pb2.TableEntry(table_id=E.IPV4_LPM, is_default_action=True)
    default.action.CopyFrom(E.forward(7))
    client.write(E.update(E.MODIFY, default))
    assert table.default == ActionCall("MyIngress.forward", (7,))
    default.ClearField("action")
    client.write(E.update(E.MODIFY, default))
    assert table.default == ActionCall("NoAction")
    with_match = E.lpm(TEN_SLASH_8, 8)
    with_match.is_default_action = True
    const = p4runtime_pb2.TableEntry(table_id=E.L2, is_default_action=True, action=E.drop())
    assert refused(
        client,
        E.update(E.INSERT, default),  # the default entry is only modified
        E.update(E.DELETE, default),
        E.update(E.MODIFY, with_match),
        E.update(E.MODIFY, const),  # l2's default action is const
    ) == ["INVALID_ARGUMENT"] * 3 + ["PERMISSION_DENIED"]


def test_unsupported_table_entry_fields(switch) -> None:
    _, client = switch
    is_const = E.l2(b"\x01")
    is_const.is_const = True
    idle = E.l2(b"\x02")
    idle.idle_timeout_ns = 10
    meter = E.l2(b"\x03")
    meter.meter_config.cir = 1
    counters = E.lpm(TEN_SLASH_8, 8)
    counters.counter_data.packet_count = 1  # ipv4_lpm has no direct counter
    found = refusals(client, *(E.update(E.INSERT, e) for e in (is_const, idle, meter, counters)))
    assert [code for code, _ in found] == ["INVALID_ARGUMENT"] * 4
    for (_, message), words in zip(
        found, ("is_const", "idle timeout", "direct meter", "direct counter"), strict=True
    ):
        assert words in message


def test_direct_counter_entry(switch) -> None:
    running, client = switch
    client.write(E.update(E.INSERT, E.l2(b"\x07")))
    direct = p4runtime_pb2.DirectCounterEntry(table_entry=E.l2(b"\x07"))
    direct.data.packet_count, direct.data.byte_count = 10, 1000
    client.write(E.update(E.MODIFY, direct))
    entry = next(state_of(running).table("MyIngress.l2").entries())
    assert (entry.packets, entry.bytes) == (10, 1000)
    missing = p4runtime_pb2.DirectCounterEntry(table_entry=E.l2(b"\x08"))
    missing.data.packet_count = 1
    no_counter = p4runtime_pb2.DirectCounterEntry(table_entry=E.lpm(TEN_SLASH_8, 8))
    assert refused(
        client,
        E.update(E.MODIFY, missing),
        E.update(E.MODIFY, no_counter),
        E.update(E.INSERT, direct),
    ) == ["NOT_FOUND", "INVALID_ARGUMENT", "INVALID_ARGUMENT"]


def test_counter_entries(switch) -> None:
    running, client = switch
    client.write(E.update(E.MODIFY, E.counter(None, 4, 40)))  # every cell
    client.write(E.update(E.MODIFY, E.counter(2, 9, 90)))
    rx = state_of(running).counter("MyIngress.rx")
    assert rx.packets == [4, 4, 9, 4, 4, 4, 4, 4] and rx.bytes[2] == 90
    assert refused(
        client,
        E.update(E.MODIFY, E.counter(8, 1)),
        E.update(E.MODIFY, E.counter(-1, 1)),
        E.update(E.MODIFY, E.counter(0, -1)),
        E.update(E.INSERT, E.counter(0, 1)),
    ) == ["OUT_OF_RANGE", "INVALID_ARGUMENT", "INVALID_ARGUMENT", "INVALID_ARGUMENT"]


def test_register_entries(switch) -> None:
    running, client = switch
    client.write(E.update(E.MODIFY, E.register(None, b"\x01")))
    client.write(E.update(E.MODIFY, E.register(15, b"\x00\xff\xff\xff\xff")))
    assert state_of(running).register("MyIngress.reg").cells == [1] * 15 + [0xFFFFFFFF]
    no_data = E.register(1)
    assert refused(
        client,
        E.update(E.MODIFY, E.register(16, b"\x01")),
        E.update(E.MODIFY, E.register(0, b"\x01\x00\x00\x00\x00")),
        E.update(E.MODIFY, no_data),
        E.update(E.DELETE, E.register(0, b"\x01")),
    ) == ["OUT_OF_RANGE", "INVALID_ARGUMENT", "INVALID_ARGUMENT", "INVALID_ARGUMENT"]


def test_multicast_groups_and_clone_sessions(switch) -> None:
    running, client = switch
    pre = state_of(running).pre
    client.write(
        E.update(E.INSERT, E.group(1, 1, 2, instance=3)), E.update(E.INSERT, E.session(9, 4))
    )
    assert pre.groups[1] == (Replica(1, 3), Replica(2, 3))
    assert pre.sessions[9].replicas == (Replica(4, 0),)
    client.write(E.update(E.MODIFY, E.group(1, 5)))
    assert pre.groups[1] == (Replica(5, 0),)
    to_cpu = E.group(2)
    to_cpu.multicast_group_entry.replicas.add(port=(0xFFFFFFFD).to_bytes(4, "big"))
    client.write(E.update(E.INSERT, to_cpu))
    assert pre.groups[2] == (Replica(64, 0),)  # the server's CPU port
    assert refused(
        client,
        E.update(E.INSERT, E.group(0, 1)),
        E.update(E.INSERT, E.group(1, 1)),
        E.update(E.MODIFY, E.group(3, 1)),
        E.update(E.INSERT, E.group(4, 1, 1)),
        E.update(E.DELETE, E.session(10)),
        E.update(E.INSERT, E.group(5, 0xFFFFFFFA)),
    ) == [
        "INVALID_ARGUMENT",
        "ALREADY_EXISTS",
        "NOT_FOUND",
        "INVALID_ARGUMENT",
        "NOT_FOUND",
        "INVALID_ARGUMENT",
    ]
    client.write(E.update(E.DELETE, E.group(1)), E.update(E.DELETE, E.session(9)))
    assert set(pre.groups) == {2} and pre.sessions == {}


def test_unsupported_entities_are_unimplemented(switch) -> None:
    _, client = switch
    extern = p4runtime_pb2.ExternEntry(extern_type_id=0x81, extern_id=1)
    assert refused(client, E.update(E.INSERT, extern)) == ["UNIMPLEMENTED"]
    digest = p4runtime_pb2.DigestEntry(digest_id=0x17000001)
    digest.config.max_list_size = 1
    assert refused(client, E.update(E.INSERT, digest)) == ["NOT_FOUND"]  # programmed: no such one
    member = p4runtime_pb2.ActionProfileMember(action_profile_id=0x11000001, member_id=1)
    assert refused(client, E.update(E.INSERT, member)) == ["NOT_FOUND"]  # programmed: no such one
    meter = p4runtime_pb2.MeterEntry(meter_id=0x15000001)  # meters are programmed: no such one
    assert refused(client, E.update(E.MODIFY, meter)) == ["NOT_FOUND"]
