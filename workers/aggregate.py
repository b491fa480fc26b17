"""The aggregation client: a leader's allreduce over its island's edge switch, int32 and float.

`Aggregator` is one island's leader in one (job, round, group). It streams its contribution in
chunks of its group's packet format (32 int32 values, or 64, 128, 256) and collects the group's
sums, recovering loss end to end as docs/protocol.md says (the rules are in `workers.stream`), and
it answers the other members' NACKs with RECOVER copies of its own contribution for as long as it
runs.

It can be driven two ways: `allreduce_sum` blocks until the sum is in (polling the transport
with a deadline), or a caller steps it (`begin`, then `step` until it returns True), which lets
a test run several islands in one thread, deterministically, with a fake clock.

**Chunk numbering and the exponent vote.** Every call on one Aggregator continues the round's
chunk numbers: the first allreduce uses chunks 0..n-1, the next n.., so every member must make
the same calls with the same sizes. `group_sum` first allreduces the exponent vote as **chunk 0**
of the round (one chunk, aggregated like any other), then the update from chunk 1. A reserved
number such as 0xFFFFFFFF would not work: the switch refuses a contribution whose chunk is lower
than its slot's (a "late copy", same job/round/group), so the vote's cell would refuse every
data chunk mapped onto it for the rest of the round. A separate round id would need the
controller to install a second round. Chunk 0 keeps the window rule intact: the update starts
only once the vote is summed.

**After the sum.** A member that has its sum may still be asked for RECOVER copies by a member
that lost something. `serve` answers NACKs until none has come for `SendPolicy.quiet_s` (or the
stream's NACK horizon, if its measured timeouts make that longer);
`group_sum` does so before it returns. The controller's "round done" is the real end.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

import numpy as np

from workers.exceptions import (
    AggregationError,
    AggregationTimeout,
    PacketError,
    PolicyError,
    QuantiseError,
    ResultMismatch,
)
from workers.group import (
    AggregatorStats,
    GroupSpec,
    SendPolicy,
    check_deadline,
    contribution_chunks,
)
from workers.packets import Flag, InnetPacket, PacketType
from workers.quantise import (
    agreed_exponent,
    check_finite,
    dequantise,
    exponent_of,
    exponent_vote,
    from_chunks,
    quantise,
    scale_for,
)
from workers.stream import ChunkStream
from workers.transport import Transport

__all__ = [
    "AggregationError",
    "AggregationTimeout",
    "Aggregator",
    "AggregatorStats",
    "GroupSpec",
    "GroupSum",
    "PolicyError",
    "QuantiseError",
    "ResultMismatch",
    "SendPolicy",
    "group_sum",
]

log = logging.getLogger(__name__)

MAX_DRAIN = 4096  # packets handled per step before sending again
MAX_WAIT_S = 0.05  # longest blocking receive in the blocking drivers (re-checks deadlines)
VOTE_CHUNKS = 1  # the exponent vote: chunk 0 of the round


def sleep_until(t: float) -> None:
    """Sleep until Unix time t (a group's common start); the last 2 ms are spent polling, for a
    precise start."""
    while (left := t - time.time()) > 0:
        time.sleep(left - 0.002 if left > 0.003 else 0.0)


class Aggregator:
    """One island's leader in one group of one round."""

    def __init__(
        self,
        transport: Transport,
        group: GroupSpec,
        policy: SendPolicy,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.transport = transport
        self.group = group
        self.policy = policy
        self.clock = clock
        self.stats = AggregatorStats()
        self._streams: list[ChunkStream] = []
        self._length = 0
        self._next_chunk = 0
        self._last_nack = clock()

    # --- step-driven use

    @property
    def active(self) -> ChunkStream | None:
        return self._streams[-1] if self._streams else None

    @property
    def pacing_lag_s(self) -> float:
        """The most a paced send of the last allreduce left after its time (a busy CPU)."""
        stream = self.active
        return stream.pacing_lag_s if stream is not None else 0.0

    @property
    def done(self) -> bool:
        stream = self.active
        return stream is not None and stream.done

    def begin(self, values: np.ndarray) -> None:
        """Start streaming an int32 contribution (the next chunk numbers of the round)."""
        stream = self.active
        unfinished = stream.first if stream is not None and not stream.done else None
        chunks = contribution_chunks(values, self.group, self._next_chunk, unfinished)
        values = np.asarray(values)
        now = self.clock()
        self._streams.append(
            ChunkStream(self.group, self.policy, chunks, self._next_chunk, now, self.stats)
        )
        self._next_chunk += chunks.shape[0]
        self._length = values.size

    def step(self, wait: float = 0.0) -> bool:
        """Receive (blocking up to `wait` for the first packet), react, send; True when done.

        Raises AggregationTimeout once the allreduce's deadline has passed without its sum.
        """
        data = self.transport.recv(wait)
        handled = 0
        while data is not None:
            self._handle(data)
            handled += 1
            if handled >= MAX_DRAIN:
                break
            data = self.transport.recv(0.0)
        stream = self.active
        if stream is None:
            return False
        now = self.clock()
        for packet in stream.pump(now):
            self.transport.send(packet.encode())
        if not stream.done:
            check_deadline(self.group, self.policy, now - stream.started, stream.missing)
        return stream.done

    def result(self) -> np.ndarray:
        """The int32 group sum of the last allreduce (exact, wrap-around)."""
        stream = self.active
        if stream is None or not stream.done:
            raise AggregationError("no finished allreduce: step until `step` returns True")
        return from_chunks(stream.sums, self._length)

    def wait_hint(self) -> float:
        """How long a blocking driver may wait for a packet before something is due."""
        stream = self.active
        if stream is None or stream.done:
            return MAX_WAIT_S
        return min(MAX_WAIT_S, max(0.0, stream.next_wakeup() - self.clock()))

    # --- blocking use

    def allreduce_sum(self, values: np.ndarray, scale: float) -> np.ndarray:
        """The group's int32 sum of `values` (int32, quantised at `scale`), exact or an error.

        `scale` is the group's shared scale; the sum is at the same scale. It is only checked
        here (the caller dequantises): a non-positive or non-finite scale means a broken vote.
        """
        if not (np.isfinite(scale) and scale > 0):
            raise QuantiseError(f"scale {scale} must be positive and finite")
        self.begin(values)
        start = self.clock()
        while not self.step(self.wait_hint()):
            pass
        self.stats.elapsed_s = self.clock() - start
        log.debug(
            "island %d: %d values summed in %.3f s, %s",
            self.group.me,
            values.size,
            self.stats.elapsed_s,
            self.stats,
        )
        return self.result()

    def serve(self, quiet_s: float | None = None) -> None:
        """Answer NACKs (and keep recovering) until none has come for `quiet_s` seconds: by
        default the policy's, or the NACK horizon of the timeouts measured now if longer (a peer
        whose sums are as slow as ours NACKs no later than that)."""
        quiet = self.policy.quiet_s if quiet_s is None else quiet_s
        if quiet_s is None and self.active is not None:
            quiet = max(quiet, self.active.nack_horizon())
        self._last_nack = self.clock()
        while self.clock() - self._last_nack < quiet:
            self.step(min(MAX_WAIT_S, quiet))

    # --- packets in

    def _handle(self, data: bytes) -> None:
        try:
            packet = InnetPacket.decode(data, self.group.packet_format)
        except PacketError as exc:
            self.stats.malformed += 1
            log.debug("island %d: ignored a malformed packet: %s", self.group.me, exc)
            return
        if (packet.job, packet.round, packet.group) != self.group.key:
            self.stats.foreign += 1
            return
        if packet.type == PacketType.NACK:
            self._answer_nack(packet)
            return
        stream = self._stream_for(packet.chunk)
        if stream is None or packet.type == PacketType.CONTRIBUTION:
            self.stats.foreign += 1
        elif packet.type == PacketType.RESULT:
            stream.on_result(packet, self.clock())
        elif packet.type == PacketType.BOUNCE:
            stream.on_bounce(packet, self.clock())
        else:  # RECOVER
            for replay in stream.on_recover(packet, self.clock()):
                self.transport.send(replay.encode())

    def _stream_for(self, chunk: int) -> ChunkStream | None:
        for stream in reversed(self._streams):
            if stream.covers(chunk):
                return stream
        return None

    def _answer_nack(self, nack: InnetPacket) -> None:
        if nack.src == self.group.me or nack.src not in self.group.members:
            self.stats.foreign += 1
            return
        self._last_nack = self.clock()
        stream = self._stream_for(nack.chunk)
        own = stream.own(nack.chunk) if stream is not None else None
        if own is None:  # not sent yet: the NACKing member will get it with the stream
            return
        g = self.group
        recover = InnetPacket.of(
            PacketType.RECOVER,
            Flag.WAN,
            g.job,
            g.round,
            g.group,
            g.me,
            nack.chunk,
            0,
            own,
            g.packet_format,
        )
        self.transport.send(recover.encode())
        self.stats.recovers_sent += 1


class GroupSum:
    """The float API as a steppable session: exponent vote (chunk 0), then the update."""

    def __init__(self, aggregator: Aggregator, update: np.ndarray) -> None:
        x = np.asarray(update, dtype=np.float32)
        check_finite(x)  # before anything is sent
        self.aggregator = aggregator
        self.update = x
        self.exponent: int | None = None
        self.scale: float | None = None
        lanes = aggregator.group.packet_format.lanes
        aggregator.begin(exponent_vote(exponent_of(x, lanes), lanes))
        self._voting = True

    def step(self, wait: float = 0.0) -> bool:
        """One step of the vote or the sum; True once the group's sum is in."""
        agg = self.aggregator
        if not agg.step(wait):
            return False
        if not self._voting:
            return True
        self._voting = False
        self.exponent = agreed_exponent(agg.result())
        k = len(agg.group.members)
        self.scale = scale_for(self.exponent, k)
        agg.begin(quantise(self.update, self.scale, k))
        return False

    def int_sum(self) -> np.ndarray:
        """The group's exact int32 sum of the quantised updates (flat)."""
        if self._voting:
            raise AggregationError("the exponent vote is not finished")
        return self.aggregator.result()

    def result(self) -> np.ndarray:
        """The float32 sum, in the update's shape."""
        total = self.int_sum()
        if self.scale is None:
            raise AggregationError("no agreed scale: the exponent vote is not finished")
        return dequantise(total, self.scale).reshape(self.update.shape)


def group_sum(
    transport: Transport,
    group: GroupSpec,
    policy: SendPolicy,
    update: np.ndarray,
    clock: Callable[[], float] = time.monotonic,
) -> np.ndarray:
    """The float32 sum of the group's updates (any float array, or a CPU tensor).

    Agrees on the exponent, quantises, allreduces and dequantises; NaN or Inf raise
    QuantiseError before a packet is sent. Answers the other members' NACKs until it has been
    quiet for `policy.linger_s` before returning.
    """
    aggregator = Aggregator(transport, group, policy, clock)
    session = GroupSum(aggregator, update)
    start = clock()
    while not session.step(aggregator.wait_hint()):
        pass
    aggregator.stats.elapsed_s = clock() - start
    total = session.result()
    aggregator.serve()
    return total
