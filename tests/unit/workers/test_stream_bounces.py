"""A leader replays the contributions its edge bounced, to its edge only, after a growing wait.

`ChunkStream` is driven directly with a fake time: BOUNCEs are handed to it as the edge would
deliver them (docs/protocol.md, "Bounces").
"""

from __future__ import annotations

import numpy as np
import pytest

from innet.packetformat import PacketFormat
from workers.exceptions import PolicyError
from workers.group import AggregatorStats, GroupSpec, SendPolicy
from workers.packets import Flag, InnetPacket, PacketType
from workers.stream import BOUNCE_WAIT_S, LOCAL_REPLAY, ChunkStream

PACKET_FORMAT = PacketFormat()
LANES, FRAME_BITS = PACKET_FORMAT.lanes, PACKET_FORMAT.frame_bits
GROUP = GroupSpec(job=1, round=0, group=0, me=0, members=(0, 1, 2), packet_format=PACKET_FORMAT)
FRAME_S = 0.001  # the paced schedule: a frame a millisecond
TIMEOUT_S = 0.2


def stream(paced: bool = True, n: int = 1, cells: int | None = None) -> ChunkStream:
    policy = SendPolicy(
        window=n,
        rate_bps=FRAME_BITS / FRAME_S if paced else None,
        timeout_s=TIMEOUT_S,
        max_timeout_s=0.8,
        deadline_s=20.0,
        cells=cells,
    )
    chunks = np.arange(n * LANES, dtype=np.int32).reshape(n, LANES)
    return ChunkStream(GROUP, policy, chunks, 0, 0.0, AggregatorStats())


def packet(
    kind: PacketType, flags: Flag, src: int, chunk: int, value: int, bitmap: int = 0
) -> InnetPacket:
    """A packet of the test group to hand to the stream, every lane `value`."""
    g = GROUP
    lanes = (value,) * LANES
    return InnetPacket.of(
        kind, flags, g.job, g.round, g.group, src, chunk, bitmap, lanes, g.packet_format
    )


def bounce(src: int, chunk: int, value: int, flags: Flag = Flag.WAN | Flag.REMOTE) -> InnetPacket:
    return packet(PacketType.BOUNCE, flags, src, chunk, value)


def replays(s: ChunkStream, now: float) -> list[InnetPacket]:
    return [p for p in s.pump(now) if p.flags == LOCAL_REPLAY]


def result(chunk: int, value: int = 7) -> InnetPacket:
    return packet(PacketType.RESULT, Flag(0), 0, chunk, value, GROUP.bitmap)


def recover(src: int, chunk: int, value: int) -> InnetPacket:
    return packet(PacketType.RECOVER, Flag.WAN, src, chunk, value)


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


# --- with the edge's cells: a RESULT says which cell completed (docs/protocol.md, "Bounces")


def sent(n: int, cells: int, summed: tuple[int, ...] = ()) -> ChunkStream:
    """A paced stream of n chunks, all sent, the `summed` ones with their sums."""
    s = stream(n=n, cells=cells)
    s.pump(n * FRAME_S)
    assert s.next == n
    for chunk in summed:
        s.on_result(result(chunk), now=n * FRAME_S)
    return s


def test_a_result_replays_the_lowest_chunk_held_for_its_cell_at_once() -> None:
    s = sent(n=24, cells=8)
    now = 0.03
    for chunk in (17, 9, 10):  # 9 and 17 wait for cell 1, 10 for cell 2
        s.on_bounce(bounce(1, chunk, chunk), now)
        s.on_bounce(bounce(2, chunk, chunk), now)
    s.on_result(result(1), now=0.0301)  # cell 1 completed: chunk 9 goes, before its frame time
    again = replays(s, 0.0301)
    assert sorted((p.chunk, p.src) for p in again) == [(9, 1), (9, 2)]
    assert replays(s, 0.0305) == []  # 10 and 17 keep their waits
    assert sorted(p.chunk for p in replays(s, now + FRAME_S)) == [10, 10, 17, 17]


def test_without_cells_a_result_replays_nothing_early() -> None:
    s = stream(n=24)
    s.pump(24 * FRAME_S)
    s.on_bounce(bounce(1, 9, 9), now=0.03)
    s.on_result(result(1), now=0.0301)
    assert replays(s, 0.0301) == []
    assert [p.chunk for p in replays(s, 0.03 + FRAME_S)] == [9]


def test_an_overtaken_chunk_is_summed_from_its_bounces_without_the_edge() -> None:
    """Chunk 17 took cell 1 first: the edge now refuses chunk 9 as a late copy (it never
    claims a cell back from a later chunk). The leader holds both others' contributions to 9
    from their bounces, so 9's sum is own + theirs, with no NACK and nothing replayed."""
    s = sent(n=24, cells=8, summed=tuple(range(9)))
    s.on_bounce(bounce(1, 9, 100), now=0.03)
    s.on_bounce(bounce(2, 9, -1000), now=0.03)
    s.on_result(result(17), now=0.031)
    own = s.chunks[9].astype(np.int64)
    assert s.done_mask[9] and np.array_equal(s.sums[9], (own + 100 - 1000).astype(np.int32))
    assert s.stats.overtaken == 1 and s.stats.recovered_chunks == 1
    out = s.pump(0.5)  # well past every timeout of chunk 9
    assert [p for p in out if p.chunk == 9] == []
    assert s.stats.nacks_sent == 0 and s.stats.heals_sent == 0


def test_an_overtaken_chunk_missing_a_contribution_is_nacked_at_once() -> None:
    s = sent(n=24, cells=8, summed=tuple(range(9)))
    s.on_bounce(bounce(1, 9, 100), now=0.03)  # member 2's never bounced: it was refused
    s.on_result(result(17), now=0.031)
    (nack,) = [p for p in s.pump(0.031) if p.chunk == 9]  # no resend first, no timeout
    assert (nack.type, nack.src, s.stats.retransmitted) == (PacketType.NACK, 0, 0)
    assert s.on_recover(recover(2, 9, 5), now=0.05) == []  # no heal: the cell moved on
    own = s.chunks[9].astype(np.int64)
    assert s.done_mask[9] and np.array_equal(s.sums[9], (own + 100 + 5).astype(np.int32))
    assert s.stats.heals_sent == 0 and s.stats.overtaken == 1


def test_a_result_of_another_cell_overtakes_nothing() -> None:
    s = sent(n=24, cells=8, summed=(*range(9), 10))
    s.on_bounce(bounce(1, 9, 100), now=0.03)
    s.on_bounce(bounce(2, 9, 100), now=0.03)
    s.on_result(result(18), now=0.031)  # cell 2 (its chunks 2 and 10 have their sums)
    s.on_result(result(1), now=0.031)  # cell 1 again, below chunk 9
    assert not s.done_mask[9] and s.stats.overtaken == 0


def test_a_policy_refuses_a_cell_count_below_one() -> None:
    with pytest.raises(PolicyError, match="cells 0"):
        SendPolicy(window=1, timeout_s=0.1, max_timeout_s=0.1, deadline_s=1.0, cells=0)
