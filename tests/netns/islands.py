"""Three innet islands between network namespaces, each a host and a p4switch edge (innet.p4).

    h<i> (10.0.<i>.1) h<i>-eth0 <-> s<i>-eth1 [p4switch s<i>] s<i>-eth2 <-> s<i+1>-eth3 ...

Every edge numbers its ports as the in-process harness does (tests/unit/dataplane/harness.py):
port 1 the island's host, port 2 the WAN link to island (i + 1) % 3 (arriving on its port 3),
port 3 the link to island (i + 2) % 3. Hosts send innet packets to their gateway 10.0.<i>.254
(a static neighbour entry; the edge takes every innet packet whatever its address). The edges
and the leaders are given one packet format: the edges as innet.p4's -D defines, the leaders as
`--lanes`.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from innet.packetformat import PacketFormat
from tests.netns.harness import REPO, P4Switch, launch_p4switch, wait_ready
from tests.netns.topology import destroy, in_ns, run
from topo.siteplan import program_defines

ISLANDS = (0, 1, 2)
P4_SOURCE = REPO / "p4src" / "innet.p4"
GRPC = "127.0.0.1:50051"  # each switch namespace's own loopback
HOST_PORT, NEXT_PORT, PREV_PORT = 1, 2, 3
LOCAL_GRP = 1


def host_ip(i: int) -> str:
    return f"10.0.{i}.1"


def host_mac(i: int) -> str:
    return f"02:00:0a:00:0{i}:01"


def gateway_ip(i: int) -> str:
    return f"10.0.{i}.254"


def port_toward(i: int, other: int) -> int:
    return NEXT_PORT if other == (i + 1) % 3 else PREV_PORT


@dataclass(frozen=True)
class Islands:
    prefix: str

    def host(self, i: int) -> str:
        return f"{self.prefix}-h{i}"

    def switch(self, i: int) -> str:
        return f"{self.prefix}-s{i}"

    @property
    def namespaces(self) -> tuple[str, ...]:
        return tuple(ns for i in ISLANDS for ns in (self.host(i), self.switch(i)))


def build(prefix: str) -> Islands:
    net = Islands(prefix)
    created: list[str] = []
    try:
        for ns in net.namespaces:
            run(["ip", "netns", "add", ns])
            created.append(ns)
            in_ns(ns, "sysctl", "-q", "-w", "net.ipv6.conf.all.disable_ipv6=1")
            run(["ip", "-n", ns, "link", "set", "lo", "up"])
        for i in ISLANDS:
            host, sw, dev = net.host(i), net.switch(i), f"h{i}-eth0"
            run(
                [
                    "ip",
                    "link",
                    "add",
                    dev,
                    "netns",
                    host,
                    "address",
                    host_mac(i),
                    "type",
                    "veth",
                    "peer",
                    "name",
                    f"s{i}-eth1",
                    "netns",
                    sw,
                ]
            )
            run(["ip", "-n", sw, "link", "set", f"s{i}-eth1", "up"])
            run(["ip", "-n", host, "link", "set", dev, "up"])
            run(["ip", "-n", host, "addr", "add", f"{host_ip(i)}/24", "dev", dev])
            run(
                [
                    "ip",
                    "-n",
                    host,
                    "neigh",
                    "replace",
                    gateway_ip(i),
                    "lladdr",
                    f"02:00:0a:00:0{i}:fe",
                    "dev",
                    dev,
                    "nud",
                    "permanent",
                ]
            )
            in_ns(host, "ethtool", "-K", dev, "tx", "off", "rx", "off")
            run(["ip", "-n", host, "route", "add", "10.0.0.0/16", "via", gateway_ip(i)])
        for i in ISLANDS:
            j = (i + 1) % 3
            run(
                [
                    "ip",
                    "link",
                    "add",
                    f"s{i}-eth2",
                    "netns",
                    net.switch(i),
                    "type",
                    "veth",
                    "peer",
                    "name",
                    f"s{j}-eth3",
                    "netns",
                    net.switch(j),
                ]
            )
            run(["ip", "-n", net.switch(i), "link", "set", f"s{i}-eth2", "up"])
            run(["ip", "-n", net.switch(j), "link", "set", f"s{j}-eth3", "up"])
    except BaseException:
        destroy(created)
        raise
    return net


def start_edges(
    net: Islands,
    workdir: Path,
    slots: int,
    packet_format: PacketFormat,
    shapes: Sequence[str] = (),
    timeout: float = 30.0,
) -> list[P4Switch]:
    """One p4switch per island (in island order) running innet.p4 with `slots` slots of
    `packet_format` (its -D defines, as the testbed builds its switches); waits until all
    answer."""
    defines = program_defines(packet_format, slots)
    edges = []
    for i in ISLANDS:
        args = ["--p4", str(P4_SOURCE)]
        args += [arg for name, value in defines.items() for arg in ("-D", f"{name}={value}")]
        args += ["--grpc-addr", GRPC, *(f"--shape={s}" for s in shapes)]
        ports = {p: f"s{i}-eth{p}" for p in (1, 2, 3)}
        control, log = workdir / f"s{i}.sock", workdir / f"s{i}.log"
        edges.append(launch_p4switch(net.switch(i), ports, control, log, *args))
    deadline = time.monotonic() + timeout
    for edge in edges:
        wait_ready(edge, deadline)
    return edges


def round_entries(i: int, job: int, rnd: int, group: int, members: Sequence[int]) -> dict:
    """What the controller installs at island i's edge for one group on the triangle."""
    expected = sum(1 << m for m in members)
    ports = [port_toward(i, m) for m in members if m != i]
    return {
        "member": [job, rnd, group, expected, 1 << i, LOCAL_GRP] if i in members else None,
        "tree": [job, rnd, group, i, ports] if i in members else None,
        "host": [host_mac(i), host_ip(i), gateway_ip(i)],
        # plain IPv4: the island's own /24 to its host, the others' out of the direct WAN link
        "routes": [
            [
                f"10.0.{j}.0",
                24,
                HOST_PORT if j == i else port_toward(i, j),
                host_mac(j) if j == i else "02:00:00:00:00:00",
            ]
            for j in ISLANDS
        ],
    }


def program(net: Islands, job: int, rnd: int, group: int, members: Sequence[int]) -> None:
    """Install a round on every edge over P4Runtime (p4runtime-shell, in each namespace)."""
    for i in ISLANDS:
        spec = json.dumps(round_entries(i, job, rnd, group, members))
        done = subprocess.run(
            [
                "ip",
                "netns",
                "exec",
                net.switch(i),
                sys.executable,
                "-m",
                "tests.netns.innet_install",
                GRPC,
                spec,
            ],
            cwd=REPO,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        assert done.returncode == 0, done.stderr[-3000:]


class WorkerFailed(RuntimeError):
    """A leader's worker process exited with an error; the message ends with its stderr."""


def run_workers(
    net: Islands,
    packet_format: PacketFormat,
    floats: int,
    window: int,
    seed: int = 1,
    rate_bps: float | None = None,
    timeout: float = 600.0,
) -> list[dict]:
    """Every island's leader runs one group sum (tests/netns/innet_worker.py) at the same time,
    in packets of `packet_format` (the edges'); their JSON reports, in island order."""
    args = [str(floats), ",".join(map(str, ISLANDS)), str(window), str(seed), str(rate_bps or 0)]
    args += ["--lanes", str(packet_format.lanes)]
    procs = [
        subprocess.Popen(
            [
                "ip",
                "netns",
                "exec",
                net.host(i),
                sys.executable,
                "-m",
                "tests.netns.innet_worker",
                str(i),
                *args,
            ],
            cwd=REPO,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for i in ISLANDS
    ]
    # each prints its report once it has its sum, then answers NACKs until its stdin closes:
    # closed once every member has reported (or one has failed), as a round ends for the runner
    lines = [proc.stdout.readline() if proc.stdout else "" for proc in procs]
    reports = []
    for proc in procs:
        if proc.stdin:
            proc.stdin.close()
    for i, (proc, line) in enumerate(zip(procs, lines, strict=True)):
        err = proc.stderr.read() if proc.stderr else ""
        proc.wait(timeout=timeout)
        if proc.returncode != 0 or not line.strip():
            raise WorkerFailed(f"island {i}'s worker exited with {proc.returncode}: {err[-3000:]}")
        reports.append(json.loads(line))
    return reports
