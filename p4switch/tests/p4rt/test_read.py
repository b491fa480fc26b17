"""Read: wildcards, filters, default entries, direct and indexed counters, registers, PRE."""

from __future__ import annotations

from collections.abc import Iterator

import grpc
import pytest
from p4.v1 import p4runtime_pb2

from tests.p4rt.fixtures import entities as E
from tests.p4rt.fixtures.p4rt_client import (
    Client,
    Running,
    code_names,
    primary_client,
    running_server,
    write_errors,
)

TableEntry = p4runtime_pb2.TableEntry


@pytest.fixture
def switch() -> Iterator[tuple[Running, Client]]:
    with running_server() as running, primary_client(running) as client:
        client.write(
            E.update(E.INSERT, E.lpm(bytes([10, 0, 1, 0]), 24, port=1)),
            E.update(E.INSERT, E.lpm(bytes([10, 0, 0, 0]), 8, port=2)),
            E.update(E.INSERT, E.acl(bytes([10, 0, 0, 0]), bytes([255, 0, 0, 0]), 10)),
            E.update(E.INSERT, E.acl(bytes([10, 0, 0, 0]), bytes([255, 255, 0, 0]), 20)),
            E.update(E.INSERT, E.l2(b"\x02", port=3)),
        )
        yield running, client


def table_ids(entities: list[p4runtime_pb2.Entity]) -> list[int]:
    return [e.table_entry.table_id for e in entities]


def test_table_id_zero_reads_every_entry_of_every_table(switch) -> None:
    _, client = switch
    entities = client.read(E.entity(TableEntry()))
    assert sorted(table_ids(entities)) == sorted([E.IPV4_LPM] * 2 + [E.ACL] * 2 + [E.L2])
    assert not any(e.table_entry.is_default_action for e in entities)


def test_no_match_reads_the_whole_table_and_filters_narrow_it(switch) -> None:
    _, client = switch
    assert len(client.read(E.entity(TableEntry(table_id=E.ACL)))) == 2
    (entity,) = client.read(E.entity(TableEntry(table_id=E.ACL, priority=20)))
    assert entity.table_entry.match[0].ternary.mask == bytes([255, 255, 0, 0])
    key = E.lpm(bytes([10, 0, 0, 0]), 8)
    key.ClearField("action")
    (entity,) = client.read(E.entity(key))
    assert entity.table_entry.action.action.params[0].value == b"\x02"
    ternary_key = E.acl(bytes([10, 0, 0, 0]), bytes([255, 0, 0, 0]), 0)  # any priority
    ternary_key.ClearField("action")
    (entity,) = client.read(E.entity(ternary_key))
    assert entity.table_entry.priority == 10
    by_action = TableEntry(table_id=E.IPV4_LPM)
    by_action.action.action.action_id = E.DROP
    assert client.read(E.entity(by_action)) == []


def test_default_entry_is_read_only_when_asked(switch) -> None:
    _, client = switch
    (entity,) = client.read(E.entity(TableEntry(table_id=E.L2, is_default_action=True)))
    entry = entity.table_entry
    assert entry.is_default_action and entry.action.action.action_id == E.NO_ACTION
    assert entry.is_const  # l2's default action is const


def test_counter_data_is_included_when_requested(switch) -> None:
    running, client = switch
    state = running.dataplane.active.state
    entry = next(state.table("MyIngress.l2").entries())
    entry.packets, entry.bytes = 5, 500
    query = TableEntry(table_id=E.L2)
    (plain,) = client.read(E.entity(query))
    assert not plain.table_entry.HasField("counter_data")
    query.counter_data.SetInParent()
    (counted,) = client.read(E.entity(query))
    data = counted.table_entry.counter_data
    assert (data.packet_count, data.byte_count) == (5, 500)


def test_direct_counter_entries(switch) -> None:
    _, client = switch
    direct = p4runtime_pb2.DirectCounterEntry(table_entry=TableEntry(table_id=E.L2))
    (entity,) = client.read(E.entity(direct))
    assert entity.direct_counter_entry.table_entry.match[0].exact.value == b"\x02"
    everything = client.read(E.entity(p4runtime_pb2.DirectCounterEntry()))
    assert len(everything) == 1


def test_counters_registers_whole_arrays_or_one_cell(switch) -> None:
    _, client = switch
    client.write(E.update(E.MODIFY, E.counter(3, 30, 300)))
    client.write(E.update(E.MODIFY, E.register(2, b"\x2a")))
    cells = client.read(E.entity(E.counter(None)))
    assert [e.counter_entry.index.index for e in cells] == list(range(8))
    (one,) = client.read(E.entity(E.counter(3)))
    assert (one.counter_entry.data.packet_count, one.counter_entry.data.byte_count) == (30, 300)
    assert len(client.read(E.entity(p4runtime_pb2.CounterEntry()))) == 8  # every counter
    registers = client.read(E.entity(p4runtime_pb2.RegisterEntry()))
    assert [e.register_entry.data.bitstring for e in registers][:3] == [b"\x00", b"\x00", b"\x2a"]
    (one,) = client.read(E.entity(E.register(2)))
    assert one.register_entry.index.index == 2 and one.register_entry.data.bitstring == b"\x2a"


def test_replication_entries_read_back_as_written(switch) -> None:
    _, client = switch
    group = E.group(3, 1, 2)
    group.multicast_group_entry.metadata = b"round 7"
    cpu = E.session(4)
    cpu.clone_session_entry.replicas.add(port=(0xFFFFFFFD).to_bytes(4, "big"), instance=1)
    cpu.clone_session_entry.packet_length_bytes = 128
    client.write(E.update(E.INSERT, group), E.update(E.INSERT, E.group(1, 5)))
    client.write(E.update(E.INSERT, cpu))
    groups = client.read(E.entity(E.group(0)))
    assert [e.packet_replication_engine_entry for e in groups] == [E.group(1, 5), group]
    (one,) = client.read(E.entity(E.group(3)))
    assert one.packet_replication_engine_entry == group
    (session,) = client.read(E.entity(E.session(0)))
    assert session.packet_replication_engine_entry == cpu  # the CPU port as the client sent it


def test_bad_requests_fail_alone(switch) -> None:
    _, client = switch
    filtered_all = TableEntry(priority=3)  # table_id 0 takes no filter
    with pytest.raises(grpc.RpcError) as caught:
        client.read(
            E.entity(TableEntry(table_id=E.L2)),
            E.entity(TableEntry(table_id=0x02ABCDEF)),
            E.entity(filtered_all),
            E.entity(E.counter(8)),
            p4runtime_pb2.Entity(),
        )
    assert caught.value.code() == grpc.StatusCode.UNKNOWN
    assert code_names(write_errors(caught.value)) == [
        "OK",
        "NOT_FOUND",
        "INVALID_ARGUMENT",
        "OUT_OF_RANGE",
        "INVALID_ARGUMENT",
    ]


def test_kinds_the_program_lacks_read_empty(switch) -> None:
    _, client = switch
    assert client.read(E.entity(p4runtime_pb2.MeterEntry())) == []


def test_read_before_a_pipeline_is_set() -> None:
    with running_server() as running:
        client = Client(running.port)
        try:
            with pytest.raises(grpc.RpcError) as caught:
                client.read(E.entity(TableEntry()))
            assert caught.value.code() == grpc.StatusCode.FAILED_PRECONDITION
        finally:
            client.close()


def test_large_reads_are_streamed_in_several_messages(switch) -> None:
    _, client = switch
    request = p4runtime_pb2.ReadRequest(device_id=1)
    request.entities.add().register_entry.SetInParent()
    for _ in range(40):  # 40 x 16 register cells
        request.entities.add().register_entry.register_id = E.REG
    responses = list(client.stub.Read(request))
    assert len(responses) > 1
    assert sum(len(r.entities) for r in responses) == 41 * 16


def test_a_group_id_no_mcast_grp_can_name_is_refused_and_nothing_is_written(switch) -> None:
    """v1model's mcast_grp is bit<16>: a group above 65535 could never be chosen (found by the
    generated p4diff families: BMv2 refuses it too)."""
    _, client = switch
    with pytest.raises(grpc.RpcError) as caught:
        client.write(E.update(E.INSERT, E.group(65536, 1)))
    assert code_names(write_errors(caught.value)) == ["OUT_OF_RANGE"]
    client.write(E.update(E.INSERT, E.group(65535, 1)))  # the largest it can name
    assert [e.packet_replication_engine_entry for e in client.read(E.entity(E.group(0)))] == [
        E.group(65535, 1)
    ]


def test_time_since_last_hit_of_a_table_that_does_not_age_is_refused(switch) -> None:
    """As PI: only tables with support_timeout give it, a read of every table included; the
    tables of simple.p4 have none."""
    _, client = switch
    for table_id in (E.L2, 0):
        query = TableEntry(table_id=table_id)
        query.time_since_last_hit.SetInParent()
        with pytest.raises(grpc.RpcError) as caught:
            client.read(E.entity(query))
        assert code_names(write_errors(caught.value)) == ["INVALID_ARGUMENT"]
    assert len(client.read(E.entity(TableEntry(table_id=E.L2)))) == 1
