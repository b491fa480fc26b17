"""When a host-side collective sends and when it NACKs: `Pacer` and `LossWatch` (no I/O).

The exchanges of `workers.exchange` and `workers.ring` are told the time and what arrived; these
two decide what is due.

- **Pacer.** One frame schedule per member: with `rate_bps`, a frame every frame_bits / rate_bps
  (the packet format's) per stream (direct exchange sends k - 1 streams: a frame every δ / (k - 1)
  overall), the first `start_s` after `begin`. A schedule that fell behind (a busy CPU) catches up,
  and `lag_s` says by how much at most; while nothing is ready no credit accrues. NACKs and answers
  to NACKs take frames of the same schedule, one frame time apart at least. Unpaced, a member sends
  at most `window` frames per step, then receives again.
- **LossWatch.** The receiver finds loss. A peer sends its items in a known order (a source its
  chunks in increasing order; a ring predecessor item (s', j') before (s, j) whenever s' <= s
  and j' <= j, j counting within the step's segment), so an item that arrives says which
  earlier ones were sent: those still missing `timeout_s` later (room for reordering) are
  NACKed. A ring's relayed items (steps >= 1) wait twice that: one recovery upstream
  (`timeout_s` and a round trip) may have held them back. A peer silent for `timeout_s` while
  items are outstanding (a lost tail, lost answers) has its next TAIL_PROBE outstanding items of
  each step NACKed. An item NACKed and not answered within its timeout is NACKed again, the
  timeout growing by `backoff` up to `max_timeout_s`, as does the silence that triggers the
  next probe. `timeout_s` is above the group's span, and in a loss-free run a peer is never
  silent for longer than one path's delay (ring: one hop's), so a loss-free, in-order run sends
  no NACK at all.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from workers.group import SendPolicy

TAIL_PROBE = 32  # items of each step NACKed at once when a silent peer is probed

Key = tuple[int, int, int]  # an awaited item: (link, step, j), j counting within the step


class Pacer:
    """One member's frame schedule: `ready` says whether a frame may leave now, `take` that one
    did; `interval` 0 is unpaced (`burst` frames per step, the caller resets `budget`)."""

    def __init__(self, interval: float, burst: int) -> None:
        self.interval, self.burst, self.budget = interval, burst, burst
        self.next_at = self.control_at = -float("inf")
        self.resting = True  # nothing was ready: the schedule resumes when something is
        self.lag_s = 0.0

    def restart(self, at: float) -> None:
        """A collective begins: its first frame is due at `at`."""
        self.next_at, self.resting = max(self.next_at, at), False

    def ready(self, now: float, control: bool = False) -> bool:
        if not self.interval:
            return self.budget > 0
        return now >= self.next_at and (not control or now >= self.control_at)

    def take(self, now: float, control: bool = False) -> None:
        self.budget -= 1
        if not self.interval:
            return
        if self.resting:  # the schedule resumes now, without a burst
            self.next_at, self.resting = max(self.next_at, now), False
        else:
            self.lag_s = max(self.lag_s, now - self.next_at)
        self.next_at += self.interval
        if control:  # a NACK or an answer: the next one a frame time later at least
            self.control_at = now + self.interval

    def next_time(self, now: float) -> float:
        """When the next frame may leave (now, unpaced)."""
        return max(now, self.next_at) if self.interval else now


@dataclass
class _Timer:
    due: float
    timeout: float  # the wait after the next NACK
    queued: bool = False  # its NACK waits for a frame of the schedule


class LossWatch:
    """What a member awaits from each link (a peer), and when to NACK it.

    `lengths[link]` gives the number of items of each step; `has(link, step, j)` whether an item
    is in. The caller reports arrivals (`arrived`), asks what is due (`due`), and says when a
    NACK left (`nacked`).
    """

    def __init__(
        self,
        policy: SendPolicy,
        now: float,
        lengths: Mapping[int, Sequence[int]],
        has: Callable[[int, int, int], bool],
        relayed: bool = False,
    ) -> None:
        self.policy, self.has = policy, has
        # relayed: items of steps >= 1 leave the peer only once its own predecessor's are in,
        # so they may be late by one recovery upstream (timeout_s and a round trip)
        self.relayed = relayed
        self.lengths = {link: tuple(steps) for link, steps in lengths.items()}
        # per link and step: every item up to here is in or has a timer; none beyond is in
        self.frontier = {link: [-1] * len(steps) for link, steps in self.lengths.items()}
        self.top = dict.fromkeys(self.lengths, -1)  # the highest step heard of, per link
        self.heard = dict.fromkeys(self.lengths, now)
        self.quiet = dict.fromkeys(self.lengths, policy.timeout_s)  # silence that probes
        self.timers: dict[Key, _Timer] = {}
        self.earliest = now + policy.timeout_s  # when `due` next has something to do

    def arrived(self, link: int, step: int, j: int, now: float) -> None:
        """Item (step, j) of `link` is in: the missing items sent before it get timers."""
        self.timers.pop((link, step, j), None)
        self.heard[link], self.quiet[link] = now, self.policy.timeout_s
        self.earliest = min(self.earliest, now + self.policy.timeout_s)  # its next silence
        self.top[link] = max(self.top[link], step)
        frontier, lengths = self.frontier[link], self.lengths[link]
        for s in range(step + 1):
            upto = min(j, lengths[s] - 1)
            for jj in range(frontier[s] + 1, upto + 1):
                if not self.has(link, s, jj):
                    wait = self.policy.timeout_s * (2 if self.relayed and s else 1)
                    self._arm((link, s, jj), now + wait)
            frontier[s] = max(frontier[s], upto)

    def _arm(self, key: Key, due: float) -> None:
        self.timers[key] = _Timer(due, self.policy.timeout_s)
        self.earliest = min(self.earliest, due)

    def _probe(self, link: int, now: float) -> bool:
        """`link` has been silent: its next outstanding items are due now (False: none)."""
        frontier, lengths = self.frontier[link], self.lengths[link]
        beyond = self.top[link] + 1  # up to the next step beyond those heard of that has items
        while beyond < len(lengths) - 1 and not lengths[beyond]:
            beyond += 1
        found = False
        for s in range(min(beyond + 1, len(lengths))):
            upto = min(frontier[s] + min(TAIL_PROBE, self.policy.window), lengths[s] - 1)
            for jj in range(frontier[s] + 1, upto + 1):
                self._arm((link, s, jj), now)
                found = True
            frontier[s] = max(frontier[s], upto)
        if found:
            p = self.policy
            self.heard[link] = now
            self.quiet[link] = min(self.quiet[link] * p.backoff, p.max_timeout_s)
        return found

    def due(self, now: float) -> list[Key]:
        """The items whose NACK is due now (queued until `nacked` says it left)."""
        if now < self.earliest:
            return []
        earliest = float("inf")
        for link in self.lengths:
            if now - self.heard[link] < self.quiet[link] or self._probe(link, now):
                earliest = min(earliest, self.heard[link] + self.quiet[link])
        out = []
        for key, timer in self.timers.items():
            if timer.queued:
                continue
            if now >= timer.due:
                timer.queued = True
                out.append(key)
            else:
                earliest = min(earliest, timer.due)
        self.earliest = earliest
        return out

    def nacked(self, key: Key, now: float) -> bool:
        """The NACK for `key` leaves now (False: the item came meanwhile, no NACK needed)."""
        timer = self.timers.get(key)
        if timer is None:
            return False
        timer.queued, timer.due = False, now + timer.timeout
        timer.timeout = min(timer.timeout * self.policy.backoff, self.policy.max_timeout_s)
        self.earliest = min(self.earliest, timer.due)
        return True
