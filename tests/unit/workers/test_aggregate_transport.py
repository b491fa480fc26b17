"""UdpTransport on loopback: two hosts' sockets on port 20041 of different 127/8 addresses."""

from __future__ import annotations

import socket

import pytest

from innet.packetformat import PacketFormat
from workers.exceptions import TransportError
from workers.packets import Flag, InnetPacket, PacketType
from workers.transport import UdpTransport

PACKET_FORMAT = PacketFormat()


def packet(chunk: int) -> bytes:
    values = (chunk,) * PACKET_FORMAT.lanes
    return InnetPacket.of(
        PacketType.CONTRIBUTION, Flag.WAN | Flag.LOCAL, 7, 1, 3, 0, chunk, 0, values, PACKET_FORMAT
    ).encode()


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_udp_transport_sends_to_the_edge_and_receives_with_a_timeout() -> None:
    port = free_port()
    with (
        UdpTransport("127.0.0.1", "127.0.0.2", port) as host,
        UdpTransport("127.0.0.2", "127.0.0.1", port) as edge,
    ):
        assert edge.recv(0.0) is None
        assert edge.recv(0.01) is None
        for c in range(100):
            host.send(packet(c))
        got = [edge.recv(1.0) for _ in range(100)]
        assert got == [packet(c) for c in range(100)]
        edge.send(packet(5))
        assert host.recv(1.0) == packet(5)


def test_a_busy_port_is_refused_with_a_hint() -> None:
    port = free_port()
    with (
        UdpTransport("127.0.0.1", "127.0.0.2", port),
        pytest.raises(TransportError, match="no other process bound to the port"),
    ):
        UdpTransport("127.0.0.1", "127.0.0.2", port)


def test_a_closed_transport_says_so() -> None:
    transport = UdpTransport("127.0.0.1", "127.0.0.2", free_port())
    transport.close()
    with pytest.raises(TransportError, match="closed"):
        transport.send(packet(0))
