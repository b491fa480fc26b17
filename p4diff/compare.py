"""The first difference between two recordings of one case, reported byte by byte.

Steps are compared in order; within a step, a write's outcome, then every port's frames (ports
in numeric order, frame by frame), packet-in metadata, counters, and frames that reached the
switch from something other than the harness.

    >>> a = StepRecord("step 1", "send on port 1", {"2": (bytes.fromhex("0011223344"),)})
    >>> b = StepRecord("step 1", "send on port 1", {"2": (bytes.fromhex("0011993344"),)})
    >>> found = first_difference(Recording("p4switch", "c.yaml", (a,)),
    ...                          Recording("bmv2", "c.yaml", (b,)))
    >>> print(found)
    first difference at step 1: send on port 1
      port 2, frame 0: 1 of 5 bytes differ, the first at offset 2 (0x2)
        p = p4switch, b = bmv2
        offset   p   b
             2  22  99
      0000  p 00 11 22 33 44
            b 00 11 99 33 44
                    ^^
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from controller.rounds import STATS, STATS_COUNTER
from p4diff.exceptions import RecordingError
from p4diff.recording import Cells, Recording, StepRecord, port_key

ROW = 16  # bytes per hex-dump row
MAX_OFFSETS = 16  # differing offsets listed before "... and N more"
COUNTER_LABELS = {STATS_COUNTER: STATS}  # innet.p4's stats indices by name


@dataclass(frozen=True)
class Difference:
    step: StepRecord  # as the first recording has it
    detail: str  # what differs, over one or more lines

    def describe(self, title: str | None = None) -> str:
        """The report; `title` names the step better (the case's line) when given."""
        return (
            f"first difference at {title or self.step.label + ': ' + self.step.what}\n{self.detail}"
        )

    def __str__(self) -> str:
        return self.describe()


def check_aligned(a: Recording, b: Recording) -> None:
    """Both recordings played the same steps, or RecordingError (a case changed since)."""
    labels_a = [s.label for s in a.steps]
    labels_b = [s.label for s in b.steps]
    if labels_a != labels_b:
        raise RecordingError(
            f"{a.target} and {b.target} did not play the same steps ({len(labels_a)} and "
            f"{len(labels_b)}); record the case again if it changed"
        )


def first_difference(a: Recording, b: Recording) -> Difference | None:
    """The first step where `a` and `b` differ, and how; None when they agree throughout."""
    check_aligned(a, b)
    for step_a, step_b in zip(a.steps, b.steps, strict=True):
        detail = step_difference(step_a, step_b, a.target, b.target)
        if detail is not None:
            return Difference(step_a, detail)
    return None


def step_difference(a: StepRecord, b: StepRecord, name_a: str, name_b: str) -> str | None:
    if a.outcome != b.outcome:
        return f"  {name_a}: the batch was {a.outcome}; {name_b}: {b.outcome}"
    frames = _frames_difference(a.emitted, b.emitted, name_a, name_b, "")
    if frames is not None:
        return frames
    if a.packet_in_metadata != b.packet_in_metadata:
        return (
            f"  packet-in metadata: {name_a} {list(a.packet_in_metadata)}, "
            f"{name_b} {list(b.packet_in_metadata)}"
        )
    for counter in sorted({*a.counters, *b.counters}):
        text = counters_difference(
            counter, a.counters.get(counter, ()), b.counters.get(counter, ()), name_a, name_b
        )
        if text is not None:
            return text
    stray = "frames into the switch that the harness did not send (what else uses the namespace?) "
    return _frames_difference(a.stray, b.stray, name_a, name_b, stray)


def _frames_difference(
    a: Mapping[str, tuple[bytes, ...]],
    b: Mapping[str, tuple[bytes, ...]],
    name_a: str,
    name_b: str,
    kind: str,
) -> str | None:
    for port in sorted({*a, *b}, key=port_key):
        frames_a, frames_b = a.get(port, ()), b.get(port, ())
        for index in range(max(len(frames_a), len(frames_b))):
            if index >= len(frames_a) or index >= len(frames_b):
                return _extra_frame(port, index, frames_a, frames_b, name_a, name_b, kind)
            if frames_a[index] != frames_b[index]:
                head = f"  {kind}port {port}, frame {index}: "
                return head + byte_diff(frames_a[index], frames_b[index], name_a, name_b)
    return None


def _extra_frame(
    port: str,
    index: int,
    frames_a: Sequence[bytes],
    frames_b: Sequence[bytes],
    name_a: str,
    name_b: str,
    kind: str,
) -> str:
    only, frame = (name_a, frames_a[index]) if index < len(frames_a) else (name_b, frames_b[index])
    lines = [
        f"  {kind}port {port}: {name_a} emitted {_frames(len(frames_a))}, {name_b} "
        f"{_frames(len(frames_b))}; frame {index} ({len(frame)} bytes) only on {only}:"
    ]
    lines += [f"  {row}" for row in hex_dump(frame)]
    return "\n".join(lines)


def _frames(n: int) -> str:
    return f"{n} frame" if n == 1 else f"{n} frames"


def byte_diff(a: bytes, b: bytes, name_a: str, name_b: str) -> str:
    """How two frames differ: the differing offsets with both bytes, then both frames as hex
    rows, one above the other, with the differing bytes marked."""
    width = max(len(a), len(b))
    offsets = [k for k in range(width) if _at(a, k) != _at(b, k)]
    sizes = f"{len(a)} bytes" if len(a) == len(b) else f"{len(a)} and {len(b)} bytes"
    tag_a, tag_b = _tags(name_a, name_b)
    lines = [
        f"{len(offsets)} of {sizes} differ, the first at offset {offsets[0]} ({offsets[0]:#x})",
        f"    {tag_a} = {name_a}, {tag_b} = {name_b}",
        f"    offset   {tag_a}   {tag_b}",
    ]
    for k in offsets[:MAX_OFFSETS]:
        lines.append(f"    {k:>6}  {_shown(a, k)}  {_shown(b, k)}")
    if len(offsets) > MAX_OFFSETS:
        lines.append(f"    ... and {len(offsets) - MAX_OFFSETS} more")
    for start in range(0, width, ROW):
        span = range(start, min(start + ROW, width))
        lines.append(f"  {start:04x}  {tag_a} {' '.join(_shown(a, k) for k in span)}")
        lines.append(f"        {tag_b} {' '.join(_shown(b, k) for k in span)}")
        marks = " ".join("^^" if k in offsets else "  " for k in span).rstrip()
        if marks:
            lines.append(f"          {marks}")
    return "\n".join(lines)


def _tags(name_a: str, name_b: str) -> tuple[str, str]:
    """One-letter row tags for the two frames: their names' initials when those differ."""
    if name_a[:1] != name_b[:1]:
        return name_a[:1], name_b[:1]
    return "a", "b"


def _at(data: bytes, k: int) -> int | None:
    return data[k] if k < len(data) else None


def _shown(data: bytes, k: int) -> str:
    return f"{data[k]:02x}" if k < len(data) else "--"


def hex_dump(data: bytes) -> list[str]:
    return [f"{k:04x}  {data[k : k + ROW].hex(' ')}" for k in range(0, len(data), ROW)]


def counters_difference(counter: str, a: Cells, b: Cells, name_a: str, name_b: str) -> str | None:
    """Every cell of `counter` whose packets or bytes differ, or None."""
    cells_a = {index: (packets, size) for index, packets, size in a}
    cells_b = {index: (packets, size) for index, packets, size in b}
    labels = COUNTER_LABELS.get(counter, ())
    lines = []
    for index in sorted({*cells_a, *cells_b}):
        got_a, got_b = cells_a.get(index), cells_b.get(index)
        if got_a == got_b:
            continue
        label = f" ({labels[index]})" if index < len(labels) else ""
        lines.append(f"    [{index}]{label}: {name_a} {_cell(got_a)}, {name_b} {_cell(got_b)}")
    if not lines:
        return None
    return "\n".join([f"  counter {counter}: {len(lines)} cells differ", *lines])


def _cell(cell: tuple[int, int] | None) -> str:
    return "no such cell" if cell is None else f"{cell[0]} packets / {cell[1]} bytes"
