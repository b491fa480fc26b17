"""When a leader replays the contributions its edge bounced (no I/O).

A contribution that found its slot at the own edge busy with another chunk comes back as a
BOUNCE (any member's: the edge refused it, nothing was merged; docs/protocol.md, "Bounces").
`Bounces` keeps each one and says when to replay it, to the own edge only: a `first` wait after
it came (a frame time of the stream's schedule), doubled each time the same contribution
bounces again, up to `cap` (the stream's timeout). A chunk's bounces are forgotten once it has
its sum (`forget`).

    >>> b = Bounces(first=0.001, cap=0.004)
    >>> for now in (0.0, 0.0011, 0.0032, 0.0073):  # it bounces again after each replay
    ...     b.bounced(3, 1, b"lanes", now)
    ...     print(round(b.next_due() - now, 4), [(c, s) for c, s, _ in b.due(b.next_due())])
    0.001 [(3, 1)]
    0.002 [(3, 1)]
    0.004 [(3, 1)]
    0.004 [(3, 1)]
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass


@dataclass
class _Held:
    """A bounced contribution: what it carries, when it is replayed (inf: it was, and has not
    come back), the wait before that replay."""

    lanes: bytes
    due: float
    wait: float


class Bounces:
    """The bounced contributions of one stream, by chunk index and source island."""

    def __init__(self, first: float, cap: float) -> None:
        self.first, self.cap = first, max(first, cap)
        self._held: dict[int, dict[int, _Held]] = {}

    def __bool__(self) -> bool:
        return bool(self._held)

    def bounced(self, chunk: int, src: int, lanes: bytes, now: float) -> None:
        """`src`'s contribution to `chunk` came back at `now`: replay it after the wait."""
        held = self._held.setdefault(chunk, {})
        last = held.get(src)
        wait = self.first if last is None else min(2 * last.wait, self.cap)
        held[src] = _Held(lanes, now + wait, wait)

    def next_due(self) -> float:
        """When the next replay is due (inf: none waits)."""
        return min(
            (h.due for held in self._held.values() for h in held.values()), default=float("inf")
        )

    def due(self, now: float) -> Iterator[tuple[int, int, bytes]]:
        """(chunk, src, lanes) of each replay due by `now`, each given once."""
        for chunk, held in self._held.items():
            for src, h in held.items():
                if h.due <= now:
                    h.due = float("inf")
                    yield chunk, src, h.lanes

    def forget(self, chunk: int) -> None:
        """The chunk has its sum: nothing of it is replayed any more."""
        self._held.pop(chunk, None)
