"""The gloo baseline between network namespaces: three islands' leaders, each a gloo rank in its
own namespace at its site-plan address, joined by a Linux bridge in a fourth namespace; a
grouped all_reduce across them.

    r<u> (10.0.u.1/16) h<u>-eth0 <-veth-> p<u> [bridge br0 in the bridge namespace]

Each rank is this module run in its namespace (`python -m tests.netns.test_gloo_netns ISLAND`),
which prints its results as one JSON line.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import numpy as np
import pytest

from tests.netns.harness import REPO
from tests.netns.topology import destroy, in_ns, run
from topo.siteplan import LEADER_HOST, host_ip
from workers.gloo import GlooWorld, gloo_available

pytestmark = pytest.mark.netns

MODULE = "tests.netns.test_gloo_netns"
ISLANDS = 3
ROUNDS = (((0, 1, 2),), ((0, 2), (1,)))  # the schedule: everyone, then {0, 2} with 1 alone
FLOATS = 2500  # 10 kB of float32


def values_of(island: int) -> np.ndarray:
    return np.random.default_rng(200 + island).standard_normal(FLOATS).astype(np.float32)


@dataclass(frozen=True)
class BridgedIslands:
    prefix: str

    def host(self, island: int) -> str:
        return f"{self.prefix}-r{island}"

    @property
    def bridge(self) -> str:
        return f"{self.prefix}-br"

    @property
    def namespaces(self) -> tuple[str, ...]:
        return (*(self.host(u) for u in range(ISLANDS)), self.bridge)


def build(prefix: str) -> BridgedIslands:
    """The namespaces, the bridge and one veth pair per island, each end made in its namespace
    (the root namespace holds none of them: deleting the namespaces removes everything)."""
    net = BridgedIslands(prefix)
    created: list[str] = []
    try:
        for ns in net.namespaces:
            run(["ip", "netns", "add", ns])
            created.append(ns)
            in_ns(ns, "sysctl", "-q", "-w", "net.ipv6.conf.all.disable_ipv6=1")
            in_ns(ns, "sysctl", "-q", "-w", "net.ipv6.conf.default.disable_ipv6=1")
            run(["ip", "-n", ns, "link", "set", "lo", "up"])
        run(["ip", "-n", net.bridge, "link", "add", "br0", "type", "bridge"])
        run(["ip", "-n", net.bridge, "link", "set", "br0", "up"])
        for u in range(ISLANDS):
            host, dev, port = net.host(u), f"h{u}-eth0", f"p{u}"
            run(
                [
                    "ip",
                    "link",
                    "add",
                    dev,
                    "netns",
                    host,
                    "type",
                    "veth",
                    "peer",
                    "name",
                    port,
                    "netns",
                    net.bridge,
                ]
            )
            run(["ip", "-n", net.bridge, "link", "set", port, "master", "br0", "up"])
            run(["ip", "-n", host, "addr", "add", f"{host_ip(u, LEADER_HOST)}/16", "dev", dev])
            run(["ip", "-n", host, "link", "set", dev, "up"])
            in_ns(host, "ethtool", "-K", dev, "tx", "off")  # harmless: the bridge is the kernel's
    except BaseException:
        destroy(created)
        raise
    return net


@pytest.fixture
def islands(netns_available: None) -> Iterator[BridgedIslands]:
    reason = gloo_available()
    if reason is not None:
        pytest.skip(f"gloo netns test skipped: {reason}")
    net = build(f"gl{os.getpid()}")
    try:
        yield net
    finally:
        destroy(net.namespaces)


def start_ranks(net: BridgedIslands) -> list[subprocess.Popen[str]]:
    return [
        subprocess.Popen(
            ["ip", "netns", "exec", net.host(u), sys.executable, "-m", MODULE, str(u)],
            cwd=REPO,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for u in range(ISLANDS)
    ]


def test_a_grouped_all_reduce_across_three_namespaces(islands: BridgedIslands) -> None:
    procs = start_ranks(islands)
    reports = []
    try:
        for u, proc in enumerate(procs):
            out, err = proc.communicate(timeout=180)
            assert proc.returncode == 0, f"island {u}'s rank exited {proc.returncode}:\n{err}"
            reports.append(json.loads(out.strip().splitlines()[-1]))
    finally:
        for proc in procs:  # exactly the ranks started here, if one is still running
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    everyone = np.mean([values_of(u).astype(np.float64) for u in range(ISLANDS)], axis=0)
    pair = (values_of(0).astype(np.float64) + values_of(2)) / 2
    for u, report in enumerate(reports):
        assert report["interface"] == f"h{u}-eth0"
        np.testing.assert_allclose(report["rounds"][0], everyone, rtol=1e-5, atol=1e-6)
        expected = values_of(1) if u == 1 else pair
        np.testing.assert_allclose(report["rounds"][1], expected, rtol=1e-6, atol=1e-6)
    assert np.array_equal(reports[0]["rounds"][1], reports[2]["rounds"][1])
    print(
        "gloo across namespaces: set-up "
        + ", ".join(f"{r['setup_s']:.2f}" for r in reports)
        + " s; 10 kB all_reduce of three "
        + ", ".join(f"{r['seconds'][0] * 1e3:.1f}" for r in reports)
        + " ms"
    )


# --- one rank, in its island's namespace ---------------------------------------------------------


def rank_main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="one gloo rank of this test, in its namespace")
    parser.add_argument("island", type=int)
    island = parser.parse_args(argv).island
    groups = [group for groups in ROUNDS for group in groups]
    began = time.monotonic()
    with GlooWorld.for_island(island, ISLANDS, groups, timeout_s=60) as world:
        setup_s = time.monotonic() - began
        rounds, seconds = [], []
        for partition in ROUNDS:
            (members,) = [g for g in partition if island in g]
            started = time.monotonic()
            rounds.append(world.allreduce_mean(members, values_of(island)).tolist())
            seconds.append(time.monotonic() - started)
        interface = world.interface
    report = {"interface": interface, "setup_s": setup_s, "rounds": rounds, "seconds": seconds}
    print(json.dumps(report))
    return 0


if __name__ == "__main__":
    sys.exit(rank_main())
