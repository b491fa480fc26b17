"""The simulator's bounds: a rate factor it can honour, and a budget of events, so that a pool
overrun resending without end is stopped with a reason instead of running for minutes."""

import pytest

from controller.planner.check import check_family
from controller.planner.cost import CostParams
from controller.planner.exceptions import PlanError
from controller.planner.optimise import Planner
from controller.planner.simulate import MAX_RATE_FACTOR, simulate_round

GB, MB = 10**9, 10**6


def overrun(nine):
    """The nine cities' all-to-all with a pool the planned rate fills: faster sends overrun it."""
    planner = Planner(nine)
    params = CostParams(100 * MB, 16 * MB, 10e9)
    return planner.model(params), planner.plan(params, families=["all-to-all"]).best


def test_a_resend_storm_stops_at_the_event_budget_with_its_reason(nine):
    model, a2a = overrun(nine)
    with pytest.raises(PlanError, match=r"stopped after 20,000 events, its budget: [\d,]+ contri"):
        check_family(model, a2a, chunks=400, rate_factor=50, max_events=20_000)


def test_the_budget_is_shared_by_every_round_and_says_which_ran_out(nine):
    planner = Planner(nine)
    params = CostParams(GB, 64 * MB, 10e9)
    model = planner.model(params)
    cliques = planner.plan(params, families=["cliques-3"]).best
    (first, *_) = check_family(model, cliques, chunks=100)
    with pytest.raises(PlanError, match=r"budget of .* events before round 2 of cliques-3"):
        check_family(model, cliques, chunks=100, max_events=first.sim.events)


def test_within_its_budget_the_simulation_counts_its_events(nine):
    model, a2a = overrun(nine)
    (check,) = check_family(model, a2a, chunks=400)
    assert 0 < check.sim.events <= 2_000_000


@pytest.mark.parametrize("factor", [float("nan"), float("inf"), 0.0, MAX_RATE_FACTOR * 2])
def test_rate_factors_it_cannot_honour_are_refused(nine, factor):
    model, a2a = overrun(nine)
    cost = model.round_cost(a2a.costs[0].round)
    with pytest.raises(PlanError, match="rate factor must be in"):
        simulate_round(nine, cost, model.params, chunk_bytes=MB, rate_factor=factor)
