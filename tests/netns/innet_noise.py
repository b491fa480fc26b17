"""Malformed and foreign innet packets from a host, while its island aggregates.

    python -m tests.netns.innet_noise ISLAND COUNT

Sends COUNT of each kind to the island's gateway on the innet port: truncated, version 2,
source island 40, a contribution for a group no controller installed, and one for the running
group that claims to come from the next island (spoofed: merged, it would change the sums).
Prints a JSON count.
"""

from __future__ import annotations

import json
import socket
import sys
import time

from topo.siteplan import INNET_UDP_PORT
from workers.packets import Flag, InnetPacket, PacketType


def main() -> int:
    island, count = int(sys.argv[1]), int(sys.argv[2])
    good = InnetPacket.of(PacketType.CONTRIBUTION, Flag.WAN | Flag.LOCAL, 1, 1, 0, island, 5, 0,
                       (7,) * 32).encode()  # fmt: skip
    kinds = {
        "truncated": good[:20],
        "version2": bytes([0x21]) + good[1:],
        "src40": good[:7] + bytes([40]) + good[8:],
        "unknown_group": InnetPacket.of(
            PacketType.CONTRIBUTION, Flag.WAN | Flag.LOCAL, 1, 1, 9, island, 5, 0, (7,) * 32
        ).encode(),
        "spoofed": good[:7] + bytes([(island + 1) % 3]) + good[8:],
    }
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        for _ in range(count):
            for data in kinds.values():
                sock.sendto(data, (f"10.0.{island}.254", INNET_UDP_PORT))
            time.sleep(0.002)  # spread over the run (pacing, not waiting for readiness)
    print(json.dumps({kind: count for kind in kinds}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
