"""Malformed and concurrent requests: the server answers each one and keeps serving."""

from __future__ import annotations

import random
import threading
from collections.abc import Iterator

import grpc
import pytest
from google.protobuf.descriptor import FieldDescriptor
from google.protobuf.message import Message
from google.rpc import code_pb2
from p4.v1 import p4runtime_pb2

from tests.p4rt.fixtures import entities as E
from tests.p4rt.fixtures.p4rt_client import (
    WAIT,
    Client,
    Running,
    primary_client,
    running_server,
    uint128,
    wait_until,
    write_errors,
)


@pytest.fixture
def switch() -> Iterator[tuple[Running, Client]]:
    with running_server() as running, primary_client(running) as client:
        yield running, client


def still_serving(client: Client) -> bool:
    reply = client.stub.Capabilities(p4runtime_pb2.CapabilitiesRequest(), timeout=WAIT)
    return reply.p4runtime_api_version == "1.4.1"


def seeds() -> list[p4runtime_pb2.Update]:
    """Valid updates of every kind, to mutate."""
    direct = p4runtime_pb2.DirectCounterEntry(table_entry=E.l2(b"\x01"))
    direct.data.packet_count = 1
    return [
        E.update(E.INSERT, E.lpm(bytes([10, 0, 1, 0]), 24, port=2)),
        E.update(E.INSERT, E.acl(bytes([10, 0, 0, 0]), bytes([255, 0, 0, 0]), 5)),
        E.update(E.INSERT, E.l2(b"\x01")),
        E.update(E.MODIFY, direct),
        E.update(E.MODIFY, E.counter(1, 2, 3)),
        E.update(E.MODIFY, E.register(2, b"\x07")),
        E.update(E.INSERT, E.group(1, 1, 2)),
        E.update(E.INSERT, E.session(2, 3)),
    ]


def random_scalar(field: FieldDescriptor, rng: random.Random) -> object:
    if field.type == FieldDescriptor.TYPE_BYTES:
        return rng.randbytes(rng.choice([0, 1, 1, 2, 4, 6, 7]))
    if field.type == FieldDescriptor.TYPE_BOOL:
        return rng.random() < 0.5
    if field.type == FieldDescriptor.TYPE_STRING:
        return rng.choice(["", "x", "role"])
    if field.type == FieldDescriptor.TYPE_ENUM:
        return rng.choice([v.number for v in field.enum_type.values] + [99])
    signed = field.type in (FieldDescriptor.TYPE_INT32, FieldDescriptor.TYPE_INT64)
    bits = 64 if field.type in (FieldDescriptor.TYPE_INT64, FieldDescriptor.TYPE_UINT64) else 32
    choices = [0, 1, 2, 7, 255, 512, (1 << (bits - 1)) - 1]
    return rng.choice(choices + ([-1, -(1 << (bits - 1))] if signed else [(1 << bits) - 1]))


def perturb(msg: Message, rng: random.Random) -> None:
    """Change a few fields of `msg` at random, keeping it a valid protobuf message."""
    for field, value in msg.ListFields():
        if rng.random() > 0.35:
            continue
        if field.label == FieldDescriptor.LABEL_REPEATED:
            if field.type == FieldDescriptor.TYPE_MESSAGE and value and rng.random() < 0.7:
                perturb(rng.choice(value), rng)
            elif value:
                del value[rng.randrange(len(value))]
        elif field.type == FieldDescriptor.TYPE_MESSAGE:
            perturb(value, rng)
        else:
            setattr(msg, field.name, random_scalar(field, rng))


def test_mutated_writes_and_reads_never_break_the_server(switch) -> None:
    _, client = switch
    rng = random.Random(20240607)
    codes: set[int] = set()
    for _ in range(500):
        update = p4runtime_pb2.Update()
        update.CopyFrom(rng.choice(seeds()))
        perturb(update, rng)
        try:
            client.write(update)
            codes.add(code_pb2.OK)
        except grpc.RpcError as err:
            assert err.code() == grpc.StatusCode.UNKNOWN, err.details()
            (error,) = write_errors(err)
            codes.add(error.canonical_code)
        try:
            client.read(update.entity)
        except grpc.RpcError as err:
            assert err.code() == grpc.StatusCode.UNKNOWN, err.details()
            codes.update(e.canonical_code for e in write_errors(err))
    assert code_pb2.INTERNAL not in codes  # every refusal was a deliberate one
    assert {code_pb2.OK, code_pb2.INVALID_ARGUMENT} <= codes
    assert still_serving(client)


def test_requests_that_are_not_protobuf(switch) -> None:
    _, client = switch
    raw = client.channel.unary_unary(
        "/p4.v1.P4Runtime/Write",
        request_serializer=lambda b: b,
        response_deserializer=lambda b: b,
    )
    with pytest.raises(grpc.RpcError):
        raw(b"\xff\xff\xff\xff not a WriteRequest", timeout=WAIT)
    assert still_serving(client)


def test_empty_and_unset_things(switch) -> None:
    _, client = switch
    client.write()  # an empty batch is fine
    with pytest.raises(grpc.RpcError) as caught:
        client.write(
            p4runtime_pb2.Update(type=E.INSERT),  # no entity
            p4runtime_pb2.Update(entity=E.entity(E.l2(b"\x01"))),  # no type
            E.update(E.INSERT, p4runtime_pb2.PacketReplicationEngineEntry()),
        )
    assert [e.canonical_code for e in write_errors(caught.value)] == [code_pb2.INVALID_ARGUMENT] * 3
    with pytest.raises(grpc.RpcError) as caught:
        client.write(E.update(E.INSERT, E.l2(b"\x01")), atomicity=7)
    assert caught.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    request = p4runtime_pb2.WriteRequest(device_id=1, role="backup")
    request.election_id.CopyFrom(uint128(10))
    with pytest.raises(grpc.RpcError) as caught:
        client.stub.Write(request)
    assert caught.value.code() == grpc.StatusCode.NOT_FOUND  # p4switch has the default role only
    assert still_serving(client)


def test_stream_messages_the_server_does_not_handle(switch) -> None:
    _, client = switch
    other = p4runtime_pb2.StreamMessageRequest()
    other.other.type_url = "type.example.com/Nothing"
    client.send(other)
    client.send(p4runtime_pb2.StreamMessageRequest(digest_ack=p4runtime_pb2.DigestListAck()))
    assert client.next("error").error.canonical_code == code_pb2.UNIMPLEMENTED
    error = client.next("error").error  # the program has no digests: the ack names none
    assert error.canonical_code == code_pb2.NOT_FOUND
    assert error.WhichOneof("details") == "digest_list_ack"
    client.write(E.update(E.INSERT, E.l2(b"\x01")))  # still primary, stream still open


def test_concurrent_writers_and_readers(switch) -> None:
    running, client = switch
    failures: list[BaseException] = []

    def writer(base: int) -> None:
        try:
            for i in range(15):
                client.write(E.update(E.INSERT, E.l2((base + i).to_bytes(2, "big"))))
        except BaseException as err:
            failures.append(err)

    def reader() -> None:
        try:
            for _ in range(15):
                client.read(E.entity(p4runtime_pb2.TableEntry(table_id=E.L2)))
                running.server.packet_in(bytes(16))
        except BaseException as err:
            failures.append(err)

    threads = [threading.Thread(target=writer, args=(base,)) for base in (100, 200, 300, 400)]
    threads += [threading.Thread(target=reader) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert not failures
    assert running.dataplane.active.state.table("MyIngress.l2").entry_count() == 60


def test_mutated_packet_outs_never_end_the_stream(switch) -> None:
    running, client = switch
    rng = random.Random(7)
    valid = p4runtime_pb2.PacketOut(payload=bytes(14))
    valid.metadata.add(metadata_id=1, value=b"\x01")
    valid.metadata.add(metadata_id=2, value=b"\x00")
    for _ in range(100):
        packet = p4runtime_pb2.PacketOut()
        packet.CopyFrom(valid)
        perturb(packet, rng)
        client.send(p4runtime_pb2.StreamMessageRequest(packet=packet))
    client.send(p4runtime_pb2.StreamMessageRequest(packet=valid))
    wait_until(lambda: running.dataplane.packet_outs[-1:] == [b"\x00\x80" + bytes(14)])
    client.write(E.update(E.INSERT, E.l2(b"\x01")))  # still primary, stream still open
    assert still_serving(client)
