"""Two hosts and a switch namespace joined by veth pairs, built and torn down by name.

    h1 (10.0.0.1) h1-eth0 <-veth-> s1-eth1 [switch namespace] s1-eth2 <-veth-> h2-eth0 (10.0.0.2)

Every veth end is created directly inside its namespace, so the root namespace never holds any of
them; deleting the three namespaces removes everything. Hosts get static neighbour entries (no
ARP through a lossy link), IPv6 off (no stray autoconfiguration frames in the counts) and checksum
offload off (a user-space switch passes frames whose checksums the kernel left unfilled).
"""

from __future__ import annotations

import logging
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass

log = logging.getLogger(__name__)


class NetnsError(RuntimeError):
    """A namespace command failed; the message holds the command and its stderr."""


@dataclass(frozen=True)
class Host:
    namespace: str
    interface: str
    ip: str
    mac: str


@dataclass(frozen=True)
class TwoHostNet:
    h1: Host
    h2: Host
    switch_namespace: str
    switch_ports: dict[int, str]

    @property
    def namespaces(self) -> tuple[str, ...]:
        return (self.h1.namespace, self.h2.namespace, self.switch_namespace)


def run(args: Sequence[str], *, timeout: float = 15.0) -> str:
    """Run a command (argument list), return its stdout, raise `NetnsError` if it fails."""
    done = subprocess.run(list(args), capture_output=True, text=True, timeout=timeout, check=False)
    if done.returncode != 0:
        raise NetnsError(f"{' '.join(args)} failed ({done.returncode}): {done.stderr.strip()}")
    return done.stdout


def in_ns(namespace: str, *args: str, timeout: float = 15.0) -> str:
    return run(["ip", "netns", "exec", namespace, *args], timeout=timeout)


def build(prefix: str) -> TwoHostNet:
    """Create the namespaces `<prefix>-h1`, `<prefix>-h2`, `<prefix>-sw` and their links."""
    h1 = Host(f"{prefix}-h1", "h1-eth0", "10.0.0.1", "02:00:0a:00:00:01")
    h2 = Host(f"{prefix}-h2", "h2-eth0", "10.0.0.2", "02:00:0a:00:00:02")
    net = TwoHostNet(h1, h2, f"{prefix}-sw", {1: "s1-eth1", 2: "s1-eth2"})
    created: list[str] = []
    try:
        for namespace in net.namespaces:
            run(["ip", "netns", "add", namespace])
            created.append(namespace)
            in_ns(namespace, "sysctl", "-q", "-w", "net.ipv6.conf.all.disable_ipv6=1")
            in_ns(namespace, "sysctl", "-q", "-w", "net.ipv6.conf.default.disable_ipv6=1")
            run(["ip", "-n", namespace, "link", "set", "lo", "up"])
        for host, port in ((h1, net.switch_ports[1]), (h2, net.switch_ports[2])):
            run(
                [
                    *("ip", "link", "add", host.interface, "netns", host.namespace),
                    *("address", host.mac, "type", "veth"),
                    *("peer", "name", port, "netns", net.switch_namespace),
                ]
            )
            run(["ip", "-n", net.switch_namespace, "link", "set", port, "up"])
            run(["ip", "-n", host.namespace, "link", "set", host.interface, "up"])
            run(["ip", "-n", host.namespace, "addr", "add", f"{host.ip}/24", "dev", host.interface])
            in_ns(host.namespace, "ethtool", "-K", host.interface, "tx", "off", "rx", "off")
        for host, peer in ((h1, h2), (h2, h1)):
            run(
                [
                    *("ip", "-n", host.namespace, "neigh", "replace", peer.ip),
                    *("lladdr", peer.mac, "dev", host.interface, "nud", "permanent"),
                ]
            )
    except BaseException:
        destroy(created)
        raise
    return net


def destroy(namespaces: Sequence[str]) -> None:
    """Delete exactly these namespaces (and so the veth ends inside them)."""
    for namespace in namespaces:
        done = subprocess.run(
            ["ip", "netns", "delete", namespace], capture_output=True, text=True, check=False
        )
        if done.returncode != 0 and "No such file" not in done.stderr:
            log.warning("could not delete namespace %s: %s", namespace, done.stderr.strip())
