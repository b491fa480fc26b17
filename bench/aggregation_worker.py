"""One island's leader for bench/aggregation.py: one group sum of a float update through its edge.

    python -m bench.aggregation_worker --island U --round R --floats N --window W [--rate-bps B]

Runs in island U's first host (a Mininet host namespace), cwd the repository root. It binds the
worker library's UDP transport (10.0.U.1 toward the gateway 10.0.U.254), computes in software
the exact int32 sum the group must get (every member's update is `update(m, N, seed)`, so each
leader can make all of them), then prints `{"ready": true}` and reads one line from stdin: the
Unix time at which every member starts. At that time it runs the float group sum (exponent vote,
then the update; window pacing with at most W chunks unanswered, paced at B b/s), prints one
JSON line (elapsed_s from the start time, digest and exactness of the int32 sum, the
aggregator's statistics) and answers the other members' NACKs for a moment before it exits.
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import json
import sys
import time

import numpy as np

from innet.packetformat import DEFAULT_LANES, LANE_CHOICES, PacketFormat
from topo.siteplan import JOB, LEADER_HOST, gateway_ip, host_ip
from workers.aggregate import Aggregator, GroupSpec, GroupSum, SendPolicy, sleep_until
from workers.quantise import agreed_exponent, exponent_of, exponent_vote, quantise, scale_for
from workers.transport import UdpTransport

GROUP = 0


def update(island: int, floats: int, seed: int) -> np.ndarray:
    """Island `island`'s update: normal values, larger on higher islands."""
    rng = np.random.default_rng(seed * 100 + island)
    return (rng.standard_normal(floats) * (island + 1)).astype(np.float32)


def software_sum(
    members: tuple[int, ...], floats: int, seed: int, lanes: int
) -> tuple[int, np.ndarray]:
    """The agreed exponent (voted in `lanes` values) and the int32 (wrapping) sum of the
    members' quantised updates."""
    updates = [update(m, floats, seed) for m in members]
    votes = np.sum([exponent_vote(exponent_of(u, lanes), lanes) for u in updates], axis=0)
    exponent = agreed_exponent(votes)
    k = len(members)
    scale = scale_for(exponent, k)
    total = np.zeros(floats, dtype=np.int32)
    for u in updates:
        total += quantise(u, scale, k)
    return exponent, total


def digest(int_sum: np.ndarray) -> str:
    return hashlib.sha256(np.asarray(int_sum, dtype="<i4").tobytes()).hexdigest()


def parse(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench.aggregation_worker")
    parser.add_argument("--island", type=int, required=True)
    parser.add_argument("--members", default="0,1,2", help="island ids of the group")
    parser.add_argument("--round", type=int, required=True, help="installed round & 0xFFFF")
    parser.add_argument("--floats", type=int, required=True)
    parser.add_argument("--window", type=int, required=True, help="chunks unanswered (slots)")
    parser.add_argument("--rate-bps", type=float, default=0.0, help="pacing rate (0: none)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument(
        "--lanes",
        type=int,
        choices=LANE_CHOICES,
        default=DEFAULT_LANES,
        help="int32 values in one packet: the switches' -D LANES",
    )
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse(argv)
    members = tuple(int(m) for m in args.members.split(","))
    group = GroupSpec(JOB, args.round, GROUP, args.island, members, PacketFormat(args.lanes))
    policy = SendPolicy(
        window=args.window,
        rate_bps=args.rate_bps or None,
        timeout_s=0.2,
        max_timeout_s=1.0,
        deadline_s=90.0,
        # no linger_s: the library's quiet_s, or the NACK horizon of the measured timeouts
    )
    mine = update(args.island, args.floats, args.seed)
    want_exponent, want = software_sum(members, args.floats, args.seed, args.lanes)
    local, edge = host_ip(args.island, LEADER_HOST), gateway_ip(args.island)
    with UdpTransport(local, edge) as transport:
        print(json.dumps({"ready": True}), flush=True)
        start_at = float(sys.stdin.readline())
        while transport.recv(0.0) is not None:  # nothing from before the start counts
            pass
        aggregator = Aggregator(transport, group, policy)
        sleep_until(start_at)
        session = GroupSum(aggregator, mine)
        while not session.step(aggregator.wait_hint()):
            pass
        elapsed = time.time() - start_at
        got = session.int_sum()
        report = {
            "island": args.island,
            "elapsed_s": elapsed,
            "exponent": session.exponent,
            "digest": digest(got),
            "exact": bool(session.exponent == want_exponent and np.array_equal(got, want)),
            "stats": dataclasses.asdict(aggregator.stats),
        }
        print(json.dumps(report), flush=True)
        aggregator.serve()
    return 0


if __name__ == "__main__":
    sys.exit(main())
