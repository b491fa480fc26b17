"""Ring all-reduce on the hosts (network `plain`, collective `ring`), pipelined chunk by chunk.

NCCL's and gloo's algorithm over a `workers.unicast.UnicastTransport`. The k members stand in
the planner's ring `order` (every member is given the same one); the chunks are split into k
contiguous segments, and in 2(k - 1) steps every member sends one segment to its successor:

- **reduce-scatter**, steps 0..k-2: at step s, position p sends segment (p - s) mod k: its own
  values at step 0, later what it received of that segment at step s - 1 plus its own values
  (partial sums). After step k - 2 position p holds the sum of segment (p + 1) mod k;
- **all-gather**, steps k-1..2k-3: the final sums go round once more, each member keeping and
  forwarding what it receives.

A packet is a CONTRIBUTION with src = the sender, chunk = the global chunk number and bitmap =
the step. **Pipelined**: chunk c of step s + 1 is ready as soon as chunk c of step s is in from
the predecessor (the own step-0 chunks are ready at `begin`); ready chunks leave in the order
they became ready, one stream paced at `rate_bps`, except that a chunk ready after a later one
of its step has left (it was recovered upstream) goes first: the successor is waiting for it.
A member finds loss as `workers.timing` says and NACKs its predecessor (src = me, chunk,
bitmap = the step), which resends what it sent (RETRANSMIT). Sums wrap around in int32 as the
switch's do; every (step, chunk) is counted once.

**Timing**, for the planner. With frame time δ = frame_bits / rate_bps (the packet format's),
n chunks in segments of L_g chunks (about n/k; seg = the largest L_g·δ) and hop delays h_i
(position i to i + 1), the collective ends, at the last member, at about

    T = max(2(k - 1)·seg + max_i h_i,  max_g (L_g·δ + the 2(k - 1) hop delays from g))

When hops are short every member sends its 2(k - 1) segments back to back and the last chunk
then crosses one hop (the first term: bandwidth). When they are long, the last chunk of
segment g leaves position g after L_g·δ and then waits one hop per step along the chain of
2(k - 1) hops that starts at g (the second term: delay; with equal hops h it is
seg + 2(k - 1)·h). Both terms are lower bounds the pipeline reaches: on a fake clock (k = 4,
tests/unit/workers/test_ring.py) T is within 1% of the larger term in either regime, and at
most 6% above it where they cross with very unequal hops (1, 1, 10 and 1 ms), where a member
waits for its predecessor part of the time.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable, Sequence

import numpy as np

from workers.exceptions import PolicyError
from workers.exchange import Answer, CollectiveRun, HostCollective, Outgoing, make_packet
from workers.group import AggregatorStats, GroupSpec, SendPolicy, describe_ranges
from workers.packets import Flag, InnetPacket, PacketType
from workers.timing import Key, LossWatch
from workers.unicast import UnicastTransport


class _RingRun:
    """One ring all-reduce of chunks first..first+n-1, as seen by one member."""

    def __init__(
        self,
        group: GroupSpec,
        policy: SendPolicy,
        chunks: np.ndarray,
        first: int,
        now: float,
        order: tuple[int, ...],
    ) -> None:
        self.group, self.chunks, self.first, self.started = group, chunks, first, now
        self.size = n = int(chunks.shape[0])
        self.order, self.k = order, len(order)
        self.pos = order.index(group.me)
        self.pred, self.succ = order[self.pos - 1], order[(self.pos + 1) % self.k]
        self.steps = 2 * (self.k - 1)
        self.bounds = [g * n // self.k for g in range(self.k + 1)]
        self.partial = chunks.copy()  # what goes out in the reduce-scatter (step 0: own values)
        self.final = chunks.copy() if self.k == 1 else np.zeros_like(chunks)
        self.known = np.full(n, self.k == 1)  # the final sum is in
        self.got = np.zeros((2, n), dtype=bool)  # [phase, chunk]: 0 reduce-scatter, 1 all-gather
        self.sent = np.zeros((2, n), dtype=bool)
        self.complete = int(self.known.sum())
        self.queue: deque[tuple[int, int]] = deque()  # (step, chunk index) ready, in order
        self.last_sent = [-1] * self.steps  # per step, the highest chunk index sent
        if self.k > 1:
            self.queue.extend((0, i) for i in self._segment(0, self.pos))
        lengths = [len(self._segment(s, self.pos - 1)) for s in range(self.steps)]
        links = {self.pred: lengths} if self.k > 1 else {}
        self.watch = LossWatch(policy, now, links, self._has, relayed=True)

    def _segment(self, step: int, position: int) -> range:
        """The chunk indices that `position` sends at `step`."""
        g = (position - step) % self.k
        return range(self.bounds[g], self.bounds[g + 1])

    def _phase(self, step: int) -> int:
        return 0 if step < self.k - 1 else 1

    def _has(self, _link: int, step: int, j: int) -> bool:
        return bool(self.got[self._phase(step), self._segment(step, self.pos - 1)[j]])

    def _value(self, step: int, i: int) -> np.ndarray:
        row: np.ndarray = self.partial[i] if step < self.k - 1 else self.final[i]
        return row

    @property
    def done(self) -> bool:
        return self.complete == self.size

    def sums(self) -> np.ndarray:
        return self.final

    def has_fresh(self) -> bool:
        return bool(self.queue)

    def next_fresh(self) -> Outgoing:
        step, i = self.queue.popleft()
        self.sent[self._phase(step), i] = True
        self.last_sent[step] = max(self.last_sent[step], i)
        return self.succ, make_packet(
            self.group, PacketType.CONTRIBUTION, Flag(0), self.first + i, step, self._value(step, i)
        )

    def on_data(self, packet: InnetPacket, now: float, stats: AggregatorStats) -> None:
        step, i = packet.bitmap, packet.chunk - self.first
        segment = self._segment(step, self.pos - 1) if step < self.steps else range(0)
        if packet.src != self.pred or i not in segment:
            stats.foreign += 1  # not what the predecessor sends at that step
            return
        phase = self._phase(step)
        if self.got[phase, i]:
            stats.duplicates_ignored += 1
            return
        self.got[phase, i] = True
        values = packet.array()
        if phase == 0:
            values += self.chunks[i]  # int32 arrays: wraps modulo 2**32, as the lanes do
        if step < self.k - 2:
            self.partial[i] = values
        else:  # the last reduce-scatter step completes the sum; the all-gather brings sums
            self.final[i], self.known[i] = values, True
            self.complete += 1
            stats.results += 1
        if step + 1 < self.steps and i < self.last_sent[step + 1]:
            self.queue.appendleft((step + 1, i))  # late (recovered): the successor waits for it
        elif step + 1 < self.steps:
            self.queue.append((step + 1, i))
        self.watch.arrived(self.pred, step, i - segment.start, now)

    def on_nack(self, packet: InnetPacket, stats: AggregatorStats) -> Answer | None:
        step, i = packet.bitmap, packet.chunk - self.first
        if packet.src != self.succ or step >= self.steps or i not in self._segment(step, self.pos):
            stats.foreign += 1
            return None
        if not self.sent[self._phase(step), i]:
            return None  # not sent yet: it goes out when ready
        resend = make_packet(
            self.group,
            PacketType.CONTRIBUTION,
            Flag.RETRANSMIT,
            packet.chunk,
            step,
            self._value(step, i),
        )
        return (step, packet.chunk), (self.succ, resend)

    def nack_groups(self, keys: list[Key]) -> list[tuple[Key, ...]]:
        return [(key,) for key in keys]

    def nack(self, keys: tuple[Key, ...]) -> Outgoing:
        _, step, j = keys[0]
        chunk = self.first + self._segment(step, self.pos - 1)[j]
        return self.pred, make_packet(self.group, PacketType.NACK, Flag(0), chunk, step)

    def missing(self) -> tuple[tuple[int, ...], tuple[int, ...], str]:
        chunks = tuple(self.first + int(i) for i in np.flatnonzero(~self.known))
        top = self.watch.top.get(self.pred, -1)
        # an item of step s carries the contributions of the s + 1 members before this one
        silent = tuple(self.order[(self.pos - d) % self.k] for d in range(top + 2, self.k))
        if silent:
            cause = (
                f"nothing beyond step {top} came from predecessor island {self.pred}: the "
                f"contributions of island(s) {', '.join(map(str, silent))} (nearest "
                f"first) never reached island {self.group.me}"
            )
        else:
            cause = f"predecessor island {self.pred} did not resend what was lost"
        text = (
            f"{len(chunks)} chunk(s) of {self.group.key} without their sum "
            f"({describe_ranges(chunks)}) after step {top} of {self.steps}; {cause} "
            f"(check that those islands run this round)"
        )
        return chunks, silent or (self.pred,), text


class RingAllReduce(HostCollective):
    """Network `plain`, collective `ring`: the pipelined ring all-reduce of the module's
    docstring, the members in `order` (by default the group's members as listed)."""

    def __init__(
        self,
        transport: UnicastTransport,
        group: GroupSpec,
        policy: SendPolicy,
        clock: Callable[[], float] = time.monotonic,
        order: Sequence[int] | None = None,
    ) -> None:
        ring = tuple(group.members if order is None else order)
        if sorted(ring) != sorted(group.members):
            raise PolicyError(
                f"ring order {ring} must name each member of {group.members} once: every "
                f"member must be given the same order, from the plan"
            )
        super().__init__(group, policy, clock, 1, transport.send_to, transport.recv)
        self.transport = transport
        self.order = ring

    def _start(self, chunks: np.ndarray, first: int, now: float) -> CollectiveRun:
        return _RingRun(self.group, self.policy, chunks, first, now, self.order)
