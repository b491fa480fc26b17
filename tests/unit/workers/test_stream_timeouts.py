"""A leader's timeouts follow the network it measures, and its resends keep to its schedule.

`ChunkStream` is driven here directly, with a fake time and a scripted network: which RESULTs
come back, and when. The harness network answers within one tick, which never shows these.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from innet.packetformat import PacketFormat
from workers.group import AggregatorStats, GroupSpec, SendPolicy
from workers.packets import Flag, InnetPacket, PacketType
from workers.stream import ChunkStream

PACKET_FORMAT = PacketFormat()
LANES, FRAME_BITS = PACKET_FORMAT.lanes, PACKET_FORMAT.frame_bits
GROUP = GroupSpec(job=1, round=0, group=0, me=0, members=(0, 1), packet_format=PACKET_FORMAT)
FRAMES_PER_S = 1000  # the leader's paced rate: one frame a millisecond
STEP_S = 0.00025


def _policy(window: int) -> SendPolicy:
    return SendPolicy(
        window=window,
        rate_bps=FRAME_BITS * FRAMES_PER_S,
        timeout_s=0.2,
        max_timeout_s=0.8,
        deadline_s=20.0,
    )


def _result(chunk: int) -> InnetPacket:
    return InnetPacket.of(
        PacketType.RESULT,
        Flag(0),
        GROUP.job,
        GROUP.round,
        GROUP.group,
        0,
        chunk,
        GROUP.bitmap,
        (chunk,) * LANES,
        GROUP.packet_format,
    )


def _play(
    n: int,
    window: int,
    answer: Callable[[int, float], float | None],
    until: float,
    stall: tuple[float, float] = (0.0, 0.0),
    resend_answered_after: float | None = None,
) -> tuple[ChunkStream, list[tuple[float, InnetPacket]]]:
    """Run one stream of n chunks; `answer(chunk, first_sent)` is when its RESULT arrives (None:
    lost), and a resend's comes `resend_answered_after` it (None: lost too). During `stall` the
    leader runs nothing (a busy host). Returns the stream and every packet sent, with its time."""
    chunks = np.zeros((n, LANES), dtype=np.int32)
    stream = ChunkStream(GROUP, _policy(window), chunks, 0, 0.0, AggregatorStats())
    sent: list[tuple[float, InnetPacket]] = []
    first_sent: dict[int, float] = {}
    arrivals: list[tuple[float, int]] = []
    now = 0.0
    while now < until and not stream.done:
        if stall[0] <= now < stall[1]:
            now += STEP_S
            continue
        for at, chunk in [a for a in arrivals if a[0] <= now]:
            arrivals.remove((at, chunk))
            stream.on_result(_result(chunk), now)
        for packet in stream.pump(now):
            sent.append((now, packet))
            if packet.type != PacketType.CONTRIBUTION:
                continue
            if packet.chunk not in first_sent:
                first_sent[packet.chunk] = now
                at = answer(packet.chunk, now)
            elif resend_answered_after is not None:
                at = now + resend_answered_after
            else:
                at = None
            if at is not None:
                arrivals.append((at, packet.chunk))
        now += STEP_S
    return stream, sent


def test_switches_that_answer_late_are_waited_for_not_flooded() -> None:
    """The first sum comes 1 s after the first chunk, 5x the policy's timeout (switches behind
    on a busy CPU), then 100 a second: every chunk is summed with a handful of resends, no NACK."""
    stream, _sent = _play(100, 100, lambda chunk, _t: 1.0 + chunk / 100, until=10.0)
    assert stream.done
    assert stream.stats.retransmitted <= 5 and stream.stats.nacks_sent == 0, stream.stats
    assert stream.latency.srtt is not None and stream.latency.srtt > 0.5


def test_a_lost_chunk_is_resent_after_the_latency_measured_not_the_policy_timeout() -> None:
    """Sums take 0.5 s; chunk 10's never comes: its first resend waits about twice 0.5 s."""
    lost = 10
    stream, sent = _play(20, 10, lambda c, t: None if c == lost else t + 0.5, until=5.0)
    times = [t for t, p in sent if p.chunk == lost and p.type == PacketType.CONTRIBUTION]
    first, resend = times[0], times[1]
    assert 0.9 <= resend - first <= 1.6, (first, resend)
    assert stream.stats.retransmitted >= 1


def test_resends_keep_to_the_paced_schedule() -> None:
    """Every odd chunk's first copy is lost, and the leader stalls 0.35 s while many of them time
    out: their resends still take frame times of the same schedule as the fresh chunks, never
    more than one frame a millisecond in all, instead of leaving in one burst."""
    lossy = _play(
        200,
        200,
        lambda c, t: None if c % 2 else t + 0.05,
        3.0,
        stall=(0.25, 0.6),
        resend_answered_after=0.05,
    )
    stream, sent = lossy
    assert stream.done
    wan = [t for t, p in sent if p.flags & Flag.WAN]
    assert stream.stats.retransmitted == 100 and stream.stats.nacks_sent == 0, stream.stats
    gaps = np.diff(wan)
    assert gaps.min() >= 1 / FRAMES_PER_S - STEP_S, gaps.min()


def test_a_lost_chunk_is_nacked_in_time_however_late_the_sums_came() -> None:
    """Switches fall further and further behind: chunk c's sum takes 0.1 + 0.05 c seconds, up to
    10 s against a 20 s deadline, and the estimator follows. Chunk 150's contribution and its
    resends are lost for good: on the latency measured its first resend would wait some 15 s;
    the timeouts stop at an eighth of the deadline, so its NACK leaves by five eighths of it,
    while a RECOVER can still come."""
    lost, deadline = 150, _policy(1).deadline_s
    stream, sent = _play(
        200, 200, lambda c, t: None if c == lost else t + 0.1 + 0.05 * c, until=deadline
    )
    copies = [(t, p.type) for t, p in sent if p.chunk == lost]
    first = copies[0][0]
    nacks = [t for t, kind in copies if kind == PacketType.NACK]
    # five eighths of the deadline, and the waits for a frame time of the schedule (1 ms each)
    assert nacks and nacks[0] - first <= deadline * 5 / 8 + 0.1, copies
    assert [kind for _t, kind in copies[:3]] == [PacketType.CONTRIBUTION] * 3  # two resends first
    assert stream.latency.srtt is not None and stream.latency.srtt > 1.0  # slow sums, learned
