"""The WAN's link emulator: one process carrying every WAN link between the edges it joins.

With shaping `links` (topo/shaping.py) a WAN link is not one veth pair between two edges but
two, through the node `wan`: link k (in `emulated_links` order) is its port pair 2k+1, 2k+2,
port 2k+1 facing the link's first city u, port 2k+2 its second v (u < v). The node runs
`python -m p4switch.linkemu`, which sends every frame on to the other port of its pair through
that port's egress shaping (the link's delay, jitter, rate / scale and loss): frames from u to v are
shaped on port 2k+2, frames from v to u on port 2k+1. The edges themselves shape nothing, so any
switch, BMv2 included, gets the same WAN as p4switch's own shaping gives.

One process for every link, not one per link: on the two cores of a small machine, seventeen
more processes each waking for every frame slowed the edges beside them (measured: a nine-city
all-to-all round 1.2-1.5x the planner's time with a process per link, 1.00-1.05x with one).
Like every `SwitchProcess`, the node starts and stops exactly its own process and answers
`port_counters` and `control_alive` from the emulator's control channel.

On a network split across machines (topo/split.py) each machine's emulator carries the links
with a city of its own: those with both cities here as above, those crossing to another machine
between a veth to the edge here and a UDP tunnel port to the other machine's emulator, on the
same port numbers.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

from mininet.link import Link
from mininet.net import Mininet

from innet.stopping import held
from topo.exceptions import NetworkBuildError
from topo.p4node import IFNAMSIZ, STARTUP_TIMEOUT_S, SwitchProcess
from topo.shaping import switch_shape
from topo.siteplan import wan_ports
from topo.split import Split
from topo.wan import Wan

EMULATOR_NAME = "wan"


def emulated_links(wan: Wan) -> list[tuple[int, int]]:
    """Every WAN link as (u, v), u < v, in the order the emulator numbers them: ascending u,
    then u's neighbours in `wan.neighbours(u)` order (as the edges meet their links)."""
    return [(u, v) for u in range(wan.n) for v in wan.neighbours(u) if v > u]


def link_ports(k: int) -> tuple[int, int]:
    """The emulator's ports of link k: the one facing its first city, then its second."""
    return 2 * k + 1, 2 * k + 2


def emulator_shapes(
    wan: Wan, scale: float, loss: float, split: Split | None = None
) -> dict[int, str]:
    """Every port's egress spec: both directions of each link shaped alike, as the edges
    would shape them (`switch_shape`). With `split`, the links with a city on this machine: a
    crossing link's tunnel port shaped as the link less the wire's delay, its veth port not."""
    shapes: dict[int, str] = {}
    crossing = {c.k: c for c in split.crossing(wan)} if split is not None else {}
    here = set(split.cities) if split is not None else set(range(wan.n))
    for k, (u, v) in enumerate(emulated_links(wan)):
        if k in crossing:
            shapes[crossing[k].tunnel_port] = switch_shape(crossing[k].shaped_link, scale, loss)
        elif u in here:
            spec = switch_shape(wan.link(u, v), scale, loss)
            for port in link_ports(k):
                shapes[port] = spec
    return shapes


def veth_ports(wan: Wan, split: Split | None = None) -> list[int]:
    """The emulator's ports that are veths to an edge here, in order: every port on one
    machine; with `split`, both of each link here and a crossing link's port facing its city."""
    if split is None:
        return list(range(1, 2 * len(emulated_links(wan)) + 1))
    crossing = {c.k: c for c in split.crossing(wan)}
    here = set(split.cities)
    ports: list[int] = []
    for k, (u, _) in enumerate(emulated_links(wan)):
        if k in crossing:
            ports.append(crossing[k].veth_port)
        elif u in here:
            ports.extend(link_ports(k))
    return ports


def interface_names(wan: Wan, prefix: str = "", split: Split | None = None) -> list[str]:
    """The root-namespace interfaces the emulator adds (two per link here, one per crossing
    link); raise if one would be longer than Linux allows."""
    names = [f"{prefix}{EMULATOR_NAME}-eth{port}" for port in veth_ports(wan, split)]
    too_long = [n for n in names if len(n) > IFNAMSIZ]
    if too_long:
        raise NetworkBuildError(
            f"link emulator interface names longer than {IFNAMSIZ} characters: {too_long[:3]}; "
            "use a shorter name prefix"
        )
    return names


class LinkEmulator(SwitchProcess):
    """The link emulator process; `shapes` maps its ports to egress spec text, `tunnels` are
    its UDP tunnel ports (`-u` arguments, topo/split.py)."""

    kind = "link emulator"

    def __init__(
        self,
        name: str,
        *,
        rundir: Path,
        shapes: Mapping[int, str],
        tunnels: Sequence[str] = (),
        seed: int = 0,
        startup_timeout: float = STARTUP_TIMEOUT_S,
        **params: object,
    ) -> None:
        super().__init__(name, rundir=rundir, startup_timeout=startup_timeout, **params)
        self.shapes = dict(shapes)
        self.tunnels = tuple(tunnels)
        self.seed = seed

    def command(self) -> list[str]:
        argv = [sys.executable, "-m", "p4switch.linkemu"]
        for port, ifname in sorted(self.port_interfaces().items()):
            argv += ["-i", f"{port}@{ifname}"]
        for tunnel in self.tunnels:
            argv += ["-u", tunnel]
        for port, spec in sorted(self.shapes.items()):
            argv += ["--shape", f"{port}:{spec}"]
        argv += ["--seed", str(self.seed), "--control", str(self.control_path)]
        return argv


def add_link_emulator(
    net: Mininet,
    wan: Wan,
    hosts_per_city: int,
    switches: Mapping[int, SwitchProcess],
    *,
    scale: float,
    loss: float,
    rundir: Path,
    prefix: str = "",
    startup_timeout: float = STARTUP_TIMEOUT_S,
    split: Split | None = None,
) -> LinkEmulator:
    """Every WAN link as edge u - emulator - edge v, in `emulated_links` order (the order
    `_add_wan_links` uses, so each edge still meets its links in neighbour order on ports
    W+1+j); `switches` by city. With `split`, the links with a city here: a crossing link as
    edge - emulator - tunnel."""
    crossing = {c.k: c for c in split.crossing(wan)} if split is not None else {}
    with held():  # its shell and veth pairs recorded in `net` before a stop signal counts
        node: LinkEmulator = net.addSwitch(
            f"{prefix}{EMULATOR_NAME}",
            cls=LinkEmulator,
            dpid="10000",
            rundir=rundir,
            shapes=emulator_shapes(wan, scale, loss, split),
            tunnels=[c.tunnel_arg for c in crossing.values()],
            startup_timeout=startup_timeout,
        )
    for k, (u, v) in enumerate(emulated_links(wan)):
        toward_u, toward_v = link_ports(k)
        if k in crossing:
            c = crossing[k]
            with held():
                net.addLink(
                    switches[c.here],
                    node,
                    cls=Link,
                    port1=wan_ports(wan, c.here, hosts_per_city)[c.there],
                    port2=c.veth_port,
                )
            continue
        if u not in switches:
            continue  # both cities on other machines
        with held():
            net.addLink(
                switches[u],
                node,
                cls=Link,
                port1=wan_ports(wan, u, hosts_per_city)[v],
                port2=toward_u,
            )
            net.addLink(
                node,
                switches[v],
                cls=Link,
                port1=toward_v,
                port2=wan_ports(wan, v, hosts_per_city)[u],
            )
    return node
