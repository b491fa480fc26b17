"""Overlap (streaming DiLoCo): the next inner steps start from the island's own proposal and
the group's mean lands one round late, as the base of the next proposal (workers/train.py)."""

from __future__ import annotations

import numpy as np
import pytest

from workers.config import TrainConfig
from workers.inprocess import run_with_models
from workers.train import IslandState, split_digits

ROWS = [[0, 1, 2]]


def test_the_mean_lands_one_round_late_by_hand() -> None:
    config = TrainConfig(outer_lr=1.0, outer_momentum=0.0, overlap=True)
    state = IslandState(np.zeros(2, np.float32), config)
    assert np.array_equal(state.start, [0, 0])
    x0 = state.propose(np.array([1.0, 2.0]))  # delta = -local, x = theta - delta = local
    assert np.allclose(x0, [1, 2])
    state.accept(np.array([5.0, 6.0]))  # the group's mean of round 0
    assert np.allclose(state.theta, [5, 6]) and np.allclose(state.start, x0)
    # round 1's inner steps ran from x0 and reached (2, 2): delta = x0 - (2, 2) = (-1, 0),
    # applied to the mean of round 0: x1 = (5, 6) - (-1, 0)
    assert np.allclose(state.propose(np.array([2.0, 2.0])), [6, 6])


def test_without_overlap_the_next_round_starts_from_the_mean() -> None:
    state = IslandState(np.zeros(2, np.float32), TrainConfig(outer_lr=1.0, outer_momentum=0.0))
    state.propose(np.array([1.0, 2.0]))
    state.accept(np.array([5.0, 6.0]))
    assert np.allclose(state.start, [5, 6])
    assert np.allclose(state.propose(np.array([2.0, 2.0])), [2, 2])


@pytest.fixture(scope="module")
def split():
    return split_digits(3, 1, seed=0)


def test_overlap_changes_training_from_the_second_round_only(split) -> None:
    plain = TrainConfig(inner_steps=5, seed=0)
    late = TrainConfig(inner_steps=5, seed=0, overlap=True)
    _, one_thetas = run_with_models(split, plain, [ROWS], 1, 1)
    _, one_late_thetas = run_with_models(split, late, [ROWS], 1, 1)
    assert all(np.array_equal(a, b) for a, b in zip(one_thetas, one_late_thetas, strict=True))
    _, thetas = run_with_models(split, plain, [ROWS], 1, 3)
    _, late_thetas = run_with_models(split, late, [ROWS], 1, 3)
    assert not np.allclose(thetas[0], late_thetas[0])
    assert all(np.array_equal(late_thetas[0], t) for t in late_thetas)  # one group: one mean


def test_overlap_still_learns_and_its_wire_sums_match_exact_ones(split) -> None:
    late = TrainConfig(inner_steps=10, seed=0, overlap=True)
    exact, exact_thetas = run_with_models(split, late, [ROWS], 1, 6)
    wire, wire_thetas = run_with_models(split, late, [ROWS], 1, 6, quantised=True)
    assert exact[-1]["accuracy"] > exact[0]["accuracy"] + 0.15  # measured: 0.59 -> 0.89
    for a, b in zip(exact_thetas, wire_thetas, strict=True):
        assert np.abs(a - b).max() < 1e-4  # the int32 sums lose only the quantisation step
    assert abs(exact[-1]["accuracy"] - wire[-1]["accuracy"]) < 0.02


def test_an_island_alone_is_the_same_with_or_without_overlap(split) -> None:
    alone = [[0], [1], [2]]
    _, a = run_with_models(split, TrainConfig(inner_steps=3, seed=0), [alone], 1, 3)
    _, b = run_with_models(split, TrainConfig(inner_steps=3, seed=0, overlap=True), [alone], 1, 3)
    assert all(np.array_equal(x, y) for x, y in zip(a, b, strict=True))
