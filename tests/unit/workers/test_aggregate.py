"""The aggregation client on the real innet.p4 data plane: exact sums, window, deadline."""

from __future__ import annotations

import threading

import numpy as np
import pytest

from tests.unit.workers.network import (
    GROUP,
    JOB,
    MEMBERS,
    PACKET_FORMAT,
    ROUND,
    FakeClock,
    HarnessNetwork,
    expected_int_sum,
    fast_policy,
    group_spec,
    group_sum_on_triangle,
    run_round_robin,
    updates,
)
from workers.aggregate import Aggregator, GroupSpec, GroupSum, QuantiseError, SendPolicy, group_sum
from workers.exceptions import AggregationError, AggregationTimeout, PolicyError
from workers.quantise import dequantise

N_FLOATS = 100_000
N_CHUNKS = 1 + N_FLOATS // PACKET_FORMAT.lanes  # the exponent vote is chunk 0


def assert_exact(islands, ups: np.ndarray) -> None:
    expected, scale = expected_int_sum(ups)
    for i, session in islands.sessions.items():
        assert session.scale == scale
        assert np.array_equal(session.int_sum(), expected), f"island {i}"
        assert np.array_equal(session.result(), dequantise(expected, scale))


def test_three_islands_sum_100k_floats_bit_for_bit() -> None:
    ups = updates(N_FLOATS)
    net = HarnessNetwork(1024, JOB, ROUND, GROUP)
    islands = group_sum_on_triangle(net, fast_policy(window=1024), ups)
    assert islands.run.errors == {}
    assert_exact(islands, ups)
    for i, agg in islands.aggregators.items():
        s = agg.stats
        assert (s.sent, s.results) == (N_CHUNKS, N_CHUNKS)
        assert s.retransmitted == s.nacks_sent == s.recovered_chunks == 0
        edge = net.stats(i)
        assert edge["completed"] == N_CHUNKS and edge["contribution"] == 3 * N_CHUNKS
        assert edge["duplicate"] == edge["slot_conflict"] == 0
    assert np.allclose(islands.sessions[0].result(), ups.sum(axis=0), atol=1e-6)


def test_a_small_window_is_slower_and_still_exact() -> None:
    ups = updates(N_FLOATS, seed=5)
    wide = group_sum_on_triangle(
        HarnessNetwork(1024, JOB, ROUND, GROUP), fast_policy(window=1024), ups
    )
    net = HarnessNetwork(16, JOB, ROUND, GROUP)  # SLOTS = 16: far below what the rate needs
    narrow = group_sum_on_triangle(net, fast_policy(window=16), ups)
    assert narrow.run.errors == {}
    assert_exact(narrow, ups)
    assert narrow.run.steps >= N_CHUNKS // 16 > 10 * wide.run.steps
    assert all(net.stats(i)["slot_conflict"] == 0 for i in MEMBERS)  # the window rule held


def test_pacing_by_rate_spreads_the_chunks() -> None:
    ups = updates(3200)
    rate = PACKET_FORMAT.frame_bits * 10_000  # 10k chunks per second: 10 per 1 ms tick
    islands = group_sum_on_triangle(
        HarnessNetwork(1024, JOB, ROUND, GROUP), fast_policy(window=1024, rate_bps=rate), ups
    )
    assert islands.run.errors == {}
    assert_exact(islands, ups)
    assert 10 <= islands.run.steps <= 14  # 101 chunks at 10 per tick


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_non_finite_input_is_refused_before_anything_is_sent(bad: float) -> None:
    net = HarnessNetwork(16, JOB, ROUND, GROUP)
    transport = net.transport(0)
    update = np.zeros(1000, dtype=np.float32)
    update[123] = bad
    spec = group_spec(0)
    with pytest.raises(QuantiseError, match="index 123"):
        group_sum(transport, spec, fast_policy(window=16), update, clock=FakeClock())
    assert transport.sent == 0
    assert net.counts.sent == {0: 0, 1: 0, 2: 0}


def test_a_silent_member_is_named_within_the_deadline() -> None:
    ups = updates(10_000)
    net = HarnessNetwork(64, JOB, ROUND, GROUP)
    policy = fast_policy(window=64, deadline_s=0.5)
    islands = group_sum_on_triangle(net, policy, ups, running=(0, 1))  # island 2 never runs
    assert set(islands.run.errors) == {0, 1}
    for i, error in islands.run.errors.items():
        assert isinstance(error, AggregationTimeout)
        assert error.members == (2,)
        assert 0 in error.chunks  # stuck on the exponent vote
        assert "island(s) 2" in str(error) and f"island {i} gave up" in str(error)
        assert islands.aggregators[i].stats.nacks_sent > 0
        assert islands.aggregators[i].stats.recovers_sent > 0  # the other live member answered
    assert 0.5 < islands.clock.now <= 0.5 + 0.002


def test_int32_allreduce_wraps_around_like_the_switch() -> None:
    net = HarnessNetwork(16, JOB, ROUND, GROUP)
    clock = FakeClock()
    values = {
        0: np.full(100, 2**31 - 1, dtype=np.int32),
        1: np.full(100, 1, dtype=np.int32),
        2: np.arange(100, dtype=np.int32),
    }
    aggs = {}
    for i in MEMBERS:
        spec = group_spec(i)
        aggs[i] = Aggregator(net.transport(i), spec, fast_policy(window=16), clock)
        aggs[i].begin(values[i])
    run = run_round_robin(aggs, clock)
    assert run.errors == {}
    expected = (np.int64(2**31) + np.arange(100)).astype(np.int32)  # wraps to -2**31 + k
    for agg in aggs.values():
        assert np.array_equal(agg.result(), expected)


def test_blocking_group_sum_in_threads() -> None:
    ups = updates(5_000, seed=9)
    net = HarnessNetwork(64, JOB, ROUND, GROUP)
    policy = SendPolicy(window=64, timeout_s=0.05, max_timeout_s=0.2, deadline_s=20.0, linger_s=0.1)
    out: dict[int, np.ndarray] = {}
    errors: dict[int, BaseException] = {}

    def island(i: int) -> None:
        try:
            spec = group_spec(i)
            out[i] = group_sum(net.transport(i), spec, policy, ups[i])
        except BaseException as exc:
            errors[i] = exc

    threads = [threading.Thread(target=island, args=(i,)) for i in MEMBERS]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=30)
    assert errors == {} and not any(t.is_alive() for t in threads)
    expected, scale = expected_int_sum(ups)
    for i in MEMBERS:
        assert np.array_equal(out[i], dequantise(expected, scale))


def test_step_driven_session_reports_the_agreed_exponent() -> None:
    ups = updates(64)
    ups[1, 5] = 3.0  # island 1 holds the largest magnitude: exponent 2
    islands = group_sum_on_triangle(HarnessNetwork(16, JOB, ROUND, GROUP), fast_policy(16), ups)
    assert {s.exponent for s in islands.sessions.values()} == {2}
    assert_exact(islands, ups)


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"window": 0}, "window"),
        ({"timeout_s": 1.0, "max_timeout_s": 0.5}, "max_timeout_s"),
        ({"backoff": 0.5}, "backoff"),
        ({"rate_bps": 0.0}, "rate_bps"),
        ({"deadline_s": 0.0}, "deadline_s"),
    ],
)
def test_policies_that_cannot_work_are_refused(changes: dict, message: str) -> None:
    with pytest.raises(PolicyError, match=message):
        fast_policy(**({"window": 4} | changes))


def test_group_specs_that_cannot_work_are_refused() -> None:
    with pytest.raises(PolicyError, match="not a member"):
        GroupSpec(JOB, ROUND, GROUP, 3, MEMBERS, PACKET_FORMAT)
    with pytest.raises(PolicyError, match="twice"):
        GroupSpec(JOB, ROUND, GROUP, 0, (0, 0, 1), PACKET_FORMAT)
    with pytest.raises(PolicyError, match=r"0\.\.31"):
        GroupSpec(JOB, ROUND, GROUP, 0, (0, 32), PACKET_FORMAT)


def test_a_second_allreduce_waits_for_the_first() -> None:
    net = HarnessNetwork(16, JOB, ROUND, GROUP)
    agg = Aggregator(net.transport(0), group_spec(0), fast_policy(16))
    session = GroupSum(agg, np.ones(10, dtype=np.float32))
    assert not session.step()
    with pytest.raises(AggregationError, match="unfinished"):
        agg.begin(np.zeros(4, dtype=np.int32))


@pytest.mark.parametrize(("start_s", "lag_s"), [(0.0, 0.02), (0.01, -0.005)])
def test_split_sends_merge_the_own_copy_just_in_time(start_s: float, lag_s: float) -> None:
    """WAN|REMOTE copies merge at the other edges only; the LOCAL copy completes the own slot."""
    n = 100  # chunks
    rng = np.random.default_rng(11)
    values = rng.integers(-1000, 1000, size=(len(MEMBERS), n * PACKET_FORMAT.lanes), dtype=np.int32)
    net = HarnessNetwork(1024, JOB, ROUND, GROUP)
    clock = FakeClock()
    policy = fast_policy(
        window=1024, rate_bps=PACKET_FORMAT.frame_bits * 10_000, start_s=start_s, local_lag_s=lag_s
    )  # 10 chunks per 1 ms tick
    aggs = {i: Aggregator(net.transport(i), group_spec(i), policy, clock) for i in MEMBERS}
    for i, agg in aggs.items():
        agg.begin(values[i])
    run = run_round_robin(aggs, clock)
    assert run.errors == {}
    # the last chunk's own copy leaves at start + 10 ticks + max(lag, 0): no result before it
    assert run.steps >= round((start_s + max(lag_s, 0.0)) * 1000) + 10
    total = values.astype(np.int64).sum(axis=0).astype(np.int32)
    for i, agg in aggs.items():
        assert np.array_equal(agg.result(), total)
        assert agg.stats.retransmitted == agg.stats.nacks_sent == 0
        edge = net.stats(i)
        # a REMOTE copy merged at its own edge would make the LOCAL copy a duplicate
        assert edge["contribution"] == 3 * n and edge["completed"] == n
        assert edge["duplicate"] == edge["slot_conflict"] == 0


def test_a_just_in_time_copy_needs_a_paced_schedule() -> None:
    with pytest.raises(PolicyError, match="local_lag_s needs rate_bps"):
        fast_policy(window=4, local_lag_s=0.01)
    with pytest.raises(PolicyError, match="start_s"):
        fast_policy(window=4, start_s=-1.0)


class Stalled:
    """An island whose host runs nothing from `start` to `end` (fake-clock seconds)."""

    def __init__(self, session: Aggregator, clock: FakeClock, start: float, end: float) -> None:
        self.session, self.clock, self.start, self.end = session, clock, start, end

    def step(self, wait: float = 0.0) -> bool:
        if self.start <= self.clock() < self.end:
            return False
        return self.session.step(wait)


def _stalled_round(
    seed: int, stall_end: float, policy: SendPolicy
) -> tuple[int, dict[int, Aggregator], HarnessNetwork]:
    """40 chunks over two slots a bank, one a 1 ms tick, island C's host stalled from 2.5 ms
    to `stall_end`; every sum exact, with no resend and no NACK: (steps, aggregators, network)."""
    n = 40
    rng = np.random.default_rng(seed)
    values = rng.integers(-1000, 1000, size=(len(MEMBERS), n * PACKET_FORMAT.lanes), dtype=np.int32)
    net = HarnessNetwork(2, JOB, ROUND, GROUP)
    clock = FakeClock()
    aggs = {i: Aggregator(net.transport(i), group_spec(i), policy, clock) for i in MEMBERS}
    for i, agg in aggs.items():
        agg.begin(values[i])
    late = MEMBERS[2]
    sessions = {
        i: Stalled(agg, clock, 0.0025, stall_end) if i == late else agg for i, agg in aggs.items()
    }
    run = run_round_robin(sessions, clock)
    assert run.errors == {}
    total = values.astype(np.int64).sum(axis=0).astype(np.int32)
    for i, agg in aggs.items():
        assert np.array_equal(agg.result(), total), i
        assert agg.stats.retransmitted == agg.stats.nacks_sent == 0, agg.stats
    return run.steps, aggs, net


def test_a_member_that_stalls_costs_bounces_not_resends() -> None:
    """Two slots a bank, one chunk a 1 ms tick, and island C's host stalls for 6 ms (a busy
    CPU), then catches up. Meanwhile A's and B's chunk c + 4 reach slots still waiting for C's
    chunk c: every edge bounces them to its leader, which replays them once the slot is free.
    Every sum is exact, with no resend and no NACK (before bounces, each refusal waited for a
    timeout, resends and a NACK, and the slots it left half merged refused the chunks after)."""
    policy = fast_policy(
        window=40, rate_bps=PACKET_FORMAT.frame_bits * 1000, timeout_s=0.05, max_timeout_s=0.2
    )
    _steps, aggs, net = _stalled_round(5, 0.0085, policy)
    for i in MEMBERS:
        edge = net.stats(i)
        assert edge["contribution"] == 3 * 40 and edge["completed"] == 40, edge
    bounced = {i: agg.stats.bounced for i, agg in aggs.items()}
    conflicts = {i: net.stats(i)["slot_conflict"] for i in MEMBERS}
    assert all(conflicts.values()) and bounced == conflicts, (bounced, conflicts)


def _after_a_long_stall(cells: int | None) -> tuple[int, dict[int, Aggregator]]:
    """The stall above made 60 ms long (C catches up at 62.5 ms), longer than the replays'
    doubling waits reach: (steps, aggregators)."""
    policy = fast_policy(
        window=40,
        rate_bps=PACKET_FORMAT.frame_bits * 1000,
        timeout_s=0.2,
        max_timeout_s=0.8,
        cells=cells,
    )
    steps, aggs, _net = _stalled_round(6, 0.0625, policy)
    return steps, aggs


def test_a_result_frees_its_cell_and_the_chunk_held_for_it_goes_at_once() -> None:
    """After the stall every edge holds A's and B's chunks 4-39 as bounces, and C's backlog
    arrives at once. With the edges' cells (2 x SLOTS) in the policy, each RESULT replays the
    lowest chunk held for its cell at once, and a chunk whose cell a later one took first (the
    edge then refuses it as a late copy) is summed from its bounces: no resend, no NACK. On
    the doubling waits alone a held chunk takes its cell up to a wait (200 ms) after it freed,
    and the overtaken ones wait for a timeout (measured: 39 against 442 ticks after C caught
    up)."""
    caught_up = 62
    steps, aggs = _after_a_long_stall(cells=4)
    timers_only, _ = _after_a_long_stall(cells=None)
    assert steps - caught_up < (timers_only - caught_up) / 3, (steps, timers_only)
    assert sum(agg.stats.overtaken for agg in aggs.values()) > 0
