"""A NetworkSpec is checked when it is made; what is in its way, before anything is built."""

from __future__ import annotations

import socket

import pytest

from topo.exceptions import NetworkBuildError, SlotPoolError
from topo.loader import default_wan
from topo.mininet_hosts import check_nothing_in_the_way, ports_in_use
from topo.mininet_net import NetworkSpec

NINE = default_wan().names


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


def test_the_ports_the_switches_listen_on_are_named() -> None:
    p4switch = NetworkSpec(default_wan(), 1, grpc_base_port=20000).listening_ports()
    assert p4switch == {20000 + u: f"{city}'s P4Runtime" for u, city in enumerate(NINE)}
    bmv2 = NetworkSpec(default_wan(), 1, target="bmv2").listening_ports()
    assert bmv2[9559] == "Tokyo's P4Runtime" and bmv2[9090] == "Tokyo's BMv2 Thrift"
    assert len(bmv2) == 18


def test_a_port_something_listens_on_is_refused_before_anything_is_built() -> None:
    with socket.socket() as other:  # another program's server, on loopback alone
        other.bind(("127.0.0.1", 0))
        other.listen()
        taken = other.getsockname()[1]
        assert ports_in_use([taken]) == [taken]
        ports = {taken: "Tokyo's P4Runtime"}
        with pytest.raises(NetworkBuildError) as refused:
            check_nothing_in_the_way([], ports)
        assert str(refused.value) == (
            f"TCP port {taken} (Tokyo's P4Runtime) already in use on this machine (another "
            "testbed or program listens there): stop it, or pass another --grpc-base-port"
        )
        with pytest.raises(NetworkBuildError, match=r"stop it \(BMv2's Thrift ports are 9090 "):
            check_nothing_in_the_way([], {taken: "Tokyo's BMv2 Thrift"})
    assert ports_in_use([taken]) == []  # closed: free again at once
    check_nothing_in_the_way([], ports)
