"""What a leader's exchange costs this machine: frames per CPU second of the leader's thread.

The machine check (controller/runner/calibration.py) weighs the CPU a plan needs against the
machine's, and the leaders take their share beside the switches: at scale 1000 the nine-city
demo's nine leaders took 1.1-1.4 cores of two in its busiest rounds, the switches 0.4-0.7.
`leader_rate(fps, packet_format)` measures it as a leader runs: a real `Aggregator` (pacing and
bookkeeping, the packet codec, a UDP socket and its waits) sending `fps` frames of the run's
format a second, each chunk twice as
an inna leader does (WAN|REMOTE, then LOCAL just in time), to an edge in a child process on
loopback that answers each LOCAL copy with the chunk's RESULT. The figure is the frames the
leader sent and received over its thread's CPU time; the edge's work is the child's (the
switches are measured apart). Only 127.0.0.1 and 127.0.0.2 carry the frames.

    python -m controller.runner.leaderload [FPS] [--lanes N]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

import numpy as np

from controller.p4rt.started import stop_started
from controller.runner.exceptions import ExperimentError
from innet.packetformat import DEFAULT_LANES, LANE_CHOICES, PacketFormat
from workers.aggregate import Aggregator, GroupSpec, SendPolicy
from workers.transport import UdpTransport

SPAN_S = 0.3  # paced frames for about this long
MIN_CHUNKS = 64
LEADER_IP, EDGE_IP = "127.0.0.1", "127.0.0.2"
MEMBERS = (0, 1)  # the leader measured is island 0; the edge answers for both
BITMAP = sum(1 << m for m in MEMBERS)
START_TIMEOUT_S = 10.0

# The edge: binds EDGE_IP on a free port, says which, and answers each LOCAL copy with its RESULT
# (type 2, the group's bitmap) until it is stopped; no innet import, so it starts fast.
_EDGE = """
import socket, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 8 << 20)
s.bind((sys.argv[1], 0))
print(s.getsockname()[1], flush=True)
bitmap = bytes.fromhex(sys.argv[2])
while True:
    data, peer = s.recvfrom(4096)
    if data[1] & 2:  # LOCAL: the copy that completes the slot
        s.sendto(b"\\x12" + data[1:12] + bitmap + data[16:], peer)
"""


@contextmanager
def echo_edge() -> Iterator[int]:
    """The edge process, started and stopped (its PID only); yields its UDP port."""
    bitmap = BITMAP.to_bytes(4, "big").hex()
    proc = subprocess.Popen(
        [sys.executable, "-c", _EDGE, EDGE_IP, bitmap], stdout=subprocess.PIPE, text=True
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline().strip()
        if not line.isdigit():
            raise ExperimentError(f"calibration: the loopback edge did not start ({line!r})")
        yield int(line)
    finally:
        stop_started(proc, START_TIMEOUT_S)


def leader_rate(fps: float, packet_format: PacketFormat, span_s: float = SPAN_S) -> float:
    """Frames (sent and received) per CPU second of a leader sending `fps` frames of
    `packet_format` a second."""
    if not fps > 0:
        raise ValueError(f"a leader's rate must be positive, got {fps}")
    chunks = max(MIN_CHUNKS, round(fps * span_s / 2))
    interval = 2 / fps  # two copies a chunk
    group = GroupSpec(job=1, round=1, group=0, me=0, members=MEMBERS, packet_format=packet_format)
    frame_bits = packet_format.frame_bits
    policy = SendPolicy(
        window=chunks,
        rate_bps=frame_bits / interval,
        local_lag_s=interval / 2,
        timeout_s=10 * span_s + 1,
        max_timeout_s=20 * span_s + 2,
        deadline_s=60 * span_s + 10,
    )
    with echo_edge() as port, UdpTransport(LEADER_IP, EDGE_IP, port) as transport:
        leader = Aggregator(transport, group, policy, time.monotonic)
        start = time.thread_time()
        leader.allreduce_sum(np.zeros(chunks * packet_format.lanes, dtype=np.int32), 1.0)
        cpu = time.thread_time() - start
    frames = 2 * leader.stats.sent + leader.stats.results  # each chunk's two copies, its sum
    return frames / cpu if cpu > 0 else float("inf")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m controller.runner.leaderload", description=__doc__.splitlines()[0]
    )
    parser.add_argument(
        "fps",
        nargs="?",
        type=float,
        default=3000.0,
        help="frames a second the leader sends (default 3000)",
    )
    parser.add_argument(
        "--lanes",
        type=int,
        choices=LANE_CHOICES,
        default=DEFAULT_LANES,
        help="int32 values in one packet (default %(default)s)",
    )
    args = parser.parse_args(argv)
    rate = leader_rate(args.fps, PacketFormat(args.lanes))
    print(
        f"a leader sending {args.fps:,.0f} frames/s of {args.lanes} lanes: "
        f"{rate:,.0f} frames per CPU second"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
