"""innet on a Ray cluster of three "machines" (network namespaces on a bridge, tests/netns/
cluster.py): `innet cluster check` finds every node, checks it and measures the clocks and the
wires between them; a cluster that cannot be reached is refused in one line; a cluster stopped,
one of its nodes lost first, leaves nothing behind."""

from __future__ import annotations

import json
import os
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.netns.cluster import LocalCluster, why_not_here

pytestmark = [pytest.mark.netns, pytest.mark.slow]

INNET = str(Path(sys.executable).parent / "innet")


@pytest.fixture(scope="module")
def cluster() -> Iterator[LocalCluster]:
    reason = why_not_here()
    if reason is not None:
        pytest.skip(f"cluster test skipped: {reason}")
    built = LocalCluster(f"icl{os.getpid() % 100_000}", Path(tempfile.mkdtemp(prefix="icl")))
    built.start()
    try:
        yield built
    finally:
        built.stop()


def test_check_finds_every_node_and_measures_its_clock_and_the_wires(
    cluster: LocalCluster,
) -> None:
    done = cluster.driver(
        1, [INNET, "cluster", "check", cluster.head, "--json", "--exchanges", "20"]
    )
    assert done.returncode == 0, done.stderr
    survey = json.loads(done.stdout)
    addresses = [cluster.address(i) for i in range(1, cluster.nodes + 1)]
    assert [n["address"] for n in survey["nodes"]] == addresses
    for node in survey["nodes"]:
        assert node["uid"] == 0 and node["namespaces"] is None and node["mininet"] is None
        clock = node["clock"]
        assert clock["samples"] == 20
        # one kernel clock on every "machine": the true offset, 0, lies within the stated bound
        assert abs(clock["offset_s"]) <= clock["uncertainty_s"]
    pairs = [tuple(w["nodes"]) for w in survey["wires"]]
    a, b, c = addresses
    assert pairs == [(a, b), (a, c), (b, c)]
    for wire in survey["wires"]:
        assert 0 < wire["one_way_s"] == wire["min_round_trip_s"] / 2
        assert wire["min_round_trip_s"] <= wire["median_round_trip_s"]


def test_check_prints_the_nodes_and_wires(cluster: LocalCluster) -> None:
    done = cluster.driver(2, [INNET, "cluster", "check", cluster.head, "--exchanges", "5"])
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(f"cluster {cluster.head}: 3 nodes, Ray ")
    for i in range(1, cluster.nodes + 1):
        assert f"\n{cluster.address(i)} " in done.stdout
    assert f"{cluster.address(2)} - {cluster.address(3)}" in done.stdout


def test_an_unreachable_head_is_refused_in_one_line(cluster: LocalCluster) -> None:
    done = cluster.driver(1, [INNET, "cluster", "check", f"{cluster.address(1)}:6390"])
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1
    assert f"cannot reach the Ray cluster at {cluster.address(1)}:6390" in done.stderr


def test_a_cluster_stopped_after_losing_a_node_leaves_nothing(cluster: LocalCluster) -> None:
    small = LocalCluster(f"icm{os.getpid() % 100_000}", Path(tempfile.mkdtemp(prefix="icm")), 2)
    try:
        small.start()
        assert small.pids(2)
        small.kill_node(2)
        done = small.driver(1, [INNET, "cluster", "check", small.head, "--exchanges", "3"])
        # the head still counts the lost node alive: its agent never answers, and is named
        assert done.returncode == 2, done.stderr
        assert done.stderr.count("\n") == 1
        assert f"node {small.address(2)}: " in done.stderr
    finally:
        small.stop()
    assert small.leftovers() == []
