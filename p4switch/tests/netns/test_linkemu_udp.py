"""Two link emulators, each on its "machine" (a namespace), carry a link between them over a UDP
tunnel: frames cross unchanged both ways, and both emulators count them on their tunnel ports.

    machine a: edge <-veth-> emu = port 1 [emulator] port 2 = tunnel, from wan 10.250.0.1:7000
    machine b: edge <-veth-> emu = port 2 [emulator] port 1 = tunnel, from wan 10.250.0.2:7000
    the physical network: a veth between the two `wan` ends

Frames are sent raw out of one machine's `edge` and read raw at the other's: the edges hold no
address and IPv6 is off, so nothing else crosses and the counts are exact. The tunnel port of a
is shaped (its egress is the direction a -> b), that of b is not. The frames are sent and read
by tests.netns.rawframes.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.netns.harness import SwitchProcess, ns_run, start_controlled
from tests.netns.rawframes import Interface, send_and_receive
from tests.netns.topology import destroy, in_ns, run

pytestmark = pytest.mark.netns

UDP_PORT = 7000


@dataclass(frozen=True)
class Machine:
    """One machine of the experiment: its namespace, the address of its end of the physical
    network, and the MAC address of its edge end."""

    namespace: str
    wan_ip: str
    wan_mac: str
    edge_mac: str

    @property
    def tunnel_end(self) -> str:
        return f"{self.wan_ip}:{UDP_PORT}"

    @property
    def edge(self) -> Interface:
        return Interface(self.namespace, "edge")


def build(prefix: str) -> tuple[Machine, Machine]:
    """The namespaces `<prefix>-a` and `<prefix>-b`, joined by the veth `wan`, each with a veth
    `edge` <-> `emu` inside."""
    a = Machine(f"{prefix}-a", "10.250.0.1", "02:00:0a:fa:00:01", "02:00:0a:00:00:0a")
    b = Machine(f"{prefix}-b", "10.250.0.2", "02:00:0a:fa:00:02", "02:00:0a:00:00:0b")
    created: list[str] = []
    try:
        for machine in (a, b):
            run(["ip", "netns", "add", machine.namespace])
            created.append(machine.namespace)
            in_ns(machine.namespace, "sysctl", "-q", "-w", "net.ipv6.conf.all.disable_ipv6=1")
            in_ns(machine.namespace, "sysctl", "-q", "-w", "net.ipv6.conf.default.disable_ipv6=1")
            run(["ip", "-n", machine.namespace, "link", "set", "lo", "up"])
        run(
            [
                *("ip", "link", "add", "wan", "netns", a.namespace, "address", a.wan_mac),
                *("type", "veth", "peer", "name", "wan", "netns", b.namespace),
                *("address", b.wan_mac),
            ]
        )
        for machine, other in ((a, b), (b, a)):
            ns = machine.namespace
            run(["ip", "-n", ns, "addr", "add", f"{machine.wan_ip}/24", "dev", "wan"])
            run(["ip", "-n", ns, "link", "set", "wan", "up"])
            run(
                [
                    *("ip", "-n", ns, "neigh", "replace", other.wan_ip),
                    *("lladdr", other.wan_mac, "dev", "wan", "nud", "permanent"),
                ]
            )
            run(
                [
                    *("ip", "link", "add", "edge", "netns", ns, "address", machine.edge_mac),
                    *("type", "veth", "peer", "name", "emu", "netns", ns),
                ]
            )
            run(["ip", "-n", ns, "link", "set", "edge", "up"])
            run(["ip", "-n", ns, "link", "set", "emu", "up"])
            in_ns(ns, "ethtool", "-K", "edge", "tx", "off", "rx", "off")
    except BaseException:
        destroy(created)
        raise
    return a, b


@pytest.fixture(scope="module")
def machines(netns_available: None) -> Iterator[tuple[Machine, Machine]]:
    built = build(f"p4t{os.getpid()}u")
    try:
        yield built
    finally:
        destroy([machine.namespace for machine in built])


def start_emulator(
    machine: Machine, args: Sequence[str], workdir: Path, started: list[SwitchProcess]
) -> SwitchProcess:
    name = machine.namespace.rsplit("-", 1)[1]
    control, log = workdir / f"{name}.sock", workdir / f"{name}.log"
    args = [*args, "--control", str(control)]
    return start_controlled(machine.namespace, "p4switch.linkemu", args, control, log, started)


def linkemu(machine: Machine, *args: str) -> subprocess.CompletedProcess[str]:
    return ns_run(machine.namespace, "p4switch.linkemu", *args)


def frames_between(src: Machine, dst: Machine) -> list[bytes]:
    """Frames from `src`'s edge to `dst`'s, of a local experimental ethertype: the shortest,
    a middling one and the longest (a datagram of it is fragmented on the 1500-byte wan)."""
    header = bytes.fromhex(dst.edge_mac.replace(":", "") + src.edge_mac.replace(":", "") + "88b5")
    return [
        header + bytes([seq]) * (size - len(header)) for seq, size in enumerate((60, 700, 1514))
    ]


def send_across(src: Machine, dst: Machine) -> tuple[list[bytes], list[bytes]]:
    """Send frames out of `src`'s edge; those sent, and those `dst`'s edge received from it."""
    frames = frames_between(src, dst)
    received = send_and_receive(src.edge, dst.edge, src.edge_mac, frames)
    return frames, [bytes.fromhex(frame["data"]) for frame in received]


def test_frames_cross_the_tunnel_unchanged_both_ways(
    machines: tuple[Machine, Machine], started: list[SwitchProcess], tmp_path: Path
) -> None:
    a, b = machines
    emulator_a = start_emulator(
        a,
        ["-i", "1@emu", "-u", f"2@{a.tunnel_end}={b.tunnel_end}", "--shape", "2:delay=5ms"],
        tmp_path,
        started,
    )
    emulator_b = start_emulator(
        b, ["-u", f"1@{b.tunnel_end}={a.tunnel_end}", "-i", "2@emu"], tmp_path, started
    )
    sent_ab, received_ab = send_across(a, b)
    assert received_ab == sent_ab
    sent_ba, received_ba = send_across(b, a)
    assert received_ba == sent_ba
    tunnel_a, tunnel_b = emulator_a.stats()["ports"]["2"], emulator_b.stats()["ports"]["1"]
    assert tunnel_a["interface"] == f"udp {a.tunnel_end}->{b.tunnel_end}"
    assert tunnel_b["interface"] == f"udp {b.tunnel_end}->{a.tunnel_end}"
    ab_bytes, ba_bytes = sum(map(len, sent_ab)), sum(map(len, sent_ba))
    assert (tunnel_a["tx_packets"], tunnel_a["tx_bytes"]) == (len(sent_ab), ab_bytes)
    assert (tunnel_b["rx_packets"], tunnel_b["rx_bytes"]) == (len(sent_ab), ab_bytes)
    assert (tunnel_b["tx_packets"], tunnel_b["tx_bytes"]) == (len(sent_ba), ba_bytes)
    assert (tunnel_a["rx_packets"], tunnel_a["rx_bytes"]) == (len(sent_ba), ba_bytes)
    for tunnel in (tunnel_a, tunnel_b):
        assert not any(tunnel["drops"].values()), tunnel["drops"]
    assert tunnel_a["shape"]["delay_s"] == 0.005 and tunnel_b["shape"]["delay_s"] == 0.0


def test_a_tunnel_port_the_machine_cannot_have_is_refused_in_one_line(
    machines: tuple[Machine, Machine], started: list[SwitchProcess], tmp_path: Path
) -> None:
    """A malformed -u, an address of the other machine, a LOCAL port another emulator holds:
    each one line and status 2."""
    a, b = machines
    start_emulator(a, ["-i", "1@emu", "-u", f"2@{a.tunnel_end}={b.tunnel_end}"], tmp_path, started)
    cases = {
        f"2@{a.wan_ip}={b.tunnel_end}": "no :PORT",
        f"2@{b.tunnel_end}={a.tunnel_end}": "not an address of this machine",
        f"2@{a.tunnel_end}={b.wan_ip}:{UDP_PORT + 1}": f"UDP port {UDP_PORT} is in use",
    }
    for tunnel, reason in cases.items():
        done = linkemu(a, "-i", "1@emu", "-u", tunnel)
        assert done.returncode == 2, done.stderr
        assert done.stderr.startswith("linkemu: error: "), done.stderr
        assert done.stderr.count("\n") == 1 and reason in done.stderr, done.stderr
