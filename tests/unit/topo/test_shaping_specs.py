"""How a WAN link becomes a switch's egress spec or Mininet's netem parameters."""

from __future__ import annotations

from topo.loader import default_wan
from topo.shaping import kernel_link_params, switch_shape
from topo.wan import WanLink


def link() -> WanLink:
    return default_wan().links[0]


def test_a_lossless_link_is_delay_and_rate() -> None:
    wan_link = link()
    spec = switch_shape(wan_link, 1000.0)
    assert spec.startswith("delay=") and ",rate=" in spec and "loss" not in spec
    assert "loss" not in kernel_link_params(wan_link, 1000.0)


def test_loss_reaches_both_kinds_of_shaping() -> None:
    wan_link = link()
    assert switch_shape(wan_link, 1000.0, 0.01).endswith(",loss=0.01")
    assert kernel_link_params(wan_link, 1000.0, 0.01)["loss"] == 1.0  # netem takes percent
