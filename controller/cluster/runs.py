"""`innet run SCENARIO --cluster HEAD`: where each island goes on the cluster, and what is checked
before anything starts there.

    with Cluster.connect(head) as cluster:
        prepared = prepare(cluster, emulation)        # refuses, naming the node or the link
        run = Run(emulation, folder, prepared.testbeds(emulation), cluster=prepared.to_json())

`prepare` checks every node (root, namespaces, Mininet, the driver's versions) and measures the
clocks and the wires between them (`Cluster.survey`), then measures every machine's own frame
rates, cores and other load, there by its agent for this scenario as the machine check
measures one machine (about a second, all machines at once), and places the islands: as the
scenario's `placement` says (every machine it names must be a node of the cluster, refused
before any is measured; each machine's load judged at its rates, not refused), or chosen
(`choose_placement`: the fewest and slowest WAN links cross machines, each machine within the
machine check's bound). Then every WAN link that crosses machines must be longer than
the wire between them (`crossing_delays`), and every machine's clock must be known within the
plan's smallest timing headroom (`judge_clocks`: refused, or in the `flag` mode every round
flagged `clocks`): round times are read on this machine's clock, start times sent on each
machine's. A refusal leaves nothing started anywhere.
"""

from __future__ import annotations

import contextlib
import logging
import math
from collections.abc import Iterator
from dataclasses import dataclass

from controller.cluster.bringup import cluster_testbed
from controller.cluster.clocks import (
    ClockMode,
    ClockVerdict,
    CrossingDelays,
    crossing_delays,
    judge_clocks,
)
from controller.cluster.placement import (
    Node,
    Placement,
    choose_placement,
    island_loads,
    placement_from,
)
from controller.cluster.raycluster import Cluster, ClusterError
from controller.cluster.survey import Survey
from controller.runner.emulation import Emulation, MemoryPoint
from controller.runner.need import plan_need
from controller.runner.run import Testbeds, UpTestbed, point_spec
from innet.jsontypes import JSONObject
from innet.vocabulary import Shaping

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class PreparedCluster:
    """A cluster checked and measured, and the islands placed on it."""

    cluster: Cluster
    survey: Survey
    placement: Placement
    crossing: CrossingDelays
    clocks: ClockVerdict
    chosen: bool  # placed by `choose_placement`, not by the scenario

    @property
    def node_of(self) -> tuple[str, ...]:
        return self.placement.nodes

    def testbeds(self, em: Emulation) -> Testbeds:
        """The testbed of each memory point, built across the cluster as placed."""

        @contextlib.contextmanager
        def testbed(point: MemoryPoint) -> Iterator[UpTestbed]:
            spec = point_spec(em, point, shaping=Shaping.LINKS)
            first = point.plays[0].plan.schedule
            with cluster_testbed(
                self.cluster, spec, point.params, self.node_of, self.survey, schedule=first
            ) as up:
                yield up

        return testbed

    def to_json(self) -> JSONObject:
        """What the results folder keeps of it (cluster.json)."""
        return {
            **self.survey.to_json(),
            "placement": dict(self.placement.as_mapping()),
            "placement_chosen": self.chosen,
            "placement_summary": self.placement.summary,
            **self.crossing.to_json(),
            "clocks": self.clocks.to_json(),
        }


def prepare(
    cluster: Cluster,
    em: Emulation,
    clock_mode: ClockMode | str = ClockMode.REFUSE,
    exchanges: int = 30,
) -> PreparedCluster:
    """Check and measure the cluster, place the islands, check the links and the clocks (a
    clock known too loosely refused, or in the `flag` mode the verdict says why every round is
    flagged)."""
    survey = cluster.survey(exchanges)
    if not survey.nodes:
        raise ClusterError(f"the cluster at {survey.address} has no node")
    wan = em.scenario.wan
    given = em.scenario.placement
    if given is not None:  # refused before any machine is asked to measure itself
        mapping = dict(zip(wan.names, given, strict=True))
        placement_from(mapping, wan, [Node(n.address, n.cores, math.inf) for n in survey.nodes])
    asked = [agent.measure_machine.remote(em) for agent in cluster.agents]
    machines = cluster.gather("its frame rates, measured", asked)
    nodes = [Node.measured(n.address, m) for n, m in zip(survey.nodes, machines, strict=True)]
    if given is not None:  # judged at the machines' own rates, not refused for its load
        placement = placement_from(mapping, wan, nodes, island_loads(em))
    else:
        placement = choose_placement(wan, island_loads(em), nodes)
    log.info("%s", placement.summary)
    node_of = dict(zip(wan.names, placement.nodes, strict=True))
    crossing = crossing_delays(wan.links, node_of, survey.physical)
    offsets = {n.address: c for n, c in zip(survey.nodes, survey.clocks, strict=True)}
    used = {m: offsets[m] for m in placement.nodes}
    verdict = judge_clocks(used, plan_need(em).headroom_s, clock_mode)
    return PreparedCluster(cluster, survey, placement, crossing, verdict, given is None)
