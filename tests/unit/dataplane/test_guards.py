"""What innet.p4 refuses to let wedge or poison a slot: stale claims, spoofed sources, lengths.

- A slot held incomplete past its group's bound (`member`'s stale_us) is claimed over by the
  next other chunk and counted `stale`: a stray costs a retransmission, never a permanent
  conflict.
- A `src` that enters where its island's traffic does not (the `port_sources` map) is dropped
  and counted `spoofed`, before any slot or tree is touched.
- An innet frame whose size, IPv4 total length or UDP length is not innet's is `malformed`.
"""

from __future__ import annotations

import numpy as np
import pytest

from innet.checksum import internet_checksum
from tests.unit.dataplane.harness import (
    BOUNCE,
    CONTRIBUTION,
    ISLANDS,
    LOCAL,
    NACK,
    NEXT_PORT,
    PACKET_FORMAT,
    PREV_PORT,
    RECOVER,
    REMOTE,
    RESULT,
    RETRANSMIT,
    WAN,
    A,
    B,
    C,
    FakeClock,
    Innet,
    N,
    Pipelines,
    Triangle,
    innet_frame,
)
from tests.unit.workers.network import FakeClock as WorkerClock
from tests.unit.workers.network import (
    HarnessNetwork,
    expected_int_sum,
    fast_policy,
    run_round_robin,
    updates,
)
from workers.aggregate import Aggregator, GroupSpec, GroupSum

JOB, ROUND, GROUP = 5, 20, 2
BOUND_S = 1.0
ALL = 0b111


def msg(src: int, chunk: int, value: int = 1, flags: int = WAN | LOCAL, rnd: int = ROUND) -> Innet:
    return Innet(CONTRIBUTION, flags, JOB, rnd, GROUP, src, chunk, (value,) * N)


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> FakeClock:
    return FakeClock().install(monkeypatch)


def net_with_rounds(slots: int, *rounds: int, bound_s: float = BOUND_S) -> Triangle:
    net = Triangle(slots)
    for rnd in rounds:
        net.install_group(JOB, rnd, GROUP, ISLANDS, stale_us=round(bound_s * 1e6))
    return net


def sums(net: Triangle, island: int) -> dict[tuple[int, int], tuple[int, int]]:
    """(round, chunk) -> (first value, bitmap) of the RESULTs island's host received."""
    got = {}
    for d in net.take(island):
        assert d.msg.type == RESULT
        got[d.msg.round, d.msg.chunk] = (d.msg.values[0], d.msg.bitmap)
    return got


# --- stale slots -----------------------------------------------------------------------------


def test_a_stray_for_a_future_round_wedges_its_slot_only_until_the_bound(clock: FakeClock) -> None:
    """Round ROUND + 1 is installed while ROUND runs; one early packet of it claims chunk 0's
    cell at every edge, and round ROUND's chunk 0 finds the cell busy. Before the bound that is
    a conflict (as it always was: for good); after it, the leaders' resends claim it over."""
    net = net_with_rounds(4, ROUND, ROUND + 1)
    net.contribute(B, msg(B, 0, value=99, rnd=ROUND + 1))  # the stray, along B's tree
    assert [net.stats(i)["contribution"] for i in ISLANDS] == [1, 1, 1]

    for i in ISLANDS:
        net.contribute(i, msg(i, 0, value=i + 1))
    assert [net.stats(i)["slot_conflict"] for i in ISLANDS] == [3, 3, 3]
    clock.advance(BOUND_S / 2)
    for i in ISLANDS:  # resends within the bound: still refused
        net.contribute(i, msg(i, 0, value=i + 1, flags=WAN | LOCAL | RETRANSMIT))
    assert [net.stats(i)["slot_conflict"] for i in ISLANDS] == [6, 6, 6]
    for i in ISLANDS:  # refused, never merged: each comes back to the edge's hosts
        assert sorted((d.msg.type, d.msg.round, d.msg.src) for d in net.take(i)) == sorted(
            (BOUNCE, ROUND, src) for src in ISLANDS for _ in range(2)
        )

    clock.advance(BOUND_S)  # the stray's claim is now older than its group's bound
    for i in ISLANDS:
        net.contribute(i, msg(i, 0, value=i + 1, flags=WAN | LOCAL | RETRANSMIT))
    for island in ISLANDS:
        assert sums(net, island) == {(ROUND, 0): (6, ALL)}
        stats = net.stats(island)
        assert stats["stale"] == 1  # the first resend to arrive claimed it over
        assert stats["slot_conflict"] == 6 and stats["completed"] == 1


def test_a_stray_for_a_later_chunk_of_the_same_round_is_claimed_over(clock: FakeClock) -> None:
    """A stray for chunk 8 (SLOTS 4: chunk 0's cell) made every later chunk 0 a "duplicate"
    of a slot that had moved past it, for good."""
    net = net_with_rounds(4, ROUND)
    net.contribute(A, msg(A, 8, value=50))
    for i in ISLANDS:
        net.contribute(i, msg(i, 0, value=i + 1))
    assert [net.stats(i)["duplicate"] for i in ISLANDS] == [3, 3, 3]
    clock.advance(BOUND_S * 1.01)
    for i in ISLANDS:
        net.contribute(i, msg(i, 0, value=i + 1, flags=WAN | LOCAL | RETRANSMIT))
    for island in ISLANDS:
        assert sums(net, island) == {(ROUND, 0): (6, ALL)}
        assert net.stats(island)["stale"] == 1
    # The genuine chunk 8 later finds chunk 0 complete and claims the cell as usual.
    for i in ISLANDS:
        net.contribute(i, msg(i, 8, value=10 * (i + 1)))
    assert all(sums(net, i) == {(ROUND, 8): (60, ALL)} for i in ISLANDS)
    assert [net.stats(i)["stale"] for i in ISLANDS] == [1, 1, 1]


def test_a_slot_within_its_bound_and_a_complete_one_are_never_claimed_over(
    clock: FakeClock,
) -> None:
    net = net_with_rounds(4, ROUND)
    for i in (A, B):
        net.contribute(i, msg(i, 0))  # chunk 0 waits for C at every edge
    clock.advance(BOUND_S * 0.9)
    net.contribute(A, msg(A, 8))  # another chunk, inside the bound: refused (bounced)
    assert [net.stats(i)["slot_conflict"] for i in ISLANDS] == [1, 1, 1]
    assert all([(d.msg.type, d.msg.chunk) for d in net.take(i)] == [(BOUNCE, 8)] for i in ISLANDS)
    clock.advance(BOUND_S)
    net.contribute(C, msg(C, 0))  # the late member's own chunk still merges: same tag
    assert all(sums(net, i) == {(ROUND, 0): (3, ALL)} for i in ISLANDS)
    clock.advance(BOUND_S * 10)
    net.contribute(B, msg(B, 0, flags=WAN | LOCAL | RETRANSMIT))  # complete: the result again
    (again,) = net.take(B)
    assert again.msg.flags == RETRANSMIT and again.msg.values[0] == 3
    assert [net.stats(i)["stale"] for i in ISLANDS] == [0, 0, 0]


def test_the_bound_is_the_claiming_groups(clock: FakeClock) -> None:
    """A slot's deadline is set when it is claimed, from the claimer's `member` entry."""
    net = Triangle(4)
    net.install_group(JOB, ROUND, GROUP, ISLANDS, stale_us=10_000_000)  # 10 s
    net.install_group(JOB, ROUND + 1, GROUP, ISLANDS, stale_us=100_000)  # 0.1 s
    for i in (A, B):
        net.contribute(i, msg(i, 0))  # round ROUND claims chunk 0's cell, waits for C
    clock.advance(1.0)
    net.contribute(A, msg(A, 0, rnd=ROUND + 1))  # 1 s < 10 s: refused
    assert net.stats(A)["slot_conflict"] == 1 and net.stats(A)["stale"] == 0
    clock.advance(10.0)
    net.contribute(A, msg(A, 0, rnd=ROUND + 1))
    assert net.stats(A)["stale"] == 1
    clock.advance(0.2)  # round ROUND + 1's claim, now 0.2 s old, is past its own 0.1 s
    net.contribute(A, msg(A, 0, flags=WAN | LOCAL | RETRANSMIT))
    assert net.stats(A)["stale"] == 2


def test_a_partly_merged_slot_claimed_over_is_recovered_by_nack_and_recover(
    clock: FakeClock,
) -> None:
    """A's slot for chunk 0 holds A and B, C's copy was lost, and a stray claims the slot over
    after the bound. A's leader gets its exact sum from the RECOVERs (docs/protocol.md, "Loss
    recovery"), and the cell serves the next chunk after another bound."""
    slots = 2
    rng = np.random.default_rng(14)
    q = rng.integers(-(2**28), 2**28, size=(3, N), dtype=np.int32)
    net = net_with_rounds(slots, ROUND, ROUND + 1)

    def values(i: int) -> tuple[int, ...]:
        return tuple(int(v) for v in q[i])

    def contribution(src: int, chunk: int, flags: int = WAN | LOCAL, rnd: int = ROUND) -> Innet:
        return Innet(CONTRIBUTION, flags, JOB, rnd, GROUP, src, chunk, values(src))

    net.contribute(A, contribution(A, 0))
    net.contribute(B, contribution(B, 0))
    net.contribute(C, contribution(C, 0), lose=lambda hop: hop.to == A)
    assert net.take(A) == [] and len(net.take(B)) == len(net.take(C)) == 1

    clock.advance(2 * BOUND_S)
    net.contribute(B, contribution(B, 0, rnd=ROUND + 1))  # the stray; only A's slot was busy
    assert [net.stats(i)["stale"] for i in ISLANDS] == [1, 0, 0]

    # A's leader: its resend is refused now, at every edge (the stray's claim is fresh: at B
    # and C it took the complete slot), and bounced; so it NACKs ...
    net.contribute(A, contribution(A, 0, WAN | LOCAL | RETRANSMIT))
    assert [(d.msg.type, d.msg.src) for i in ISLANDS for d in net.take(i)] == [(BOUNCE, A)] * 3
    assert net.stats(A)["slot_conflict"] == 1
    net.contribute(A, Innet(NACK, WAN, JOB, ROUND, GROUP, A, 0))
    assert [d.msg.type for i in (B, C) for d in net.take(i)] == [NACK, NACK]
    # ... B and C answer, and A's hosts add the RECOVERs to their own contribution.
    for i in (B, C):
        net.contribute(i, Innet(RECOVER, WAN, JOB, ROUND, GROUP, i, 0, values(i)))
    recovered = net.take(A)
    assert sorted((d.msg.type, d.msg.src) for d in recovered) == [(RECOVER, B), (RECOVER, C)]
    assert [len(net.take(i)) for i in (B, C)] == [1, 1]  # each sees the other's RECOVER
    software = q[A].astype(np.int64) + sum(np.array(d.msg.values) for d in recovered)
    assert np.array_equal(software.astype(np.int32), q.sum(axis=0))
    # Healing (own contribution first, then the recovered ones) meets the stray's claim: refused.
    for src in (A, B, C):
        net.contribute(A, contribution(src, 0, LOCAL | RETRANSMIT))
    assert [(d.msg.type, d.msg.src) for d in net.take(A)] == [(BOUNCE, A), (BOUNCE, B), (BOUNCE, C)]
    assert net.stats(A)["slot_conflict"] == 4

    # The next use of the cell (chunk 0 + 2 * SLOTS) after the stray's bound claims it over.
    clock.advance(2 * BOUND_S)
    for i in ISLANDS:
        net.contribute(i, contribution(i, 2 * slots))
    for island in ISLANDS:
        (d,) = net.take(island)
        assert d.msg.chunk == 2 * slots and d.msg.values == tuple(q.sum(axis=0))
    assert [net.stats(i)["stale"] for i in ISLANDS] == [2, 1, 1]


# --- spoofed sources -------------------------------------------------------------------------


def test_a_host_contributing_as_another_island_is_dropped_and_counted() -> None:
    net = net_with_rounds(4, ROUND)
    net.contribute(A, msg(B, 0, value=1000))  # A's host claims to be B
    net.contribute(A, Innet(NACK, WAN, JOB, ROUND, GROUP, C, 0))
    net.contribute(A, Innet(RECOVER, WAN, JOB, ROUND, GROUP, C, 0, (7,) * N))
    net.contribute(A, msg(B, 1, flags=WAN | RETRANSMIT))  # as a relayed copy would look
    assert net.stats(A)["spoofed"] == 4
    assert net.stats(B) == net.stats(C) == dict.fromkeys(net.stats(B), 0)  # nothing left A
    for island in ISLANDS:
        assert not any(net.register(island, "slot_seen"))
        assert net.take(island) == []
    for i in ISLANDS:  # the slot was untouched: the real chunk 0 sums without the 1000
        net.contribute(i, msg(i, 0, value=i + 1))
    assert all(sums(net, i) == {(ROUND, 0): (6, ALL)} for i in ISLANDS)


def test_a_stream_entering_on_a_port_its_tree_does_not_use_is_dropped() -> None:
    net = net_with_rounds(4, ROUND)
    # At A, B's stream comes on the port toward B (NEXT_PORT); C's on PREV_PORT.
    assert net.edges[A].pipe.process(PREV_PORT, innet_frame(msg(B, 0), B)) == []
    assert net.edges[A].pipe.process(NEXT_PORT, innet_frame(msg(A, 0), A)) == []  # own, from WAN
    assert net.stats(A)["spoofed"] == 2
    assert not any(net.register(A, "slot_seen"))
    assert net.edges[A].pipe.process(NEXT_PORT, innet_frame(msg(B, 0), B)) == []  # merged
    assert net.stats(A)["contribution"] == 1


def test_every_path_of_a_leaders_own_stream_passes_the_source_check() -> None:
    """Split sends (WAN|REMOTE, then the just-in-time LOCAL copy), resends, NACK and RECOVER
    all come from the island's own host under its own src."""
    net = net_with_rounds(4, ROUND)
    for i in ISLANDS:
        net.contribute(i, msg(i, 0, value=i + 1, flags=WAN | REMOTE))
    assert [net.stats(i)["contribution"] for i in ISLANDS] == [2, 2, 2]  # the others' copies
    for i in ISLANDS:
        net.contribute(i, msg(i, 0, value=i + 1, flags=LOCAL))
    assert all(sums(net, i) == {(ROUND, 0): (6, ALL)} for i in ISLANDS)
    net.contribute(A, msg(A, 0, value=1, flags=WAN | LOCAL | RETRANSMIT))
    net.contribute(A, Innet(NACK, WAN, JOB, ROUND, GROUP, A, 1))
    net.contribute(B, Innet(RECOVER, WAN, JOB, ROUND, GROUP, B, 1, (2,) * N))
    assert [net.stats(i)["spoofed"] for i in ISLANDS] == [0, 0, 0]
    assert [net.stats(i)["nack_or_recover"] for i in ISLANDS] == [2, 2, 2]


def test_a_leader_may_replay_other_members_to_its_own_edge_only() -> None:
    """Healing replays another member's contribution from the own host, without WAN: merged.
    With WAN (it would leave the island) or from a relay's host, it is spoofed."""
    net = net_with_rounds(4, ROUND)
    net.contribute(A, msg(A, 0, value=1))
    net.contribute(A, msg(B, 0, value=2, flags=LOCAL | RETRANSMIT))
    net.contribute(A, msg(C, 0, value=3, flags=LOCAL | RETRANSMIT))
    assert sums(net, A) == {(ROUND, 0): (6, ALL)}
    net.contribute(A, msg(B, 1, flags=WAN | LOCAL | RETRANSMIT))
    assert net.stats(A)["spoofed"] == 1
    assert net.stats(B)["contribution"] == net.stats(C)["contribution"] == 1  # A's own only

    relay = Triangle(4)
    relay.install_group(JOB, ROUND, GROUP, ISLANDS, merge=False)
    relay.contribute(A, msg(B, 0, flags=LOCAL | RETRANSMIT))
    assert relay.stats(A)["spoofed"] == 1 and relay.take(A) == []


# --- lengths ---------------------------------------------------------------------------------


def with_lengths(frame: bytes, ipv4: int | None = None, udp: int | None = None) -> bytes:
    out = bytearray(frame)
    if ipv4 is not None:
        out[16:18] = ipv4.to_bytes(2, "big")
        out[24:26] = b"\0\0"
        out[24:26] = internet_checksum(bytes(out[14:34])).to_bytes(2, "big")
    if udp is not None:
        out[38:40] = udp.to_bytes(2, "big")
    return bytes(out)


def test_frames_whose_lengths_disagree_with_the_frame_are_malformed_never_merged() -> None:
    net = net_with_rounds(4, ROUND)
    good = innet_frame(msg(A, 0, value=1000), A)
    assert len(good) == 186 and good[16:18] == (172).to_bytes(2, "big")
    bad = [
        with_lengths(good, ipv4=180),  # the IPv4 length claims more than the frame holds
        with_lengths(good, ipv4=100),  # ... or less
        with_lengths(good, udp=160),
        with_lengths(good, udp=8),
        good + bytes(4),  # four bytes beyond innet's size, the lengths unchanged
        with_lengths(good + bytes(4), ipv4=176, udp=156),  # the same, lengths agreeing
    ]
    for frame in bad:
        net.send(A, frame)
    assert net.stats(A)["malformed"] == len(bad)
    assert net.stats(A)["contribution"] == 0 and not any(net.register(A, "slot_seen"))
    assert net.stats(B) == net.stats(C) == dict.fromkeys(net.stats(B), 0)
    for i in ISLANDS:
        net.contribute(i, msg(i, 0, value=i + 1))
    assert all(sums(net, i) == {(ROUND, 0): (6, ALL)} for i in ISLANDS)


def test_workers_sum_exactly_through_a_stray_that_wedged_a_slot(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The real aggregation client on the real program: a stray of the next round holds chunk
    0's cell at every edge when the round starts. The leaders' resends, NACKs and RECOVERs
    carry them past it; once its bound has passed, the cell serves again."""
    clock = WorkerClock(start=1.0)
    Pipelines.run_on(monkeypatch, lambda: round(clock.now * 1e9))
    slots = 4
    net = HarnessNetwork(slots, JOB, ROUND, GROUP)
    # edges that follow `clock`; the bound is ten first timeouts of the policy below
    net.triangle = net_with_rounds(slots, ROUND, ROUND + 1, bound_s=0.05)
    net.triangle.contribute(B, msg(B, 0, rnd=ROUND + 1))  # the stray
    assert [net.stats(i)["contribution"] for i in ISLANDS] == [1, 1, 1]

    ups = updates(32 * 40, seed=5)
    policy = fast_policy(window=slots)
    specs = {i: GroupSpec(JOB, ROUND, GROUP, i, ISLANDS, PACKET_FORMAT) for i in ISLANDS}
    aggregators = {i: Aggregator(net.transport(i), specs[i], policy, clock) for i in ISLANDS}
    sessions = {i: GroupSum(aggregators[i], ups[i]) for i in ISLANDS}
    run = run_round_robin(sessions, clock)
    assert run.errors == {}
    expected, _ = expected_int_sum(ups)
    for i in ISLANDS:
        assert np.array_equal(sessions[i].int_sum(), expected), f"island {i}"
        edge = net.stats(i)
        assert edge["slot_conflict"] > 0  # the stray cost retransmissions ...
        assert edge["stale"] >= 1  # ... and was claimed over, not kept for good
    assert any(aggregators[i].stats.retransmitted > 0 for i in ISLANDS)
