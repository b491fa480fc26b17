"""Which shaping a testbed uses for each request, target and kernel, and the link emulators'
names and shapes (topo/shaping.py, topo/linknode.py)."""

from __future__ import annotations

import pytest

from topo import shaping
from topo.exceptions import NetworkBuildError, ShapingError
from topo.linknode import emulated_links, emulator_shapes, interface_names, link_ports
from topo.loader import default_wan
from topo.mininet_hosts import check_names
from topo.p4node import IFNAMSIZ
from topo.shaping import choose_shaping, switch_shape


@pytest.fixture(params=[True, False], ids=["netem", "no-netem"])
def netem(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> bool:
    monkeypatch.setattr(shaping, "netem_available", lambda: request.param)
    return bool(request.param)


@pytest.mark.parametrize("target", ["p4switch", "bmv2"])
def test_links_and_auto_work_for_every_target_with_or_without_netem(
    netem: bool, target: str
) -> None:
    assert choose_shaping("links", target) == "links"
    user_space = "switch" if target == "p4switch" else "links"
    assert choose_shaping("auto", target) == ("kernel" if netem else user_space)


def test_kernel_shaping_needs_netem_and_says_what_to_use_instead(netem: bool) -> None:
    if netem:
        assert choose_shaping("kernel", "bmv2") == "kernel"
        return
    with pytest.raises(ShapingError, match=r"needs netem.*--shaping links or switch"):
        choose_shaping("kernel", "p4switch")
    with pytest.raises(ShapingError, match=r"needs netem.*--shaping links \(or auto\)"):
        choose_shaping("kernel", "bmv2")


def test_bmv2_cannot_shape_its_own_ports(netem: bool) -> None:
    assert choose_shaping("switch", "p4switch") == "switch"
    with pytest.raises(ShapingError, match="BMv2 cannot shape its own ports: use --shaping links"):
        choose_shaping("switch", "bmv2")


def test_an_unknown_request_is_refused() -> None:
    with pytest.raises(ShapingError, match="shaping must be one of auto, kernel, switch, links"):
        choose_shaping("netem")


def test_one_emulator_carries_every_link_shaping_both_directions_as_the_switches_would() -> None:
    wan = default_wan()
    links = emulated_links(wan)
    assert sorted(links) == sorted(
        tuple(sorted((wan.index(link.a), wan.index(link.b)))) for link in wan.links
    )
    assert [link_ports(k) for k in range(3)] == [(1, 2), (3, 4), (5, 6)]
    shapes = emulator_shapes(wan, 1000.0, 0.01)
    assert sorted(shapes) == list(range(1, 2 * len(links) + 1))
    for k, (u, v) in enumerate(links):
        for port in link_ports(k):
            assert shapes[port] == switch_shape(wan.link(u, v), 1000.0, 0.01)
    names = interface_names(wan)
    assert len(names) == len(set(names)) == 2 * len(wan.links)
    assert all(len(n) <= IFNAMSIZ for n in interface_names(wan, "t12"))
    assert not set(names) & set(check_names(wan, 2, ""))  # no clash with the edges' ports


def test_a_prefix_too_long_for_the_emulators_interfaces_is_refused() -> None:
    with pytest.raises(NetworkBuildError, match="link emulator interface names longer than 15"):
        interface_names(default_wan(), "prefix12")
