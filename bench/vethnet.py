"""Three network namespaces for the forwarding benchmarks: h1 -- sw -- h2, two veth pairs (root).

h1's h1-eth0 meets the switch's s1-eth1 (port 1), h2's h2-eth0 meets s1-eth2 (port 2). The hosts
have static neighbour entries (no ARP) and no IPv6 (no router solicitations), so the only frames
on the links are the benchmark's; checksum offload is off, so frames are whole on the wire.
"""

from __future__ import annotations

import subprocess
import time
from collections.abc import Sequence
from dataclasses import dataclass

from bench.native_tools import ForwardingBenchError

H1_IP, H2_IP = "10.0.0.1", "10.0.0.2"
H1_MAC, H2_MAC = "02:00:0a:00:00:01", "02:00:0a:00:00:02"


def run(args: Sequence[str], timeout: float = 15.0) -> str:
    """Run a command (an argument list) and return its output; an error quotes its stderr."""
    done = subprocess.run(list(args), capture_output=True, text=True, timeout=timeout, check=False)
    if done.returncode != 0:
        raise ForwardingBenchError(f"{' '.join(args)}: {done.stderr.strip()}")
    return done.stdout


@dataclass(frozen=True)
class Net:
    h1: str
    h2: str
    sw: str

    @property
    def namespaces(self) -> tuple[str, str, str]:
        return (self.h1, self.h2, self.sw)


def build(prefix: str, created: list[str]) -> Net:
    """The namespaces `prefix`-h1, -h2 and -sw; each is appended to `created` once it exists."""
    net = Net(f"{prefix}-h1", f"{prefix}-h2", f"{prefix}-sw")
    for ns in net.namespaces:
        run(["ip", "netns", "add", ns])
        created.append(ns)
        for key in ("all", "default"):
            run(["ip", "netns", "exec", ns, "sysctl", "-qw", f"net.ipv6.conf.{key}.disable_ipv6=1"])
        run(["ip", "-n", ns, "link", "set", "lo", "up"])
    hosts = (
        (net.h1, "h1-eth0", H1_IP, H1_MAC, "s1-eth1"),
        (net.h2, "h2-eth0", H2_IP, H2_MAC, "s1-eth2"),
    )
    for ns, ifname, ip, mac, port in hosts:
        veth = ("type", "veth", "peer", "name", port, "netns", net.sw)
        run(["ip", "link", "add", ifname, "netns", ns, "address", mac, *veth])
        run(["ip", "-n", net.sw, "link", "set", port, "up"])
        run(["ip", "-n", ns, "link", "set", ifname, "up"])
        run(["ip", "-n", ns, "addr", "add", f"{ip}/24", "dev", ifname])
        run(["ip", "netns", "exec", ns, "ethtool", "-K", ifname, "tx", "off", "rx", "off"])
    for ns, ifname, ip, mac in (
        (net.h1, "h1-eth0", H2_IP, H2_MAC),
        (net.h2, "h2-eth0", H1_IP, H1_MAC),
    ):
        static = ("lladdr", mac, "dev", ifname, "nud", "permanent")
        run(["ip", "-n", ns, "neigh", "replace", ip, *static])
    return net


def destroy(created: list[str]) -> None:
    """Delete the namespaces `build` created (their veths go with them)."""
    for ns in created:
        subprocess.run(["ip", "netns", "delete", ns], capture_output=True, check=False)


def rx_packets(ns: str, ifname: str) -> tuple[float, int]:
    """(when, count) of the kernel's receive counter; `when` is the middle of the reading."""
    before = time.monotonic()
    counter = f"/sys/class/net/{ifname}/statistics/rx_packets"
    count = int(run(["ip", "netns", "exec", ns, "cat", counter]))
    return (before + time.monotonic()) / 2, count
