"""An island's leader using the worker library over real UDP: one group sum of a float update.

    python -m tests.netns.innet_worker ISLAND FLOATS MEMBERS WINDOW [SEED [RATE_BPS]]

Runs in the island's host namespace. The update is `update(island, FLOATS, SEED)`; prints one
JSON line with a digest of the exact int32 group sum, the agreed exponent and the client's
statistics, then keeps answering the other members' NACKs for a moment before exiting.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import select
import sys
import time

import numpy as np

from workers.aggregate import Aggregator, GroupSum
from workers.group import GroupSpec, SendPolicy
from workers.transport import UdpTransport

JOB, ROUND, GROUP = 1, 1, 0


def update(island: int, floats: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed * 100 + island)
    return (rng.standard_normal(floats) * (island + 1)).astype(np.float32)


def digest(int_sum: np.ndarray) -> str:
    return hashlib.sha256(np.asarray(int_sum, dtype="<i4").tobytes()).hexdigest()


def main() -> int:
    island, floats = int(sys.argv[1]), int(sys.argv[2])
    members = tuple(int(m) for m in sys.argv[3].split(","))
    window = int(sys.argv[4])
    seed = int(sys.argv[5]) if len(sys.argv) > 5 else 1
    rate = float(sys.argv[6]) if len(sys.argv) > 6 and float(sys.argv[6]) > 0 else None
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
    group = GroupSpec(JOB, ROUND, GROUP, island, members)
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
