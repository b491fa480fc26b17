"""The bandwidth search (controller/planner/utilisation.py): its bisection on curves known in
closed form, and the assumption it rests on, utilisation not falling as bandwidth grows."""

import math

import numpy as np
import pytest

from controller.planner.compute import Compute, steady_utilisation
from controller.planner.cost import CostParams
from controller.planner.utilisation import (
    HIGH_BPS,
    LOW_BPS,
    TOLERANCE,
    RatePlans,
    RoundCompute,
    least_rate,
    scaled,
)
from innet.vocabulary import NetworkMode

GB = 10**9
BASE = CostParams(update_bytes=GB, memory_bytes=int(1.6 * GB), access_bps=10e9)


def test_scaling_keeps_the_backbone_to_access_ratio(nine) -> None:
    half = scaled(nine, 0.5)
    assert [link.capacity_bps for link in half.links] == [
        link.capacity_bps / 2 for link in nine.links
    ]
    assert [link.delay_s for link in half.links] == [link.delay_s for link in nine.links]


def curve_of(exchange_bits: float, delay_s: float, compute_s: float = 9.0):
    """Utilisation without overlap of one exchange of `exchange_bits` at b, plus a delay."""
    return lambda bps: (steady_utilisation(compute_s, [exchange_bits / bps + delay_s], False), "f")


def test_bisection_finds_the_least_rate_to_within_the_tolerance() -> None:
    # C = 9 s, E = 8 Gbit / b: 90% needs E = 1 s, b = 8 Gb/s
    found = least_rate(curve_of(8e9, 0.0), 0.9)
    assert found.bandwidth_bps is not None and found.family == "f"
    assert 8e9 <= found.bandwidth_bps <= 8e9 * (1 + TOLERANCE)
    assert found.utilisation >= 0.9


def test_a_target_the_delays_forbid_is_unreachable_with_the_best_utilisation() -> None:
    # a 200 ms delay: at most 9 / 9.2 = 97.8%, whatever the bandwidth
    found = least_rate(curve_of(8e9, 0.2), 0.99)
    assert found.bandwidth_bps is None
    assert found.utilisation == pytest.approx(9 / (9 + 0.2 + 8e9 / HIGH_BPS))
    assert found.text() == "unreachable (97.8% at most)"


def test_the_family_named_is_the_one_reaching_the_target() -> None:
    def curve(bps: float) -> tuple[float, str]:
        return (0.5, "low") if bps < 9e12 else (0.95, "high")

    found = least_rate(curve, 0.9)
    assert found.family == "high" and found.utilisation == 0.95
    assert 9e12 <= found.bandwidth_bps <= HIGH_BPS


def test_a_target_reached_at_the_low_end_says_so() -> None:
    found = least_rate(curve_of(1e3, 0.0), 0.5)
    assert found.bandwidth_bps == LOW_BPS and found.text().startswith("<= 1 Mb/s")


def best_curve(rates: RatePlans, network: str, overlap: bool, grid) -> list[float]:
    return [rates.best(network, bps, overlap)[0] for bps in grid]


@pytest.mark.parametrize("memory", [int(1.6 * GB), 64 * 10**6])
def test_utilisation_does_not_fall_as_bandwidth_grows_on_the_nine_cities(nine, memory) -> None:
    """The bisection's assumption, checked: every family's mean round time never grows with the
    access rate (links scaled with it), so neither does the best utilisation."""
    families = ["all-to-all", "cliques-3", "ring-pairs", "exponential-pairs"]
    rates = RatePlans(nine, CostParams(GB, memory, 10e9), 9.0, families)
    grid = np.logspace(math.log10(LOW_BPS), math.log10(HIGH_BPS), 29)
    for network in (NetworkMode.ONE_DC, "plain", "multicast", "inna"):
        for family in rates.round_times(network, grid[0]):
            means = [np.mean(rates.round_times(network, b)[family]) for b in grid]
            assert np.all(np.diff(means) <= 1e-12 * np.array(means[:-1])), (network, family)
        for overlap in (False, True):
            curve = best_curve(rates, network, overlap, grid)
            assert np.all(np.diff(curve) >= 0), (network, overlap)
            assert curve[0] < 0.01 and curve[-1] > 0.98  # the range spans the whole curve


def test_one_building_outruns_a_plain_wan_of_the_same_family_only(nine) -> None:
    """The reference is plain ring all-reduce: a plain WAN's ring is slower by its delays,
    but in-line aggregation over the WAN sends the update once, not 2 (k - 1) / k times."""
    compute = RoundCompute.of(Compute(0.45, "given"), 20, nine, BASE, 1e-3)
    assert compute.round_s == pytest.approx(9.0)
    assert compute.building.n == nine.n and len(compute.building.links) == 36
    assert {link.capacity_bps for link in compute.building.links} == {90e9}
    rates = RatePlans(nine, BASE, compute.round_s, ["all-to-all"])
    one_dc = compute.utilisation(compute.one_dc)
    times = rates.round_times(NetworkMode.ONE_DC, BASE.access_bps)["all-to-all"]
    assert one_dc == pytest.approx(tuple(steady_utilisation(9.0, times, o) for o in (False, True)))
    plain = rates.best("plain", BASE.access_bps, overlap=False)[0]
    inna = rates.best("inna", BASE.access_bps, overlap=False)[0]
    assert plain < one_dc[0] < inna
