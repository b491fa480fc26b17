"""A network split across a cluster's machines, as the controller sees it: a
`controller.network.Network` whose calls go to the agent of the machine that holds each city.

    network = ClusterNetwork.build(cluster, spec, node_of, wires)  # every share built at once
    testbed = Testbed.start(spec.wan, network, params, pool=pool)  # P4Runtime to each machine
    ...
    network.stop()

`node_of` gives, per city, the address of the machine that builds it (a node of the cluster);
`wires`, the one-way delay measured between every two of them (`Survey.wires`). Each machine
gets the same `NetworkSpec` with its own `topo.split.Split`, builds its cities and its link
emulator, crossing links tunnelled to the other machines' emulators, and serves its switches'
P4Runtime on its own address. Deadlines cross machines as durations (a monotonic clock is one
machine's own).
"""

from __future__ import annotations

import dataclasses
import logging
import time
from collections.abc import Sequence
from typing import Any

from controller.cluster.agent import Agents
from controller.network import NetworkFacts, SwitchSite
from controller.runner.exceptions import ExperimentError
from topo.mininet_net import NetworkSpec
from topo.p4node import PortCounters, SwitchPipeline
from topo.split import Split

log = logging.getLogger(__name__)


class ClusterNetwork:
    """The switches of a network whose cities are built on several machines."""

    def __init__(
        self,
        cluster: Agents,
        node_of: tuple[str, ...],
        sites: tuple[SwitchSite, ...],
        hosts_per_city: int,
        facts: NetworkFacts,
    ) -> None:
        self.cluster = cluster
        self.node_of = node_of
        self._sites = sites
        self._hosts_per_city = hosts_per_city
        self._facts = facts
        self.stopped = False

    @property
    def machines(self) -> tuple[str, ...]:
        """The machines that hold a city, in the order they are first named."""
        return tuple(dict.fromkeys(self.node_of))

    @classmethod
    def build(
        cls,
        cluster: Agents,
        spec: NetworkSpec,
        node_of: Sequence[str],
        wires: Sequence[tuple[str, str, float]],
    ) -> ClusterNetwork:
        """Every machine's share built at once; what was built is torn down again if any
        machine fails."""
        node_of = tuple(node_of)
        machines = tuple(dict.fromkeys(node_of))
        specs = [
            dataclasses.replace(spec, split=Split(m, node_of, tuple(wires))) for m in machines
        ]  # each checked here first: a split that cannot be fails before anything is built
        asked = [cluster.agent(m).build.remote(s) for m, s in zip(machines, specs, strict=True)]
        try:
            shares = cluster.gather_from(machines, "its share of the network", asked)
            facts = cluster.gather_from(
                machines,
                "its network's facts",
                [cluster.agent(m).network_facts.remote() for m in machines],
            )
        except BaseException:
            cls._teardown(cluster, machines)
            raise
        sites = tuple(sorted((s for share in shares for s in share), key=lambda s: s.city))
        return cls(cluster, node_of, sites, spec.hosts_per_city, _whole(facts, node_of, machines))

    @staticmethod
    def _teardown(cluster: Agents, machines: Sequence[str]) -> None:
        """Every machine tears its share down; one that does not answer (lost) is logged, not
        raised: what it held is its janitor's, or went with it."""
        asked = [cluster.agent(m).teardown.remote() for m in machines]
        try:
            cluster.gather_from(machines, "its network torn down", asked)
        except ExperimentError as err:
            log.error("%s", err)

    def _call(self, city: int, method: str, *args: object) -> Any:
        machine = self.node_of[city]
        ref = getattr(self.cluster.agent(machine), method).remote(*args)
        return self.cluster.ask(machine, f"{method} of city {city}", ref)

    # --- the Network protocol ------------------------------------------------------------

    @property
    def sites(self) -> tuple[SwitchSite, ...]:
        return self._sites

    @property
    def hosts_per_city(self) -> int:
        return self._hosts_per_city

    def pipeline(self) -> SwitchPipeline:
        pipeline: SwitchPipeline = self._call(0, "pipeline")
        return pipeline

    def process_alive(self, city: int) -> bool:
        return bool(self._call(city, "process_alive", city))

    def restart(self, city: int, deadline: float) -> None:
        self._call(city, "restart", city, max(0.0, deadline - time.monotonic()))

    def port_counters(self, city: int, reset_peaks: bool = False) -> PortCounters | None:
        counters: PortCounters | None = self._call(city, "port_counters", city, reset_peaks)
        return counters

    def control_alive(self, city: int) -> bool | None:
        alive: bool | None = self._call(city, "control_alive", city)
        return alive

    def link_counters(self, reset_peaks: bool = False) -> dict[str, PortCounters]:
        """Every machine's link emulator, named by machine and emulator."""
        machines = self.machines
        asked = [self.cluster.agent(m).link_counters.remote(reset_peaks) for m in machines]
        found = self.cluster.gather_from(machines, "its link emulator's counters", asked)
        return {
            f"{m} {name}": c
            for m, per in zip(machines, found, strict=True)
            for name, c in per.items()
        }

    def restart_links(self, deadline: float) -> list[str]:
        machines = self.machines
        within = max(0.0, deadline - time.monotonic())
        asked = [self.cluster.agent(m).restart_links.remote(within) for m in machines]
        found = self.cluster.gather_from(machines, "its link emulator restarted", asked)
        return [f"{m} {name}" for m, names in zip(machines, found, strict=True) for name in names]

    def facts(self) -> NetworkFacts:
        return self._facts

    def stop(self) -> None:
        """Tear down every machine's share (once)."""
        if self.stopped:
            return
        self.stopped = True
        self._teardown(self.cluster, self.machines)


def _whole(
    facts: Sequence[NetworkFacts], node_of: Sequence[str], machines: Sequence[str]
) -> NetworkFacts:
    """The machines' facts as one network's: each city's engine from its machine."""
    by_machine = dict(zip(machines, facts, strict=True))
    engines: list[str] = []
    seen = {m: 0 for m in machines}
    for machine in node_of:  # a machine's engines are in the order of its cities
        engines.append(by_machine[machine].engines[seen[machine]])
        seen[machine] += 1
    first = facts[0]
    return NetworkFacts(first.target, first.shaping, first.scale, first.workdir, tuple(engines))
