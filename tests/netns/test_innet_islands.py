"""innet.p4 on three p4switch processes between namespaces, programmed over P4Runtime: the
islands' leaders exchange real UDP packets and get exact sums back."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.netns import islands
from tests.netns.harness import REPO
from tests.netns.topology import destroy

pytestmark = pytest.mark.netns


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
    edges = islands.start_edges(net, tmp_path, slots=256)
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
