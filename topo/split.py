"""A network split across machines: the cities one machine builds, and how the WAN links between
its cities and the other machines' are carried.

Every machine builds the whole of its own cities (edges, hosts) and one link emulator
(topo/linknode.py) carrying every WAN link with a city of its own. A link with both cities here
is emulated as on one machine. A link with one city here and the other elsewhere (a crossing
link) keeps the emulator's port numbers it has on one machine, 2k+1 facing its first city and
2k+2 its second: the port facing the city here is a veth to that city's edge, as ever, and the
other is a UDP tunnel to the other machine's emulator, from this machine's address to that
one's, on UDP port `tunnel_base_port + k` at both ends. Each way is shaped once, where it leaves
for the wire: the tunnel port's egress is shaped as the link, its delay less the wire's own
one-way delay between the two machines (measured, `controller/cluster/clocks.py`); the veth
port's egress is not shaped (what comes out of the tunnel was shaped on the other machine).

    >>> from topo.wan import City, Wan, WanLink
    >>> cities = tuple(City(n, n[:2], "", 0, 0) for n in ("Tokyo", "Osaka", "Paris"))
    >>> links = (WanLink("Tokyo", "Osaka", 0.005, 1e10, ""),
    ...          WanLink("Osaka", "Paris", 0.1, 1e10, ""))
    >>> wan = Wan("line", cities, links)
    >>> split = Split("10.1.0.1", ("10.1.0.1", "10.1.0.1", "10.1.0.2"),
    ...               (("10.1.0.1", "10.1.0.2", 0.0004),))
    >>> split.cities
    (0, 1)
    >>> [(c.k, c.here, c.there, c.tunnel_port, c.delay_s) for c in split.crossing(wan)]
    [(1, 1, 2, 4, 0.0996)]
    >>> split.crossing(wan)[0].tunnel_arg
    '4@10.1.0.1:47001=10.1.0.2:47001'
"""

from __future__ import annotations

import dataclasses
import ipaddress
from dataclasses import dataclass

from innet.units import format_duration
from topo.exceptions import NetworkBuildError
from topo.wan import Wan, WanLink

TUNNEL_BASE_PORT = 47000  # link k crosses on UDP port TUNNEL_BASE_PORT + k, at both ends


@dataclass(frozen=True, slots=True)
class Crossing:
    """One WAN link with one city here and the other on another machine."""

    k: int  # the link's number (`linknode.emulated_links` order)
    here: int  # its city on this machine
    there: int  # its city on the other
    local: str  # this machine's address
    peer: str  # the other machine's
    udp_port: int  # at both ends
    veth_port: int  # the emulator's port facing the city here
    tunnel_port: int  # the emulator's port that is the tunnel
    delay_s: float  # what the tunnel port's shaping adds: the link's delay less the wire's
    link: WanLink

    @property
    def tunnel_arg(self) -> str:
        """The emulator's `-u` argument for this link."""
        return f"{self.tunnel_port}@{self.local}:{self.udp_port}={self.peer}:{self.udp_port}"

    @property
    def shaped_link(self) -> WanLink:
        """The link as the tunnel port shapes it: the wire's delay taken off."""
        return dataclasses.replace(self.link, delay_s=self.delay_s)


@dataclass(frozen=True, slots=True)
class Split:
    """This machine's share of a network split across machines."""

    here: str  # this machine's address, as the others reach it
    node_of: tuple[str, ...]  # per city (WAN order): the address of the machine that builds it
    wires: tuple[tuple[str, str, float], ...] = ()  # (a, b, one-way seconds) per pair measured
    tunnel_base_port: int = TUNNEL_BASE_PORT

    def __post_init__(self) -> None:
        for address in {self.here, *self.node_of}:
            try:
                ipaddress.IPv4Address(address)
            except ValueError:
                raise NetworkBuildError(
                    f"machine address {address!r}: a tunnel needs an IPv4 address"
                ) from None
        if self.here not in self.node_of:
            raise NetworkBuildError(f"no city is placed on this machine, {self.here}")

    @property
    def cities(self) -> tuple[int, ...]:
        """The cities this machine builds, in WAN order."""
        return tuple(u for u, node in enumerate(self.node_of) if node == self.here)

    def wire_s(self, a: str, b: str) -> float:
        """The one-way delay between machines `a` and `b` (either order)."""
        for x, y, seconds in self.wires:
            if {x, y} == {a, b}:
                return seconds
        raise NetworkBuildError(
            f"the delay between machines {a} and {b} was not measured: a WAN link crosses "
            "between them"
        )

    def crossing(self, wan: Wan) -> list[Crossing]:
        """Every WAN link with one city here and the other elsewhere, in link order."""
        if len(self.node_of) != wan.n:
            raise NetworkBuildError(
                f"the split places {len(self.node_of)} cities; the WAN has {wan.n}"
            )
        from topo.linknode import emulated_links, link_ports  # (linknode imports this module)

        found = []
        for k, (u, v) in enumerate(emulated_links(wan)):
            at_u, at_v = self.node_of[u] == self.here, self.node_of[v] == self.here
            if at_u == at_v:
                continue
            here, there = (u, v) if at_u else (v, u)
            link = wan.link(u, v)
            wire = self.wire_s(self.here, self.node_of[there])
            if link.delay_s < wire:
                raise NetworkBuildError(
                    f"link {link.a}-{link.b}: its delay {format_duration(link.delay_s)} is "
                    f"below the {format_duration(wire)} the wire between machines "
                    f"{self.here} and {self.node_of[there]} takes"
                )
            port_u, port_v = link_ports(k)
            veth, tunnel = (port_u, port_v) if at_u else (port_v, port_u)
            found.append(
                Crossing(
                    k,
                    here,
                    there,
                    self.here,
                    self.node_of[there],
                    self.tunnel_base_port + k,
                    veth,
                    tunnel,
                    round(link.delay_s - wire, 12),
                    link,
                )
            )
        return found
