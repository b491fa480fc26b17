"""The same islands in one data centre (`Wan.in_one_building`): the reference row."""

from __future__ import annotations

import itertools

import pytest

from topo.loader import default_wan
from topo.wan import BUILDING_DELAY_S


def test_every_pair_is_one_hop_of_ten_microseconds() -> None:
    wan = default_wan()
    building = wan.in_one_building(90e9)
    assert building.names == wan.names
    assert len(building.links) == wan.n * (wan.n - 1) // 2
    for u, v in itertools.permutations(range(wan.n), 2):
        assert building.hops[u, v] == 1
        assert building.delay[u, v] == pytest.approx(BUILDING_DELAY_S)
    assert {link.capacity_bps for link in building.links} == {90e9}
    assert {link.jitter_s for link in building.links} == {0.0}
    assert not building.measured_rtt_s
    assert building.name == "nine-cities-one-dc"


def test_the_jitter_of_the_wan_does_not_come_along() -> None:
    building = default_wan().with_jitter(2e-3).in_one_building(1e9, delay_s=20e-6)
    assert {link.jitter_s for link in building.links} == {0.0}
    assert {link.delay_s for link in building.links} == {20e-6}
