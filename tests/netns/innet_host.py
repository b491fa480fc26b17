"""An island's leader speaking innet directly (no worker library): contributions out, results in.

    python -m tests.netns.innet_host ISLAND CHUNKS WINDOW MEMBERS(comma-separated) [TIMEOUT]
                                     [--lanes LANES]

Runs in the island's host namespace. Chunk c of island i carries values(i, c, lanes) in packets
of LANES values (the switches' -D LANES; default 32); it keeps at most WINDOW chunks without a
result, and prints one JSON line: how many results were exact sums of the members' values, how
many were wrong, which chunks never got one, and the elapsed time.
"""

from __future__ import annotations

import argparse
import json
import socket
import sys
import time
from collections.abc import Sequence

import numpy as np

from innet.packetformat import DEFAULT_LANES, LANE_CHOICES, PacketFormat
from workers.exceptions import PacketError
from workers.packets import Flag, InnetPacket, PacketType

JOB, ROUND, GROUP = 1, 1, 0


def values(island: int, chunk: int, lanes: int) -> np.ndarray:
    """Deterministic int32 contributions, large enough that sums wrap around."""
    lane = np.arange(lanes, dtype=np.int64)
    return ((island + 1) * 700_001_003 + chunk * 1_000_003 + lane * 99_991).astype(np.int32)


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description="an island's leader speaking innet directly: contributions out, results in"
    )
    parser.add_argument("island", type=int)
    parser.add_argument("chunks", type=int)
    parser.add_argument("window", type=int, help="chunks sent and not yet answered, at most")
    parser.add_argument("members", help="the group's islands, comma-separated")
    parser.add_argument("timeout", type=float, nargs="?", default=20.0, help="seconds")
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
    island, chunks, window, timeout = args.island, args.chunks, args.window, args.timeout
    members = [int(m) for m in args.members.split(",")]
    packet_format = PacketFormat(args.lanes)
    lanes = packet_format.lanes
    gateway = (f"10.0.{island}.254", PacketFormat.UDP_PORT)
    exact = wrong = 0
    done: set[int] = set()
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.bind((f"10.0.{island}.1", PacketFormat.UDP_PORT))
    sock.settimeout(0.2)
    start = time.monotonic()
    sent = 0
    while len(done) < chunks and time.monotonic() - start < timeout:
        while sent < chunks and sent - len(done) < window:
            contribution = tuple(int(v) for v in values(island, sent, lanes))
            kind, flags = PacketType.CONTRIBUTION, Flag.WAN | Flag.LOCAL
            msg = InnetPacket.of(
                kind, flags, JOB, ROUND, GROUP, island, sent, 0, contribution, packet_format
            )
            sock.sendto(msg.encode(), gateway)
            sent += 1
        try:
            data = sock.recv(2048)
        except TimeoutError:
            continue
        try:
            result = InnetPacket.decode(data, packet_format)
        except PacketError:
            continue
        if result.type != PacketType.RESULT or result.chunk in done:
            continue
        expected = np.zeros(lanes, dtype=np.int32)
        for m in members:
            expected = expected + values(m, result.chunk, lanes)
        if np.array_equal(result.array(), expected):
            exact += 1
        else:
            wrong += 1
        done.add(result.chunk)
    missing = sorted(set(range(chunks)) - done)
    report = {
        "exact": exact,
        "wrong": wrong,
        "missing": missing[:20],
        "missing_count": len(missing),
        "elapsed_s": time.monotonic() - start,
    }
    print(json.dumps(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
