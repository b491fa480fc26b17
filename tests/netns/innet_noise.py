"""Malformed and foreign innet packets from a host, while its island aggregates.

    python -m tests.netns.innet_noise ISLAND COUNT [--lanes LANES]

Sends COUNT of each kind to the island's gateway on the innet port: truncated, version 2,
source island 40, a contribution for a group no controller installed, and one for the running
group that claims to come from the next island (spoofed: merged, it would change the sums).
Whole packets carry LANES values (the switches' -D LANES; default 32). Prints a JSON count.
"""

from __future__ import annotations

import argparse
import json
import socket
import sys
import time
from collections.abc import Sequence

from innet.packetformat import DEFAULT_LANES, LANE_CHOICES, PacketFormat
from workers.packets import Flag, InnetPacket, PacketType


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description="malformed and foreign innet packets to an island's gateway"
    )
    parser.add_argument("island", type=int)
    parser.add_argument("count", type=int, help="packets of each kind")
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
    island, count = args.island, args.count
    packet_format = PacketFormat(args.lanes)
    sevens = (7,) * packet_format.lanes
    good = InnetPacket.of(
        PacketType.CONTRIBUTION, Flag.WAN | Flag.LOCAL, 1, 1, 0, island, 5, 0, sevens, packet_format
    ).encode()
    kinds = {
        "truncated": good[:20],
        "version2": bytes([0x21]) + good[1:],
        "src40": good[:7] + bytes([40]) + good[8:],
        "unknown_group": InnetPacket.of(
            PacketType.CONTRIBUTION,
            Flag.WAN | Flag.LOCAL,
            1,
            1,
            9,
            island,
            5,
            0,
            sevens,
            packet_format,
        ).encode(),
        "spoofed": good[:7] + bytes([(island + 1) % 3]) + good[8:],
    }
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        for _ in range(count):
            for data in kinds.values():
                sock.sendto(data, (f"10.0.{island}.254", PacketFormat.UDP_PORT))
            time.sleep(0.002)  # spread over the run (pacing, not waiting for readiness)
    print(json.dumps({kind: count for kind in kinds}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
