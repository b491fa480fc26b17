"""The service's testbed on a Ray cluster: `innet net up --cluster HEAD` (docs/cluster.md).

    with testbed_on_cluster(config) as (up, prepared):
        experiment = ServiceExperiment(up.testbed, up, cluster=prepared.to_json())

As `innet run --cluster` does, before anything starts on any machine the cluster is checked
and measured and the cities placed (`controller.cluster.runs.prepare`: as `--placement` says,
or chosen at every machine's own measured rates), every crossing link checked against the wire
between its machines and every machine's clock against the plan's headroom. What the islands
are placed for is what the testbed is for: the planner's best schedule for the service's
parameters, played by the experiment `POST /experiment` starts with its default training. Then
every machine's agent builds its share and the service programs, watches and serves it as on
one machine; the block's end tears it down on every machine.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator
from typing import TYPE_CHECKING

from controller.planner.optimise import Planner
from controller.service.experiment import service_scenario
from controller.service.options import ServiceConfig

if TYPE_CHECKING:
    from controller.cluster.bringup import ClusterTestbed
    from controller.cluster.runs import PreparedCluster

log = logging.getLogger(__name__)


@contextlib.contextmanager
def testbed_on_cluster(config: ServiceConfig) -> Iterator[tuple[ClusterTestbed, PreparedCluster]]:
    """The service's testbed built across the cluster at `config.cluster`, its cities placed
    (refused before anything starts, naming the machine, city or link); torn down on every
    machine when the block ends."""
    # imported here: Ray and the runner (torch) are needed only on a cluster
    from controller.cluster.bringup import cluster_testbed
    from controller.cluster.raycluster import Cluster
    from controller.cluster.runs import prepare
    from controller.runner.emulation import resolve
    from controller.runner.training_spec import Training

    assert config.cluster is not None
    schedule = Planner(config.wan).plan(config.params).best.schedule
    hosts = config.spec.hosts_per_city
    scenario = service_scenario(
        config.wan,
        hosts,
        config.pool,
        config.params,
        schedule.family,
        Training(),
        placement=config.placement,
    )
    emulation = resolve(scenario, schedule=schedule)
    with Cluster.connect(config.cluster) as cluster:
        prepared = prepare(cluster, emulation, config.clocks)
        log.info("%s", prepared.placement.summary)
        with cluster_testbed(
            cluster, config.spec, config.params, prepared.node_of, prepared.survey
        ) as up:
            yield up, prepared
