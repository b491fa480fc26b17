"""The planner's shortcuts give what the direct computations they replace give: ring orders,
least-skew offsets, rounds to consensus, trees, grid lines and the local search's bound."""

import itertools

import numpy as np
import pytest

from controller.planner.collectives import RING_ON_LISTS, alone_rate, ring_order
from controller.planner.consensus import rounds_and_exactness
from controller.planner.cost import CostParams, Geometry
from controller.planner.mixing import EXACT, rounds_to_consensus
from controller.planner.offsets import _least_skew, _least_skew_arrays
from controller.planner.optimise import Planner, _Grid
from controller.planner.schedule import (
    Round,
    all_to_all,
    cliques,
    exponential_pairs,
    grid_rounds,
    ring_pairs,
)
from topo.synthetic import synthetic_wan

GB, MB = 10**9, 10**6


def reference_ring_order(delay, members):
    """ring_order as first written: every order up to 7 members, else nearest neighbour and a
    2-opt that costs every candidate in full."""

    def key(order):
        hops = [float(delay[a, b]) for a, b in zip(order, [*order[1:], order[0]], strict=True)]
        return max(hops), sum(hops)

    first, rest = members[0], list(members[1:])
    if len(members) <= 7:
        return tuple(min(((first, *p) for p in itertools.permutations(rest)), key=key))
    order, left = [first], set(rest)
    while left:
        here = order[-1]
        order.append(min(left, key=lambda j: (float(delay[here, j]), j)))
        left.remove(order[-1])
    improved = True
    while improved:
        improved = False
        for i, j in itertools.combinations(range(1, len(order)), 2):
            candidate = order[:i] + order[i : j + 1][::-1] + order[j + 1 :]
            if key(candidate) < key(order):
                order, improved = candidate, True
    return tuple(order)


def points_delay(rng, k, rounded=False, symmetric=True):
    pts = rng.uniform(0, 1, size=(k, 2))
    d = np.linalg.norm(pts[:, None] - pts[None], axis=2)
    if rounded:  # many equal delays: ties everywhere
        d = np.round(d, 1)
    if not symmetric:
        d = d * (1 + rng.uniform(0, 0.3, (k, k)))
    np.fill_diagonal(d, 0)
    return d


@pytest.mark.parametrize("seed", range(6))
def test_the_ring_order_is_the_reference_one(seed):
    rng = np.random.default_rng(seed)
    sizes = [3, 5, 7, 8, 12, RING_ON_LISTS, RING_ON_LISTS + 1, 40]
    for k in sizes:
        for rounded, symmetric in ((False, True), (True, True), (False, False)):
            d = points_delay(rng, k, rounded, symmetric)
            members = rng.permutation(k).tolist()
            assert ring_order(d, members) == reference_ring_order(d, members), (k, rounded)


def test_a_large_ring_order_is_deterministic_and_a_ring_of_every_member():
    delay = synthetic_wan(300, seed=4).delay
    members = list(range(0, 300, 2))
    first = ring_order(delay, members)
    assert first == ring_order(delay, members)
    assert sorted(first) == members and first[0] == members[0]


@pytest.mark.parametrize("k", [3, 4, 6, 9, 17, 30])
def test_least_skew_offsets_on_arrays_are_those_on_lists(k):
    rng = np.random.default_rng(k)
    d = points_delay(rng, k) * 0.1
    assert _least_skew_arrays(d) == _least_skew(d.tolist())


def test_rounds_to_consensus_are_those_of_playing_every_round():
    rng = np.random.default_rng(0)
    schedules = []
    for n in (2, 3, 6, 9, 16, 24):
        order = rng.permutation(n).tolist()
        schedules += [all_to_all(n), ring_pairs(n, order), exponential_pairs(n, order)]
        schedules += [cliques(n, k, order) for k in range(2, min(n, 6) + 1)]
    for schedule in schedules:
        for epsilon, limit in ((1e-3, 2000), (1e-1, 2000), (0.0, 2000), (1e-3, 5)):
            rounds = rounds_to_consensus(schedule, epsilon, limit)
            exact = rounds is not None and (
                schedule.n == 1 or rounds_to_consensus(schedule, EXACT, limit=rounds) is not None
            )
            assert rounds_and_exactness(schedule, epsilon, limit) == (rounds, exact)


def test_trees_are_the_wans_edge_for_edge_in_the_same_order():
    wan = synthetic_wan(40, seed=7)
    geometry = Geometry(wan)
    rng = np.random.default_rng(7)
    for _ in range(30):
        members = rng.choice(40, int(rng.integers(2, 9)), replace=False).tolist()
        src, dests = members[0], members[1:]
        assert list(geometry._tree(src, dests)) == list(wan.tree(src, dests))


def test_grid_lines_follow_swaps_as_grid_rounds_lays_them():
    rng = np.random.default_rng(1)
    dims = (4, 3, 2)
    grid = _Grid(rng.permutation(24).tolist(), dims)
    for a, b, _ in [grid.moves[int(i)] for i in rng.integers(0, len(grid.moves), 40)]:
        grid.swap(a, b)
        assert [grid.round(d) for d in range(3)] == list(grid_rounds(grid.cells, dims))


@pytest.mark.parametrize("network", ["inna", "multicast", "plain"])
def test_the_time_bound_never_exceeds_the_round_time(network):
    wan = synthetic_wan(36, seed=2).with_capacity(20e9)
    rng = np.random.default_rng(2)
    model = Planner(wan).model(CostParams(GB, 8 * MB, 10e9, network=network))
    for _ in range(20):
        islands = rng.permutation(36).tolist()
        size = int(rng.integers(2, 7))
        rnd = Round.of(islands[i : i + size] for i in range(0, 36, size))
        assert model.time_bound(rnd) <= model.round_cost(rnd).time_s


def test_the_rate_alone_is_the_collectives_one():
    wan = synthetic_wan(30, seed=5).with_capacity(15e9)
    geometry = Geometry(wan)
    rng = np.random.default_rng(5)
    for _ in range(20):
        members = tuple(sorted(rng.choice(30, int(rng.integers(2, 9)), replace=False).tolist()))
        for c in geometry.unicast(members):
            assert geometry.alone_rate(c, 10e9) == alone_rate(wan, c, 10e9)
