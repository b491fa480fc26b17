"""Install one round's innet entries on one edge switch with p4runtime-shell (as users do).

    python -m tests.netns.innet_install ADDR SPEC_JSON

SPEC_JSON (see tests.netns.islands.round_entries): "member": [job, round, group, expected, my_bit,
local_grp] or null, "tree": [job, round, group, src, [wan ports]] or null, "host": [mac, ip,
gateway], "routes": [[prefix, length, port, dmac], ...].
Multicast groups: 1 = the host port (replica id 1); 16 = the tree's WAN ports (replica id 0);
17 = the same plus the host port.

A member also gets `member`'s stale_us (STALE_US, the controller's floor) and `port_sources`
as the controller derives them for the triangle, where every tree is direct links: its own
stream (and its leader's replays of the others') from the host port, each other member's
from the port toward it (tests.netns.islands.port_toward).
"""

from __future__ import annotations

import json
import sys

import p4runtime_sh.shell as sh

from controller.round_entries import STALE_FLOOR_S
from tests.netns.islands import ISLANDS, port_toward

HOST_PORT, HOST_RID, WAN_RID = 1, 1, 0
LOCAL_GRP, WAN_GRP, WAN_LOCAL_GRP = 1, 16, 17
STALE_US = round(STALE_FLOOR_S * 1e6)


def group(group_id: int, replicas: list[tuple[int, int]]) -> None:
    entry = sh.MulticastGroupEntry(group_id)
    for port, rid in replicas:
        entry.add(port, rid)
    entry.insert()


def sources(job: int, rnd: int, grp: int, port: int, streams: int, replays: int) -> None:
    entry = sh.TableEntry("InnetIngress.port_sources")(action="InnetIngress.sources")
    entry.match["hdr.innet.job"], entry.match["hdr.innet.round"] = str(job), str(rnd)
    entry.match["hdr.innet.group"] = str(grp)
    entry.match["standard_metadata.ingress_port"] = str(port)
    entry.action["streams"], entry.action["replays"] = str(streams), str(replays)
    entry.insert()


def main() -> int:
    addr, spec = sys.argv[1], json.loads(sys.argv[2])
    sh.setup(device_id=1, grpc_addr=addr, election_id=(0, 1))
    try:
        mac, ip, gateway = spec["host"]
        host = sh.TableEntry("InnetEgress.host_port")(action="InnetEgress.to_host")
        host.match["standard_metadata.egress_port"] = str(HOST_PORT)
        host.action["mac"], host.action["ip"], host.action["gateway"] = mac, ip, gateway
        host.insert()
        group(LOCAL_GRP, [(HOST_PORT, HOST_RID)])
        for prefix, length, port, dmac in spec.get("routes", []):
            route = sh.TableEntry("InnetIngress.ipv4_lpm")(action="InnetIngress.forward")
            route.match["hdr.ipv4.dstAddr"] = f"{prefix}/{length}"
            route.action["port"], route.action["dmac"] = str(port), dmac
            route.insert()
        if spec["member"] is not None:
            job, rnd, grp, expected, my_bit, local_grp = spec["member"]
            entry = sh.TableEntry("InnetIngress.membership")(action="InnetIngress.member")
            entry.match["hdr.innet.job"], entry.match["hdr.innet.round"] = str(job), str(rnd)
            entry.match["hdr.innet.group"] = str(grp)
            entry.action["expected"], entry.action["my_bit"] = str(expected), str(my_bit)
            entry.action["local_grp"] = str(local_grp)
            entry.action["stale_us"] = str(STALE_US)
            entry.insert()
            me = my_bit.bit_length() - 1
            sources(job, rnd, grp, HOST_PORT, my_bit, expected & ~my_bit)
            for other in ISLANDS:
                if other != me and expected >> other & 1:
                    sources(job, rnd, grp, port_toward(me, other), 1 << other, 0)
        if spec["tree"] is not None:
            job, rnd, grp, src, ports = spec["tree"]
            group(WAN_GRP, [(p, WAN_RID) for p in ports])
            group(WAN_LOCAL_GRP, [*((p, WAN_RID) for p in ports), (HOST_PORT, HOST_RID)])
            entry = sh.TableEntry("InnetIngress.tree")(action="InnetIngress.replicate")
            entry.match["hdr.innet.job"], entry.match["hdr.innet.round"] = str(job), str(rnd)
            entry.match["hdr.innet.group"], entry.match["hdr.innet.src"] = str(grp), str(src)
            entry.action["wan_grp"], entry.action["wan_local_grp"] = (
                str(WAN_GRP),
                str(WAN_LOCAL_GRP),
            )
            entry.insert()
    finally:
        sh.teardown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
