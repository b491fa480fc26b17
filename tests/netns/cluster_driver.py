"""What the cluster tests run as a driver inside a "machine" (tests/netns/cluster.py): the nine
cities' network split over the cluster's nodes, programmed from here over P4Runtime, every other
city's leader pinged from Tokyo's, torn down; one JSON line of what was seen.

    python -m tests.netns.cluster_driver HEAD [--hold]

With `--hold` the driver prints "up" once the network is programmed and waits (for a test that
kills it there: the agents' janitors must clean up).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from collections.abc import Sequence

from controller.cluster.network import ClusterNetwork
from controller.cluster.raycluster import Cluster
from controller.planner.cost import CostParams
from controller.testbed import Testbed
from innet.packetformat import PacketFormat
from topo.loader import default_wan
from topo.mininet_net import NetworkSpec
from topo.siteplan import SlotPool, host_ip

SLOTS, SCALE = 64, 1000.0
RTT = re.compile(r"rtt min/avg/max/mdev = ([\d.]+)/")


def main(argv: Sequence[str]) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("head")
    parser.add_argument("--hold", action="store_true")
    args = parser.parse_args(argv)
    wan = default_wan()
    with Cluster.connect(args.head) as cluster:
        survey = cluster.survey(exchanges=10)
        machines = cluster.addresses
        node_of = tuple(machines[u * len(machines) // wan.n] for u in range(wan.n))
        wires = tuple((a, b, seconds) for (a, b), seconds in survey.physical.items())
        pool = SlotPool(SLOTS, SCALE, PacketFormat())
        spec = NetworkSpec(wan, 1, slots=SLOTS, scale=SCALE, shaping="links")
        network = ClusterNetwork.build(cluster, spec, node_of, wires)
        try:
            params = CostParams.for_pool(pool, 10**9, 10e9)
            testbed = Testbed.start(wan, network, params, pool=pool)
            try:
                if args.hold:
                    print("up", flush=True)
                    time.sleep(3600)
                pings = {}
                for v in range(1, wan.n):
                    code, out, err = cluster.ask(
                        node_of[0],
                        "a ping",
                        cluster.agent(node_of[0]).host_run.remote(
                            0, 1, ["ping", "-c", "3", "-i", "0.2", "-W", "2", host_ip(v, 1)]
                        ),
                    )
                    rtt = RTT.search(out)
                    pings[wan.names[v]] = {
                        "code": code,
                        "rtt_ms": float(rtt.group(1)) if rtt else None,
                        "planned_ms": 2e3 * float(wan.delay[0, v]),
                        "stderr": err[-300:],
                    }
                sites = {s.name: s.grpc_addr for s in network.sites}
            finally:
                testbed.close()
        finally:
            network.stop()
    print(json.dumps({"node_of": node_of, "pings": pings, "sites": sites}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
