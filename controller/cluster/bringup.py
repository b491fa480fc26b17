"""A testbed brought up across a cluster's machines, for an experiment to play on: the cluster
counterpart of controller/bringup.py's `running_testbed`.

    with cluster_testbed(cluster, spec, params, node_of, survey) as up:
        up.testbed.advance()              # programmed over P4Runtime at each machine's address
        islands = up.islands(config, logs)  # island processes through each machine's agent

The network is built by every machine's agent (`ClusterNetwork.build`), programmed and watched
from here (`controller.bringup.programmed`), and torn down on every machine when the block ends,
whatever ends it. The island processes are each machine's agent's (`RemoteIslands`), their
times corrected by the machine's measured clock offset (`Survey.clocks`).
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from controller.bringup import programmed
from controller.cluster.agent import Agents
from controller.cluster.clocks import ClockOffset
from controller.cluster.islands import RemoteIslands
from controller.cluster.network import ClusterNetwork
from controller.cluster.raycluster import ClusterError
from controller.cluster.survey import Survey
from controller.planner.cost import CostParams
from controller.planner.schedule import Schedule
from controller.rundir import ProcessRecord
from controller.testbed import Testbed, Watchdog
from innet.stopping import held
from topo.exceptions import NetworkBuildError
from topo.mininet_net import NetworkSpec
from topo.siteplan import SlotPool

log = logging.getLogger(__name__)


@dataclass
class ClusterTestbed:
    """A testbed up across machines: the network, the controller's testbed, its watchdog."""

    cluster: Agents
    network: ClusterNetwork
    testbed: Testbed
    watchdog: Watchdog
    clocks: dict[str, ClockOffset]  # per machine: its clock against the driver's

    def islands(self, config: Path, logs: Path) -> RemoteIslands:
        """The island processes, each on its city's machine; their logs are fetched into
        `logs` when they stop."""
        names = self.testbed.wan.names
        node_of = self.network.node_of
        return RemoteIslands(self.cluster, node_of, names, self.clocks, config, logs)

    def shape_leaders(self, rate_bps: float | None) -> None:
        machines = self.network.machines
        asked = [self.cluster.agent(m).shape_leaders.remote(rate_bps) for m in machines]
        self.cluster.gather_from(machines, "its leaders' uplinks shaped", asked)

    def record_processes(self, processes: Sequence[ProcessRecord]) -> None:
        """Nothing to record here: each machine's agent records its own processes."""

    def terminate_islands(self) -> None:
        """SIGTERM to every machine's island processes still running, each by its agent (the
        service stopped by a signal: the round ends now instead of at its deadline)."""
        machines = self.network.machines
        asked = [self.cluster.agent(m).islands_terminate.remote() for m in machines]
        try:
            self.cluster.gather_from(machines, "its island processes signalled", asked)
        except ClusterError as err:  # a machine lost: the round fails naming it all the same
            log.warning("island processes not signalled everywhere: %s", err)


@contextlib.contextmanager
def cluster_testbed(
    cluster: Agents,
    spec: NetworkSpec,
    params: CostParams,
    node_of: Sequence[str],
    survey: Survey,
    *,
    schedule: Schedule | None = None,
    on_heal: Callable[[list[str]], None] | None = None,
) -> Iterator[ClusterTestbed]:
    """Build the network of `spec` with each city on the machine `node_of` names, program it
    from here, watch it; tear it down on every machine when the block ends."""
    if spec.slots is None:
        raise NetworkBuildError("a testbed's network needs its slot pool: give the spec slots")
    pool = SlotPool(spec.slots, spec.scale, spec.packet_format)
    wires = tuple((a, b, seconds) for (a, b), seconds in survey.physical.items())
    clocks = {node.address: clock for node, clock in zip(survey.nodes, survey.clocks, strict=True)}
    network = ClusterNetwork.build(cluster, spec, node_of, wires)
    try:
        with programmed(spec.wan, network, params, pool, schedule, on_heal) as (tb, watchdog):
            yield ClusterTestbed(cluster, network, tb, watchdog, clocks)
    finally:
        with held():  # a stop signal never cuts the teardown short (innet/stopping.py)
            network.stop()
    log.info("testbed torn down on %d machines", len(network.machines))
