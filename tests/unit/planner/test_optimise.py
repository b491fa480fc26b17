import pytest

from controller.planner.cost import CostParams
from controller.planner.mixing import rounds_to_consensus
from controller.planner.optimise import Planner, best_grid, exhaustive_grid
from controller.planner.schedule import grid_rounds, orthogonal
from topo.synthetic import synthetic_wan

GB, MB = 10**9, 10**6


@pytest.mark.slow
@pytest.mark.parametrize(
    ("memory", "align"), [(1 * MB, True), (30 * MB, True), (64 * MB, False), (8 * GB, True)]
)
def test_optimiser_equals_exhaustive_search_over_every_3x3_grid(nine, memory, align):
    model = Planner(nine).model(CostParams(GB, memory, 10e9, align=align))
    assert best_grid(model, 3) == exhaustive_grid(model, 3)


@pytest.mark.slow
@pytest.mark.parametrize(
    ("seed", "regions", "wan_bps", "memory"),
    [
        # in these the best grid does not contain the cheapest partition, so a search that
        # stopped at the first partition's partners would be caught
        (1, 3, 10e9, 8 * MB),
        (1, 1, 10e9, 1 * MB),
        (1, 1, None, 1 * MB),
        (2, 2, None, 64 * MB),
    ],
)
def test_optimiser_equals_exhaustive_search_on_other_nine_island_wans(
    seed, regions, wan_bps, memory
):
    wan = synthetic_wan(9, seed=seed, regions=regions)
    wan = wan if wan_bps is None else wan.with_capacity(wan_bps)
    model = Planner(wan).model(CostParams(GB, memory, 10e9))
    found = best_grid(model, 3)
    assert found == exhaustive_grid(model, 3)
    first, second = (model.round_cost(r).time_s for r in found.rounds[:2])
    assert first <= second  # the cheaper round is played first


def test_exhaustive_search_needs_a_square_grid(nine):
    model = Planner(nine).model(CostParams(GB, MB, 10e9))
    with pytest.raises(ValueError, match="k\\^2"):
        exhaustive_grid(model, 2)


def continents(wan, rnd):
    return {frozenset(wan.cities[i].continent for i in g) for g in rnd.groups}


def test_triples_win_at_small_memory_and_group_continents_first(nine):
    plan = Planner(nine).plan(CostParams(GB, 4 * MB, 10e9))
    assert plan.best.family == "cliques-3"
    assert plan.best.rounds == 2 and plan.best.exact
    first, second = plan.best.schedule.rounds[:2]
    assert [len(c) for c in continents(nine, first)] == [1, 1, 1]  # one continent per group
    assert continents(nine, second) == {frozenset({"Asia", "Europe", "North America"})}
    assert plan.family("all-to-all").time_s > 2 * plan.best.time_s


def test_all_to_all_wins_at_large_memory(nine):
    plan = Planner(nine).plan(CostParams(GB, 8 * GB, 10e9))
    assert plan.best.family == "all-to-all"
    assert plan.best.rounds == 1
    assert plan.family("cliques-3").time_s > plan.best.time_s


def test_families_are_timed_by_the_rounds_their_mixing_needs(nine):
    plan = Planner(nine).plan(CostParams(GB, 64 * MB, 10e9), epsilon=1e-3)
    ring = plan.family("ring-pairs")
    assert not ring.exact
    assert ring.rounds == rounds_to_consensus(ring.schedule, 1e-3)
    per_cycle = sum(c.time_s for c in ring.costs)
    assert ring.time_s == pytest.approx(
        per_cycle * (ring.rounds // len(ring.costs))
        + sum(c.time_s for c in ring.costs[: ring.rounds % len(ring.costs)])
    )


def test_local_search_on_64_islands_returns_a_grid_no_worse_than_its_start():
    wan = synthetic_wan(64, seed=3)
    planner = Planner(wan)
    model = planner.model(CostParams(GB, 16 * MB, 10e9))
    start = planner.tour()
    sched = best_grid(model, 8, start)
    rows, cols = sched.rounds
    assert orthogonal(rows, cols) and len(rows.groups) == 8
    assert rounds_to_consensus(sched, 0.0) == 2
    before = sum(model.round_cost(r).time_s for r in grid_rounds(start, (8, 8)))
    after = sum(model.round_cost(r).time_s for r in sched.rounds)
    assert after <= before
    assert model.round_cost(rows).time_s <= model.round_cost(cols).time_s


@pytest.mark.parametrize("n", [2, 3, 5, 7, 8, 12, 16])
def test_every_family_plans_on_small_synthetic_wans(n):
    planner = Planner(synthetic_wan(n, seed=n))
    plan = planner.plan(CostParams(100 * MB, 10 * MB, 10e9))
    names = [f.family for f in plan.families]
    assert names[0] == "all-to-all" and names[-2:] == ["ring-pairs", "exponential-pairs"]
    assert (n > 3) == any(name.startswith("cliques-") for name in names)
    for fam in plan.families:
        assert fam.schedule.n == n and fam.rounds is not None and fam.time_s > 0
        assert fam.exact == (rounds_to_consensus(fam.schedule, 0.0, limit=fam.rounds) is not None)
    assert plan.best.time_s == min(f.time_s for f in plan.families)


def test_unknown_family_is_refused(nine):
    planner = Planner(nine)
    with pytest.raises(ValueError, match="unknown schedule family"):
        planner.plan(CostParams(GB, MB, 10e9), families=["hypercube"])


def test_cliques_of_a_size_that_is_not_a_grid_side_use_the_grid_it_fits(nine):
    """cliques-4 on nine islands: groups of at most 4 are the 3 x 3 grid's lines of three."""
    model = Planner(nine).model(CostParams(GB, 64 * MB, 10e9))
    schedule = best_grid(model, 4)
    assert schedule.family == "cliques-4"
    assert schedule.rounds == best_grid(model, 3).rounds
    assert all(len(g) == 3 for r in schedule.rounds for g in r.groups)
