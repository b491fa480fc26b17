"""A frame's kernel receive time gives the port's receive lag; shaping counts from the read.

A packet socket asked for SO_TIMESTAMPNS hands each frame's kernel receive time (a Unix time) to
`recvmsg`. The fake port below gives a frame that the kernel received 60 s before the loop
reads it, on an egress port shaped with a 100 s delay. The frame is due 100 s after the switch
read it (shaping from the arrival made a busy edge's batches leave late in a burst: 66-101 ms
lateness in 1.6 GB all-to-all rounds), and the 60 s it waited before the read are the port's
`rx_lag_max_s`. Both of the switch's clocks are simulated: the figures are exact.
"""

from __future__ import annotations

import math
import socket
import struct
from collections.abc import Callable

import pytest

from p4switch.dataplane import Switch
from p4switch.linkemu import Wire
from p4switch.ports import SCM_TIMESTAMPNS, Port, arrival_time
from p4switch.shaping import parse_spec
from tests.clock import FakeClock

TIMESPEC = struct.Struct("=qq")
LAG_S, DELAY_S = 60.0, 100.0
FRAME = bytes.fromhex("020000000002020000000001") + bytes.fromhex("0800") + bytes(46)


def stamp(unix_time: float) -> tuple[int, int, bytes]:
    seconds = int(unix_time)
    return (
        socket.SOL_SOCKET,
        SCM_TIMESTAMPNS,
        TIMESPEC.pack(seconds, round((unix_time - seconds) * 1e9)),
    )


def test_the_receive_time_is_read_from_the_ancillary_data() -> None:
    assert arrival_time([stamp(1_700_000_000.25)]) == pytest.approx(1_700_000_000.25)
    assert arrival_time([]) is None
    assert arrival_time([(socket.SOL_SOCKET, SCM_TIMESTAMPNS, b"\0" * 4)]) is None  # cut short


class LaggingSocket:
    """One end of a datagram pair, read as a packet socket that stamps each frame as received
    LAG_S before the loop reads it (by `wall_clock`, the Unix time the kernel stamps in)."""

    def __init__(self, sock: socket.socket, wall_clock: Callable[[], float]) -> None:
        self._sock = sock
        self._wall_clock = wall_clock
        self.stamps: list[float] = []  # the receive times handed out (Unix seconds)

    def fileno(self) -> int:
        return self._sock.fileno()

    def recvmsg(self, size: int, ancbufsize: int) -> tuple[bytes, list, int, tuple]:
        assert ancbufsize >= socket.CMSG_SPACE(TIMESPEC.size)
        data = self._sock.recv(size)
        self.stamps.append(self._wall_clock() - LAG_S)
        return data, [stamp(self.stamps[-1])], 0, ("fake0", 3, 0, 1, b"")

    def recvfrom(self, size: int) -> tuple[bytes, tuple]:
        raise AssertionError("a port with auxdata must be read with recvmsg")

    def send(self, data: bytes) -> int:
        return self._sock.send(data)

    def getsockopt(self, level: int, option: int, size: int) -> bytes:
        raise OSError("not a packet socket")

    def close(self) -> None:
        self._sock.close()


def test_a_shaped_frame_is_due_its_delay_after_it_was_read_and_its_wait_is_reported() -> None:
    clock, wall_clock = FakeClock(1000.0), FakeClock(1_700_000_000.0)
    ends = {n: socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM) for n in (1, 2)}
    for inside, _ in ends.values():
        inside.setblocking(False)
    socks = {n: LaggingSocket(inside, wall_clock) for n, (inside, _) in ends.items()}
    ports = {
        n: Port(name=f"p{n}", ifindex=n, sock=sock, auxdata=True)  # type: ignore[arg-type]
        for n, sock in socks.items()
    }
    spec = parse_spec(f"delay={DELAY_S}s")
    switch = Switch(ports, Wire(), shaping={2: spec}, clock=clock, wall_clock=wall_clock)
    host2 = ends[2][1]
    host2.setblocking(False)
    try:
        ends[1][1].send(FRAME)
        switch.poll()  # reads the frame at 1000 s on the switch's clock
        assert socks[1].stamps == [1_700_000_000.0 - LAG_S]
        port1 = switch.stats(reset_peaks=True)["ports"][1]
        assert port1["rx_lag_max_s"] == LAG_S  # how long the frame waited to be read
        assert switch.stats()["ports"][1]["rx_lag_max_s"] == 0.0
        clock.now = math.nextafter(1000.0 + DELAY_S, 0.0)  # due DELAY_S after the read
        switch.poll()
        with pytest.raises(BlockingIOError):
            host2.recv(2048)
        clock.now = 1000.0 + DELAY_S
        switch.poll()
        assert host2.recv(2048) == FRAME
    finally:
        switch.close()
        for inside, host in ends.values():
            inside.close()
            host.close()
