"""What one stream has been told about who is primary, and the back-off between claims.

A P4Runtime switch announces every change of primary to every stream: `OK` to the primary,
`ALREADY_EXISTS` to the others while a primary exists, `NOT_FOUND` while there is none, each
with the highest election id the switch has seen. `Announcements` keeps the latest of these
for one stream (the stream's reader thread records them, RPC threads wait on them);
`ClaimBackoff` spaces the controller's claims to be primary again; `ClientArbitration` is one
connection's side of it all: it records what its stream is told, reports a lost primary, and
claims primary again when the switch announces there is none.

A stream that is told `NOT_FOUND` may claim primary with an election id at least the highest
announced: the switch makes it primary, since no live stream holds that id (P4Runtime 1.4,
"Rules for Handling MasterArbitrationUpdate Messages").
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from google.rpc import code_pb2
from p4.v1 import p4runtime_pb2

from controller.p4rt.exceptions import ArbitrationError, code_name

log = logging.getLogger(__name__)

MAX_ELECTION_ID = (1 << 128) - 1


def as_int(election_id: tuple[int, int]) -> int:
    high, low = election_id
    return (high << 64) | low


def as_pair(value: int) -> tuple[int, int]:
    return (value >> 64, value & ((1 << 64) - 1))


@dataclass(frozen=True, slots=True)
class Announcement:
    """One arbitration update as this stream received it."""

    code: int  # OK: this stream is primary; ALREADY_EXISTS: another is; NOT_FOUND: none is
    highest: int | None  # the highest election id the switch has seen (None: none yet)

    @property
    def primary(self) -> bool:
        return bool(self.code == code_pb2.OK)

    @property
    def other_primary(self) -> bool:
        return bool(self.code == code_pb2.ALREADY_EXISTS)

    @property
    def no_primary(self) -> bool:
        return bool(self.code == code_pb2.NOT_FOUND)


class Announcements:
    """The latest arbitration update of one stream, numbered so that a waiter sees new ones."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._latest: Announcement | None = None
        self._count = 0
        self._ended = False
        self.losses = 0  # how often this connection stopped being primary

    @property
    def latest(self) -> Announcement | None:
        with self._cond:
            return self._latest

    @property
    def count(self) -> int:
        with self._cond:
            return self._count

    @property
    def ended(self) -> bool:
        with self._cond:
            return self._ended

    def record(self, update: p4runtime_pb2.MasterArbitrationUpdate) -> tuple[bool, Announcement]:
        """Keep `update`; returns (whether this stream just lost primary, the announcement)."""
        highest = None
        if update.HasField("election_id"):
            highest = (update.election_id.high << 64) | update.election_id.low
        news = Announcement(update.status.code, highest)
        with self._cond:
            lost = self._latest is not None and self._latest.primary and not news.primary
            if lost:
                self.losses += 1
            self._latest = news
            self._count += 1
            self._cond.notify_all()
        return lost, news

    def end(self) -> None:
        """The stream ended: wake every waiter."""
        with self._cond:
            self._ended = True
            self._cond.notify_all()

    def wait_after(self, count: int, deadline: float) -> Announcement | None:
        """The first announcement after the `count`-th; None if the stream ended first.

        Raises TimeoutError at `deadline` (time.monotonic()).
        """
        with self._cond:
            while self._count <= count:
                if self._ended:
                    return None
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TimeoutError
                self._cond.wait(left)
            return self._latest


class ClaimBackoff:
    """Claims at least `delay` apart; the delay doubles after each claim that did not make
    the controller primary (up to `cap`) and starts again from `initial` once it is."""

    def __init__(self, initial: float = 0.05, cap: float = 5.0) -> None:
        self.initial, self.cap = initial, cap
        self._lock = threading.Lock()
        self._delay = 0.0  # the first claim goes at once
        self._last: float | None = None

    def wait_s(self) -> float:
        """How long until the next claim may go (0: now)."""
        with self._lock:
            if self._last is None:
                return 0.0
            return max(0.0, self._last + self._delay - time.monotonic())

    def claimed(self) -> None:
        """A claim went out: the next one waits longer, unless `won` comes first."""
        with self._lock:
            self._last = time.monotonic()
            self._delay = min(self.cap, max(self.initial, self._delay * 2))

    def won(self) -> None:
        with self._lock:
            self._delay, self._last = 0.0, None

    @property
    def delay_s(self) -> float:
        with self._lock:
            return self._delay


class ClientArbitration:
    """One connection's arbitration: its election id, whether it is primary, its claims.

    `send` queues a request on the connection's current stream; `ended` says why the stream
    ended. Each stream gets its own `Announcements` (`new_stream`); its reader thread hands
    every arbitration update to `update`. A stream that was primary and is told there is no
    primary claims it again (after the back-off); one that never was primary does not (the
    connection's `connect` claims synchronously).
    """

    def __init__(
        self,
        name: str,
        device_id: int,
        election_id: tuple[int, int],
        send: Callable[[p4runtime_pb2.StreamMessageRequest], None],
        ended: Callable[[], str],
    ) -> None:
        self.name, self.device_id, self.election_id = name, device_id, election_id
        self._send, self._ended = send, ended
        self.primary = threading.Event()
        self.backoff = ClaimBackoff()
        self.announcements = Announcements()
        self._losses_before = 0  # of the streams before this one
        self._lock = threading.Lock()
        self._timer: threading.Timer | None = None

    @property
    def losses(self) -> int:
        return self._losses_before + self.announcements.losses

    def new_stream(self) -> Announcements:
        self._losses_before += self.announcements.losses
        self.primary.clear()
        self.announcements = Announcements()
        return self.announcements

    def stop(self) -> None:
        """The stream is being closed: no claim goes out any more."""
        self.primary.clear()
        self.announcements.end()
        with self._lock:
            if self._timer is not None:
                self._timer.cancel()
                self._timer = None

    def update(self, msg: p4runtime_pb2.MasterArbitrationUpdate, stream: Announcements) -> None:
        lost, news = stream.record(msg)
        if stream is not self.announcements:
            return  # an old stream's last words
        if news.primary:
            if news.highest is not None and news.highest != as_int(self.election_id):
                self.election_id = as_pair(news.highest)  # the id our claim carried
            if not self.primary.is_set():
                log.info("switch %s: primary with election id %d", self.name, news.highest or 0)
            self.primary.set()
            self.backoff.won()
            return
        self.primary.clear()
        if lost:
            log.warning(
                "switch %s: another client took primary (highest election id %s, ours %d); "
                "primary lost: asking again once the switch announces there is no primary",
                self.name,
                news.highest,
                as_int(self.election_id),
            )
        if news.no_primary and stream.losses:
            self._claim_later(stream)

    def _claim_later(self, stream: Announcements) -> None:
        with self._lock:
            if self._timer is not None and self._timer.is_alive():
                return
            timer = threading.Timer(self.backoff.wait_s(), self._claim_if_none, args=(stream,))
            timer.daemon = True
            self._timer = timer
            timer.start()

    def _claim_if_none(self, stream: Announcements) -> None:
        news = stream.latest
        current = stream is self.announcements and not stream.ended
        if current and news is not None and news.no_primary:
            log.info("switch %s: no primary; asking to be primary again", self.name)
            self._claim(news.highest)

    def _claim(self, highest: int | None) -> int:
        """Send an arbitration update with an election id at least `highest`; the id sent."""
        ours = max(as_int(self.election_id), highest or 0)
        msg = p4runtime_pb2.MasterArbitrationUpdate(device_id=self.device_id)
        msg.election_id.high, msg.election_id.low = as_pair(ours)
        self.backoff.claimed()
        self._send(p4runtime_pb2.StreamMessageRequest(arbitration=msg))
        return ours

    def claim(self, deadline: float) -> bool:
        """Claim primary now unless another client is primary; True if this one is.

        The election id is ours or, if the switch announced a higher one, that one: with no
        primary, the switch gives primary to an id at least the highest it has seen.
        """
        stream = self.announcements
        news = stream.latest
        for _ in range(2):  # a second claim with the highest id, if the first was below it
            if news is not None and news.other_primary:
                return False
            count = stream.count
            sent = self._claim(news.highest if news is not None else None)
            try:
                news = stream.wait_after(count, deadline)
            except TimeoutError:
                raise ArbitrationError(
                    f"switch {self.name}: no arbitration answer before the deadline"
                ) from None
            if news is None:
                raise ArbitrationError(
                    f"switch {self.name}: the switch ended the stream while arbitrating "
                    f"election id {sent} ({self._ended()}); another live controller may use the "
                    "same election id or the device id is wrong"
                )
            if news.primary:
                return True
        return False

    def refused(self) -> ArbitrationError:
        """Why `claim` returned False."""
        news = self.announcements.latest
        ours = as_int(self.election_id)
        highest = news.highest if news is not None else None
        if news is not None and news.other_primary:
            return ArbitrationError(
                f"switch {self.name}: another controller is primary with election id {highest} "
                f"(ours is {ours}); stop it or connect with a higher election id"
            )
        code = code_name(news.code) if news is not None else "no answer"
        return ArbitrationError(
            f"switch {self.name}: not primary ({code}): election id {ours} is below the "
            f"highest the device has seen ({highest}); use at least {highest}"
        )
