"""Host-side collectives: the exchanges islands run when the network does not aggregate in line.

`DirectExchange` (network `plain`, collective `direct`) and `MulticastExchange` (network
`multicast`) give every member the k - 1 others' whole contributions, which it sums on the host
in int32 with wrap-around as the switch's lanes do: each (source, chunk) is counted once, so the
sum is numpy's wrapping int32 sum whatever the loss, duplication or reordering.
`workers.ring.RingAllReduce` uses the same machinery. All are driven like
`workers.aggregate.Aggregator` (`begin`, `step`, `result`, `allreduce_sum`, `serve`), so the
island leader can run any of them; docs/protocol.md ("Host-side collectives") has the packets.

- **Direct.** A member unicasts each chunk to every other member over a `UnicastTransport`
  (CONTRIBUTION, src = me, chunk by chunk, destinations in turn: k - 1 streams). A receiver
  NACKs the source whose chunk is missing (unicast); the source resends it (RETRANSMIT) to the
  NACKer only.
- **Multicast.** A member sends each chunk once to its edge (CONTRIBUTION, flags WAN), which
  replicates it to every other member's hosts. A NACK (WAN) names a chunk and, in its bitmap,
  the members whose contribution is missing; each of those answers with a RECOVER (WAN) of its
  own contribution, which every other member receives (a duplicate where it is in already).

Members pace their frames and find loss as `workers.timing` says: the receiver NACKs what a
peer's later frames (or its silence) show missing, so a loss-free, in-order run sends no NACK
and no resend. After its sum a member keeps what it sent and answers NACKs for as long as it
is stepped (`serve`, or `step` between rounds); `allreduce_sum` returns once its own frames are
all out. Packets of another (job, round, group) or from a non-member count as `foreign`,
undecodable ones as `malformed`; neither is ever summed.
"""

from __future__ import annotations

import logging
import time
from abc import ABC, abstractmethod
from collections import deque
from collections.abc import Callable, Hashable
from typing import Protocol

import numpy as np

from workers.aggregate import MAX_DRAIN, MAX_WAIT_S
from workers.exceptions import AggregationError, PacketError, QuantiseError
from workers.group import (
    AggregatorStats,
    GroupSpec,
    SendPolicy,
    check_deadline,
    contribution_chunks,
    describe_ranges,
)
from workers.packets import Flag, InnetPacket, PacketType
from workers.quantise import from_chunks
from workers.timing import Key, LossWatch, Pacer
from workers.transport import Transport
from workers.unicast import UnicastTransport

log = logging.getLogger(__name__)

MAX_EARLY = 8192  # packets of a collective this member has not begun yet, kept until it does

Outgoing = tuple[int, InnetPacket]  # the island to send to (the own: its edge) and the packet
Answer = tuple[Hashable, Outgoing]  # an answer to a NACK, named so it is queued once


def make_packet(
    g: GroupSpec,
    kind: PacketType,
    flags: Flag,
    chunk: int,
    bitmap: int = 0,
    values: np.ndarray | None = None,
) -> InnetPacket:
    """A packet of the group from this member (a NACK's values are 0)."""
    return InnetPacket.of(
        kind, flags, g.job, g.round, g.group, g.me, chunk, bitmap, values, g.packet_format
    )


class CollectiveRun(Protocol):
    """One collective (one `begin`): the own chunks first..first+size-1 and what came of them."""

    first: int
    size: int
    started: float
    watch: LossWatch

    @property
    def done(self) -> bool: ...
    def sums(self) -> np.ndarray: ...  # the int32 sums, shape (size, lanes), once done
    def has_fresh(self) -> bool: ...
    def next_fresh(self) -> Outgoing: ...  # the next own frame sent for the first time
    def on_data(self, packet: InnetPacket, now: float, stats: AggregatorStats) -> None: ...
    def on_nack(self, packet: InnetPacket, stats: AggregatorStats) -> Answer | None: ...
    def nack_groups(self, keys: list[Key]) -> list[tuple[Key, ...]]: ...  # one NACK each
    def nack(self, keys: tuple[Key, ...]) -> Outgoing: ...
    def missing(self) -> tuple[tuple[int, ...], tuple[int, ...], str]: ...  # chunks, members


class HostCollective(ABC):
    """What the host-side collectives share: receive, dispatch, pace, give up, serve."""

    accepts = frozenset({PacketType.CONTRIBUTION})

    def __init__(
        self,
        group: GroupSpec,
        policy: SendPolicy,
        clock: Callable[[], float],
        streams: int,
        send: Callable[[int, bytes], None],
        recv: Callable[[float], bytes | None],
    ) -> None:
        self.group, self.policy, self.clock = group, policy, clock
        self._emit, self._recv = send, recv  # send(island, packet): island's leader, or own edge
        self.stats = AggregatorStats()
        rate = policy.rate_bps
        frame_bits = group.packet_format.frame_bits
        self.pacer = Pacer(frame_bits / rate / max(1, streams) if rate else 0.0, policy.window)
        self.runs: list[CollectiveRun] = []
        self._next_chunk = self._length = 0
        self._answers: deque[Answer] = deque()
        self._answering: set[Hashable] = set()
        self._nacks: deque[tuple[CollectiveRun, tuple[Key, ...]]] = deque()
        self._early: list[InnetPacket] = []
        self._last_nack = clock()

    @abstractmethod
    def _start(self, chunks: np.ndarray, first: int, now: float) -> CollectiveRun: ...

    @property
    def active(self) -> CollectiveRun | None:
        return self.runs[-1] if self.runs else None

    @property
    def done(self) -> bool:
        return self.active is not None and self.active.done

    @property
    def pacing_lag_s(self) -> float:
        """The most a paced frame left after its scheduled time (a busy CPU)."""
        return self.pacer.lag_s

    def begin(self, values: np.ndarray) -> None:
        """Start a collective of an int32 contribution (the next chunk numbers of the round)."""
        run = self.active
        unfinished = run.first if run is not None and not run.done else None
        chunks = contribution_chunks(values, self.group, self._next_chunk, unfinished)
        values = np.asarray(values)
        now = self.clock()
        self.runs.append(self._start(chunks, self._next_chunk, now))
        self._next_chunk += chunks.shape[0]
        self._length = values.size
        self.pacer.restart(now + self.policy.start_s)
        early, self._early = self._early, []
        for packet in early:
            self._dispatch(packet, now)

    def step(self, wait: float = 0.0) -> bool:
        """Receive (blocking up to `wait` for the first packet), react, send; True when done.

        Raises AggregationTimeout once the deadline has passed without this member's sum.
        """
        data, handled = self._recv(wait), 0
        while data is not None:
            self._handle(data)
            handled += 1
            data = self._recv(0.0) if handled < MAX_DRAIN else None
        now = self.clock()
        self._send(now)
        run = self.active
        if run is None:
            return False
        if not run.done:
            check_deadline(self.group, self.policy, now - run.started, run.missing)
        return run.done

    def result(self) -> np.ndarray:
        """The int32 group sum of the last collective (exact, wrap-around)."""
        run = self.active
        if run is None or not run.done:
            raise AggregationError("no finished collective: step until `step` returns True")
        return from_chunks(run.sums(), self._length)

    def wait_hint(self) -> float:
        """How long a blocking driver may wait for a packet before something is due."""
        now, run = self.clock(), self.active
        wake = self.pacer.next_time(now) if self._sending() else float("inf")
        if run is not None and not run.done:
            wake = min(wake, run.watch.earliest)
        return min(MAX_WAIT_S, max(0.0, wake - now))

    def allreduce_sum(
        self, values: np.ndarray, scale: float, between: Callable[[], None] | None = None
    ) -> np.ndarray:
        """The group's int32 sum of `values` (int32, quantised at `scale`), exact or an error.

        `stats.elapsed_s` is the time to this member's sum; the call returns once the own
        frames (which peers may still need) are all out. `between`, when given, is called after
        every step (its owner's other business: earlier exchanges answering their NACKs).
        """
        if not (np.isfinite(scale) and scale > 0):
            raise QuantiseError(f"scale {scale} must be positive and finite")
        self.begin(values)
        start = self.clock()
        while not self.step(self.wait_hint()):
            if between is not None:
                between()
        self.stats.elapsed_s = self.clock() - start
        while self._sending():
            self.step(self.wait_hint())
        log.debug(
            "island %d: %d values summed in %.3f s, %s",
            self.group.me,
            values.size,
            self.stats.elapsed_s,
            self.stats,
        )
        return self.result()

    def serve(self, quiet_s: float | None = None) -> None:
        """Answer NACKs until none has come for `quiet_s` seconds (default: the policy's)."""
        quiet = self.policy.quiet_s if quiet_s is None else quiet_s
        self._last_nack = self.clock()
        while self.clock() - self._last_nack < quiet:
            self.step(min(self.wait_hint(), quiet))

    # --- packets in

    def _handle(self, data: bytes) -> None:
        try:
            packet = InnetPacket.decode(data, self.group.packet_format)
        except PacketError as exc:
            self.stats.malformed += 1
            log.debug("island %d: ignored a malformed packet: %s", self.group.me, exc)
            return
        g = self.group
        if (
            (packet.job, packet.round, packet.group) != g.key
            or packet.src == g.me
            or (packet.src not in g.members)
        ):
            self.stats.foreign += 1
            return
        self._dispatch(packet, self.clock())

    def _dispatch(self, packet: InnetPacket, now: float) -> None:
        run = next(
            (r for r in reversed(self.runs) if r.first <= packet.chunk < r.first + r.size), None
        )
        if packet.type == PacketType.NACK:  # for a chunk not begun: it comes with the collective
            self._last_nack = now
            answer = run.on_nack(packet, self.stats) if run is not None else None
            if answer is not None and answer[0] not in self._answering:
                self._answering.add(answer[0])
                self._answers.append(answer)
        elif packet.type not in self.accepts:
            self.stats.foreign += 1
        elif run is not None:
            run.on_data(packet, now, self.stats)
        elif packet.chunk >= self._next_chunk and len(self._early) < MAX_EARLY:
            self._early.append(packet)  # a peer began the next collective before this member
        else:
            self.stats.foreign += 1

    # --- packets out

    def _sending(self) -> bool:
        run = self.active
        return bool(self._answers or self._nacks) or (run is not None and run.has_fresh())

    def _send(self, now: float) -> None:
        """Answers, then due NACKs, then fresh frames, as the schedule allows."""
        pacer, run = self.pacer, self.active
        pacer.budget = pacer.burst
        if run is not None and not run.done:
            self._nacks.extend((run, keys) for keys in run.nack_groups(run.watch.due(now)))
        while self._answers and pacer.ready(now, control=True):
            name, (island, packet) = self._answers.popleft()
            self._answering.discard(name)
            self._emit(island, packet.encode())
            pacer.take(now, control=True)
            self.stats.recovers_sent += 1
            self.stats.retransmitted += 1
        while self._nacks and pacer.ready(now, control=True):
            nacking, keys = self._nacks.popleft()
            keys = tuple(key for key in keys if nacking.watch.nacked(key, now))
            if keys:  # else all it named came meanwhile
                island, packet = nacking.nack(keys)
                self._emit(island, packet.encode())
                pacer.take(now, control=True)
                self.stats.nacks_sent += 1
        while run is not None and run.has_fresh() and pacer.ready(now):
            island, packet = run.next_fresh()
            self._emit(island, packet.encode())
            pacer.take(now)
            self.stats.sent += 1
        if run is None or not run.has_fresh():
            pacer.resting = True


class _Gathered:
    """One direct or multicast collective: the own chunks out, the others' in, summed."""

    def __init__(
        self,
        group: GroupSpec,
        policy: SendPolicy,
        chunks: np.ndarray,
        first: int,
        now: float,
        multicast: bool,
    ) -> None:
        self.group, self.chunks, self.first, self.started = group, chunks, first, now
        self.size = n = int(chunks.shape[0])
        self.multicast = multicast
        self.others = group.others
        self.row = {m: r for r, m in enumerate(self.others)}
        turn = group.members.index(group.me) % max(1, len(self.others))  # spread the first frames
        self.dests = self.others[turn:] + self.others[:turn]
        self.got = np.zeros((len(self.others), n), dtype=bool)
        self.count = np.zeros(n, dtype=np.int64)
        self.total = chunks.copy()  # the own contribution, then the others' added (wrapping)
        self.complete = 0 if self.others else n
        self.frames = (n if multicast else n * len(self.others)) if self.others else 0
        self.cursor = 0  # own frames sent
        lengths = {m: (n,) for m in self.others}
        self.watch = LossWatch(
            policy, now, lengths, lambda m, _s, i: bool(self.got[self.row[m], i])
        )

    @property
    def done(self) -> bool:
        return self.complete == self.size

    def sums(self) -> np.ndarray:
        return self.total

    def has_fresh(self) -> bool:
        return self.cursor < self.frames

    def next_fresh(self) -> Outgoing:
        f, g = self.cursor, self.group
        self.cursor += 1
        if self.multicast:  # once, to the own edge: it replicates along the tree
            return g.me, make_packet(
                g, PacketType.CONTRIBUTION, Flag.WAN, self.first + f, 0, self.chunks[f]
            )
        i, d = divmod(f, len(self.dests))  # chunk by chunk, to every other member in turn
        return self.dests[d], make_packet(
            g, PacketType.CONTRIBUTION, Flag(0), self.first + i, 0, self.chunks[i]
        )

    def on_data(self, packet: InnetPacket, now: float, stats: AggregatorStats) -> None:
        i, r = packet.chunk - self.first, self.row[packet.src]
        if self.got[r, i]:
            stats.duplicates_ignored += 1
            return
        self.got[r, i] = True
        self.total[i] += packet.array()  # int32 arrays: wraps modulo 2**32, as the lanes do
        self.count[i] += 1
        if self.count[i] == len(self.others):
            self.complete += 1
            stats.results += 1
        self.watch.arrived(packet.src, 0, i, now)

    def on_nack(self, packet: InnetPacket, stats: AggregatorStats) -> Answer | None:
        g, c = self.group, packet.chunk
        i = c - self.first
        if self.multicast:  # answer if named, with the own contribution to every other member
            if not packet.bitmap >> g.me & 1 or i >= self.cursor:
                return None
            return ("recover", c), (
                g.me,
                make_packet(g, PacketType.RECOVER, Flag.WAN, c, 0, self.chunks[i]),
            )
        if i * len(self.dests) + self.dests.index(packet.src) >= self.cursor:
            return None  # not sent to it yet: it comes with the stream
        return (packet.src, c), (
            packet.src,
            make_packet(g, PacketType.CONTRIBUTION, Flag.RETRANSMIT, c, 0, self.chunks[i]),
        )

    def nack_groups(self, keys: list[Key]) -> list[tuple[Key, ...]]:
        if not self.multicast:
            return [(key,) for key in keys]
        by_chunk: dict[int, list[Key]] = {}  # one multicast NACK names every source missing
        for key in keys:
            by_chunk.setdefault(key[2], []).append(key)
        return [tuple(group) for group in by_chunk.values()]

    def nack(self, keys: tuple[Key, ...]) -> Outgoing:
        g, (src, _, i) = self.group, keys[0]
        if self.multicast:
            bitmap = sum(1 << key[0] for key in keys)
            return g.me, make_packet(g, PacketType.NACK, Flag.WAN, self.first + i, bitmap)
        return src, make_packet(g, PacketType.NACK, Flag(0), self.first + i)

    def missing(self) -> tuple[tuple[int, ...], tuple[int, ...], str]:
        short = np.flatnonzero(self.count < len(self.others))
        chunks = tuple(self.first + int(i) for i in short)
        members = tuple(m for m, row in zip(self.others, self.got, strict=True) if not row.all())
        text = (
            f"{len(chunks)} chunk(s) of {self.group.key} without every contribution "
            f"({describe_ranges(chunks)}); contributions missing from island(s) "
            f"{', '.join(map(str, members)) or 'none'} (check that those islands run this round)"
        )
        return chunks, members, text


class DirectExchange(HostCollective):
    """Network `plain`, collective `direct`: every member unicasts its chunks to every other."""

    def __init__(
        self,
        transport: UnicastTransport,
        group: GroupSpec,
        policy: SendPolicy,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        streams = len(group.members) - 1
        super().__init__(group, policy, clock, streams, transport.send_to, transport.recv)
        self.transport = transport

    def _start(self, chunks: np.ndarray, first: int, now: float) -> CollectiveRun:
        return _Gathered(self.group, self.policy, chunks, first, now, multicast=False)


class MulticastExchange(HostCollective):
    """Network `multicast`: every member sends its chunks once; the edges replicate them."""

    accepts = frozenset({PacketType.CONTRIBUTION, PacketType.RECOVER})

    def __init__(
        self,
        transport: Transport,
        group: GroupSpec,
        policy: SendPolicy,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        super().__init__(
            group, policy, clock, 1, lambda _own, data: transport.send(data), transport.recv
        )
        self.transport = transport  # every frame goes to the own edge

    def _start(self, chunks: np.ndarray, first: int, now: float) -> CollectiveRun:
        return _Gathered(self.group, self.policy, chunks, first, now, multicast=True)
