"""Packet I/O: PacketOut metadata into the packet_out header, packet_in header into PacketIn."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from google.rpc import code_pb2
from p4.v1 import p4runtime_pb2

from p4switch.exceptions import P4RTError, PacketInError
from p4switch.p4rt.packetio import packet_in_message, packet_out_frame
from p4switch.p4rt.schema import ControllerHeaderInfo, MetadataInfo
from tests.p4rt.fixtures.p4rt_client import (
    Client,
    Running,
    primary_client,
    running_server,
    wait_until,
)

# bit<9> port, bit<1> flag, bit<3> queue, bit<3> padding: 16 bits, packed MSB first
HEADER = ControllerHeaderInfo(
    "packet_out",
    (
        MetadataInfo(1, "port", 9, False),
        MetadataInfo(2, "flag", 1, False),
        MetadataInfo(3, "queue", 3, False),
        MetadataInfo(4, "_pad", 3, True),
    ),
)


def packet_out(payload: bytes, **values: int) -> p4runtime_pb2.PacketOut:
    ids = {f.name: f.id for f in HEADER.fields}
    msg = p4runtime_pb2.PacketOut(payload=payload)
    for name, value in values.items():
        msg.metadata.add(metadata_id=ids[name], value=value.to_bytes(2, "big"))
    return msg


def test_metadata_is_packed_most_significant_bit_first() -> None:
    frame = packet_out_frame(HEADER, packet_out(b"data", port=0x1FF, flag=0, queue=5))
    assert frame == (0b111111111_0_101_000).to_bytes(2, "big") + b"data"


def test_padding_may_be_left_out_but_not_a_field() -> None:
    assert packet_out_frame(HEADER, packet_out(b"", port=1, flag=1, queue=0)) == bytes([0, 0xC0])
    with pytest.raises(P4RTError, match="queue is missing"):
        packet_out_frame(HEADER, packet_out(b"", port=1, flag=1))


@pytest.mark.parametrize(
    "bad",
    [
        packet_out(b"", port=0x200, flag=0, queue=0),  # wider than bit<9>
        packet_out(b"", port=1, flag=2, queue=0),
    ],
)
def test_values_must_fit(bad: p4runtime_pb2.PacketOut) -> None:
    with pytest.raises(P4RTError) as caught:
        packet_out_frame(HEADER, bad)
    assert caught.value.code == code_pb2.INVALID_ARGUMENT


def test_unknown_or_repeated_metadata() -> None:
    unknown = packet_out(b"", port=1, flag=0, queue=0)
    unknown.metadata.add(metadata_id=9, value=b"\x01")
    repeated = packet_out(b"", port=1, flag=0, queue=0)
    repeated.metadata.add(metadata_id=1, value=b"\x01")
    for bad in (unknown, repeated):
        with pytest.raises(P4RTError):
            packet_out_frame(HEADER, bad)


def test_packet_in_header_is_stripped_into_metadata() -> None:
    msg = packet_in_message(HEADER, (0b000000011_1_010_000).to_bytes(2, "big") + b"payload")
    assert msg.payload == b"payload"
    assert [(m.metadata_id, m.value) for m in msg.metadata] == [
        (1, b"\x03"),
        (2, b"\x01"),
        (3, b"\x02"),
        (4, b"\x00"),
    ]
    with pytest.raises(PacketInError):
        packet_in_message(HEADER, b"\x01")


def test_without_controller_headers_frames_pass_as_they_are() -> None:
    assert packet_out_frame(None, p4runtime_pb2.PacketOut(payload=b"x")) == b"x"
    assert packet_in_message(None, b"y").payload == b"y"
    with_metadata = p4runtime_pb2.PacketOut(payload=b"x")
    with_metadata.metadata.add(metadata_id=1, value=b"\x01")
    with pytest.raises(P4RTError):
        packet_out_frame(None, with_metadata)


# --- through the server --------------------------------------------------------------------


@pytest.fixture
def switch() -> Iterator[tuple[Running, Client]]:
    with running_server() as running, primary_client(running) as client:
        yield running, client


def send_packet(client: Client, payload: bytes, *metadata: tuple[int, bytes]) -> None:
    packet = p4runtime_pb2.PacketOut(payload=payload)
    for metadata_id, value in metadata:
        packet.metadata.add(metadata_id=metadata_id, value=value)
    client.send(p4runtime_pb2.StreamMessageRequest(packet=packet))


def test_packet_out_reaches_the_data_plane_and_comes_back(switch) -> None:
    running, client = switch
    send_packet(client, b"\xaa" * 14, (1, b"\x03"), (2, b"\x00"))
    packet = client.next("packet").packet
    assert running.dataplane.packet_outs == [bytes([0x01, 0x80]) + b"\xaa" * 14]
    assert packet.payload == b"\xaa" * 14
    assert [(m.metadata_id, m.value) for m in packet.metadata] == [(1, b"\x03"), (2, b"\x00")]


def test_bad_packet_out_is_dropped_with_a_stream_error(switch) -> None:
    running, client = switch
    send_packet(client, b"x", (1, b"\x02\x00"))  # 512 does not fit bit<9>
    error = client.next("error").error
    assert error.canonical_code == code_pb2.INVALID_ARGUMENT
    assert error.packet_out.packet_out.payload == b"x"
    assert running.dataplane.packet_outs == []


def test_only_the_primary_sends_and_receives_packets(switch) -> None:
    running, primary = switch
    backup = Client(running.port, 1)
    try:
        backup.arbitrate()
        send_packet(backup, b"x", (1, b"\x01"))
        assert backup.next("error").error.canonical_code == code_pb2.PERMISSION_DENIED
        running.server.packet_in(bytes([0x00, 0x80]) + b"to the primary")
        assert primary.next("packet").packet.payload == b"to the primary"
        assert backup.messages.empty()
        assert running.dataplane.packet_outs == []
    finally:
        backup.close()


def test_packet_in_without_a_primary_or_too_short_is_dropped(switch) -> None:
    running, primary = switch
    running.server.packet_in(b"\x01")  # shorter than the packet_in header
    assert running.server.packet_ins_dropped == 1
    primary.close()
    wait_until(lambda: running.server.arbiter.primary() is None)
    running.server.packet_in(bytes(20))
    assert running.server.packet_ins_dropped == 2
