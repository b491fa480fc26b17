"""A leader's cost on this machine: a real Aggregator against a loopback edge (sane figures only:
speeds are not tests)."""

from __future__ import annotations

import math
import os

import pytest

from controller.runner import leaderload
from controller.runner.leaderload import echo_edge, leader_rate
from innet.packetformat import PacketFormat


def children() -> set[int]:
    """This process's child PIDs, as the kernel lists them."""
    path = f"/proc/{os.getpid()}/task/{os.getpid()}/children"
    with open(path) as f:
        return {int(pid) for pid in f.read().split()}


@pytest.mark.parametrize("lanes", [32, 256])
def test_a_paced_leader_s_frames_per_cpu_second_are_measured_and_its_edge_stopped(
    lanes: int,
) -> None:
    before = children()
    rate = leader_rate(2_000.0, PacketFormat(lanes), span_s=0.05)
    assert math.isfinite(rate) and rate > 0
    assert children() == before  # the edge process is gone


def test_the_edge_answers_on_loopback_with_a_port_of_its_own() -> None:
    with echo_edge() as port:
        assert 0 < port < 65536
        assert children()  # running while in use
    assert leaderload.EDGE_IP.startswith("127.") and leaderload.LEADER_IP.startswith("127.")


@pytest.mark.parametrize("bad", [0.0, -5.0, math.nan])
def test_a_rate_that_is_no_rate_is_refused(bad: float) -> None:
    with pytest.raises(ValueError, match="positive"):
        leader_rate(bad, PacketFormat())
