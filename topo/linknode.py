"""A Mininet node on one WAN link: a link emulator process between the two edges it joins.

With shaping `links` (topo/shaping.py) the WAN link between cities u < v is not one veth pair
but two, through the node `l<u>x<v>`: port 1 faces u's edge, port 2 faces v's. The node runs
`python -m p4switch.linkemu`, which sends every frame on to the other side through that side's
egress shaping (the link's delay, rate / scale and loss), so frames from u to v are shaped on
port 2 and frames from v to u on port 1. The edges themselves shape nothing: any switch, BMv2
included, gets the same WAN as p4switch's own shaping gives. Like every `SwitchProcess`, the
node starts and stops exactly its own process and answers `port_counters` and `control_alive`
from the emulator's control channel.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

from mininet.link import Link
from mininet.net import Mininet

from topo.exceptions import NetworkBuildError
from topo.p4node import IFNAMSIZ, STARTUP_TIMEOUT_S, SwitchProcess
from topo.shaping import switch_shape
from topo.siteplan import wan_ports
from topo.wan import Wan, WanLink

TOWARD_A, TOWARD_B = 1, 2  # the emulator's port facing the link's first city, and its second


def link_node_name(u: int, v: int, prefix: str = "") -> str:
    """The emulator node of the link between cities u and v (u < v): l<u>x<v>."""
    a, b = sorted((u, v))
    return f"{prefix}l{a}x{b}"


class LinkEmulator(SwitchProcess):
    """One link emulator process; `shapes` maps its ports (1, 2) to egress spec text."""

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


def link_shapes(link: WanLink, scale: float, loss: float) -> dict[int, str]:
    """Both directions of `link` shaped alike: the egress spec of ports 1 and 2."""
    spec = switch_shape(link, scale, loss)
    return {TOWARD_A: spec, TOWARD_B: spec}


def interface_names(wan: Wan, prefix: str = "") -> list[str]:
    """The root-namespace interfaces the link emulators of `wan` add (two per link); raise if
    one would be longer than Linux allows."""
    names = []
    for link in wan.links:
        node = link_node_name(wan.index(link.a), wan.index(link.b), prefix)
        names += [f"{node}-eth{TOWARD_A}", f"{node}-eth{TOWARD_B}"]
    too_long = [n for n in names if len(n) > IFNAMSIZ]
    if too_long:
        raise NetworkBuildError(
            f"link emulator interface names longer than {IFNAMSIZ} characters: {too_long[:3]}; "
            "use a shorter name prefix"
        )
    return names


def add_link_emulators(
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
) -> tuple[LinkEmulator, ...]:
    """Every WAN link as edge u - emulator - edge v (u < v), in the order `_add_wan_links`
    uses, so each edge still meets its links in neighbour order on ports W+1+j."""
    emulators: list[LinkEmulator] = []
    for u in range(wan.n):
        for v in wan.neighbours(u):
            if v < u:
                continue
            link = wan.link(u, v)
            node: LinkEmulator = net.addSwitch(
                link_node_name(u, v, prefix),
                cls=LinkEmulator,
                dpid=f"{0x10000 + len(emulators):x}",
                rundir=rundir,
                shapes=link_shapes(link, scale, loss),
                seed=len(emulators),
                startup_timeout=startup_timeout,
            )
            net.addLink(switches[u], node, cls=Link,
                        port1=wan_ports(wan, u, hosts_per_city)[v], port2=TOWARD_A)  # fmt: skip
            net.addLink(node, switches[v], cls=Link,
                        port1=TOWARD_B, port2=wan_ports(wan, v, hosts_per_city)[u])  # fmt: skip
            emulators.append(node)
    return tuple(emulators)
