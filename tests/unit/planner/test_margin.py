"""The robustness margin: the jitter band, the robust choice, and the sweep's choices."""

import pytest

from controller.planner.cost import CostParams
from controller.planner.exceptions import PlanError
from controller.planner.margin import Band, band_of, band_wans, plans_choice, robust_choice
from controller.planner.optimise import Planner
from controller.planner.sweep import sweep, with_choices
from tests.unit.planner.wans import line_wan

MS, MB, GB = 1e-3, 10**6, 10**9


def test_the_band_is_jitter_less_and_plus_the_margin_floored_at_zero():
    assert Band(2 * MS, 2 * MS).points_s == pytest.approx((0.0, 2 * MS, 4 * MS))
    assert Band(2 * MS, 5 * MS).points_s == pytest.approx((0.0, 2 * MS, 7 * MS))
    assert Band(5 * MS, 2 * MS).shifts == pytest.approx((-2 * MS, 0.0, 2 * MS))
    assert Band(0.0, 2 * MS).shifts == (0.0, 2 * MS)  # nothing below zero jitter
    assert Band(2 * MS, 0.0).shifts == (0.0,)
    with pytest.raises(PlanError, match="margin"):
        Band(0.0, float("nan"))
    wan = line_wan([10, 20]).with_jitter(3 * MS)
    low, mid, high = band_wans(wan, band_of(wan))  # the margin defaults to the jitter
    assert [ln.jitter_s for ln in low.links] == [0.0, 0.0]
    assert mid is wan
    assert [ln.jitter_s for ln in high.links] == pytest.approx([6 * MS, 6 * MS])


def test_a_winner_is_named_only_when_fastest_at_every_point():
    band = Band(2 * MS, 2 * MS)
    choice = robust_choice({"all-to-all": [1.0, 1.1, 1.2], "cliques-3": [1.5, 1.5, 1.5]}, band)
    assert choice.winner == "all-to-all" and choice.within == ("all-to-all",)
    assert "all-to-all is fastest at every point" in choice.describe()
    # all-to-all wins at low jitter, cliques-3 at high: within the margin, no winner
    choice = robust_choice({"all-to-all": [1.4, 1.6, 1.8], "cliques-3": [1.5, 1.5, 1.5]}, band)
    assert choice.winner is None
    assert choice.within == ("cliques-3", "all-to-all")  # fastest at the jitter itself first
    assert choice.describe() == (
        "no winner: cliques-3 and all-to-all are within the ±2.00 ms jitter margin"
    )
    with pytest.raises(PlanError, match="2 times for a band of 3"):
        robust_choice({"all-to-all": [1.0, 1.1]}, band)


def test_plans_choice_names_networks_only_when_there_are_several():
    wan = line_wan([10, 20], capacity_bps=100e9).with_jitter(MS)
    band = band_of(wan)
    points = []
    for w in band_wans(wan, band):
        planner = Planner(w)
        points.append(
            [
                planner.plan(CostParams(GB, 64 * MB, 10e9, network=n), families=["all-to-all"])
                for n in ("plain", "inna")
            ]
        )
    choice = plans_choice(points, band)
    assert choice.winner == "inna all-to-all"
    only_inna = plans_choice([p[1:] for p in points], band)
    assert only_inna.winner == "all-to-all"


def test_the_crossover_moves_up_with_jitter_and_the_margin_marks_it(nine):
    """All-to-all's skew (about 110 ms) grows by its paths' jitter, and its memory bound with it;
    triples stay bandwidth-bound, so all-to-all needs more memory to win."""
    params = CostParams(GB, MB, 10e9)
    memories = [40 * MB, 60 * MB, 73 * MB, 100 * MB, 200 * MB]
    families = ["all-to-all", "cliques-3"]
    crossovers = []
    for jitter in (0.0, 2 * MS, 5 * MS):
        result = sweep(
            Planner(nine.with_jitter(jitter)), params, memories, families=families, baselines=()
        )
        (c,) = result.crossovers
        crossovers.append(c.memory_bytes)
    assert crossovers[0] == pytest.approx(66 * MB, rel=0.02)
    assert crossovers[0] < crossovers[1] < crossovers[2]
    wan = nine.with_jitter(2 * MS)
    band = band_of(wan)
    planners = [Planner(w) for w in band_wans(wan, band)]
    result = sweep(planners[1], params, memories, families=families, baselines=())
    choices = with_choices(result, planners, band).choices
    assert [c.winner for c in choices] == [
        "cliques-3",
        "cliques-3",
        None,
        "all-to-all",
        "all-to-all",
    ]
    assert set(choices[2].within) == {"all-to-all", "cliques-3"}
