"""Aggregation goodput through p4switch edges against the shaped WAN rate (run as root).

Three islands on a triangle of WAN links shaped by the switches (rate, one-way delay), innet.p4
on every edge, the worker library on every leader, one group of three. For slot pools above and
below the window that rate x (time from send to result) needs, it prints per island the
aggregation goodput (innet frames per second x 186 bytes, against the link rate: each WAN link
direction carries exactly one member's stream) and the values' rate, beside the planner's
cost-model predictions for the same round, with window pacing (what the worker library does: a
leader keeps at most one bank of slots unanswered) and with rate pacing.

    python bench/aggregation.py [--rate 5Mbit] [--delay 20ms] [--floats 400000]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # the namespace test helpers

from controller.planner.cost import CostModel, CostParams
from controller.planner.schedule import Round
from tests.netns import islands
from tests.netns.topology import destroy
from topo.units import format_rate, parse_duration, parse_rate
from topo.wan import City, Wan, WanLink
from workers.packets import PACKET_BYTES

FRAME_BYTES = 14 + 20 + 8 + PACKET_BYTES  # 186


def triangle(delay_s: float, rate_bps: float) -> Wan:
    cities = tuple(City(f"I{i}", f"I{i}", "X", 0.0, float(i)) for i in islands.ISLANDS)
    links = tuple(
        WanLink(f"I{i}", f"I{(i + 1) % 3}", delay_s, rate_bps, "bench") for i in islands.ISLANDS
    )
    return Wan("triangle", cities, links)


def predicted(delay_s: float, rate_bps: float, chunks: int, slots: int, pacing: str) -> float:
    """The planner's round time: update = the frames on the wire, memory = both slot banks."""
    params = CostParams(
        update_bytes=chunks * FRAME_BYTES,
        memory_bytes=2 * slots * FRAME_BYTES,
        access_bps=10e9,  # the hosts' links are not shaped
        slot_bytes=FRAME_BYTES,
        pacing=pacing,
    )
    return CostModel(triangle(delay_s, rate_bps), params).round_cost(Round.of([[0, 1, 2]])).time_s


def run(net: islands.Islands, workdir: Path, floats: int, slots: int, rate_bps: float,
        delay: str, rate: str) -> list[dict]:  # fmt: skip
    shapes = [f"{p}:rate={rate},delay={delay},limit=4000" for p in (2, 3)]
    edges = islands.start_edges(net, workdir, slots=slots, shapes=shapes)
    try:
        islands.program(net, job=1, rnd=1, group=0, members=[0, 1, 2])
        return islands.run_workers(net, floats, slots, rate_bps=rate_bps * 0.97)
    finally:
        for edge in edges:
            edge.stop()


def main() -> int:
    parser = argparse.ArgumentParser(
        prog="bench/aggregation.py", description=__doc__.split("\n")[0]
    )
    parser.add_argument("--rate", default="5Mbit", help="WAN link rate (each direction)")
    parser.add_argument("--delay", default="20ms", help="WAN link one-way delay")
    parser.add_argument("--floats", type=int, default=400_000, help="floats per island")
    options = parser.parse_args()
    if os.geteuid() != 0:
        parser.exit(2, "bench/aggregation.py: error: needs root (network namespaces)\n")
    rate_bps, delay_s = parse_rate(options.rate), parse_duration(options.delay)
    chunks = -(-options.floats // 32) + 1  # the update plus the exponent vote
    window = rate_bps * (2 * delay_s) / (FRAME_BYTES * 8)  # chunks in flight over a round trip
    print(
        f"3 islands, WAN {format_rate(rate_bps)} and {options.delay} one way, "
        f"{options.floats:,} floats each ({chunks:,} chunks); rate x RTT = {window:.0f} chunks"
    )
    net = islands.build(f"p4g{os.getpid()}")
    try:
        for slots in (4096, max(4, int(window) // 8)):
            with tempfile.TemporaryDirectory(prefix="p4g") as tmp:
                reports = run(net, Path(tmp), options.floats, slots, rate_bps,
                              options.delay, options.rate)  # fmt: skip
            by_rate = predicted(delay_s, rate_bps, chunks, slots, "rate")
            by_window = predicted(delay_s, rate_bps, chunks, slots, "window")
            cover = "covers" if slots >= window else "below"
            for i, r in enumerate(reports):
                goodput = chunks * FRAME_BYTES * 8 / r["elapsed_s"]
                values = options.floats * 32 / r["elapsed_s"]
                print(
                    f"  slots {slots:5d} ({cover} rate x RTT) island {i}: "
                    f"{r['elapsed_s']:6.2f} s, goodput {format_rate(goodput)} = "
                    f"{goodput / rate_bps:4.0%} of the link (values {format_rate(values)}); "
                    f"planner {by_window:6.2f} s (window pacing, as the workers do) / "
                    f"{by_rate:.2f} s (rate pacing); resent {r['stats']['retransmitted']}"
                )
    finally:
        destroy(net.namespaces)
    return 0


if __name__ == "__main__":
    sys.exit(main())
