"""Progressive filling, on arrays for many streams and on dictionaries for few, gives float for
float the rates of the plain loop it replaced (kept here as the reference), on WANs and groups
drawn at random."""

import math
from collections import Counter

import numpy as np
import pytest

from controller.planner import filling
from controller.planner.cost import CostModel, CostParams, Geometry, _fill
from controller.planner.schedule import Round
from topo.synthetic import synthetic_wan


def reference_fill(wan, loads, caps):
    """The cost model's filling as it was first written: a loop over links and groups."""
    rates, limits = {}, {}
    share = Counter()
    for load in loads.values():
        share.update(load)
    room = {e: wan.capacity(*e) for e in share}
    active = set(loads)
    while active:
        level, tight = math.inf, []
        for e, n in share.items():
            if n:
                t = room[e] / n
                if t < level * (1 - 1e-12):
                    level, tight = t, [e]
                elif t <= level * (1 + 1e-12):
                    tight.append(e)
        capped = [g for g in active if caps[g] <= level * (1 + 1e-12)]
        if capped:
            level = min(caps[g] for g in capped)
            capped = [g for g in capped if caps[g] <= level * (1 + 1e-12)]
            tight = [e for e in tight if room[e] / share[e] <= level * (1 + 1e-12)]
        frozen = {g: "cap" for g in capped}
        for e in tight:
            name = f"link {wan.cities[e[0]].code}->{wan.cities[e[1]].code}"
            for g in active:
                if loads[g][e]:
                    frozen.setdefault(g, name)
        for g, why in frozen.items():
            rates[g], limits[g] = level, why
            for e, count in loads[g].items():
                room[e] -= count * level
                share[e] -= count
        active -= frozen.keys()
    return rates, limits


def random_round(rng, n, size):
    islands = rng.permutation(n).tolist()
    return Round.of(islands[i : i + size] for i in range(0, n, size))


@pytest.fixture(params=["arrays", "dictionaries"])
def way(request, monkeypatch):
    """Fill on arrays whatever the size, or on dictionaries whatever the size."""
    monkeypatch.setattr(filling, "SMALL", -1 if request.param == "arrays" else 10**9)
    return request.param


@pytest.mark.parametrize("seed", range(6))
def test_filling_matches_the_plain_loop_float_for_float(seed, way):
    rng = np.random.default_rng(seed)
    n = int(rng.choice([9, 16, 24, 36]))
    capacity = [5e9, 20e9, 100e9][seed % 3]
    wan = synthetic_wan(n, seed=seed, regions=1 + seed % 4).with_capacity(capacity)
    geometry = Geometry(wan)
    for _ in range(25):
        rnd = random_round(rng, n, int(rng.integers(2, 7)))
        loads = {g: geometry.link_loads(g) for g in rnd.groups if len(g) > 1}
        # caps: equal ones (ties), and some a rounding apart, as the memory bound makes them
        base = float(rng.choice([1e9, 3e9, 10e9]))
        caps = {g: base * (1 + float(rng.choice([0.0, 0.0, 1e-13, 0.5, 2.0]))) for g in loads}
        assert _fill(geometry, loads, caps) == reference_fill(wan, loads, caps)


def test_a_round_whose_links_saturate_names_them_as_the_loop_did(nine, way):
    """1 Gb/s links and 10 Gb/s access: the links bound every group."""
    wan = nine.with_capacity(1e9)
    model = CostModel(wan, CostParams(10**9, 10**9, 10e9))
    rnd = Round.of([(0, 1, 2), (3, 4, 5), (6, 7, 8)])
    loads = {g: model.geometry.link_loads(g) for g in rnd.groups}
    caps = dict.fromkeys(loads, 10e9)
    rates, limits = _fill(model.geometry, loads, caps)
    assert (rates, limits) == reference_fill(wan, loads, caps)
    assert all(why.startswith("link ") for why in limits.values())
