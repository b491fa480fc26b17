"""innet.p4 aggregation on three islands: exact sums, duplicates, slot conflicts, loss recovery."""

from __future__ import annotations

import numpy as np

from tests.unit.dataplane.harness import (
    BOUNCE,
    CONTRIBUTION,
    ISLANDS,
    LOCAL,
    NACK,
    RECOVER,
    RESULT,
    RETRANSMIT,
    WAN,
    A,
    B,
    C,
    Delivered,
    Hop,
    Innet,
    N,
    Triangle,
)

JOB, ROUND, GROUP = 7, 1, 3
ALL = 0b111


def quantise(updates: np.ndarray) -> tuple[np.ndarray, float]:
    """int32 values with one scale for all k contributions, so that their sum cannot overflow."""
    k = updates.shape[0]
    scale = ((2**31 - 1) // k) / float(np.max(np.abs(updates)))
    return np.rint(updates.astype(np.float64) * scale).astype(np.int32), scale


def contribution(src: int, chunk: int, values: np.ndarray, flags: int = WAN | LOCAL) -> Innet:
    return Innet(CONTRIBUTION, flags, JOB, ROUND, GROUP, src, chunk, tuple(int(v) for v in values))


def results(delivered: list[Delivered]) -> dict[int, np.ndarray]:
    """chunk -> int32 sums of the RESULTs received, each chunk at most once."""
    out: dict[int, np.ndarray] = {}
    for d in delivered:
        assert d.msg.type == RESULT
        assert d.msg.chunk not in out, f"chunk {d.msg.chunk} delivered twice"
        out[d.msg.chunk] = np.array(d.msg.values, dtype=np.int32)
    return out


def group_net(slots: int) -> Triangle:
    net = Triangle(slots)
    net.install_group(JOB, ROUND, GROUP, ISLANDS)
    return net


def test_three_islands_sum_100k_floats_exactly() -> None:
    rng = np.random.default_rng(2024)
    updates = rng.standard_normal((3, 100_000)).astype(np.float32)
    q, scale = quantise(updates)
    chunks = q.reshape(3, -1, N)
    n_chunks = chunks.shape[1]
    assert n_chunks == 3125
    net = group_net(4096)  # no slot is reused: every chunk may be in flight at once

    for c in range(n_chunks):  # every leader paced alike: chunk c from all, then c + 1
        for i in ISLANDS:
            net.contribute(i, contribution(i, c, chunks[i, c]))

    expected = q.astype(np.int64).sum(axis=0)
    assert np.abs(expected).max() <= 2**31 - 1  # the scale leaves no room for overflow
    for island in ISLANDS:
        delivered = net.take(island)
        got = results(delivered)
        assert sorted(got) == list(range(n_chunks))
        assert all(d.msg.bitmap == ALL and d.ip_checksum_ok for d in delivered)
        sums = np.concatenate([got[c] for c in range(n_chunks)])
        assert np.array_equal(sums, expected.astype(np.int32))  # int32, bit for bit
        dequantised = sums.astype(np.float64) / scale
        assert np.array_equal(dequantised, expected.astype(np.float64) / scale)
        assert np.allclose(dequantised, updates.astype(np.float64).sum(axis=0), atol=3 / scale)
        stats = net.stats(island)
        assert stats["contribution"] == 3 * n_chunks
        assert stats["completed"] == n_chunks
        assert stats["duplicate"] == stats["slot_conflict"] == stats["dropped_other"] == 0


def test_results_are_addressed_to_the_host() -> None:
    net = group_net(16)
    for i in ISLANDS:
        net.contribute(i, contribution(i, 0, np.full(N, i + 1)))
    for island in ISLANDS:
        (d,) = net.take(island)
        assert d.eth_dst == bytes((2, 0, 0, 0, island, 1))
        assert d.ip_dst == bytes((10, 0, island, 1))
        # never the host's own address (which the completing contribution may carry): the host
        # would drop it as a martian
        assert d.ip_src == bytes((10, 0, island, 254))
        assert d.ip_checksum_ok and d.udp_checksum == 0
        assert d.msg.values == (6,) * N and d.msg.bitmap == ALL and d.msg.flags == 0


def test_int32_sums_wrap_around_as_two_complement() -> None:
    net = group_net(16)
    values = [np.full(N, 2**31 - 1), np.full(N, 1), np.full(N, -(2**31))]
    for i in ISLANDS:
        net.contribute(i, contribution(i, 0, values[i]))
    (d,) = net.take(A)
    assert d.msg.values == (0,) * N  # (2**31 - 1) + 1 wraps to -(2**31); adding -(2**31) gives 0


def test_duplicates_count_once_and_a_leader_resend_gets_the_result_again() -> None:
    rng = np.random.default_rng(1)
    q = rng.integers(-(2**20), 2**20, size=(3, N), dtype=np.int32)
    expected = q.sum(axis=0)
    net = group_net(16)
    net.contribute(A, contribution(A, 0, q[A]))
    net.contribute(A, contribution(A, 0, q[A]))  # the same contribution twice
    net.contribute(B, contribution(B, 0, q[B]))
    net.contribute(B, contribution(B, 0, q[B], WAN | LOCAL | RETRANSMIT))  # a resend, too early
    net.contribute(C, contribution(C, 0, q[C]))

    for island in ISLANDS:
        (d,) = net.take(island)
        assert d.msg.bitmap == ALL and d.msg.flags == 0
        assert np.array_equal(np.array(d.msg.values, dtype=np.int32), expected)
        assert net.stats(island)["duplicate"] == 2
        assert net.stats(island)["contribution"] == 3
        assert net.stats(island)["completed"] == 1
        assert net.stats(island)["result_resent"] == 0

    # B's leader missed the result and resends: its edge emits the result again, flagged.
    net.contribute(B, contribution(B, 0, q[B], WAN | LOCAL | RETRANSMIT))
    (again,) = net.take(B)
    assert again.msg.type == RESULT and again.msg.flags == RETRANSMIT
    assert again.msg.bitmap == ALL
    assert np.array_equal(np.array(again.msg.values, dtype=np.int32), expected)
    assert net.stats(B)["result_resent"] == 1
    assert net.take(A) == net.take(C) == []  # the others see a duplicate and emit nothing
    assert [net.stats(i)["duplicate"] for i in ISLANDS] == [3, 3, 3]
    assert [net.stats(i)["completed"] for i in ISLANDS] == [1, 1, 1]


def test_chunks_beyond_the_window_are_refused_then_complete_exactly_when_resent() -> None:
    slots = 4  # two banks: chunks 0..7 may be in flight, chunk 8 reuses chunk 0's slot
    rng = np.random.default_rng(3)
    q = rng.integers(-(2**28), 2**28, size=(3, 12, N), dtype=np.int32)
    net = group_net(slots)
    for c in range(8):
        for i in (A, B):
            net.contribute(i, contribution(i, c, q[i, c]))
    for c in range(8, 12):  # A runs ahead of its window: every slot is busy with c - 8
        net.contribute(A, contribution(A, c, q[A, c]))
    assert [net.stats(i)["slot_conflict"] for i in ISLANDS] == [4, 4, 4]
    for i in ISLANDS:  # nothing merged: each edge hands A's contributions back to its hosts
        bounced = net.take(i)
        assert [(d.msg.type, d.msg.src, d.msg.chunk) for d in bounced] == [
            (BOUNCE, A, c) for c in range(8, 12)
        ]
        assert all(d.msg.values == tuple(q[A, d.msg.chunk]) for d in bounced)
        assert all(d.msg.flags == WAN | LOCAL and d.msg.bitmap == 0 for d in bounced)

    for c in range(8):
        net.contribute(C, contribution(C, c, q[C, c]))
    for c in range(8, 12):
        net.contribute(A, contribution(A, c, q[A, c], WAN | LOCAL | RETRANSMIT))
        for i in (B, C):
            net.contribute(i, contribution(i, c, q[i, c]))

    expected = q.astype(np.int64).sum(axis=0).astype(np.int32)
    for island in ISLANDS:
        got = results(net.take(island))
        assert sorted(got) == list(range(12))
        for c in range(12):
            assert np.array_equal(got[c], expected[c]), f"chunk {c} at island {island}"
        assert net.stats(island)["completed"] == 12
        assert net.stats(island)["contribution"] == 36


def test_a_late_copy_never_claims_a_slot_that_moved_on() -> None:
    net = group_net(1)  # chunks 0, 2, 4 share a slot
    ones = np.ones(N, dtype=np.int32)
    for c in (0, 2):
        for i in ISLANDS:
            net.contribute(i, contribution(i, c, ones * (c + 1)))
    net.contribute(B, contribution(B, 0, ones, WAN | LOCAL | RETRANSMIT))  # late
    for i in ISLANDS:
        net.contribute(i, contribution(i, 4, ones * 5))
    for island in ISLANDS:
        got = results(net.take(island))
        assert sorted(got) == [0, 2, 4]
        assert got[4].tolist() == [15] * N
        assert net.stats(island)["duplicate"] == 1
        assert net.stats(island)["slot_conflict"] == 0


def test_loss_is_recovered_by_nack_recover_and_the_slot_is_healed() -> None:
    slots = 2
    rng = np.random.default_rng(4)
    q = rng.integers(-(2**28), 2**28, size=(3, N), dtype=np.int32)
    expected = q.sum(axis=0)
    net = group_net(slots)

    def a_to_c(hop: Hop) -> bool:
        return hop.island == A and hop.to == C and hop.msg.type == CONTRIBUTION

    net.contribute(A, contribution(A, 0, q[A]), lose=a_to_c)
    for i in (B, C):
        net.contribute(i, contribution(i, 0, q[i]))
    assert len(net.lost) == 1
    assert len(net.take(A)) == len(net.take(B)) == 1
    assert net.take(C) == []  # C's slot waits for A forever

    # C's leader times out: its own resend is a duplicate everywhere, still no result.
    net.contribute(C, contribution(C, 0, q[C], WAN | LOCAL | RETRANSMIT))
    assert net.take(C) == []
    # Then it multicasts a NACK along its tree; the other members' hosts get it.
    net.contribute(C, Innet(NACK, WAN, JOB, ROUND, GROUP, C, 0))
    for island in (A, B):
        (nack,) = net.take(island)
        assert nack.msg.type == NACK and nack.msg.src == C and nack.ip_dst[2] == island
    # Each answers with a RECOVER copy of its contribution, along its own tree.
    for island in (A, B):
        net.contribute(island, Innet(RECOVER, WAN, JOB, ROUND, GROUP, island, 0, tuple(q[island])))
    recovered = net.take(C)
    assert sorted(d.msg.src for d in recovered) == [A, B]
    assert all(d.msg.type == RECOVER for d in recovered)
    software = q[C].astype(np.int64) + sum(np.array(d.msg.values) for d in recovered)
    assert np.array_equal(software.astype(np.int32), expected)
    assert [len(net.take(i)) for i in (A, B)] == [1, 1]  # each sees the other's RECOVER

    # Healing: C's leader replays the recovered copies to its own edge only (LOCAL, no WAN);
    # the missing one is merged, the other is a duplicate, and the slot completes.
    for d in recovered:
        net.contribute(C, contribution(d.msg.src, 0, np.array(d.msg.values), LOCAL | RETRANSMIT))
    (healed,) = net.take(C)
    assert healed.msg.bitmap == ALL
    assert np.array_equal(np.array(healed.msg.values, dtype=np.int32), expected)
    assert net.take(A) == net.take(B) == []
    assert [net.stats(i)["nack_or_recover"] for i in ISLANDS] == [3, 3, 3]

    # The slot is free for chunk 0 + 2 * SLOTS: the next use is not refused.
    for i in ISLANDS:
        net.contribute(i, contribution(i, 2 * slots, q[i]))
    for island in ISLANDS:
        (d,) = net.take(island)
        assert d.msg.chunk == 2 * slots and d.msg.values == tuple(expected)
        assert net.stats(island)["slot_conflict"] == 0


def test_the_next_round_runs_beside_this_one_without_mixing() -> None:
    net = Triangle(4)
    net.install_group(JOB, ROUND, GROUP, ISLANDS)
    net.install_group(JOB, ROUND + 1, GROUP, (A, B))  # installed while ROUND runs

    def nxt(src: int, chunk: int, value: int, flags: int = WAN | LOCAL) -> Innet:
        return Innet(CONTRIBUTION, flags, JOB, ROUND + 1, GROUP, src, chunk, (value,) * N)

    for i in (A, B):  # round 1, chunk 0: C's contribution is still on its way
        net.contribute(i, contribution(i, 0, np.full(N, 1)))
    net.contribute(A, nxt(A, 0, 100))  # round 2, same cell: busy with round 1 -> refused
    net.contribute(A, nxt(A, 1, 10))  # another cell: claimed
    assert [net.stats(i)["slot_conflict"] for i in (A, B)] == [1, 1]
    net.contribute(C, contribution(C, 0, np.full(N, 1)))
    net.contribute(A, nxt(A, 0, 100, WAN | LOCAL | RETRANSMIT))  # round 1 is done: claimed
    net.contribute(B, nxt(B, 0, 200))
    net.contribute(B, nxt(B, 1, 20))

    for island in (A, B):
        got = {
            (d.msg.round, d.msg.chunk): (d.msg.values[0], d.msg.bitmap) for d in net.take(island)
        }
        assert got == {
            (ROUND, 0): (3, ALL),
            (ROUND + 1, 0): (300, 0b011),
            (ROUND + 1, 1): (30, 0b011),
        }
    assert [(d.msg.round, d.msg.values[0]) for d in net.take(C)] == [(ROUND, 3)]
