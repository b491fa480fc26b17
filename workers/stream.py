"""One allreduce as a stream of chunks: window, pacing, timeouts and loss recovery (no I/O).

`ChunkStream` is the pure core of the aggregation client: it is told the time and the packets
that arrived, and answers with the packets to send. The rules it follows (docs/protocol.md):

- **Window.** Chunk i is sent only while i < low + window, where `low` is the lowest chunk
  without a sum: chunk c + SLOTS waits for the result of c when window <= SLOTS.
- **Pacing.** With `rate_bps`, chunk sends are spaced by one 186-byte frame time, the first
  `start_s` after the stream begins (the planner's offset); a burst after the window reopens is
  not caught up.
- **Just in time.** With `local_lag_s`, a fresh chunk goes out twice: `WAN|REMOTE` on the
  schedule (merged at the other members' edges), and `LOCAL` alone `local_lag_s` later (merged
  at the own edge, when the first remote copy is due there), each on its own paced schedule.
  A chunk counts as sent (a pending timeout, a RECOVER-able contribution) from its first copy.
- **Resend.** No sum after the timeout: the own contribution again with WAN|LOCAL|RETRANSMIT,
  the timeout multiplied by `backoff` up to its cap, `nack_after` times.
- **NACK.** After that, a NACK (WAN) on every further timeout, until the chunk is done.
- **The timeout follows the network.** A chunk's first timeout is the largest of `timeout_s`,
  twice the smoothed latency from a chunk's first copy to its sum, and that latency plus four
  deviations (RFC 6298's estimator). A resent chunk's sum may answer any of its copies, so it
  is sampled from its latest copy: a lower bound, where Karn's rule would skip it (with every
  chunk resent, as under a busy CPU, nothing would be measured at all). A first timeout is
  recomputed from the current figures when it comes, so a chunk whose sum the latency
  measured since says may still be on the way waits longer instead of being resent. Before
  any sum has come, a first timeout that fires after a whole timeout without one multiplies the
  first timeouts of the chunks still waiting by `backoff`, as TCP backs off its timer
  (RFC 6298, 5.5); the first sum ends it. Measured or backed off, a first timeout is at most
  `deadline_s / 8` (`TIMEOUT_SHARE`), so a chunk lost for good has its two resends and its
  NACK out by 5/8 of the deadline (the retry timeouts double up to twice the measured one);
  sums that took longer still come, as duplicates of the resends. Later timeouts are capped at
  `max_timeout_s` or twice the measured one, and `nack_horizon` says how long a member may
  wait for its NACK: `Aggregator.serve` lingers at least that long. Without this, switches that fell
  behind made every chunk in flight time out at once, and the resends, NACKs and RECOVERs that
  followed overloaded them further (docs/protocol.md, "Timeouts follow the network").
- **Only a paced stream measures.** Without `rate_bps` a leader sends its whole window at once,
  and the latency it would measure is mostly the queue it built itself. Its timeouts stay
  the policy's, as before (with measured ones, unpaced lossy runs lost chunks: unexplained).
- **Resends and NACKs are paced** with the fresh chunks: with `rate_bps`, every copy on the WAN
  schedule (fresh, resend or NACK; a due resend goes first) takes one frame time, so recovery
  does not add to the planned rate, and resends are one frame time apart at least: the chunks
  that timed out while the leader stalled do not leave in one burst.
- **RECOVER.** RECOVER copies of other members' contributions to an unfinished chunk are kept
  (whoever NACKed: another member's NACK brings them to us too). Once every other member's copy
  is in, the sum is own + others in int32 wrap-around arithmetic, exactly as the switch adds.
- **Healing.** Before the chunk counts as done (so before the window can reach c + SLOTS), the
  own edge's slot is replayed LOCAL|RETRANSMIT (no WAN): first the own contribution, then each
  recovered one under its member's `src`. Decision beyond the protocol text: the own
  contribution is replayed too (first, so that it is a silent duplicate while the slot is busy)
  which also completes a slot whose own contribution was lost on the host link. The RESULT the
  healed slot emits is then a duplicate; it is checked against the software sum.
- **Bounces.** A contribution the own edge's busy slot refused comes back as a BOUNCE; the
  leader replays it to the own edge only (LOCAL|RETRANSMIT, under its member's `src`) when
  `workers.bounces` says: at once when a RESULT shows its cell completed (with the policy's
  `cells`: the lowest chunk held for that cell), and otherwise after a frame time of the
  schedule (`BOUNCE_WAIT_S` unpaced), doubling up to `timeout_s`. Replays leave when due, off
  the WAN schedule (they never cross the WAN). A slot held a little late by timing noise then
  costs the chunks that meet it a frame time or two, not a timeout and a NACK
  (docs/protocol.md, "Bounces"). Once the chunk has its sum its bounces are forgotten, and
  later ones ignored.
- **Overtaken.** A RESULT of chunk c + k x cells while chunk c has no sum: a later chunk took
  c's cell first, and the edge refuses c as a late copy from then on. c is summed from the own
  contribution and the bounces held for it, or NACKed at once if a member's is missing; no
  healing (docs/protocol.md, "Overtaken chunks").
- **Exactness.** A RESULT must carry the group's bitmap, and a second RESULT for a chunk must
  equal the first: anything else raises `ResultMismatch`. The own contribution is only ever
  added once (RECOVERs naming the own island or a non-member are refused).
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

import numpy as np

from workers.bounces import Bounces
from workers.exceptions import ResultMismatch
from workers.group import AggregatorStats, GroupSpec, SendPolicy, describe_ranges
from workers.latency import Latency
from workers.packets import Flag, InnetPacket, PacketType, values_of

LOCAL_REPLAY = Flag.LOCAL | Flag.RETRANSMIT  # healing, bounces: to the own edge only
BOUNCE_WAIT_S = 0.001  # an unpaced stream's first wait before replaying a bounced contribution
TIMEOUT_SHARE = 8  # a first timeout is at most this fraction of the deadline


@dataclass
class _Pending:
    """An unanswered chunk: when it next times out, and what recovery has gathered."""

    sent_at: float  # the chunk's first copy
    last_copy_at: float  # its latest resend or NACK (the first copy until then)
    due: float
    timeout: float
    resends: int = 0
    nacks: int = 0
    queued: bool = False  # timed out, waiting for a paced send
    recovered: dict[int, np.ndarray] = field(default_factory=dict)
    overtaken: bool = False  # a later chunk took its cell at the own edge: nothing to heal

    @property
    def retried(self) -> bool:
        return bool(self.resends or self.nacks)


class ChunkStream:
    """Chunks first..first+n-1 of one (job, round, group): the leader's side of one allreduce."""

    def __init__(
        self,
        group: GroupSpec,
        policy: SendPolicy,
        chunks: np.ndarray,
        first_chunk: int,
        now: float,
        stats: AggregatorStats,
    ) -> None:
        lanes = group.packet_format.lanes
        if chunks.ndim != 2 or chunks.shape[1] != lanes or chunks.dtype != np.int32:
            raise ValueError(f"chunks must be int32 of shape (n, {lanes}), got {chunks.shape}")
        self.group = group
        self.policy = policy
        self.chunks = chunks
        self.first = first_chunk
        self.started = now
        self.stats = stats
        n = chunks.shape[0]
        self.sums = np.zeros_like(chunks)
        self.done_mask = np.zeros(n, dtype=bool)
        self.low = 0  # lowest chunk index without a sum
        self.next = 0  # next chunk index to send
        self.pending: dict[int, _Pending] = {}
        self.next_local = 0  # next chunk whose just-in-time LOCAL copy is due (split sends)
        self._split = policy.local_lag_s is not None
        frame_bits = group.packet_format.frame_bits
        self._interval = frame_bits / policy.rate_bps if policy.rate_bps else 0.0
        self._next_send_at = now + policy.start_s
        self._local_at = self._next_send_at + (policy.local_lag_s or 0.0)
        self._earliest_due = float("inf")
        self._retries: deque[int] = deque()  # timed-out chunks, in order, for paced sends
        self._retry_at = now
        self.latency = Latency(
            policy.timeout_s,
            policy.deadline_s / TIMEOUT_SHARE,
            policy.backoff,
            now,
            measures=bool(self._interval),
        )
        self.pacing_lag_s = 0.0  # the most a fresh copy left after its paced time (a busy CPU)
        self.bounces = Bounces(self._interval or BOUNCE_WAIT_S, policy.timeout_s, policy.cells)

    # --- queries

    @property
    def size(self) -> int:
        return int(self.chunks.shape[0])

    @property
    def done(self) -> bool:
        return self.low >= self.size

    def covers(self, chunk: int) -> bool:
        return self.first <= chunk < self.first + self.size

    def own(self, chunk: int) -> np.ndarray | None:
        """The own contribution to `chunk` if it has been sent (what a RECOVER carries)."""
        i = chunk - self.first
        return self.chunks[i] if 0 <= i < self.next else None

    def next_wakeup(self) -> float:
        """The earliest time `pump` has something to do without a packet arriving."""
        wake = self._earliest_due
        end = min(self.size, self.low + self.policy.window)
        if self.next < end:
            wake = min(wake, self._next_send_at)
        if self._retries:
            wake = min(wake, max(self._next_send_at, self._retry_at))
        if self._split and self.next_local < end:
            wake = min(wake, self._local_at)
        return min(wake, self.bounces.next_due())

    # --- packets out

    def _packet(
        self, kind: PacketType, flags: Flag, src: int, index: int, values: np.ndarray | None
    ) -> InnetPacket:
        g = self.group
        return InnetPacket.of(
            kind,
            flags,
            g.job,
            g.round,
            g.group,
            src,
            self.first + index,
            0,
            values,
            g.packet_format,
        )

    def pump(self, now: float) -> list[InnetPacket]:
        """Resends and NACKs that are due, then new chunks as the window and rate allow."""
        if now >= self._earliest_due:
            self._timeouts(now)
        out = self._replay_bounced(now) if self.bounces else []
        out += self._send_retries(now)
        window_end = min(self.size, self.low + self.policy.window)
        while True:
            wan_open = self.next < window_end
            local_open = self._split and self.next_local < window_end
            if wan_open and (not local_open or self._next_send_at <= self._local_at):
                if now < self._next_send_at:
                    break
                out.append(self._send_fresh(now))
            elif local_open:
                if now < self._local_at:
                    break
                i = self.next_local
                out.append(
                    self._packet(
                        PacketType.CONTRIBUTION, Flag.LOCAL, self.group.me, i, self.chunks[i]
                    )
                )
                self._sent_once(i, now)
                self.next_local += 1
                self._local_at += self._interval
            else:
                break
        # A cursor blocked by the window resumes from now: no burst to catch up.
        if self.next >= window_end:
            self._next_send_at = max(self._next_send_at, now)
        if self._split and self.next_local >= window_end:
            self._local_at = max(self._local_at, now)
        return out

    def _send_fresh(self, now: float) -> InnetPacket:
        """Chunk `next` on the paced schedule: WAN|LOCAL, or WAN|REMOTE when split."""
        i = self.next
        flags = Flag.WAN | (Flag.REMOTE if self._split else Flag.LOCAL)
        packet = self._packet(PacketType.CONTRIBUTION, flags, self.group.me, i, self.chunks[i])
        self.stats.sent += 1
        self._sent_once(i, now)
        self.pacing_lag_s = max(self.pacing_lag_s, now - self._next_send_at)
        self.next += 1
        self._next_send_at += self._interval
        return packet

    def _sent_once(self, i: int, now: float) -> None:
        """Start chunk i's timeout at its first copy, allowing for the other copy's lag."""
        if i in self.pending or self.done_mask[i]:
            return
        timeout = self.latency.timeout()
        due = now + self._lag + timeout
        self.pending[i] = _Pending(sent_at=now, last_copy_at=now, due=due, timeout=timeout)
        self._earliest_due = min(self._earliest_due, due)

    def nack_horizon(self) -> float:
        """How long after sending a chunk a member may wait before NACKing it, and once more
        after that, with the timeouts as measured now: how long a member that has its sum
        should go on answering NACKs."""
        policy, cap = self.policy, self._retry_cap()
        timeout = self.latency.timeout()
        total = self._lag + timeout
        for _ in range(policy.nack_after + 1):
            timeout = min(timeout * policy.backoff, cap)
            total += timeout
        return total

    def _retry_cap(self) -> float:
        """The longest timeout after a resend or NACK: the policy's, or twice the measured one."""
        return max(self.policy.max_timeout_s, 2 * self.latency.measured())

    @property
    def _lag(self) -> float:
        return abs(self.policy.local_lag_s or 0.0)

    def _timeouts(self, now: float) -> None:
        """Queue the chunks whose timeout has come (a first one waits if latency says so)."""
        earliest = float("inf")
        for i, p in self.pending.items():
            if p.queued:
                continue
            if not p.retried:  # a first timeout follows what is measured (and backed off) now
                p.timeout = self.latency.timeout()
                p.due = p.sent_at + self._lag + p.timeout
                if now >= p.due:
                    self.latency.timed_out(now)
            if now >= p.due:
                p.queued = True
                self._retries.append(i)
            else:
                earliest = min(earliest, p.due)
        self._earliest_due = earliest

    def _send_retries(self, now: float) -> list[InnetPacket]:
        """Queued resends and NACKs, each taking a frame time of the WAN schedule."""
        out: list[InnetPacket] = []
        policy, me = self.policy, self.group.me
        while self._retries and now >= max(self._next_send_at, self._retry_at):
            i = self._retries.popleft()
            p = self.pending.get(i)
            if p is None or not p.queued:  # summed while it waited
                continue
            if p.resends < policy.nack_after:
                flags = Flag.WAN | Flag.LOCAL | Flag.RETRANSMIT
                out.append(self._packet(PacketType.CONTRIBUTION, flags, me, i, self.chunks[i]))
                p.resends += 1
                self.stats.retransmitted += 1
            else:
                out.append(self._packet(PacketType.NACK, Flag.WAN, me, i, None))
                p.nacks += 1
                self.stats.nacks_sent += 1
            p.timeout = min(p.timeout * policy.backoff, self._retry_cap())
            p.queued, p.due, p.last_copy_at = False, now + p.timeout, now
            self._earliest_due = min(self._earliest_due, p.due)
            self._next_send_at += self._interval  # a frame time of the schedule, taken
            self._retry_at = now + self._interval  # and never caught up: no burst after a stall
        return out

    def _replay_bounced(self, now: float) -> list[InnetPacket]:
        """Bounced contributions whose wait is over, to the own edge (off the WAN schedule)."""
        g = self.group
        return [
            InnetPacket(
                PacketType.CONTRIBUTION,
                LOCAL_REPLAY,
                g.job,
                g.round,
                g.group,
                src,
                self.first + i,
                0,
                lanes,
            )
            for i, src, lanes in self.bounces.due(now)
        ]

    # --- packets in

    def on_result(self, packet: InnetPacket, now: float) -> None:
        """A RESULT for one of this stream's chunks (the caller checked the chunk range), come
        at `now`: the latency the timeouts follow is sampled, and the chunk's cell at the own
        edge has completed, so a contribution held for it is replayed (`Bounces.freed`)."""
        i = packet.chunk - self.first
        if packet.bitmap != self.group.bitmap:
            raise ResultMismatch(
                f"RESULT for chunk {packet.chunk} merges islands {packet.bitmap:#x}, the group "
                f"{self.group.members} is {self.group.bitmap:#x}: the switch's membership for "
                f"{self.group.key} differs from this worker's GroupSpec; fix the round's install"
            )
        values = packet.array()
        if self.done_mask[i]:
            self._check_again(i, values, "RESULT")
            self._cell_completed(i, now)
            return
        if i not in self.pending:  # not sent yet: the slot cannot hold the own contribution
            self.stats.foreign += 1
            return
        self.stats.results += 1
        p = self.pending[i]  # a resent chunk's sum may answer any copy: the latest is a bound
        if self.latency.backoff > 1.0:  # it ends: the chunks' first timeouts may come sooner
            self._earliest_due = now
        self.latency.sample(now - (p.last_copy_at if p.retried else p.sent_at))
        self._complete(i, values, now)
        self._cell_completed(i, now)

    def _cell_completed(self, i: int, now: float) -> None:
        """Chunk i's cell at the own edge completed (its RESULT came): replay the chunk held
        for the cell next, and sum the chunks it overtook without the edge."""
        cells = self.policy.cells
        if not cells:
            return
        for j in range(i - cells, self.low - 1, -cells):
            if j in self.pending:
                self._overtaken(j, now)
        self.bounces.freed(i, now)

    def _overtaken(self, i: int, now: float) -> None:
        """A later chunk of chunk i's cell completed there first: the edge refuses chunk i's
        contributions from now on as late copies (docs/protocol.md, "Overtaken chunks"). Its sum
        is the own contribution plus the bounced ones held for it; a member none came from is
        NACKed at once (its RECOVER brings the rest)."""
        p = self.pending[i]
        if not p.overtaken:
            p.overtaken = True
            self.stats.overtaken += 1
        others = self.group.others
        for src, lanes in self.bounces.take(i).items():
            if src in others:
                p.recovered.setdefault(src, values_of(lanes))
        if len(p.recovered) == len(others):
            self._sum_in_software(i, p, now)
        elif not p.queued and not p.nacks:
            p.resends = max(p.resends, self.policy.nack_after)  # no resend: a NACK, now
            p.queued = True
            self._retries.appendleft(i)

    def on_bounce(self, packet: InnetPacket, now: float) -> None:
        """A BOUNCE from the own edge: replay that contribution after a wait (see the module's
        rules); ignored once the chunk has its sum."""
        i = packet.chunk - self.first
        if packet.src not in self.group.members:
            self.stats.foreign += 1
            return
        if self.done_mask[i]:
            self.stats.duplicates_ignored += 1
            return
        self.stats.bounced += 1
        self.bounces.bounced(i, packet.src, packet.lanes, now)

    def on_recover(self, packet: InnetPacket, now: float | None = None) -> list[InnetPacket]:
        """A RECOVER copy from another member; returns the healing replays once all are in."""
        i = packet.chunk - self.first
        src = packet.src
        if src == self.group.me or src not in self.group.members:
            self.stats.foreign += 1  # never count the own contribution twice, nor a stranger's
            return []
        p = self.pending.get(i)
        if p is None:
            if self.done_mask[i]:
                self.stats.duplicates_ignored += 1
            return []
        p.recovered[src] = packet.array()
        if len(p.recovered) < len(self.group.others):
            return []
        return self._sum_in_software(i, p, now)

    def _sum_in_software(self, i: int, p: _Pending, now: float | None) -> list[InnetPacket]:
        """Chunk i from every other member's contribution: own + others in int32 wrap-around
        arithmetic, as the switch adds; the healing replays for the own edge's slot (none when
        a later chunk holds that cell)."""
        total = self.chunks[i].astype(np.int64)
        for values in p.recovered.values():
            total += values
        software = total.astype(np.int32)  # wraps modulo 2**32, as the switch's lanes do
        self.stats.recovered_chunks += 1
        self._complete(i, software, now)
        if p.overtaken:
            return []
        heal = LOCAL_REPLAY
        replays = [self._packet(PacketType.CONTRIBUTION, heal, self.group.me, i, self.chunks[i])]
        replays += [
            self._packet(PacketType.CONTRIBUTION, heal, m, i, p.recovered[m])
            for m in sorted(p.recovered)
        ]
        self.stats.heals_sent += len(replays)
        return replays

    def _check_again(self, i: int, values: np.ndarray, what: str) -> None:
        if not np.array_equal(values, self.sums[i]):
            raise ResultMismatch(
                f"a second {what} for chunk {self.first + i} of {self.group.key} differs from "
                f"the sum already taken: two different sums for one chunk, refusing both"
            )
        self.stats.duplicates_ignored += 1

    def _complete(self, i: int, values: np.ndarray, now: float | None) -> None:
        if now is not None:
            self.latency.summed(now)
        self.sums[i] = values
        self.done_mask[i] = True
        del self.pending[i]
        self.bounces.forget(i)
        while self.low < self.size and self.done_mask[self.low]:
            self.low += 1

    # --- giving up

    def missing(self) -> tuple[tuple[int, ...], tuple[int, ...], str]:
        """(chunks without a sum, members whose contribution is missing, a description)."""
        chunks = tuple(self.first + int(i) for i in np.flatnonzero(~self.done_mask))
        nacked = [p for p in self.pending.values() if p.nacks]
        others = self.group.others
        if nacked:
            members = tuple(m for m in others if any(m not in p.recovered for p in nacked))
        else:
            members = others
        unsent = range(self.first + self.next, self.first + self.size)
        waiting = sorted(self.first + i for i in self.pending)
        text = (
            f"{len(chunks)} chunk(s) of {self.group.key} without a sum: "
            f"waiting for {describe_ranges(waiting)}; not sent yet (window) "
            f"{describe_ranges(unsent)}; contributions missing from island(s) "
            f"{', '.join(map(str, members)) or 'none'} "
            f"(NACKed {len(nacked)} chunk(s); check that those islands run this round)"
        )
        return chunks, members, text
