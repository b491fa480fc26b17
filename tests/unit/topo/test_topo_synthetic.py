"""Synthetic WANs for benchmarks: connected, deterministic, fibre delays."""

import pytest

from topo.synthetic import CAPACITY_BPS, MIN_DELAY_S, ROUTE_FACTOR, synthetic_wan
from topo.wan import FIBRE_S_PER_KM, great_circle_km


def test_64_islands_connected_with_at_least_three_neighbours() -> None:
    wan = synthetic_wan(64)
    assert wan.n == 64
    assert wan.names[0] == "I00" and wan.names[-1] == "I63"
    assert (wan.hops >= 0).all()  # every island reaches every other
    assert all(len(wan.neighbours(i)) >= 3 for i in range(wan.n))
    assert len({c.continent for c in wan.cities}) == 4
    assert not wan.measured_rtt_s


def test_deterministic_for_a_seed_and_different_across_seeds() -> None:
    assert synthetic_wan(64, seed=7) == synthetic_wan(64, seed=7)
    assert synthetic_wan(64, seed=7).links != synthetic_wan(64, seed=8).links


def test_regions_are_joined_by_long_haul_links() -> None:
    wan = synthetic_wan(64, regions=4)
    region = {c.name: c.continent for c in wan.cities}
    joined = {frozenset((region[link.a], region[link.b])) for link in wan.links}
    assert sum(1 for pair in joined if len(pair) == 2) >= 6  # every pair of the 4 regions


def test_delays_are_routed_fibre_and_capacities_10_gbps() -> None:
    wan = synthetic_wan(32, seed=3)
    for link in wan.links:
        a, b = (wan.cities[wan.index(name)] for name in (link.a, link.b))
        expected = max(great_circle_km(a, b) * FIBRE_S_PER_KM * ROUTE_FACTOR, MIN_DELAY_S)
        assert link.delay_s == pytest.approx(expected)
        assert link.capacity_bps == CAPACITY_BPS == 100e9
        assert wan.citation(link.source).startswith("Synthetic")


@pytest.mark.parametrize(("n", "regions"), [(2, 4), (5, 1), (130, 6)])
def test_small_and_odd_sizes(n: int, regions: int) -> None:
    wan = synthetic_wan(n, regions=regions)
    assert wan.n == n
    assert (wan.hops >= 0).all()
    if n > 100:
        assert wan.names[0] == "I000"


def test_rejects_fewer_than_two_islands() -> None:
    with pytest.raises(ValueError, match="n >= 2"):
        synthetic_wan(1)
