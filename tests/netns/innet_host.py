"""An island's leader speaking innet directly (no worker library): contributions out, results in.

    python -m tests.netns.innet_host ISLAND CHUNKS WINDOW MEMBERS(comma-separated) [TIMEOUT]

Runs in the island's host namespace. Chunk c of island i carries values(i, c); it keeps at most
WINDOW chunks without a result, and prints one JSON line: how many results were exact sums of
the members' values, how many were wrong, which chunks never got one, and the elapsed time.
"""

from __future__ import annotations

import json
import socket
import sys
import time

import numpy as np

from topo.siteplan import INNET_UDP_PORT
from workers.exceptions import PacketError
from workers.packets import Flag, InnetPacket, PacketType

JOB, ROUND, GROUP = 1, 1, 0


def values(island: int, chunk: int) -> np.ndarray:
    """Deterministic int32 contributions, large enough that sums wrap around."""
    lanes = np.arange(32, dtype=np.int64)
    return ((island + 1) * 700_001_003 + chunk * 1_000_003 + lanes * 99_991).astype(np.int32)


def main() -> int:
    island, chunks, window = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
    members = [int(m) for m in sys.argv[4].split(",")]
    timeout = float(sys.argv[5]) if len(sys.argv) > 5 else 20.0
    gateway = (f"10.0.{island}.254", INNET_UDP_PORT)
    exact = wrong = 0
    done: set[int] = set()
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.bind((f"10.0.{island}.1", INNET_UDP_PORT))
    sock.settimeout(0.2)
    start = time.monotonic()
    sent = 0
    while len(done) < chunks and time.monotonic() - start < timeout:
        while sent < chunks and sent - len(done) < window:
            lanes = tuple(int(v) for v in values(island, sent))
            kind, flags = PacketType.CONTRIBUTION, Flag.WAN | Flag.LOCAL
            msg = InnetPacket.of(kind, flags, JOB, ROUND, GROUP, island, sent, 0, lanes)
            sock.sendto(msg.encode(), gateway)
            sent += 1
        try:
            data = sock.recv(2048)
        except TimeoutError:
            continue
        try:
            result = InnetPacket.decode(data)
        except PacketError:
            continue
        if result.type != PacketType.RESULT or result.chunk in done:
            continue
        expected = np.zeros(32, dtype=np.int32)
        for m in members:
            expected = expected + values(m, result.chunk)
        if np.array_equal(result.array(), expected):
            exact += 1
        else:
            wrong += 1
        done.add(result.chunk)
    missing = sorted(set(range(chunks)) - done)
    report = {"exact": exact, "wrong": wrong, "missing": missing[:20],
              "missing_count": len(missing), "elapsed_s": time.monotonic() - start}  # fmt: skip
    print(json.dumps(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
