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
from topo.wan import Wan

EMULATOR_NAME = "wan"


def emulated_links(wan: Wan) -> list[tuple[int, int]]:
    """Every WAN link as (u, v), u < v, in the order the emulator numbers them: ascending u,
    then u's neighbours in `wan.neighbours(u)` order (as the edges meet their links)."""
    return [(u, v) for u in range(wan.n) for v in wan.neighbours(u) if v > u]


def link_ports(k: int) -> tuple[int, int]:
    """The emulator's ports of link k: the one facing its first city, then its second."""
    return 2 * k + 1, 2 * k + 2


def emulator_shapes(wan: Wan, scale: float, loss: float) -> dict[int, str]:
    """Every port's egress spec: both directions of each link shaped alike, as the edges
    would shape them (`switch_shape`)."""
    shapes: dict[int, str] = {}
    for k, (u, v) in enumerate(emulated_links(wan)):
        spec = switch_shape(wan.link(u, v), scale, loss)
        for port in link_ports(k):
            shapes[port] = spec
    return shapes


def interface_names(wan: Wan, prefix: str = "") -> list[str]:
    """The root-namespace interfaces the emulator adds (two per link); raise if one would be
    longer than Linux allows."""
    last = 2 * len(emulated_links(wan))
    names = [f"{prefix}{EMULATOR_NAME}-eth{port}" for port in range(1, last + 1)]
    too_long = [n for n in names if len(n) > IFNAMSIZ]
    if too_long:
        raise NetworkBuildError(
            f"link emulator interface names longer than {IFNAMSIZ} characters: {too_long[:3]}; "
            "use a shorter name prefix"
        )
    return names


class LinkEmulator(SwitchProcess):
    """The link emulator process; `shapes` maps its ports to egress spec text."""

    kind = "link emulator"

    def __init__(
        self,
        name: str,
        *,
        rundir: Path,
        shapes: Mapping[int, str],
        seed: int = 0,
        startup_timeout: float = STARTUP_TIMEOUT_S,
        **params: object,
    ) -> None:
        super().__init__(name, rundir=rundir, startup_timeout=startup_timeout, **params)
        self.shapes = dict(shapes)
        self.seed = seed

    def command(self) -> list[str]:
        argv = [sys.executable, "-m", "p4switch.linkemu"]
        for port, ifname in sorted(self.port_interfaces().items()):
            argv += ["-i", f"{port}@{ifname}"]
        for port, spec in sorted(self.shapes.items()):
            argv += ["--shape", f"{port}:{spec}"]
        argv += ["--seed", str(self.seed), "--control", str(self.control_path)]
        return argv


def add_link_emulator(
    net: Mininet,
    wan: Wan,
    hosts_per_city: int,
    switches: Sequence[SwitchProcess],
    *,
    scale: float,
    loss: float,
    rundir: Path,
    prefix: str = "",
    startup_timeout: float = STARTUP_TIMEOUT_S,
) -> LinkEmulator:
    """Every WAN link as edge u - emulator - edge v, in `emulated_links` order (the order
    `_add_wan_links` uses, so each edge still meets its links in neighbour order on ports
    W+1+j)."""
    with held():  # its shell and veth pairs recorded in `net` before a stop signal counts
        node: LinkEmulator = net.addSwitch(
            f"{prefix}{EMULATOR_NAME}",
            cls=LinkEmulator,
            dpid="10000",
            rundir=rundir,
            shapes=emulator_shapes(wan, scale, loss),
            startup_timeout=startup_timeout,
        )
    for k, (u, v) in enumerate(emulated_links(wan)):
        toward_u, toward_v = link_ports(k)
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
