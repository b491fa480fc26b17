"""controller/cluster/network.py with stand-in agents (no Ray, no network): every machine is
given its own share of the spec, the controller's calls reach the machine that holds the city,
the facts and counters come back as one network's, and a share that fails to build takes the
others down with it."""

from __future__ import annotations

import time
from dataclasses import dataclass

import pytest

from controller.cluster.network import ClusterNetwork
from controller.network import NetworkFacts, SwitchSite
from innet.vocabulary import P4Target, Shaping
from tests.unit.cluster.fakes import StandIn, StandInCluster
from topo.exceptions import NetworkBuildError
from topo.loader import default_wan
from topo.mininet_net import NetworkSpec
from topo.siteplan import device_id, grpc_address

A, B, C = "10.250.0.1", "10.250.0.2", "10.250.0.3"
WIRES = ((A, B, 0.0002), (A, C, 0.0003), (B, C, 0.0001))
NODE_OF = (A, A, A, B, B, B, C, C, C)


@dataclass
class Machine(StandIn):
    """A machine's agent building its share of the network."""

    fail_build: bool = False
    cities: tuple[int, ...] = ()

    def on_build(self, spec: NetworkSpec) -> tuple[SwitchSite, ...]:
        assert spec.split is not None and spec.split.here == self.address
        if self.fail_build:
            raise NetworkBuildError(f"node {self.address}: no room")
        self.cities = spec.split.cities
        return tuple(
            SwitchSite(u, f"s{u}", grpc_address(u, host=self.address), device_id(u))
            for u in self.cities
        )

    def on_network_facts(self) -> NetworkFacts:
        engines = tuple(f"engine-{u}" for u in self.cities)
        return NetworkFacts(P4Target.P4SWITCH, Shaping.LINKS, 1000.0, "/w", engines)

    def on_link_counters(self, reset_peaks: bool) -> dict[str, str]:
        return {"wan": f"counters of {self.address}"}

    def on_restart_links(self, within_s: float) -> list[str]:
        return ["wan"]

    def on_port_counters(self, city: int, reset_peaks: bool) -> tuple[str, str, tuple[int, bool]]:
        return ("port_counters", self.address, (city, reset_peaks))

    def on_control_alive(self, city: int) -> tuple[str, str, tuple[int]]:
        return ("control_alive", self.address, (city,))

    def on_process_alive(self, city: int) -> bool:
        return True


def built() -> tuple[StandInCluster, ClusterNetwork]:
    cluster = StandInCluster({m: Machine(m) for m in (A, B, C)})
    spec = NetworkSpec(default_wan(), 1, slots=64, scale=1000.0)
    return cluster, ClusterNetwork.build(cluster, spec, NODE_OF, WIRES)


def test_each_machine_builds_its_share_and_the_sites_are_the_whole_in_city_order() -> None:
    _, network = built()
    assert [s.city for s in network.sites] == list(range(9))
    assert [s.grpc_addr.split(":")[0] for s in network.sites] == list(NODE_OF)
    assert network.machines == (A, B, C)
    assert network.facts().engines == tuple(f"engine-{u}" for u in range(9))
    assert network.facts().shaping == Shaping.LINKS and network.hosts_per_city == 1


def test_the_controller_s_calls_reach_the_machine_of_the_city() -> None:
    cluster, network = built()
    assert network.port_counters(4, True) == ("port_counters", B, (4, True))
    assert network.control_alive(8) == ("control_alive", C, (8,))
    assert network.process_alive(0) is True
    assert cluster.agent(A).calls[-1] == ("process_alive", (0,))
    network.restart(7, time.monotonic() + 30.0)
    name, args = cluster.agent(C).calls[-1]
    assert name == "restart" and args[0] == 7 and 0 < args[1] <= 30.0  # a duration, not a time
    network.restart(7, time.monotonic() - 5.0)
    assert cluster.agent(C).calls[-1][1][1] == 0.0
    assert network.link_counters() == {f"{m} wan": f"counters of {m}" for m in (A, B, C)}
    assert network.restart_links(time.monotonic() + 1.0) == [f"{m} wan" for m in (A, B, C)]


def test_a_share_that_fails_takes_the_others_down_and_says_which() -> None:
    cluster = StandInCluster({m: Machine(m, fail_build=m == B) for m in (A, B, C)})
    spec = NetworkSpec(default_wan(), 1, slots=64, scale=1000.0)
    with pytest.raises(NetworkBuildError, match=f"node {B}: no room"):
        ClusterNetwork.build(cluster, spec, NODE_OF, WIRES)
    for agent in cluster.agents:
        assert ("teardown", ()) in agent.calls


def test_a_network_is_stopped_once_on_every_machine() -> None:
    cluster, network = built()
    network.stop()
    network.stop()
    for agent in cluster.agents:
        assert [c for c in agent.calls if c[0] == "teardown"] == [("teardown", ())]


def test_a_split_that_cannot_be_is_refused_before_any_machine_builds() -> None:
    cluster = StandInCluster({m: Machine(m) for m in (A, B, C)})
    spec = NetworkSpec(default_wan(), 1, slots=64, scale=1000.0)
    with pytest.raises(NetworkBuildError, match="was not measured"):
        ClusterNetwork.build(cluster, spec, NODE_OF, ())
    assert all(agent.calls == [] for agent in cluster.agents)
