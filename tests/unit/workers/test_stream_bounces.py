"""A leader replays the contributions its edge bounced, to its edge only, after a growing wait.

`ChunkStream` is driven directly with a fake time: BOUNCEs are handed to it as the edge would
deliver them (docs/protocol.md, "Bounces").
"""

from __future__ import annotations

import numpy as np
import pytest

from innet.packetformat import PacketFormat
from workers.group import AggregatorStats, GroupSpec, SendPolicy
from workers.packets import Flag, InnetPacket, PacketType
from workers.stream import BOUNCE_WAIT_S, LOCAL_REPLAY, ChunkStream

PACKET_FORMAT = PacketFormat()
LANES, FRAME_BITS = PACKET_FORMAT.lanes, PACKET_FORMAT.frame_bits
GROUP = GroupSpec(job=1, round=0, group=0, me=0, members=(0, 1, 2), packet_format=PACKET_FORMAT)
FRAME_S = 0.001  # the paced schedule: a frame a millisecond
TIMEOUT_S = 0.2


def stream(paced: bool = True, n: int = 1) -> ChunkStream:
    policy = SendPolicy(
        window=n,
        rate_bps=FRAME_BITS / FRAME_S if paced else None,
        timeout_s=TIMEOUT_S,
        max_timeout_s=0.8,
        deadline_s=20.0,
    )
    chunks = np.arange(n * LANES, dtype=np.int32).reshape(n, LANES)
    return ChunkStream(GROUP, policy, chunks, 0, 0.0, AggregatorStats())


def bounce(src: int, chunk: int, value: int, flags: Flag = Flag.WAN | Flag.REMOTE) -> InnetPacket:
    g = GROUP
    return InnetPacket.of(
        PacketType.BOUNCE,
        flags,
        g.job,
        g.round,
        g.group,
        src,
        chunk,
        0,
        (value,) * LANES,
        g.packet_format,
    )


def replays(s: ChunkStream, now: float) -> list[InnetPacket]:
    return [p for p in s.pump(now) if p.flags == LOCAL_REPLAY]


def result(chunk: int) -> InnetPacket:
    g = GROUP
    return InnetPacket.of(
        PacketType.RESULT,
        Flag(0),
        g.job,
        g.round,
        g.group,
        0,
        chunk,
        g.bitmap,
        (7,) * LANES,
        g.packet_format,
    )


def test_a_bounced_contribution_goes_back_to_the_own_edge_a_frame_time_later() -> None:
    s = stream()
    s.pump(0.0)  # chunk 0 leaves
    s.on_bounce(bounce(2, 0, 42), now=0.0105)
    assert s.next_wakeup() == pytest.approx(0.0115)
    assert replays(s, 0.011) == []  # not before its wait
    (again,) = replays(s, 0.0115)
    assert (again.type, again.flags, again.src, again.chunk) == (
        PacketType.CONTRIBUTION,
        Flag.LOCAL | Flag.RETRANSMIT,
        2,
        0,
    )
    assert again.values == (42,) * LANES  # the refused contribution, as it came
    assert replays(s, 0.1) == []  # once
    assert s.stats.bounced == 1 and s.stats.sent == 1 and s.stats.retransmitted == 0


def test_a_contribution_bounced_again_waits_twice_as_long_up_to_the_timeout() -> None:
    s = stream(n=4)
    now = 0.0
    for k in range(10):  # 1, 2, 4, ... 128 ms, then the timeout's 200 ms
        wait = min(FRAME_S * 2**k, TIMEOUT_S)
        s.on_bounce(bounce(1, 2, 5), now)
        assert replays(s, now + wait - 1e-6) == [], k
        assert len(replays(s, now + wait)) == 1, k
        now += wait
    assert s.stats.bounced == 10


def test_the_own_contribution_bounces_and_is_replayed_under_the_own_source() -> None:
    s = stream()
    s.pump(0.0)
    s.on_bounce(bounce(0, 0, 9, Flag.LOCAL), now=0.002)
    (again,) = replays(s, 0.003)
    assert (again.src, again.chunk, again.flags) == (0, 0, Flag.LOCAL | Flag.RETRANSMIT)


def test_once_the_chunk_has_its_sum_its_bounces_are_forgotten() -> None:
    s = stream()
    s.pump(0.0)
    s.on_bounce(bounce(1, 0, 5), now=0.0001)
    s.on_result(result(0), now=0.0002)
    assert replays(s, 1.0) == []  # the waiting replay is dropped with the chunk
    s.on_bounce(bounce(2, 0, 5), now=1.0)  # a late one
    assert replays(s, 2.0) == [] and s.stats.duplicates_ignored == 1


def test_a_bounce_naming_an_island_outside_the_group_is_foreign() -> None:
    s = stream()
    s.on_bounce(bounce(5, 0, 1), now=0.0)
    assert replays(s, 1.0) == [] and s.stats.foreign == 1 and s.stats.bounced == 0


def test_an_unpaced_stream_waits_a_millisecond() -> None:
    s = stream(paced=False)
    s.pump(0.5)
    s.on_bounce(bounce(1, 0, 1), now=0.5)
    assert s.next_wakeup() == pytest.approx(0.5 + BOUNCE_WAIT_S)
