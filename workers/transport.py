"""How a worker's innet packets reach its edge switch and come back: UDP port 20041.

A `Transport` moves innet packets (the UDP payload: header and values) between the island's
leader and its edge. `UdpTransport` is the real one: a UDP socket bound to the host's address
on port 20041, sending to any address behind the edge (its gateway will do, docs/protocol.md);
the edge delivers RESULT, NACK and RECOVER copies to that same port.
"""

from __future__ import annotations

import logging
import select
import socket
from typing import Protocol, Self

from innet.packetformat import PacketFormat
from workers.exceptions import TransportError

log = logging.getLogger(__name__)

BUFFER_BYTES = 8 << 20  # socket buffers: a window of 1024 chunks is ~190 kB, leave room
MAX_DATAGRAM = 2048


class Transport(Protocol):
    def send(self, frame_payload: bytes) -> None:
        """Send one innet packet (the UDP payload) to the island's edge."""
        ...

    def recv(self, timeout: float) -> bytes | None:
        """The next innet UDP payload for this host, or None after `timeout` seconds (0: poll)."""
        ...

    def close(self) -> None: ...


class UdpSocket:
    """A non-blocking UDP socket bound to (local_ip, port) with large kernel buffers: what the
    transport to the edge and the one between leaders share (`what` names it in errors)."""

    def __init__(self, local_ip: str, port: int, what: str) -> None:
        self.local = (local_ip, port)
        self.what = what
        sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        try:
            for option in (socket.SO_RCVBUF, socket.SO_SNDBUF):
                sock.setsockopt(socket.SOL_SOCKET, option, BUFFER_BYTES)
            sock.bind(self.local)
        except OSError as exc:
            sock.close()
            raise TransportError(
                f"cannot bind UDP {local_ip}:{port} for {what}: {exc.strerror or exc}; is the "
                f"address on an interface of this namespace, and is no other process bound to "
                f"the port?"
            ) from exc
        sock.setblocking(False)
        self._sock: socket.socket | None = sock
        got = sock.getsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF)
        log.debug("UDP %s on %s:%d, rcvbuf %d", what, local_ip, port, got)

    def _socket(self) -> socket.socket:
        if self._sock is None:
            raise TransportError(f"UDP {self.what} on {self.local[0]}:{self.local[1]} is closed")
        return self._sock

    def recv(self, timeout: float) -> bytes | None:
        """The next UDP payload, or None after `timeout` seconds (0: poll)."""
        sock = self._socket()
        try:
            return sock.recv(MAX_DATAGRAM)
        except BlockingIOError:
            pass
        if timeout <= 0:
            return None
        readable, _, _ = select.select([sock], [], [], timeout)
        if not readable:
            return None
        try:
            return sock.recv(MAX_DATAGRAM)
        except BlockingIOError:
            return None

    def close(self) -> None:
        if self._sock is not None:
            self._sock.close()
            self._sock = None

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class UdpTransport(UdpSocket):
    """The leader's socket on (local_ip, port), sending to (edge_ip, port)."""

    def __init__(self, local_ip: str, edge_ip: str, port: int = PacketFormat.UDP_PORT) -> None:
        super().__init__(local_ip, port, "transport")
        self.edge = (edge_ip, port)

    def send(self, frame_payload: bytes) -> None:
        sock = self._socket()
        while True:
            try:
                sock.sendto(frame_payload, self.edge)
                return
            except BlockingIOError:  # send buffer full: wait until it drains
                select.select([], [sock], [], 1.0)
