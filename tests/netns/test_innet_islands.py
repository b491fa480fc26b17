"""innet.p4 on three p4switch processes between namespaces, programmed over P4Runtime: the
islands' leaders exchange real UDP packets and get exact sums back. The edges and the leaders
share one packet format, `PACKET_FORMAT` (innet.p4's default, 32 lanes)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from innet.packetformat import PacketFormat
from tests.netns import islands
from tests.netns.harness import REPO
from tests.netns.innet_worker import digest, update
from tests.netns.topology import destroy
from workers.quantise import agreed_exponent, exponent_of, exponent_vote, quantise, scale_for

pytestmark = pytest.mark.netns

PACKET_FORMAT = PacketFormat()  # the edges' -D defines and the leaders' --lanes


@pytest.fixture
def net(netns_available: None) -> Iterator[islands.Islands]:
    built = islands.build(f"p4i{os.getpid()}")
    try:
        yield built
    finally:
        destroy(built.namespaces)


def leaders(net: islands.Islands, chunks: int, window: int, members: str) -> list[dict]:
    """Run every member's leader at once; their JSON reports, by island."""
    procs = [
        subprocess.Popen(
            [
                "ip",
                "netns",
                "exec",
                net.host(i),
                sys.executable,
                "-m",
                "tests.netns.innet_host",
                str(i),
                str(chunks),
                str(window),
                members,
                "--lanes",
                str(PACKET_FORMAT.lanes),
            ],
            cwd=REPO,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for i in map(int, members.split(","))
    ]
    reports = []
    for proc in procs:
        out, err = proc.communicate(timeout=60)
        assert proc.returncode == 0, err
        reports.append(json.loads(out.strip().splitlines()[-1]))
    return reports


def test_three_islands_aggregate_exactly(net: islands.Islands, tmp_path: Path):
    edges = islands.start_edges(net, tmp_path, slots=256, packet_format=PACKET_FORMAT)
    try:
        islands.program(net, job=1, rnd=1, group=0, members=[0, 1, 2])
        reports = leaders(net, chunks=600, window=128, members="0,1,2")
        for i, report in enumerate(reports):
            assert report["wrong"] == 0 and report["missing_count"] == 0, (i, report)
            assert report["exact"] == 600
        for edge in edges:
            drops = edge.stats()["ports"]["1"]["drops"]
            assert drops["pipeline_error"] == 0
    finally:
        for edge in edges:
            assert edge.stop() == 0


FLOATS = 100_000


def workers(net: islands.Islands, window: int, seed: int = 1) -> list[dict]:
    """Every island's leader runs one group sum with the worker library; their reports."""
    return islands.run_workers(net, PACKET_FORMAT, FLOATS, window, seed, timeout=150)


def expected_digest(seed: int = 1) -> str:
    """numpy's sum of the quantised inputs, wrapping like int32."""
    updates = [update(i, FLOATS, seed) for i in islands.ISLANDS]
    lanes = PACKET_FORMAT.lanes  # the votes' width: the exponents they can carry
    exponent = agreed_exponent(sum(exponent_vote(exponent_of(u, lanes), lanes) for u in updates))
    scale = scale_for(exponent, len(updates))
    total = np.zeros(FLOATS, dtype=np.int32)
    for u in updates:
        total = total + quantise(u, scale, len(updates))
    return digest(total)


@pytest.mark.parametrize(
    ("slots", "window", "shapes", "lossy"),
    [
        (1024, 1024, (), False),
        # 2% loss on every WAN link, one direction each way round the triangle
        (1024, 1024, ("2:loss=0.02", "3:loss=0.02"), True),
        # 64 slots against 5 ms WAN links: far below the bandwidth-delay product
        (64, 64, ("2:delay=5ms", "3:delay=5ms"), False),
    ],
    ids=["clean", "loss-2pct", "few-slots"],
)
def test_worker_library_sums_100k_floats_exactly(net, tmp_path, slots, window, shapes, lossy):
    edges = islands.start_edges(
        net, tmp_path, slots=slots, packet_format=PACKET_FORMAT, shapes=shapes
    )
    try:
        islands.program(net, job=1, rnd=1, group=0, members=[0, 1, 2])
        reports = workers(net, window)
    finally:
        for edge in edges:
            edge.stop()
    want = expected_digest()
    for i, report in enumerate(reports):
        assert report["digest"] == want, (i, report)
    if lossy:  # (a clean run resends too: the leaders start a fraction of a second apart)
        assert sum(r["stats"]["retransmitted"] for r in reports) > 0, reports


def counters(net: islands.Islands, i: int) -> dict[str, int]:
    done = subprocess.run(
        [
            "ip",
            "netns",
            "exec",
            net.switch(i),
            sys.executable,
            "-m",
            "tests.netns.innet_counters",
            islands.GRPC,
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_malformed_and_foreign_packets_are_counted_while_sums_stay_exact(net, tmp_path):
    edges = islands.start_edges(
        net, tmp_path, slots=1024, packet_format=PACKET_FORMAT, shapes=("2:loss=0.01",)
    )
    try:
        islands.program(net, job=1, rnd=1, group=0, members=[0, 1, 2])
        noise = subprocess.Popen(
            [
                "ip",
                "netns",
                "exec",
                net.host(0),
                sys.executable,
                "-m",
                "tests.netns.innet_noise",
                "0",
                "300",
                "--lanes",
                str(PACKET_FORMAT.lanes),
            ],
            cwd=REPO,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        reports = workers(net, 1024, seed=2)
        _out, err = noise.communicate(timeout=60)
        assert noise.returncode == 0, err
        stats = [counters(net, i) for i in islands.ISLANDS]
    finally:
        for edge in edges:
            edge.stop()
    want = expected_digest(seed=2)
    assert all(r["digest"] == want for r in reports), reports
    assert stats[0]["malformed"] >= 3 * 300  # truncated, version 2, source island 40
    assert stats[0]["unknown"] >= 300
    assert stats[0]["spoofed"] >= 300  # another island's src from a host: never merged
    # each retransmission reaches edges that already merged it: counted, never merged again
    assert sum(s["duplicate"] for s in stats) > 0
    chunks = FLOATS // PACKET_FORMAT.lanes
    for s in stats:
        assert s["completed"] >= chunks  # every chunk completed at every edge


def test_plain_ipv4_crosses_the_wan(net, tmp_path):
    """Other traffic is routed: ping between islands, through two edges and a shaped link."""
    edges = islands.start_edges(
        net,
        tmp_path,
        slots=64,
        packet_format=PACKET_FORMAT,
        shapes=("2:delay=10ms", "3:delay=10ms"),
    )
    try:
        islands.program(net, job=1, rnd=1, group=0, members=[0, 1, 2])
        done = subprocess.run(
            [
                "ip",
                "netns",
                "exec",
                net.host(0),
                "ping",
                "-n",
                "-c",
                "3",
                "-i",
                "0.2",
                "-W",
                "2",
                islands.host_ip(1),
            ],
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
        )
    finally:
        for edge in edges:
            edge.stop()
    assert done.returncode == 0, done.stdout + done.stderr
    rtts = [float(x.split("=")[1]) for x in done.stdout.split() if x.startswith("time=")]
    assert len(rtts) == 3 and min(rtts) >= 20  # 10 ms each way; load only adds to it
