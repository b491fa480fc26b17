"""A VLAN-tagged innet contribution through p4switch running p4src/innet.p4 between namespaces.

    h1 -- s1-eth1 [p4switch: innet.p4] s1-eth2 -- h2

h1 sends an innet contribution raw with an outer tag (802.1Q VID 5 with priority bits, a
priority tag with VID 0, 802.1ad over 802.1Q) and once untagged. The kernel of the switch's
namespace takes the outer tag off each frame; p4switch reads it back and runs innet.p4 on the
frame as on the wire, so a tagged frame is not IPv4 (`dropped_other`, like BMv2). How tags
cross p4switch itself is p4switch's own test (p4switch/tests/netns/test_vlan_wire.py).

This module is also the sender run inside h1's namespace:

    python -m tests.netns.test_vlan_innet send IFACE HEXFRAME...
"""

from __future__ import annotations

import json
import socket
import struct
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from p4switch import control_request

from tests.netns.harness import REPO, ns_python, start_p4switch
from tests.netns.topology import Host, TwoHostNet
from tests.unit.dataplane.harness import CONTRIBUTION, Innet, host_mac, innet_frame

pytestmark = pytest.mark.netns

MODULE = "tests.netns.test_vlan_innet"
INNET_P4 = REPO / "p4src" / "innet.p4"
GRPC = "127.0.0.1:50051"  # the switch namespace's own loopback

TAGS = {  # outer (TPID, TCI), and the inner tag the frame also carries
    "8021q-vid5-pcp5": ((0x8100, 5 << 13 | 5), b""),
    "priority-vid0": ((0x8100, 0x0000), b""),
    "8021ad-over-8021q": ((0x88A8, 0x0007), bytes.fromhex("81000009")),
}


def tagged(frame: bytes, tpid: int, tci: int, inner: bytes = b"") -> bytes:
    """`frame` with an outer tag (and `inner`, an inner tag) after its MAC addresses."""
    return frame[:12] + struct.pack("!HH", tpid, tci) + inner + frame[12:]


def send_frames(iface: str, frames: Sequence[bytes]) -> None:
    """Inside h1's namespace: `frames` out of `iface`, raw."""
    with socket.socket(socket.AF_PACKET, socket.SOCK_RAW) as sock:
        sock.bind((iface, 0))
        for frame in frames:
            sock.send(frame)


def main(argv: Sequence[str]) -> int:
    if argv[:1] == ["send"] and len(argv) >= 2:
        send_frames(argv[1], [bytes.fromhex(text) for text in argv[2:]])
        return 0
    print(__doc__, file=sys.stderr)
    return 2


def send(host: Host, frames: Sequence[bytes]) -> None:
    done = subprocess.run(
        ns_python(host.namespace, MODULE, "send", host.interface, *(f.hex() for f in frames)),
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert done.returncode == 0, done.stderr


def wait_for_rx(control: Path, port: int, packets: int, timeout: float = 5.0) -> dict[str, Any]:
    """The switch's port statistics once `port` has received `packets` frames."""
    deadline = time.monotonic() + timeout
    while True:
        stats = control_request(control, {"cmd": "stats"}, timeout=5.0)["stats"]["ports"]
        if stats[str(port)]["rx_packets"] >= packets or time.monotonic() > deadline:
            return stats
        time.sleep(0.02)  # polling the switch's counter, with a deadline


def innet_counters(net: TwoHostNet) -> dict[str, int]:
    done = subprocess.run(
        ns_python(net.switch_namespace, "tests.netns.innet_counters", GRPC),
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_innet_p4_counts_a_tagged_contribution_as_not_ipv4(net: TwoHostNet, tmp_path: Path):
    """BMv2 drops a tagged innet frame as `dropped_other`; p4switch must see the tag too."""
    contribution = innet_frame(Innet(CONTRIBUTION, 0, job=1, round=0, group=0, src=0, chunk=0), 0)
    assert contribution[6:12] == host_mac(0)
    sent = [tagged(contribution, *outer, inner) for outer, inner in TAGS.values()]
    switch = start_p4switch(
        net.switch_namespace,
        net.switch_ports,
        tmp_path,
        *("--grpc-addr", GRPC, "--device-id", "1", "--cpu-port", "255"),
        *("--p4", str(INNET_P4)),
    )
    try:
        send(net.h1, [*sent, contribution])
        ports = wait_for_rx(switch.control, 1, len(sent) + 1)
        counters = innet_counters(net)
    finally:
        assert switch.stop() == 0, switch.log_text()
    assert counters["dropped_other"] == len(sent), counters
    assert counters["unknown"] == 1, counters  # the untagged copy was read as innet
    assert counters["contribution"] == counters["malformed"] == 0, counters
    assert ports["1"]["rx_bytes"] == sum(map(len, sent)) + len(contribution)
    assert ports["2"]["tx_packets"] == 0, ports


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
