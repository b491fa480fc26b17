"""Jitter in the cost model: skew, span, memory, rate bounds, offsets and headroom."""

import math

import numpy as np
import pytest
from scipy.optimize import linprog

from controller.planner.collectives import ring
from controller.planner.cost import CostModel, CostParams
from controller.planner.offsets import aligned, arrival_skew, arrival_span, unaligned
from controller.planner.optimise import Planner
from controller.planner.schedule import Round
from tests.unit.planner.wans import line_wan
from topo.wan import City, Wan, WanLink

GB, MB = 10**9, 10**6
MS = 1e-3


def triangle(jitter_s: float = 0.0) -> Wan:
    """A, B, C joined pairwise (10, 20, 25 ms): every path is one link."""
    cities = tuple(City(n, n, "X", 0.0, float(i)) for i, n in enumerate("ABC"))
    links = (
        WanLink("A", "B", 0.010, 100e9, "test", jitter_s=jitter_s),
        WanLink("B", "C", 0.020, 100e9, "test", jitter_s=jitter_s),
        WanLink("A", "C", 0.025, 100e9, "test", jitter_s=jitter_s),
    )
    return Wan("triangle", cities, links)


def cost_of(wan, groups, **params):
    p = dict(update_bytes=GB, memory_bytes=10**15, access_bps=10e9) | params
    return CostModel(wan, CostParams(**p)).round_cost(Round.of(groups))


def test_a_triangle_with_2ms_of_jitter_by_hand():
    # aligned, the triple's arrivals coincide (skew 0); each arrives within +-2 ms of its
    # planned time, so a slot lives from the earliest to the latest: skew' = 4 ms
    m = 10**6 + 128
    g = cost_of(triangle(2 * MS), [[0, 1, 2]], memory_bytes=m).groups[0]
    assert g.skew_s == pytest.approx(4 * MS, abs=1e-9)
    assert g.limit == "memory"
    assert g.rate_bps == pytest.approx(10**6 * 8 / (4 * MS))  # R <= (M - S) / skew' = 2 Gb/s
    assert g.memory_bytes == pytest.approx(m)  # R skew' + S: all of it
    # the latest arrival: C sends at 0, A at 10 ms, B at 15 ms (all meet at 25 ms), +2 ms
    assert g.offsets == pytest.approx((0.010, 0.015, 0.0), abs=1e-9)
    assert g.span_s == pytest.approx(0.027 + 0.010, abs=1e-9)
    assert g.time_s == pytest.approx(8e9 / 2e9 + 0.037, abs=1e-8)
    assert g.headroom_s == pytest.approx(0.0, abs=1e-9)  # memory-bound: nothing to spare


def test_a_triple_on_a_line_adds_the_paths_jitter():
    # A-B 10 ms, B-C 20 ms, 2 ms per link: A-C is two links, 30 +- 4 ms
    jittery = line_wan([10, 20], capacity_bps=100e9).with_jitter(2 * MS)
    assert jittery.jitter[0, 2] == pytest.approx(4 * MS)
    zero = unaligned(jittery.delay, (0, 1, 2), jittery.jitter)
    # at A: B within 10 +- 2, C within 30 +- 4: from 8 to 34 ms
    assert zero.skew == pytest.approx(0.026)
    assert zero.span == pytest.approx(0.034)
    assert arrival_span(jittery.delay, (0, 1, 2), (0, 0, 0), jittery.jitter) == zero.span
    least = aligned(jittery.delay, (0, 1, 2), jittery.jitter)
    # C's streams carry 4 ms each way to A: one stream alone spreads over 8 ms at A
    assert least.skew == pytest.approx(8 * MS, abs=1e-9)


def test_window_pacing_waits_for_the_latest_frame():
    wan = line_wan([10, 20], capacity_bps=100e9).with_jitter(2 * MS)
    m = 2 * 10**6
    g = cost_of(wan, [[0, 1, 2]], memory_bytes=m, pacing="window").groups[0]
    assert g.span_s == pytest.approx(0.034)  # L = 30 ms + 4 ms of path jitter
    assert g.rate_bps == pytest.approx(10**6 * 8 / 0.034)
    assert math.isinf(g.headroom_s)  # the window clocks the sends: noise cannot fill the pool


def test_zero_jitter_is_bit_identical(nine):
    zeros = np.zeros_like(nine.delay)
    rng = np.random.default_rng(0)
    for k in (2, 3, 4, 9):
        members = tuple(sorted(rng.choice(9, size=k, replace=False).tolist()))
        assert aligned(nine.delay, members, zeros) == aligned(nine.delay, members)
        assert unaligned(nine.delay, members, zeros) == unaligned(nine.delay, members)
    assert nine.with_jitter(0.0).has_jitter is False
    for params in (CostParams(GB, 25_600_000, 10e9), CostParams(GB, 8 * GB, 10e9)):
        before = Planner(nine).plan(params, families=["all-to-all", "cliques-3"])
        after = Planner(nine.with_jitter(0.0)).plan(params, families=["all-to-all", "cliques-3"])
        assert before == after


def least_skew_lp(delay, jitter, members):
    """min z s.t. (s_i2 + d[i2, j] + J[i2, j]) - (s_i + d[i, j] - J[i, j]) <= z, every j, i, i2."""
    k = len(members)
    a, b = [], []
    for j in members:
        for x, i in enumerate(members):
            for y, i2 in enumerate(members):
                if j not in (i, i2):
                    row = [0.0] * (k + 1)
                    row[y] += 1.0
                    row[x] -= 1.0
                    row[k] = -1.0
                    a.append(row)
                    b.append(delay[i, j] - jitter[i, j] - delay[i2, j] - jitter[i2, j])
    res = linprog([0] * k + [1], A_ub=a, b_ub=b, bounds=[(None, None)] * (k + 1))
    return res.fun


@pytest.mark.parametrize("seed", range(10))
def test_least_skew_offsets_with_jitter_match_linear_programming(seed):
    rng = np.random.default_rng(seed)
    k = 2 + seed % 5
    pts = rng.uniform(0, 0.1, size=(k, 2))
    delay = np.linalg.norm(pts[:, None] - pts[None], axis=2) + 0.001
    delay = (delay + delay.T) / 2
    jitter = rng.uniform(0, 0.004, size=(k, k))
    jitter = (jitter + jitter.T) / 2
    np.fill_diagonal(delay, 0)
    np.fill_diagonal(jitter, 0)
    members = tuple(range(k))
    best = aligned(delay, members, jitter)
    assert best.skew == pytest.approx(least_skew_lp(delay, jitter, members), abs=1e-9)
    assert best.skew == pytest.approx(arrival_skew(delay, members, best.offsets, jitter))
    assert best.skew <= unaligned(delay, members, jitter).skew + 1e-12
    assert best.skew > arrival_skew(delay, members, best.offsets)  # jitter costs skew


def test_a_pair_with_jitter_needs_memory_for_its_spread():
    wan = line_wan([70]).with_jitter(2 * MS)
    g = cost_of(wan, [[0, 1]], memory_bytes=2 * MB).groups[0]
    assert g.skew_s == pytest.approx(4 * MS)  # one stream, +-2 ms
    assert g.rate_bps == pytest.approx(min(10e9, (2 * MB - 128) * 8 / (4 * MS)))


def test_headroom_is_what_the_pool_spares_beyond_the_skew():
    wan = triangle(2 * MS)
    m = 100 * MB
    g = cost_of(wan, [[0, 1, 2]], memory_bytes=m).groups[0]
    assert g.limit == "access" and g.offsets == (0.0, 0.0, 0.0)  # ample memory: no offsets
    # at A: B within 10 +- 2 ms, C within 25 +- 2 ms: skew' = 27 - 8 = 19 ms
    assert g.skew_s == pytest.approx(19 * MS)
    assert g.headroom_s == pytest.approx((m - 128) * 8 / 10e9 - 19 * MS, abs=1e-9)
    cost = cost_of(wan, [[0, 1], [2]], memory_bytes=m)
    pair, alone = cost.groups
    assert pair.headroom_s == pytest.approx((m - 128) * 8 / 10e9 - 4 * MS)
    assert math.isinf(alone.headroom_s)
    assert cost.headroom_s == pair.headroom_s  # the least over groups
    for network in ("plain", "multicast"):
        assert math.isinf(cost_of(wan, [[0, 1, 2]], network=network).headroom_s)


def test_hosts_wait_for_the_latest_frame_without_in_line_aggregation():
    flat, jittery = line_wan([70]), line_wan([70]).with_jitter(2 * MS)
    for network in ("plain", "multicast"):
        before = cost_of(flat, [[0, 1]], network=network).groups[0]
        after = cost_of(jittery, [[0, 1]], network=network).groups[0]
        assert after.time_s - before.time_s == pytest.approx(2 * MS)
        assert after.memory_bytes == 0.0
    # a ring of three on a line, hops of 10, 20 and 30 ms with 1, 1 and 2 ms of jitter: the
    # slowest hop and the chain of hops (twice round but for the two shortest) both grow
    flat_ring = ring(line_wan([10, 20]), (0, 1, 2))
    jit_ring = ring(line_wan([10, 20]).with_jitter(MS), (0, 1, 2))
    assert (flat_ring.latency_s, jit_ring.latency_s) == pytest.approx((0.030, 0.032))
    assert (flat_ring.chain_s, jit_ring.chain_s) == pytest.approx((0.090, 0.096))
