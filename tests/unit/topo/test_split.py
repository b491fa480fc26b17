"""topo/split.py and the link emulator of a machine's share: which cities a machine builds, which
links cross to another machine and how their tunnels are numbered and shaped, and what a split
that cannot be is refused for."""

from __future__ import annotations

import dataclasses

import pytest

from topo.exceptions import NetworkBuildError
from topo.linknode import emulated_links, emulator_shapes, interface_names, link_ports, veth_ports
from topo.loader import default_wan
from topo.mininet_net import NetworkSpec
from topo.shaping import switch_shape
from topo.split import TUNNEL_BASE_PORT, Split
from topo.wan import Wan

A, B, C = "10.250.0.1", "10.250.0.2", "10.250.0.3"
WIRES = ((A, B, 0.0002), (A, C, 0.0003), (B, C, 0.0001))


def thirds(wan: Wan) -> tuple[str, ...]:
    """Three cities a machine, in WAN order."""
    return tuple((A, B, C)[u * 3 // wan.n] for u in range(wan.n))


def test_every_link_is_carried_once_each_way_across_the_machines() -> None:
    wan = default_wan()
    node_of = thirds(wan)
    splits = [Split(m, node_of, WIRES) for m in (A, B, C)]
    assert [s.cities for s in splits] == [(0, 1, 2), (3, 4, 5), (6, 7, 8)]
    links = emulated_links(wan)
    crossing = [c for s in splits for c in s.crossing(wan)]
    # each crossing link seen from both of its machines, no other link
    cut = [k for k, (u, v) in enumerate(links) if node_of[u] != node_of[v]]
    assert sorted(c.k for c in crossing) == sorted(cut * 2)
    for c in crossing:
        u, v = links[c.k]
        assert {c.here, c.there} == {u, v} and node_of[c.here] == c.local
        assert c.peer == node_of[c.there] and c.udp_port == TUNNEL_BASE_PORT + c.k
        assert {c.veth_port, c.tunnel_port} == set(link_ports(c.k))
        assert c.veth_port == link_ports(c.k)[0 if c.here == u else 1]
        wire = next(s for a, b, s in WIRES if {a, b} == {c.local, c.peer})
        assert c.delay_s == pytest.approx(wan.link(u, v).delay_s - wire, abs=1e-12)
        assert c.tunnel_arg == f"{c.tunnel_port}@{c.local}:{c.udp_port}={c.peer}:{c.udp_port}"


def test_a_machine_s_emulator_shapes_each_way_once_where_it_leaves() -> None:
    wan = default_wan()
    split = Split(B, thirds(wan), WIRES)
    crossing = {c.k: c for c in split.crossing(wan)}
    shapes = emulator_shapes(wan, 1000.0, 0.01, split)
    ports = veth_ports(wan, split)
    for k, (u, v) in enumerate(emulated_links(wan)):
        if k in crossing:
            c = crossing[k]
            assert shapes[c.tunnel_port] == switch_shape(c.shaped_link, 1000.0, 0.01)
            assert c.veth_port not in shapes and c.veth_port in ports  # shaped on the other side
            assert c.tunnel_port not in ports
        elif u in split.cities:
            for port in link_ports(k):
                assert shapes[port] == switch_shape(wan.link(u, v), 1000.0, 0.01)
                assert port in ports
        else:
            assert not set(link_ports(k)) & (set(shapes) | set(ports))
    assert interface_names(wan, "", split) == [f"wan-eth{p}" for p in ports]


def test_one_machine_s_share_is_the_whole_when_it_holds_every_city() -> None:
    wan = default_wan()
    whole = Split(A, (A,) * wan.n)
    assert whole.cities == tuple(range(wan.n)) and whole.crossing(wan) == []
    assert emulator_shapes(wan, 1000.0, 0.0, whole) == emulator_shapes(wan, 1000.0, 0.0)
    assert interface_names(wan, "", whole) == interface_names(wan)


def test_a_link_shorter_than_the_wire_is_refused_naming_it() -> None:
    wan = default_wan()
    slow = ((A, B, 0.2), (A, C, 0.0003), (B, C, 0.0001))  # longer than any link of the WAN
    with pytest.raises(NetworkBuildError, match=r"link .+: its delay .+ is below the 200 ms"):
        Split(A, thirds(wan), slow).crossing(wan)


@pytest.mark.parametrize(
    ("here", "node_of", "wires", "message"),
    [
        ("10.9.9.9", (A, B), WIRES, "no city is placed on this machine, 10.9.9.9"),
        ("head", ("head", B), WIRES, "machine address 'head': a tunnel needs an IPv4 address"),
        (A, (A, "::1"), WIRES, "machine address '::1'"),
    ],
)
def test_a_split_that_cannot_be_is_refused(
    here: str, node_of: tuple[str, ...], wires: tuple[tuple[str, str, float], ...], message: str
) -> None:
    with pytest.raises(NetworkBuildError, match=message):
        Split(here, node_of, wires)


def test_a_crossing_between_machines_never_measured_is_refused() -> None:
    wan = default_wan()
    with pytest.raises(NetworkBuildError, match=rf"between machines {A} and {C} was not measured"):
        Split(A, thirds(wan), ()).crossing(wan)
    with pytest.raises(NetworkBuildError, match="the split places 2 cities; the WAN has 9"):
        Split(A, (A, B), WIRES).crossing(wan)


def test_a_split_spec_builds_its_share_with_link_emulators_on_the_machine_s_address() -> None:
    wan = default_wan()
    spec = NetworkSpec(wan, 1, split=Split(C, thirds(wan), WIRES))
    assert spec.cities == (6, 7, 8) and spec.grpc_host == C
    assert sorted(spec.listening_ports()) == [spec.grpc_base_port + u for u in (6, 7, 8)]
    whole = NetworkSpec(wan, 1)
    assert whole.cities == tuple(range(wan.n)) and whole.grpc_host == "127.0.0.1"
    with pytest.raises(NetworkBuildError, match="carries its WAN links in link emulators"):
        dataclasses.replace(spec, shaping="switch")
