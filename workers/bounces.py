"""When a leader replays the contributions its edge bounced (no I/O).

A contribution that found its slot at the own edge busy with another chunk comes back as a
BOUNCE (any member's: the edge refused it, nothing was merged; docs/protocol.md, "Bounces").
`Bounces` keeps each one and says when to replay it, to the own edge only:

- **when its cell completes.** With `cells` (the edge's slot cells, 2 x SLOTS; chunk c sits in
  cell c mod cells) a RESULT says its chunk's cell has completed: the lowest chunk above it
  held for that cell is replayed at once (`freed`). Only the lowest: the others of the cell
  would meet it there and bounce again.
- **after a wait**, whatever happens: a `first` wait after it came (a frame time of the
  stream's schedule), doubled each time the same contribution bounces again, up to `cap` (the
  stream's timeout). This covers a cell whose RESULT does not come (a lost contribution holds
  it until its owner recovers it, or it goes stale).

A chunk's bounces are forgotten once it has its sum (`forget`), or taken (`take`) when the
stream sums it from them.

    >>> b = Bounces(first=0.001, cap=0.004)
    >>> for now in (0.0, 0.0011, 0.0032, 0.0073):  # it bounces again after each replay
    ...     b.bounced(3, 1, b"lanes", now)
    ...     print(round(b.next_due() - now, 4), [(c, s) for c, s, _ in b.due(b.next_due())])
    0.001 [(3, 1)]
    0.002 [(3, 1)]
    0.004 [(3, 1)]
    0.004 [(3, 1)]
    >>> b = Bounces(first=0.001, cap=0.004, cells=8)
    >>> for chunk in (27, 11, 19, 12):  # 11, 19 and 27 wait for cell 3, 12 for cell 4
    ...     b.bounced(chunk, 1, b"lanes", 0.0)
    >>> b.freed(3, now=0.0005)  # chunk 3's RESULT: cell 3 has completed
    >>> [c for c, _, _ in b.due(0.0005)]
    [11]
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

INF = float("inf")


@dataclass
class _Held:
    """A bounced contribution: what it carries, when it is replayed (inf: it was, and has not
    come back), the wait before that replay."""

    lanes: bytes
    due: float
    wait: float


class Bounces:
    """The bounced contributions of one stream, by chunk index and source island (indices i and
    j share a cell when i - j is a multiple of `cells`, as their chunk numbers do)."""

    def __init__(self, first: float, cap: float, cells: int | None = None) -> None:
        self.first, self.cap, self.cells = first, max(first, cap), cells
        self._held: dict[int, dict[int, _Held]] = {}
        self._by_cell: dict[int, set[int]] = {}

    def __bool__(self) -> bool:
        return bool(self._held)

    def _cell(self, chunk: int) -> int:
        return chunk % self.cells if self.cells else 0

    def bounced(self, chunk: int, src: int, lanes: bytes, now: float) -> None:
        """`src`'s contribution to `chunk` came back at `now`: replay it after the wait."""
        held = self._held.setdefault(chunk, {})
        self._by_cell.setdefault(self._cell(chunk), set()).add(chunk)
        last = held.get(src)
        wait = self.first if last is None else min(2 * last.wait, self.cap)
        held[src] = _Held(lanes, now + wait, wait)

    def freed(self, chunk: int, now: float) -> None:
        """`chunk`'s RESULT came at `now`: its cell completed, so the lowest chunk above it
        held for that cell is replayed now (its contributions that wait; none without
        `cells`). A chunk below it held there can no longer merge at this edge (`take` it)."""
        if not self.cells:
            return
        waiting = [
            c
            for c in self._by_cell.get(self._cell(chunk), ())
            if c > chunk and any(h.due < INF for h in self._held[c].values())
        ]
        if waiting:
            for h in self._held[min(waiting)].values():
                h.due = min(h.due, now)

    def take(self, chunk: int) -> dict[int, bytes]:
        """What is held of `chunk` (lanes by source island), forgotten here."""
        held = self._held.get(chunk, {})
        self.forget(chunk)
        return {src: h.lanes for src, h in held.items()}

    def next_due(self) -> float:
        """When the next replay is due (inf: none waits)."""
        return min((h.due for held in self._held.values() for h in held.values()), default=INF)

    def due(self, now: float) -> Iterator[tuple[int, int, bytes]]:
        """(chunk, src, lanes) of each replay due by `now`, each given once."""
        for chunk, held in self._held.items():
            for src, h in held.items():
                if h.due <= now:
                    h.due = INF
                    yield chunk, src, h.lanes

    def forget(self, chunk: int) -> None:
        """The chunk has its sum: nothing of it is replayed any more."""
        if self._held.pop(chunk, None) is not None:
            self._by_cell[self._cell(chunk)].discard(chunk)
