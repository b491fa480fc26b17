"""Fake ports for the python switch's I/O loop: a Unix datagram socket pair per port, the
switch's end answering like an AF_PACKET socket, the host's end read by the test."""

from __future__ import annotations

import errno
import select
import socket

from p4switch.ports import PACKET_OUTGOING, Port

HANG_S = 10.0  # seconds: the longest a test waits for what must happen (a hang guard)


class FakeSocket:
    """One end of a datagram socket pair that answers like an AF_PACKET socket."""

    def __init__(self, sock: socket.socket) -> None:
        self._sock = sock
        self.outgoing_next = False

    def fileno(self) -> int:
        return self._sock.fileno()

    def recvfrom(self, size: int) -> tuple[bytes, tuple[str, int, int, int, bytes]]:
        data = self._sock.recv(size)
        pkttype = PACKET_OUTGOING if data.startswith(b"OUT") else 0
        return data, ("fake0", 3, pkttype, 1, b"")

    def send(self, data: bytes) -> int:
        return self._sock.send(data)

    def getsockopt(self, level: int, option: int, size: int) -> bytes:
        raise OSError(errno.ENOPROTOOPT, "not a packet socket")

    def close(self) -> None:
        self._sock.close()


class Wire:
    """A fake port: the switch's end and the host's end of a link."""

    def __init__(self, name: str) -> None:
        inside, self.host = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)
        inside.setblocking(False)
        self.port = Port(name=name, ifindex=0, sock=FakeSocket(inside))  # type: ignore[arg-type]

    def recv(self, timeout: float = HANG_S) -> bytes | None:
        ready, _, _ = select.select([self.host], [], [], timeout)
        return self.host.recv(65536) if ready else None

    def pending(self) -> list[bytes]:
        """The frames the switch has sent to the host's end and nobody read yet (no wait: a
        socket pair delivers a datagram before `send` returns)."""
        frames = []
        while select.select([self.host], [], [], 0)[0]:
            frames.append(self.host.recv(65536))
        return frames
