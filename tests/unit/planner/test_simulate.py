import itertools

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


def _triangle(jitter_s=0.0):
    from tests.unit.planner.test_jitter import triangle  # the hand-checked triangle

    return triangle(jitter_s)


def test_jitter_runs_a_pool_without_headroom_out_of_slots_and_not_the_planners():
    from controller.planner.cost import CostModel
    from controller.planner.schedule import Round

    flat, jittery = _triangle(), _triangle(0.002)
    params = CostParams(10 * MB, 160_000, 1e9, slot_bytes=10_000)  # 16 slots of one chunk
    triple = Round.of([[0, 1, 2]])
    # planned without jitter: aligned arrivals, skew 0, full access rate; 15 spare slots hold
    # 1.2 ms of chunks, where +-2 ms of jitter spreads a chunk's arrivals over up to 4 ms
    blind = CostModel(flat, params).round_cost(triple)
    assert blind.headroom_s == pytest.approx(1.2e-3, rel=1e-6)
    aware = CostModel(jittery, params).round_cost(triple)
    assert aware.groups[0].skew_s == pytest.approx(0.004, abs=1e-9)
    assert aware.groups[0].limit == "memory" and aware.headroom_s == pytest.approx(0, abs=1e-9)
    for seed in range(3):
        overrun = simulate_round(jittery, blind, params, 10_000, seed=seed)
        assert overrun.exhausted > 0 and overrun.time_s > 2 * blind.time_s
        held = simulate_round(jittery, aware, params, 10_000, seed=seed)
        assert held.exhausted == 0 and held.peak_memory_bytes <= params.memory_bytes
        assert held.time_s == pytest.approx(aware.time_s, rel=0.01)
    assert simulate_round(flat, blind, params, 10_000).exhausted == 0  # no jitter, no overrun


def test_jitter_draws_follow_the_seed():
    from controller.planner.cost import CostModel
    from controller.planner.schedule import Round

    wan = _triangle(0.002)
    params = CostParams(10 * MB, 160_000, 1e9, slot_bytes=10_000)
    cost = CostModel(_triangle(), params).round_cost(Round.of([[0, 1, 2]]))
    first = simulate_round(wan, cost, params, 10_000, seed=7)
    assert simulate_round(wan, cost, params, 10_000, seed=7) == first
    assert simulate_round(wan, cost, params, 10_000, seed=8) != first


def test_a_frame_never_overtakes_the_one_ahead_on_a_link():
    from controller.planner.cost import CostModel
    from controller.planner.schedule import Round
    from controller.planner.simulate import _Simulation

    wan = _triangle(0.005)
    params = CostParams(MB, 10 * MB, 1e9, slot_bytes=1000)
    cost = CostModel(wan, params).round_cost(Round.of([[0, 1]]))
    sim = _Simulation(wan, cost, params, 1000, 1.0, seed=3)
    arrivals = []
    push = sim.push

    def record(t, kind, data):
        if kind == "at" and data[3] == 1 and data[1] == 0:
            arrivals.append((data[2], t))
        push(t, kind, data)

    sim.push = record
    result = sim.run(10**6)
    assert result.exhausted == 0 and len(arrivals) == 1000
    times = [t for _, t in sorted(arrivals)]
    assert times == sorted(times)  # chunk order is arrival order
    gaps = {round(b - a, 9) for a, b in itertools.pairwise(times)}
    assert len(gaps) > 10  # the draws did spread them
