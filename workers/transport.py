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
from typing import Protocol

from topo.siteplan import INNET_UDP_PORT
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


class UdpTransport:
    """A UDP socket on (local_ip, port), sending to (edge_ip, port); large kernel buffers."""

    def __init__(self, local_ip: str, edge_ip: str, port: int = INNET_UDP_PORT) -> None:
        self.local = (local_ip, port)
        self.edge = (edge_ip, port)
        sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        try:
            for option in (socket.SO_RCVBUF, socket.SO_SNDBUF):
                sock.setsockopt(socket.SOL_SOCKET, option, BUFFER_BYTES)
            sock.bind(self.local)
        except OSError as exc:
            sock.close()
            raise TransportError(
                f"cannot bind UDP {local_ip}:{port}: {exc.strerror or exc}; is the address on "
                f"an interface of this namespace, and is no other worker bound to the port?"
            ) from exc
        sock.setblocking(False)
        self._sock: socket.socket | None = sock
        got = sock.getsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF)
        log.debug("innet UDP transport %s:%d -> %s:%d, rcvbuf %d", *self.local, *self.edge, got)

    def _socket(self) -> socket.socket:
        if self._sock is None:
            raise TransportError(f"UDP transport on {self.local[0]}:{self.local[1]} is closed")
        return self._sock

    def send(self, frame_payload: bytes) -> None:
        sock = self._socket()
        while True:
            try:
                sock.sendto(frame_payload, self.edge)
                return
            except BlockingIOError:  # send buffer full: wait until it drains
                select.select([], [sock], [], 1.0)

    def recv(self, timeout: float) -> bytes | None:
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

    def __enter__(self) -> UdpTransport:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
