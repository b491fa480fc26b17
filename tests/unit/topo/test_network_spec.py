"""A NetworkSpec is checked when it is made, before any network is built."""

from __future__ import annotations

import pytest

from topo.exceptions import NetworkBuildError, SlotPoolError
from topo.loader import default_wan
from topo.mininet_net import NetworkSpec


@pytest.mark.parametrize("scale", [0.0, -1.0, float("nan"), float("inf")])
def test_a_scale_that_is_not_finite_and_positive_is_refused(scale: float) -> None:
    with pytest.raises(NetworkBuildError, match="scale must be finite and positive"):
        NetworkSpec(default_wan(), 1, scale=scale)


@pytest.mark.parametrize("slots", [0, 3, 131072])
def test_slots_innet_p4_cannot_compile_with_are_refused(slots: int) -> None:
    with pytest.raises(SlotPoolError, match=r"innet\.p4 needs a power of two from 1 to 65536"):
        NetworkSpec(default_wan(), 1, slots=slots)


def test_a_good_spec_is_made() -> None:
    assert NetworkSpec(default_wan(), 2, slots=64, scale=100).slots == 64
