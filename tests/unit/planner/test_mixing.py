import numpy as np

from controller.planner.mixing import (
    averaging_matrix,
    consensus_errors,
    mixing,
    rounds_to_consensus,
)
from controller.planner.schedule import Round, Schedule, all_to_all, cliques, ring_pairs


def test_rows_then_columns_of_a_3x3_grid_give_the_exact_average_in_two_rounds():
    s = cliques(9, 3)
    errors = consensus_errors(s, 2)
    assert errors[0] > 0.99  # rows alone leave the difference between rows untouched
    assert errors[1] < 1e-12
    x = np.random.default_rng(1).normal(size=9)
    w1, w2 = (averaging_matrix(r, 9) for r in s.rounds[:2])
    np.testing.assert_allclose(w2 @ (w1 @ x), np.full(9, x.mean()), atol=1e-12)
    assert rounds_to_consensus(s, 0.0) == 2
    assert mixing(s).rounds_to_exact == 2


def test_averaging_matrix_is_doubly_stochastic():
    w = averaging_matrix(Round.of([[0, 2], [1], [3, 4, 5]]), 6)
    np.testing.assert_allclose(w.sum(axis=0), 1)
    np.testing.assert_allclose(w.sum(axis=1), 1)
    assert w[0, 2] == 0.5 and w[1, 1] == 1 and w[3, 5] == 1 / 3


def test_all_to_all_is_exact_in_one_round():
    assert rounds_to_consensus(all_to_all(9), 0.0) == 1


def test_ring_pairs_only_approach_consensus():
    s = ring_pairs(9)
    m = mixing(s)
    assert m.rounds_to_exact is None
    assert 0 < m.spectral_gap < 1
    tight = rounds_to_consensus(s, 1e-6)
    loose = rounds_to_consensus(s, 1e-2)
    assert loose is not None and tight is not None and tight > loose > 2


def test_a_schedule_that_never_mixes_reports_none():
    stuck = Schedule("stuck", 4, (Round.of([[0, 1], [2, 3]]),))
    assert rounds_to_consensus(stuck, 1e-3, limit=50) is None
    assert mixing(stuck).spectral_gap == 0.0
