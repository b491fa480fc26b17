import pytest

from controller.planner.exceptions import ScheduleError
from controller.planner.schedule import (
    Round,
    Schedule,
    all_to_all,
    cliques,
    exponential_pairs,
    grid_dims,
    orthogonal,
    partitions,
    ring_pairs,
)


def test_nine_islands_have_280_partitions_into_triples_and_10080_grids():
    every = list(partitions(range(9), 3))
    assert len(every) == 280 == len(set(every))
    pairs = sum(orthogonal(p, q) for p in every for q in every)
    assert pairs == 10_080


def test_grid_dims():
    assert grid_dims(9, 3) == (3, 3)
    assert grid_dims(64, 8) == (8, 8)
    assert grid_dims(64, 4) == (4, 4, 4)
    assert grid_dims(12, 3) == (3, 2, 2)
    assert grid_dims(7, 3) is None


def test_cliques_on_nine_complete_the_affine_plane():
    s = cliques(9, 3)
    assert [r.groups for r in s.rounds[:2]] == [
        ((0, 3, 6), (1, 4, 7), (2, 5, 8)),
        ((0, 1, 2), (3, 4, 5), (6, 7, 8)),
    ]
    assert len(s.rounds) == 4  # rows, columns and the two diagonal classes
    # every pair of islands meets in exactly one round of the cycle
    for a in range(9):
        for b in range(a + 1, 9):
            assert sum(any({a, b} <= set(g) for g in r.groups) for r in s.rounds) == 1
    for x, y in zip(s.rounds, s.rounds[1:] + s.rounds[:1], strict=True):
        assert orthogonal(x, y)


def test_cliques_without_a_grid_fall_back_to_shifted_blocks():
    s = cliques(7, 3)
    assert all(max(len(g) for g in r.groups) == 3 for r in s.rounds)
    assert len({r for r in s.rounds}) == len(s.rounds) > 1


def test_pairs_families():
    ring = ring_pairs(6)
    assert [r.groups for r in ring.rounds] == [
        ((0, 1), (2, 3), (4, 5)),
        ((0, 5), (1, 2), (3, 4)),
    ]
    expo = exponential_pairs(8)
    assert len(expo.rounds) == 3
    assert expo.rounds[2].groups == ((0, 4), (1, 5), (2, 6), (3, 7))
    odd = exponential_pairs(9)
    assert (8,) in odd.rounds[0].groups  # 8 has no partner at distance 1


def test_round_must_partition_the_islands():
    with pytest.raises(ScheduleError, match="more than one group"):
        Schedule("bad", 3, (Round.of([[0, 1], [1, 2]]),))
    with pytest.raises(ScheduleError, match="in no group"):
        Schedule("bad", 3, (Round.of([[0, 1]]),))
    with pytest.raises(ScheduleError, match="not among"):
        Schedule("bad", 2, (Round.of([[0, 1, 2]]),))
    assert all_to_all(4).rounds[0].groups == ((0, 1, 2, 3),)
