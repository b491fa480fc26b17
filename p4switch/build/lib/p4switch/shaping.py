"""Per-port egress shaping done by the switch itself: loss, rate (serialisation), delay, jitter.

Where the kernel has no netem, the switch emulates a WAN link on each egress port. A frame leaving
through a shaped port goes through these steps, in this order:

1. loss: dropped with probability `loss`, drawn from a seeded `random.Random` when it is queued;
2. rate: it is serialised at `rate_bps`; serialisation ends at
   `max(now, end of the previous frame's serialisation) + bits / rate`. At most `queue_limit`
   frames may wait for (or be in) serialisation; a frame arriving at a full queue is dropped
   (drop tail);
3. delay: it leaves the switch `delay_s` after its serialisation ends (or after it arrived, with
   no rate);
4. jitter (only when `jitter_s` > 0): the delay is `delay_s + U`, U uniform in [-jitter_s,
   +jitter_s] from the same `random.Random` as the loss (drawn after the loss draw; a spec
   without jitter draws exactly as before), clipped at 0: the mean stays `delay_s` while
   `jitter_s` <= `delay_s`.

Order: by default frames leave in the order they were queued; with jitter a frame is due at
`max(its drawn due time, the due time of the frame queued ahead)` (netem when it also shapes the
rate). With `reorder` each leaves at its own due time, so a frame may overtake earlier ones
(netem without a rate); `pop_due` hands frames back by due time (ties in queue order).

`EgressQueue` is pure logic: the caller passes the clock reading to every call, so it is tested
with a fake clock and no sockets.
"""

from __future__ import annotations

import bisect
import heapq
import math
import random
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass
from decimal import Decimal
from enum import IntEnum
from functools import partial
from typing import Any, Protocol

from p4switch.exceptions import ShapeError, UnitError
from p4switch.units import format_duration, format_rate, parse_duration, parse_rate

DEFAULT_QUEUE_LIMIT = 1000
SPEC_KEYS = ("delay", "rate", "loss", "limit", "jitter", "reorder")
_ACCEPTED = (
    "delay=DURATION, rate=RATE, loss=FRACTION (0 <= loss < 1) or PERCENT%, limit=FRAMES, "
    "jitter=DURATION, reorder=on|off"
)
_SWITCHES = {"on": True, "off": False}


@dataclass(frozen=True)
class ShapeSpec:
    """How one egress port is shaped. The default (all zero, no rate) forwards untouched.

    `jitter_s`: each frame's delay is `delay_s` plus a draw uniform in [-jitter_s, +jitter_s]
    (never below 0). `reorder`: a frame may overtake earlier ones when its delay is shorter
    (off: frames keep their order).
    """

    delay_s: float = 0.0
    rate_bps: float | None = None
    loss: float = 0.0
    queue_limit: int = DEFAULT_QUEUE_LIMIT
    jitter_s: float = 0.0
    reorder: bool = False

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
        jitter = self.jitter_s
        if not (math.isfinite(jitter) and jitter >= 0):
            raise ShapeError(f"jitter must be a finite number of seconds >= 0, got {jitter!r}")
        if not isinstance(self.reorder, bool):
            raise ShapeError(f"reorder must be True or False, got {self.reorder!r}")

    @property
    def is_passthrough(self) -> bool:
        """True when the spec changes nothing: no delay, no rate, no loss, no jitter."""
        return self.delay_s == 0 and self.rate_bps is None and self.loss == 0 and self.jitter_s == 0

    @property
    def is_steady(self) -> bool:
        """True when every frame gets the same delay and keeps its place: no jitter, no reorder."""
        return self.jitter_s == 0 and not self.reorder

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
        if self.jitter_s:
            parts.append(f"jitter={_plain(self.jitter_s)}s")
        if self.reorder:
            parts.append("reorder=on")
        return ",".join(parts) or "none"

    def describe(self) -> str:
        """A readable one-liner, e.g. "delay 70.0 ms, rate 10 Mb/s, loss 0.01, limit 500" (then
        ", jitter ±2.00 ms" and ", reordering" when set)."""
        rate = format_rate(self.rate_bps) if self.rate_bps is not None else "unlimited"
        text = (
            f"delay {format_duration(self.delay_s)}, rate {rate}, "
            f"loss {self.loss:.4g}, limit {self.queue_limit}"
        )
        if self.jitter_s:
            text += f", jitter ±{format_duration(self.jitter_s)}"
        return text + (", reordering" if self.reorder else "")

    def as_dict(self) -> dict[str, float | int | bool | None]:
        """Plain values for JSON (`ShapeSpec(**spec.as_dict())` gives the spec back)."""
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


def _parse_reorder(value: str) -> bool:
    switch = _SWITCHES.get(value.strip().lower())
    if switch is None:
        raise ShapeError(f"reorder={value!r}: write reorder=on or reorder=off")
    return switch


def _quantity(key: str, value: str, parse: Callable[[str], float]) -> float:
    """A finite figure with its unit (`innet.units`), or a ShapeError naming `key`."""
    try:
        figure = parse(value)
    except UnitError as err:
        raise ShapeError(f"{key}={value!r}: {err}") from None
    if not math.isfinite(figure):
        raise ShapeError(f"{key}={value!r}: must be finite")
    return figure


def _duration(text: str) -> float:
    return parse_duration(text, allow_zero=True)


# spec key -> (ShapeSpec field, parser of its value)
_FIELDS: dict[str, tuple[str, Callable[[str], Any]]] = {
    "delay": ("delay_s", partial(_quantity, "delay", parse=_duration)),
    "rate": ("rate_bps", partial(_quantity, "rate", parse=parse_rate)),
    "loss": ("loss", _parse_loss),
    "limit": ("queue_limit", _parse_limit),
    "jitter": ("jitter_s", partial(_quantity, "jitter", parse=_duration)),
    "reorder": ("reorder", _parse_reorder),
}


def parse_spec(text: str) -> ShapeSpec:
    """A spec such as "delay=70ms,rate=10Mbit,loss=0.01,limit=500,jitter=2ms,reorder=off";
    "" or "none" means unshaped.

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
    fields = {field: parse(values[key]) for key, (field, parse) in _FIELDS.items() if key in values}
    return ShapeSpec(**fields)


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


class _Offer(Protocol):
    def __call__(self, frame: bytes, now: float, read: float | None = None) -> Verdict:
        """Queue `frame` arriving at `now` (seconds), or say to send it now, or drop it. `read`:
        when the switch got it, if later; a frame due by then counts its lateness from `read`
        (the wait before the read is the port's receive lag, reported apart)."""


_Held = tuple[float, bytes, float]  # due time, frame, lateness reference (due time or read)
_Sorted = tuple[float, int, bytes, float]  # due time, sequence, frame, lateness reference


class EgressQueue:
    """The frames one shaped egress port holds, with the times they are due to leave.

    A changed spec applies to frames offered afterwards; frames already held keep their times.
    Without `reorder` frames leave in the order they were offered, so after a delay is shortened
    new frames wait behind older ones until those have left; with it, each leaves at its own
    due time. `offer` (see `_Offer`) is chosen by `set_spec`: a spec without jitter or reordering
    takes the steady path, which draws nothing beyond the loss and keeps one FIFO.
    """

    __slots__ = (
        "_frames",
        "_last_end",
        "_random",
        "_sequence",
        "_serialising",
        "_sorted",
        "_spec",
        "lateness_max_s",
        "offer",
    )
    offer: _Offer

    def __init__(self, spec: ShapeSpec, rng: random.Random) -> None:
        self._random = rng.random
        self._frames: deque[_Held] = deque()  # in order: every spec without `reorder`
        self._sorted: list[_Sorted] = []  # a heap by (due, sequence): specs with `reorder`
        self._sequence = 0  # offers into `_sorted`, to break ties in offer order
        self._serialising: deque[float] = deque()  # serialisation end times, in order
        self._last_end = -math.inf
        self.lateness_max_s = 0.0  # the most a frame left after its due time (see `pop_due`)
        self._spec = spec
        self.set_spec(spec)

    @property
    def spec(self) -> ShapeSpec:
        return self._spec

    def set_spec(self, spec: ShapeSpec) -> None:
        """Shape the frames offered from now on by `spec`; held frames keep their due times."""
        if spec.reorder and self._frames:
            self._sorted = list(self._as_sorted(self._frames))  # sorted, so already a heap
            self._frames.clear()
        elif not spec.reorder and self._sorted:
            self._frames.extend((due, frame, ref) for due, _, frame, ref in sorted(self._sorted))
            self._sorted = []
        self._spec = spec
        self.offer = self._offer_steady if spec.is_steady else self._offer_varied

    def _as_sorted(self, frames: Iterable[_Held]) -> Iterable[_Sorted]:
        """In-order frames as heap entries, each due when it would have left behind the others."""
        leave = -math.inf
        for due, frame, ref in frames:
            leave = max(leave, due)
            yield leave, self._sequence, frame, max(ref, leave)
            self._sequence += 1

    def _offer_steady(self, frame: bytes, now: float, read: float | None = None) -> Verdict:
        """`offer` for a spec without jitter or reordering: the hot path."""
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

    def _offer_varied(self, frame: bytes, now: float, read: float | None = None) -> Verdict:
        """`offer` for a spec with jitter or reordering: loss, serialisation, then a delay of
        `delay_s + U` (U uniform in [-jitter_s, +jitter_s], drawn after the loss), never below 0;
        in order unless `reorder` (module docstring)."""
        spec = self._spec
        draw = self._random
        if spec.loss and draw() < spec.loss:
            return Verdict.LOSS
        start = now
        if spec.rate_bps is not None:
            serialising = self._serialising
            while serialising and serialising[0] <= now:
                serialising.popleft()
            if len(serialising) >= spec.queue_limit:
                return Verdict.QUEUE_FULL
            start = self._last_end = max(now, self._last_end) + len(frame) * 8 / spec.rate_bps
            serialising.append(start)
        delay = spec.delay_s
        if spec.jitter_s:
            delay += spec.jitter_s * (2.0 * draw() - 1.0)
        due = start + max(delay, 0.0)
        read = now if read is None else read
        if spec.reorder:
            heapq.heappush(self._sorted, (due, self._sequence, frame, max(due, read)))
            self._sequence += 1
            return Verdict.QUEUED
        frames = self._frames
        if frames and frames[-1][0] > due:
            due = frames[-1][0]  # never before the frame queued ahead
        frames.append((due, frame, max(due, read)))
        return Verdict.QUEUED

    def pop_due(self, now: float) -> list[bytes]:
        """The frames due at or before `now`, in the order they leave, removed from the queue."""
        frames = self._frames
        due: list[bytes] = []
        if not frames or frames[0][0] > now:
            return self._pop_sorted(now) if self._sorted else due
        first = frames[0][2]  # its due time, or when it was read if it was due already
        while frames and frames[0][0] <= now:
            due.append(frames.popleft()[1])
        self._late(now - first)
        return due

    def _pop_sorted(self, now: float) -> list[bytes]:
        """`pop_due` with `reorder`: the due frames by due time (ties in offer order)."""
        held = self._sorted
        due: list[bytes] = []
        if not held or held[0][0] > now:
            return due
        first = held[0][3]
        while held and held[0][0] <= now:
            due.append(heapq.heappop(held)[2])
        self._late(now - first)
        return due

    def _late(self, lateness: float) -> None:
        if lateness > self.lateness_max_s:
            self.lateness_max_s = lateness

    def next_due(self) -> float | None:
        """When the first held frame is due, or None when nothing is held."""
        if self._frames:
            return self._frames[0][0]
        return self._sorted[0][0] if self._sorted else None

    def backlog(self, now: float) -> int:
        """Frames waiting for (or in) serialisation at `now`: what `queue_limit` bounds.

        Safe to call from another thread while the I/O thread offers frames: it works on a copy.
        """
        ends = list(self._serialising)  # one C-level copy: no mutation during iteration
        return len(ends) - bisect.bisect_right(ends, now)

    def __len__(self) -> int:
        """Frames held: waiting for serialisation or in the delay line."""
        return len(self._frames) + len(self._sorted)
