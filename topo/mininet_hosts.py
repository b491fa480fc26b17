"""The hosts and switch names of the emulated network, and how each host is configured.

Host k of city u is `h<u>_<k>` on port k of its edge `s<u>`, with the site plan's addresses
(topo/siteplan.py). Each host holds static neighbour entries for its gateway and its island's
other hosts (the edge forwards IPv4 only, so ARP never crosses it), checksum offload off (a
user-space switch passes frames whose checksums the kernel left unfilled), IPv6 off.
"""

from __future__ import annotations

import errno
import socket
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from mininet.node import Host

from topo.bmv2 import THRIFT_BASE_PORT
from topo.exceptions import NetworkBuildError
from topo.p4node import IFNAMSIZ
from topo.siteplan import SUPERNET, gateway_ip, gateway_mac, host_ip, host_mac, host_ports
from topo.wan import Wan


@dataclass(frozen=True)
class HostSpec:
    """One emulated host: Mininet name, switch port, addresses."""

    name: str
    port: int
    ip: str
    mac: str


def host_specs(city: int, hosts_per_city: int, prefix: str = "") -> tuple[HostSpec, ...]:
    """City `city`'s hosts in port order; host 1 is the island's leader."""
    return tuple(
        HostSpec(f"{prefix}h{city}_{k}", port, host_ip(city, k), host_mac(city, k))
        for k, port in enumerate(host_ports(hosts_per_city), start=1)
    )


def switch_name(city: int, prefix: str = "") -> str:
    return f"{prefix}s{city}"


def check_names(
    wan: Wan, hosts_per_city: int, prefix: str, cities: Sequence[int] | None = None
) -> list[str]:
    """Every root-namespace interface name the testbed will create (for `cities`, all when
    None); raise if one is too long."""
    names = []
    for u in range(wan.n) if cities is None else cities:
        last_port = hosts_per_city + len(wan.neighbours(u))
        names += [f"{switch_name(u, prefix)}-eth{p}" for p in range(1, last_port + 1)]
        host_if = f"{host_specs(u, hosts_per_city, prefix)[-1].name}-eth0"
        if len(host_if) > IFNAMSIZ:
            raise NetworkBuildError(f"host interface name {host_if!r} is longer than {IFNAMSIZ}")
    too_long = [n for n in names if len(n) > IFNAMSIZ]
    if too_long:
        raise NetworkBuildError(
            f"interface names longer than {IFNAMSIZ} characters: {too_long[:3]}; "
            "use a shorter name prefix or fewer hosts per city"
        )
    return names


UPLINK_BURST_BYTES = 3200  # a token bucket must hold a whole frame (two, for slack)


def existing_interfaces(names: Sequence[str]) -> list[str]:
    return [n for n in names if Path("/sys/class/net", n).exists()]


def ports_in_use(ports: Sequence[int]) -> list[int]:
    """The TCP ports of `ports` something on this machine already listens on (a listener on any
    address of the root namespace keeps a switch from binding it)."""
    taken = []
    for port in ports:
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                probe.bind(("0.0.0.0", port))
            except OSError as err:
                if err.errno != errno.EADDRINUSE:
                    raise NetworkBuildError(f"cannot check TCP port {port}: {err}") from None
                taken.append(port)
    return taken


def check_nothing_in_the_way(interfaces: Sequence[str], ports: Mapping[int, str]) -> None:
    """Before anything is built: no interface of the testbed exists in the root namespace yet,
    and nothing listens on its switches' TCP ports (`ports`: port -> what it is for)."""
    in_the_way = existing_interfaces(interfaces)
    if in_the_way:
        raise NetworkBuildError(
            f"interfaces {in_the_way[:5]} already exist in the root namespace (another testbed, "
            "or one left over): stop it, or delete them with 'ip link del NAME', or pass "
            "another name_prefix"
        )
    taken = ports_in_use(sorted(ports))
    if taken:
        named = ", ".join(f"{port} ({ports[port]})" for port in taken[:5])
        if any("Thrift" in ports[port] for port in taken):
            what = f"stop it (BMv2's Thrift ports are {THRIFT_BASE_PORT} + the city's index)"
        else:
            what = "stop it, or pass another --grpc-base-port"
        raise NetworkBuildError(
            f"TCP port {named} already in use on this machine (another testbed or program "
            f"listens there): {what}"
        )


def _run_in(host: Host, argv: list[str]) -> None:
    """Run a command in a host's namespace (an argument list); raise with its stderr on failure."""
    _out, err, code = host.pexec(argv)
    if code != 0:
        raise NetworkBuildError(f"{host.name}: {' '.join(argv)} failed ({code}): {err.strip()}")


def configure_host(host: Host, city: int, island: Sequence[HostSpec], me: HostSpec) -> None:
    dev = host.defaultIntf().name
    gw_ip, gw_mac = gateway_ip(city), gateway_mac(city)
    _run_in(host, ["sysctl", "-q", "-w", "net.ipv6.conf.all.disable_ipv6=1"])
    _run_in(host, ["ethtool", "-K", dev, "tx", "off", "rx", "off"])
    neighbours = [(gw_ip, gw_mac)] + [(h.ip, h.mac) for h in island if h != me]
    for ip, mac in neighbours:
        _run_in(host, ["ip", "neigh", "replace", ip, "lladdr", mac, "dev", dev, "nud", "permanent"])
    _run_in(host, ["ip", "route", "replace", SUPERNET, "via", gw_ip, "dev", dev])


def shape_uplink(host: Host, rate_bps: float | None) -> None:
    """Hold what `host` sends to its edge to `rate_bps` (a token bucket on its interface's
    egress; None removes it). The leaders of innet's own collectives pace themselves at the
    access rate; TCP does not, so the gloo baseline needs its access link shaped."""
    dev = host.defaultIntf().name
    if rate_bps is None:
        host.pexec(["tc", "qdisc", "del", "dev", dev, "root"])  # absent already: nothing to do
        return
    burst = max(UPLINK_BURST_BYTES, round(rate_bps / 8 * 0.005))  # 5 ms, at least two frames
    _run_in(
        host,
        [
            "tc",
            "qdisc",
            "replace",
            "dev",
            dev,
            "root",
            "tbf",
            "rate",
            f"{round(rate_bps)}bit",
            "burst",
            str(burst),
            "latency",
            "10s",
        ],
    )
