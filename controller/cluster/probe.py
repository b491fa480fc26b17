"""Timed exchanges between the cluster's machines over UDP: a responder on every node, a prober on
whoever measures (the head, for a node's clock offset; a node, for the wire to another node).

    >>> from controller.cluster.clocks import estimate_offset
    >>> responder = Responder("127.0.0.1")  # on the node: answers from a thread of its own
    >>> samples = probe(responder.address, count=5)  # on the head: one exchange at a time
    >>> responder.close()
    >>> clock = estimate_offset(samples)  # the node's clock against the head's
    >>> len(samples), abs(clock.offset_s) <= clock.uncertainty_s  # one clock: offset 0, bounded
    (5, True)

One exchange is one datagram each way. The request carries a magic, a sequence number and t0,
the prober's clock when it sent it; the reply adds t1 and t2, the responder's clock when it read
the request and when it answered. The prober reads t3 on its own clock as the reply arrives.
A reply that does not match the request in flight (a late one, a stranger's datagram) is
ignored; an exchange with no reply within `timeout_s` is lost and not retried. Both sides read
`clock` (Unix seconds): the figures are the clocks' own, so the offset is measured, not assumed,
and the shortest round trip bounds it (`estimate_offset`). Exchanges are sequential, `interval_s`
apart, so the prober never queues behind itself.
"""

from __future__ import annotations

import contextlib
import logging
import socket
import struct
import threading
import time
from collections.abc import Callable

from controller.cluster.clocks import ClockSample, MeasurementError

log = logging.getLogger(__name__)

MAGIC = b"inpr"
REQUEST = struct.Struct("!4sId")  # magic, sequence, t0
REPLY = struct.Struct("!4sIddd")  # magic, sequence, t0, t1, t2
DEFAULT_EXCHANGES = 30
DEFAULT_INTERVAL_S = 0.002
DEFAULT_TIMEOUT_S = 1.0
POLL_S = 0.2  # how often the responder's thread looks whether it was closed

Clock = Callable[[], float]
Address = tuple[str, int]


class Responder:
    """Answers every well-formed request on `host` (a UDP port the kernel picks unless given),
    from a daemon thread, until `close()`."""

    def __init__(self, host: str, port: int = 0, *, clock: Clock = time.time) -> None:
        self._clock = clock
        self._sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        try:
            self._sock.bind((host, port))
        except OSError as err:
            self._sock.close()
            raise MeasurementError(
                f"cannot answer clock and wire probes on {host}:{port}: {err.strerror}"
            ) from None
        self._sock.settimeout(POLL_S)
        self.address: Address = self._sock.getsockname()
        self.answered = 0
        self.ignored = 0  # datagrams that were not a request
        self._closed = threading.Event()
        self._thread = threading.Thread(target=self._serve, name="probe-responder", daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        sock, clock = self._sock, self._clock
        while not self._closed.is_set():
            try:
                data, peer = sock.recvfrom(REPLY.size)
            except TimeoutError:
                continue
            except OSError:
                if self._closed.is_set():
                    return
                continue
            t1 = clock()
            if len(data) != REQUEST.size or data[:4] != MAGIC:
                self.ignored += 1
                continue
            _, seq, t0 = REQUEST.unpack(data)
            with contextlib.suppress(OSError):  # the prober gone: its exchange is lost
                sock.sendto(REPLY.pack(MAGIC, seq, t0, t1, clock()), peer)
                self.answered += 1

    def close(self) -> None:
        """Stop answering and close the port (once; again is harmless)."""
        if self._closed.is_set():
            return
        self._closed.set()
        self._thread.join(timeout=2 * POLL_S + 1.0)
        self._sock.close()

    def __enter__(self) -> Responder:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def probe(
    address: Address,
    count: int = DEFAULT_EXCHANGES,
    *,
    interval_s: float = DEFAULT_INTERVAL_S,
    timeout_s: float = DEFAULT_TIMEOUT_S,
    clock: Clock = time.time,
    source: str = "",
    who: str = "",
) -> list[ClockSample]:
    """`count` exchanges with the responder at `address` (from `source`, any address when
    empty), the answered ones in order; MeasurementError naming `who` (else the address) when
    none is answered."""
    if count < 1:
        raise MeasurementError(f"measure at least one exchange, not {count}")
    name = who or f"{address[0]}:{address[1]}"
    samples: list[ClockSample] = []
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        try:
            sock.bind((source, 0))
            sock.connect(address)
        except OSError as err:
            raise MeasurementError(f"cannot probe {name}: {err.strerror}") from None
        for seq in range(count):
            if seq:
                time.sleep(interval_s)
            sample = _exchange(sock, seq, timeout_s, clock)
            if sample is not None:
                samples.append(sample)
    if not samples:
        raise MeasurementError(
            f"{name} answered none of {count} probes within {timeout_s:g} s each: is innet's "
            "agent running there, and is UDP open between the machines?"
        )
    lost = count - len(samples)
    if lost:
        log.info("%s: %d of %d probes unanswered", name, lost, count)
    return samples


def _exchange(sock: socket.socket, seq: int, timeout_s: float, clock: Clock) -> ClockSample | None:
    """One request and its reply; None when none came by the timeout (or the port was
    refused)."""
    t0 = clock()
    try:
        sock.send(REQUEST.pack(MAGIC, seq, t0))
    except OSError:
        return None
    deadline = time.monotonic() + timeout_s
    while (left := deadline - time.monotonic()) > 0:
        sock.settimeout(left)
        try:
            data = sock.recv(REPLY.size + 1)
        except (TimeoutError, ConnectionRefusedError):
            return None
        t3 = clock()
        if len(data) != REPLY.size:
            continue
        magic, got, sent, t1, t2 = REPLY.unpack(data)
        if magic == MAGIC and got == seq and sent == t0:
            return ClockSample(t0, t1, t2, t3)
    return None
