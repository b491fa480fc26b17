"""Per-port egress shaping done by the switch itself: loss, rate (serialisation) and delay.

Where the kernel has no netem, the switch emulates a WAN link on each egress port. A frame leaving
through a shaped port goes through three steps, in this order:

1. loss: dropped with probability `loss`, drawn from a seeded `random.Random` when it is queued;
2. rate: it is serialised at `rate_bps`; serialisation ends at
   `max(now, end of the previous frame's serialisation) + bits / rate`. At most `queue_limit`
   frames may wait for (or be in) serialisation; a frame arriving at a full queue is dropped
   (drop tail);
3. delay: it leaves the switch `delay_s` after its serialisation ends (or after it arrived, with
   no rate).

Frames leave in the order they were queued. `EgressQueue` is pure logic: the caller passes the
clock reading to every call, so it is tested with a fake clock and no sockets.
"""

from __future__ import annotations

import bisect
import math
import random
from collections import deque
from dataclasses import asdict, dataclass
from decimal import Decimal
from enum import IntEnum
from typing import TypedDict

from innet.exceptions import UnitError
from innet.units import format_duration, format_rate, parse_duration, parse_rate
from p4switch.exceptions import ShapeError

DEFAULT_QUEUE_LIMIT = 1000
SPEC_KEYS = ("delay", "rate", "loss", "limit")
_ACCEPTED = "delay=DURATION, rate=RATE, loss=FRACTION (0 <= loss < 1) or PERCENT%, limit=FRAMES"


@dataclass(frozen=True)
class ShapeSpec:
    """How one egress port is shaped. The default (all zero, no rate) forwards untouched."""

    delay_s: float = 0.0
    rate_bps: float | None = None
    loss: float = 0.0
    queue_limit: int = DEFAULT_QUEUE_LIMIT

    def __post_init__(self) -> None:
        if not (math.isfinite(self.delay_s) and self.delay_s >= 0):
            raise ShapeError(f"delay must be a finite number of seconds >= 0, got {self.delay_s!r}")
        if self.rate_bps is not None and not (math.isfinite(self.rate_bps) and self.rate_bps > 0):
            raise ShapeError(f"rate must be a positive number of bit/s, got {self.rate_bps!r}")
        if not 0.0 <= self.loss < 1.0:
            raise ShapeError(f"loss must be a fraction in [0, 1), got {self.loss!r}")
        if isinstance(self.queue_limit, bool) or not isinstance(self.queue_limit, int):
            raise ShapeError(
                f"queue limit must be a whole number of frames, got {self.queue_limit!r}"
            )
        if self.queue_limit < 1:
            raise ShapeError(f"queue limit must be at least 1 frame, got {self.queue_limit}")

    @property
    def is_passthrough(self) -> bool:
        """True when the spec changes nothing: no delay, no rate, no loss."""
        return self.delay_s == 0 and self.rate_bps is None and self.loss == 0

    def to_text(self) -> str:
        """The spec in the syntax `parse_spec` reads (keys at their default are left out)."""
        parts = []
        if self.delay_s:
            parts.append(f"delay={_plain(self.delay_s)}s")
        if self.rate_bps is not None:
            parts.append(f"rate={_plain(self.rate_bps)}bit")
        if self.loss:
            parts.append(f"loss={_plain(self.loss)}")
        if self.queue_limit != DEFAULT_QUEUE_LIMIT:
            parts.append(f"limit={self.queue_limit}")
        return ",".join(parts) or "none"

    def describe(self) -> str:
        """A readable one-liner, e.g. "delay 70.0 ms, rate 10 Mb/s, loss 1%, limit 500"."""
        rate = format_rate(self.rate_bps) if self.rate_bps is not None else "unlimited"
        return (
            f"delay {format_duration(self.delay_s)}, rate {rate}, "
            f"loss {self.loss:.4g}, limit {self.queue_limit}"
        )

    def as_dict(self) -> dict[str, float | int | None]:
        """Plain values for JSON."""
        return asdict(self)


def _plain(value: float) -> str:
    """`value` written without an exponent and without losing digits: 0.07, 10000000."""
    return format(Decimal(repr(value)).normalize(), "f")


def _parse_loss(value: str) -> float:
    text = value.strip()
    scale = 1.0
    if text.endswith("%"):
        text, scale = text[:-1], 0.01
    try:
        loss = float(text) * scale
    except ValueError:
        raise ShapeError(
            f"loss={value!r}: not a number; write a fraction like 0.01 or 1%"
        ) from None
    if not 0.0 <= loss < 1.0:
        raise ShapeError(f"loss={value!r}: must be at least 0 and below 1 (100%)")
    return loss


def _parse_limit(value: str) -> int:
    try:
        limit = int(value.strip())
    except ValueError:
        raise ShapeError(f"limit={value!r}: not a whole number of frames") from None
    if limit < 1:
        raise ShapeError(f"limit={value!r}: the queue must hold at least 1 frame")
    return limit


class _ShapeArgs(TypedDict, total=False):
    """The ShapeSpec fields a spec string sets."""

    delay_s: float
    rate_bps: float | None
    loss: float
    queue_limit: int


def parse_spec(text: str) -> ShapeSpec:
    """A spec such as "delay=70ms,rate=10Mbit,loss=0.01,limit=500"; "" or "none" means unshaped.

    Keys left out take their defaults: a new spec replaces the old one, it is not merged into it.
    """
    if not isinstance(text, str):
        raise ShapeError(f"{text!r}: a shaping spec must be a string like 'delay=70ms,rate=10Mbit'")
    stripped = text.strip()
    if stripped in ("", "none"):
        return ShapeSpec()
    values: dict[str, str] = {}
    for item in stripped.split(","):
        key, sep, value = item.partition("=")
        key = key.strip()
        if not sep or not value.strip():
            raise ShapeError(
                f"{item.strip()!r} in {text!r}: write KEY=VALUE (accepted: {_ACCEPTED})"
            )
        if key not in SPEC_KEYS:
            raise ShapeError(f"unknown shaping key {key!r} in {text!r} (accepted: {_ACCEPTED})")
        if key in values:
            raise ShapeError(f"shaping key {key!r} given twice in {text!r}")
        values[key] = value.strip()
    kwargs: _ShapeArgs = {}
    if "delay" in values:
        try:
            kwargs["delay_s"] = parse_duration(values["delay"], allow_zero=True)
        except UnitError as err:
            raise ShapeError(f"delay={values['delay']!r}: {err}") from None
    if "rate" in values:
        try:
            kwargs["rate_bps"] = parse_rate(values["rate"])
        except UnitError as err:
            raise ShapeError(f"rate={values['rate']!r}: {err}") from None
    if "loss" in values:
        kwargs["loss"] = _parse_loss(values["loss"])
    if "limit" in values:
        kwargs["queue_limit"] = _parse_limit(values["limit"])
    return ShapeSpec(**kwargs)


def parse_shape(text: str) -> tuple[int, ShapeSpec]:
    """A port and its spec from "PORT:SPEC", e.g. "3:delay=70ms,rate=10Mbit,loss=0.01,limit=500"."""
    if not isinstance(text, str):
        raise ShapeError(f"{text!r}: write PORT:SPEC, e.g. '3:delay=70ms,rate=10Mbit'")
    port_text, sep, spec_text = text.partition(":")
    if not sep:
        raise ShapeError(f"{text!r}: write PORT:SPEC, e.g. '3:delay=70ms,rate=10Mbit'")
    try:
        port = int(port_text.strip())
    except ValueError:
        raise ShapeError(f"{text!r}: port {port_text.strip()!r} is not a port number") from None
    if port < 0:
        raise ShapeError(f"{text!r}: port numbers are not negative")
    return port, parse_spec(spec_text)


class Verdict(IntEnum):
    """What `EgressQueue.offer` did with a frame."""

    SEND_NOW = 0  # unshaped and nothing queued ahead: the caller sends it at once
    QUEUED = 1  # held; `pop_due` hands it back when its time comes
    LOSS = 2  # dropped by the loss draw
    QUEUE_FULL = 3  # dropped: `queue_limit` frames already wait for serialisation


class EgressQueue:
    """The frames one shaped egress port holds, with the times they are due to leave.

    A changed spec applies to frames offered afterwards; frames already held keep their times.
    Frames always leave in the order they were offered, so after a delay is shortened new frames
    wait behind older ones until those have left.
    """

    __slots__ = (
        "_frames",
        "_last_end",
        "_random",
        "_serialising",
        "_spec",
        "lateness_max_s",
    )

    def __init__(self, spec: ShapeSpec, rng: random.Random) -> None:
        self._spec = spec
        self._random = rng.random
        # (due time, frame, lateness reference: the due time or the read if later), in order
        self._frames: deque[tuple[float, bytes, float]] = deque()
        self._serialising: deque[float] = deque()  # serialisation end times, in order
        self._last_end = -math.inf
        self.lateness_max_s = 0.0  # the most a frame left after its due time (see `pop_due`)

    @property
    def spec(self) -> ShapeSpec:
        return self._spec

    def set_spec(self, spec: ShapeSpec) -> None:
        self._spec = spec

    def offer(self, frame: bytes, now: float, read: float | None = None) -> Verdict:
        """Queue `frame` arriving at `now` (seconds), or say to send it now, or drop it.

        `read`: when the switch got the frame, if later than its arrival. A frame already due
        then counts its lateness from `read`: `lateness_max_s` is the release's tardiness, the
        wait before the read is the port's receive lag (reported apart).
        """
        spec = self._spec
        read = now if read is None else read
        if spec.loss and self._random() < spec.loss:
            return Verdict.LOSS
        rate = spec.rate_bps
        if rate is None:
            if not spec.delay_s and not self._frames:
                return Verdict.SEND_NOW
            due = now + spec.delay_s
            self._frames.append((due, frame, max(due, read)))
            return Verdict.QUEUED
        serialising = self._serialising
        while serialising and serialising[0] <= now:
            serialising.popleft()
        if len(serialising) >= spec.queue_limit:
            return Verdict.QUEUE_FULL
        end = max(now, self._last_end) + len(frame) * 8 / rate
        self._last_end = end
        serialising.append(end)
        due = end + spec.delay_s
        self._frames.append((due, frame, max(due, read)))
        return Verdict.QUEUED

    def pop_due(self, now: float) -> list[bytes]:
        """The frames due at or before `now`, in order, removed from the queue."""
        frames = self._frames
        due: list[bytes] = []
        if not frames or frames[0][0] > now:
            return due
        first = frames[0][2]  # its due time, or when it was read if it was due already
        while frames and frames[0][0] <= now:
            due.append(frames.popleft()[1])
        lateness = now - first
        if lateness > self.lateness_max_s:
            self.lateness_max_s = lateness
        return due

    def next_due(self) -> float | None:
        """When the first held frame is due, or None when nothing is held."""
        return self._frames[0][0] if self._frames else None

    def backlog(self, now: float) -> int:
        """Frames waiting for (or in) serialisation at `now`: what `queue_limit` bounds.

        Safe to call from another thread while the I/O thread offers frames: it works on a copy.
        """
        ends = list(self._serialising)  # one C-level copy: no mutation during iteration
        return len(ends) - bisect.bisect_right(ends, now)

    def __len__(self) -> int:
        """Frames held: waiting for serialisation or in the delay line."""
        return len(self._frames)
