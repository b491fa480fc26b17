"""Shaping counts from when a frame reached the interface, not from when the loop read it.

A packet socket asked for SO_TIMESTAMPNS hands each frame's kernel receive time to `recvmsg`.
The fake port below gives a frame that the kernel received 60 s before the loop reads it, on
an egress port shaped with a 100 s delay: the frame must be due 100 s after it arrived (40 s
after it was read), not 100 s after it was read. A switch on a busy CPU (a link emulator above
all, one more process per WAN hop) then adds its own lag to the link only when it falls behind
by more than the link's delay, and that lag is reported as lateness.
"""

from __future__ import annotations

import socket
import struct
import threading
import time

import pytest

from p4switch.dataplane import Switch
from p4switch.linkemu import Wire
from p4switch.ports import SCM_TIMESTAMPNS, Port, arrival_time
from p4switch.shaping import parse_spec

TIMESPEC = struct.Struct("=qq")
LAG_S, DELAY_S = 60.0, 100.0  # long enough that no busy CPU can blur them
FRAME = bytes.fromhex("020000000002020000000001") + bytes.fromhex("0800") + bytes(46)


def stamp(unix_time: float) -> tuple[int, int, bytes]:
    seconds = int(unix_time)
    return (socket.SOL_SOCKET, SCM_TIMESTAMPNS,
            TIMESPEC.pack(seconds, round((unix_time - seconds) * 1e9)))  # fmt: skip


def test_the_receive_time_is_read_from_the_ancillary_data() -> None:
    assert arrival_time([stamp(1_700_000_000.25)]) == pytest.approx(1_700_000_000.25)
    assert arrival_time([]) is None
    assert arrival_time([(socket.SOL_SOCKET, SCM_TIMESTAMPNS, b"\0" * 4)]) is None  # cut short


class LaggingSocket:
    """One end of a datagram pair, read as a packet socket that stamps each frame as received
    LAG_S before the loop reads it."""

    def __init__(self, sock: socket.socket) -> None:
        self._sock = sock
        self.stamps: list[float] = []  # the receive times handed out (Unix seconds)

    def fileno(self) -> int:
        return self._sock.fileno()

    def recvmsg(self, size: int, ancbufsize: int) -> tuple[bytes, list, int, tuple]:
        assert ancbufsize >= socket.CMSG_SPACE(TIMESPEC.size)
        data = self._sock.recv(size)
        self.stamps.append(time.time() - LAG_S)
        return data, [stamp(self.stamps[-1])], 0, ("fake0", 3, 0, 1, b"")

    def recvfrom(self, size: int) -> tuple[bytes, tuple]:
        raise AssertionError("a port with auxdata must be read with recvmsg")

    def send(self, data: bytes) -> int:
        return self._sock.send(data)

    def getsockopt(self, level: int, option: int, size: int) -> bytes:
        raise OSError("not a packet socket")

    def close(self) -> None:
        self._sock.close()


def test_a_shaped_frame_is_due_its_delay_after_it_arrived_and_its_wait_is_reported() -> None:
    ends = {n: socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM) for n in (1, 2)}
    for inside, _ in ends.values():
        inside.setblocking(False)
    socks = {n: LaggingSocket(inside) for n, (inside, _) in ends.items()}
    ports = {
        n: Port(name=f"p{n}", ifindex=n, sock=sock, auxdata=True)  # type: ignore[arg-type]
        for n, sock in socks.items()
    }
    switch = Switch(ports, Wire(), shaping={2: parse_spec(f"delay={DELAY_S}s")})
    stop = threading.Event()
    thread = threading.Thread(target=switch.run, args=(stop,), daemon=True)
    thread.start()
    try:
        ends[1][1].send(FRAME)
        deadline = time.monotonic() + 5.0
        while switch.stats()["ports"][2]["queue_held"] == 0:
            assert time.monotonic() < deadline, "the switch never queued the frame"
            time.sleep(0.01)  # polling the queue, with a deadline
        due = switch._ports[2].queue.next_due()  # the egress queue's own figure (monotonic)
        arrived = socks[1].stamps[0] - (time.time() - time.monotonic())
        lag = switch.stats(reset_peaks=True)["ports"][1]["rx_lag_max_s"]
        after_reset = switch.stats()["ports"][1]["rx_lag_max_s"]
    finally:
        stop.set()
        switch.wake()
        thread.join(2)
        switch.close()
        for inside, host in ends.values():
            inside.close()
            host.close()
    # shaped from when the switch read it (shaping from the arrival made a busy edge's batches
    # leave late in a burst: 66-101 ms lateness in 1.6 GB all-to-all rounds); the wait before
    # the read is the receive lag
    assert due == pytest.approx(arrived + LAG_S + DELAY_S, abs=1.0)
    assert lag == pytest.approx(LAG_S, abs=1.0)  # how long the frame waited to be read
    assert after_reset == 0.0
