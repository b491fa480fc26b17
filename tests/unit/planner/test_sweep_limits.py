"""A sweep is bounded (MAX_SWEEP_POINTS) and tells its progress point by point."""

import pytest

from controller.planner.cost import CostParams
from controller.planner.exceptions import PlanError
from controller.planner.optimise import Planner
from controller.planner.sweep import MAX_SWEEP_POINTS, memory_points, sweep

GB, MB = 10**9, 10**6


def test_more_points_than_the_limit_are_refused_with_the_reason():
    assert len(memory_points(MB, 8 * GB, MAX_SWEEP_POINTS)) == MAX_SWEEP_POINTS
    with pytest.raises(PlanError, match=r"100000 memory points: a sweep takes at most 256 \(each"):
        memory_points(MB, 8 * GB, 100_000)


def test_progress_is_reported_after_every_point(nine):
    seen = []

    def progress(done: int, total: int) -> None:
        seen.append((done, total))

    points = memory_points(MB, 64 * MB, 3)
    params = CostParams(GB, MB, 10e9)
    sweep(Planner(nine), params, points, families=["all-to-all"], progress=progress)
    assert seen == [(1, 3), (2, 3), (3, 3)]
