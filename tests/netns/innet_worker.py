"""An island's leader using the worker library over real UDP: one group sum of a float update.

    python -m tests.netns.innet_worker ISLAND FLOATS MEMBERS WINDOW [SEED [RATE_BPS]]
                                       [--lanes LANES]

Runs in the island's host namespace, in packets of LANES values (the switches' -D LANES;
default 32). The update is `update(island, FLOATS, SEED)`; prints one JSON line with a digest of
the exact int32 group sum, the agreed exponent and the client's statistics, then keeps answering
the other members' NACKs for a moment before exiting.
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import json
import select
import sys
import time
from collections.abc import Sequence

import numpy as np

from innet.packetformat import DEFAULT_LANES, LANE_CHOICES, PacketFormat
from workers.aggregate import Aggregator, GroupSum
from workers.group import GroupSpec, SendPolicy
from workers.transport import UdpTransport

JOB, ROUND, GROUP = 1, 1, 0


def update(island: int, floats: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed * 100 + island)
    return (rng.standard_normal(floats) * (island + 1)).astype(np.float32)


def digest(int_sum: np.ndarray) -> str:
    return hashlib.sha256(np.asarray(int_sum, dtype="<i4").tobytes()).hexdigest()


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description="an island's leader: one group sum of a float update with the worker library"
    )
    parser.add_argument("island", type=int)
    parser.add_argument("floats", type=int, help="values in the update")
    parser.add_argument("members", help="the group's islands, comma-separated")
    parser.add_argument("window", type=int, help="chunks sent and not yet answered, at most")
    parser.add_argument("seed", type=int, nargs="?", default=1)
    parser.add_argument("rate_bps", type=float, nargs="?", default=0.0, help="0: unpaced")
    parser.add_argument(
        "--lanes",
        type=int,
        choices=LANE_CHOICES,
        default=DEFAULT_LANES,
        help="int32 values per packet, as the switches' -D LANES (default %(default)s)",
    )
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    island, floats, window, seed = args.island, args.floats, args.window, args.seed
    members = tuple(int(m) for m in args.members.split(","))
    rate = args.rate_bps if args.rate_bps > 0 else None
    packet_format = PacketFormat(args.lanes)
    policy = SendPolicy(
        window=window,
        rate_bps=rate,
        timeout_s=0.2,
        max_timeout_s=1.0,
        deadline_s=90.0,
        # no linger_s: the library's quiet_s (4 s here), or this member's NACK horizon if
        # longer. 1.5 s was enough for fixed timeouts (the first NACK 1.4 s after a chunk);
        # with timeouts that follow the latency, a peer behind a busier edge (island 0 takes
        # the malformed noise) NACKed after its peers had left, and waited out the deadline
    )
    group = GroupSpec(JOB, ROUND, GROUP, island, members, packet_format)
    with UdpTransport(f"10.0.{island}.1", f"10.0.{island}.254") as transport:
        aggregator = Aggregator(transport, group, policy)
        start = time.monotonic()
        session = GroupSum(aggregator, update(island, floats, seed))
        while not session.step(aggregator.wait_hint()):
            pass
        report = {
            "elapsed_s": time.monotonic() - start,
            "digest": digest(session.int_sum()),
            "exponent": session.exponent,
            "stats": dataclasses.asdict(aggregator.stats),
        }
        print(json.dumps(report), flush=True)
        serve_until_told(aggregator, policy.deadline_s)
    return 0


def serve_until_told(aggregator: Aggregator, longest_s: float) -> None:
    """Answer the other members' NACKs until the test closes our stdin (every member has its
    sum), as the runner's leaders answer until the next round: a member that stopped on a
    quiet timer of its own could leave before a slower peer's NACK. Without a pipe on stdin
    (run by hand), serve on the library's quiet timer."""
    if sys.stdin is None or sys.stdin.isatty():
        aggregator.serve()
        return
    until = time.monotonic() + longest_s
    while time.monotonic() < until and not select.select([sys.stdin], [], [], 0.0)[0]:
        aggregator.step(0.02)


if __name__ == "__main__":
    sys.exit(main())
