import numpy as np
import pytest
from scipy.optimize import linprog

from controller.planner.cost import CostModel, CostParams
from controller.planner.exceptions import PlanError
from controller.planner.offsets import aligned, arrival_skew, unaligned
from controller.planner.schedule import Round
from tests.unit.planner.wans import line_wan

GB = 10**9


def cost_of(wan, groups, **params):
    p = dict(update_bytes=GB, memory_bytes=10**15, access_bps=10e9) | params
    return CostModel(wan, CostParams(**p)).round_cost(Round.of(groups))


def test_unbounded_memory_is_bandwidth_bound():
    wan = line_wan([10, 20], capacity_bps=100e9)
    g = cost_of(wan, [[0, 1, 2]]).groups[0]
    assert g.limit == "access"
    assert g.rate_bps == 10e9
    assert g.offsets == (0.0, 0.0, 0.0)  # offsets would only add span
    assert g.time_s == pytest.approx(8e9 / 10e9 + 0.030)


def test_zero_skew_needs_no_memory_beyond_one_slot():
    wan = line_wan([70])
    g = cost_of(wan, [[0, 1]], memory_bytes=256, slot_bytes=128).groups[0]
    assert g.skew_s == 0.0
    assert g.memory_bytes == 128  # of the two slots an aggregator has at least
    assert g.rate_bps == 10e9


def test_small_memory_bounds_the_rate_by_memory_over_skew():
    wan = line_wan([10, 20], capacity_bps=100e9)
    m = 10**6 + 128
    g = cost_of(wan, [[0, 1, 2]], memory_bytes=m, align=False).groups[0]
    assert g.skew_s == pytest.approx(0.020)  # at A: B after 10 ms, C after 30 ms
    assert g.limit == "memory"
    assert g.rate_bps == pytest.approx(10**6 * 8 / 0.020)
    assert g.memory_bytes == pytest.approx(m)
    assert g.time_s == pytest.approx(8e9 / (10**6 * 8 / 0.020) + 0.030)


def test_offsets_align_a_triple_and_lift_the_memory_bound():
    wan = line_wan([10, 20], capacity_bps=100e9)
    g = cost_of(wan, [[0, 1, 2]], memory_bytes=10**6).groups[0]
    assert g.skew_s == pytest.approx(0.0, abs=1e-9)
    assert g.limit == "access"
    # C sends first, A 20 ms later: both arrive at B together
    assert g.offsets[2] == 0.0 and g.offsets[0] == pytest.approx(0.010)


def test_window_pacing_bounds_the_rate_by_half_the_memory_over_the_time_to_a_result():
    wan = line_wan([10, 20], capacity_bps=100e9)  # A-B 10 ms, B-C 20 ms: A-C 30 ms
    m = 2 * 10**6
    g = cost_of(wan, [[0, 1, 2]], memory_bytes=m, pacing="window").groups[0]
    # a triple aligns to zero skew, but a leader still waits 30 ms for its slowest result
    assert g.offsets == (0.0, 0.0, 0.0)
    assert g.limit == "memory"
    assert g.rate_bps == pytest.approx(10**6 * 8 / 0.030)
    assert g.memory_bytes == pytest.approx(m + 128)  # both banks full
    rate_paced = cost_of(wan, [[0, 1, 2]], memory_bytes=m).groups[0]
    assert rate_paced.limit == "access" and rate_paced.time_s < g.time_s
    with pytest.raises(PlanError, match="pacing"):
        CostParams(GB, m, 10e9, pacing="credit")


def test_groups_sharing_a_link_split_it():
    wan = line_wan([5, 5, 5], capacity_bps=10e9)  # A-B-C-D; A->C and B->D share B->C
    cost = cost_of(wan, [[0, 2], [1, 3]])
    assert [g.rate_bps for g in cost.groups] == pytest.approx([5e9, 5e9])
    assert all(g.limit.startswith("link ") for g in cost.groups)
    assert cost.time_s == pytest.approx(8e9 / 5e9 + 0.010)


def test_singletons_cost_nothing():
    cost = cost_of(line_wan([5]), [[0], [1]])
    assert cost.time_s == 0.0 and cost.memory_bytes == 0.0


@pytest.mark.parametrize(
    "bad", [dict(memory_bytes=100), dict(update_bytes=0), dict(access_bps=-1.0)]
)
def test_impossible_parameters_are_refused(bad):
    p = dict(update_bytes=GB, memory_bytes=10**6, access_bps=10e9) | bad
    with pytest.raises(PlanError):
        CostParams(**p)


def least_skew_lp(delay, members):
    """min z s.t. (s_i2 + d[i2, j]) - (s_i + d[i, j]) <= z for all receivers j, senders i, i2."""
    k = len(members)
    a, b = [], []
    for j in members:
        for x, i in enumerate(members):
            for y, i2 in enumerate(members):
                if len({i, i2, j}) == 3:
                    row = [0.0] * (k + 1)
                    row[y], row[x], row[k] = 1.0, -1.0, -1.0
                    a.append(row)
                    b.append(delay[i, j] - delay[i2, j])
    res = linprog([0] * k + [1], A_ub=a, b_ub=b, bounds=[(None, None)] * (k + 1))
    return res.fun


@pytest.mark.parametrize("seed", range(12))
def test_least_skew_offsets_match_linear_programming(seed):
    rng = np.random.default_rng(seed)
    k = 3 + seed % 4
    pts = rng.uniform(0, 0.1, size=(k, 2))
    delay = np.linalg.norm(pts[:, None] - pts[None], axis=2) * (1 + rng.uniform(0, 0.3, (k, k)))
    delay = (delay + delay.T) / 2
    np.fill_diagonal(delay, 0)
    members = tuple(range(k))
    best = aligned(delay, members)
    assert best.skew == pytest.approx(least_skew_lp(delay, members), abs=1e-9)
    assert best.skew == pytest.approx(arrival_skew(delay, members, best.offsets), abs=1e-12)
    assert best.skew <= unaligned(delay, members).skew + 1e-12
    assert min(best.offsets) == 0.0
    if k == 3:
        assert best.skew == pytest.approx(0.0, abs=1e-9)


def test_memory_of_one_slot_is_refused_not_divided_by() -> None:
    # one slot leaves rate pacing no room beside the slot being merged: R <= (M - slot) / skew = 0
    with pytest.raises(PlanError, match=r"below one slot per bank \(2 x 128 B\)"):
        CostParams(update_bytes=10**9, memory_bytes=128, access_bps=1e10)
    assert CostParams(update_bytes=10**9, memory_bytes=256, access_bps=1e10).memory_bytes == 256
