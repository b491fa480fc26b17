import pytest

from controller.planner.check import check_family
from controller.planner.cost import CostParams
from controller.planner.optimise import Planner
from controller.planner.simulate import simulate_round

GB, MB = 10**9, 10**6


@pytest.mark.parametrize("memory", [4 * MB, 64 * MB, 1 * GB])
def test_simulation_agrees_with_the_cost_model(nine, memory):
    planner = Planner(nine)
    params = CostParams(GB, memory, 10e9)
    model = planner.model(params)
    plan = planner.plan(params, families=["all-to-all", "cliques-3"])
    for fam in plan.families:
        checks = check_family(model, fam, chunks=500)
        assert len(checks) == min(fam.rounds, len(fam.costs))
        for c in checks:
            assert abs(c.time_error) < 0.02, (fam.family, c)
            assert c.sim.exhausted == 0
            assert c.sim.peak_memory_bytes <= memory
            # the model's memory need and the simulated peak differ by at most a chunk or two
            assert abs(c.sim.peak_memory_bytes - c.model.memory_bytes) <= 2 * c.sim.chunk_bytes


def test_sending_faster_than_memory_allows_exhausts_slots(nine):
    planner = Planner(nine)
    params = CostParams(100 * MB, 16 * MB, 10e9)
    model = planner.model(params)
    a2a = planner.plan(params, families=["all-to-all"]).best
    assert a2a.costs[0].groups[0].limit == "memory"
    (fast,) = check_family(model, a2a, chunks=400, rate_factor=1.5)
    assert fast.sim.exhausted > 0 and fast.sim.resent == fast.sim.exhausted
    assert fast.sim.peak_memory_bytes <= 16 * MB
    assert fast.sim.time_s > fast.model.time_s  # resending costs more than pacing saves


def test_bad_chunk_sizes_are_refused(nine):
    planner = Planner(nine)
    params = CostParams(10**6, MB, 10e9)
    cost = planner.model(params).round_cost(planner.plan(params).best.costs[0].round)
    with pytest.raises(ValueError, match="chunk size"):
        simulate_round(nine, cost, params, chunk_bytes=0)
    with pytest.raises(ValueError, match="rate factor"):
        simulate_round(nine, cost, params, chunk_bytes=1000, rate_factor=0)
