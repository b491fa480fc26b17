"""VLAN-tagged frames through a switch process between namespaces: seen and sent as on the wire.

    h1 -- s1-eth1 [switch] s1-eth2 -- h2

h1 sends tagged frames raw (802.1Q VID 5 with priority bits, a priority tag with VID 0, 802.1ad
over 802.1Q) and one untagged. The kernel of the switch's namespace takes the outer tag off each
frame it receives, and so does h2's: both the switch and h2's receiver read it back from
PACKET_AUXDATA. Through a forwarder that leaves frames unchanged the tags must reach h2 as sent,
and the switch's capture must hold them as sent.

This module is also the traffic helper run inside the host namespaces:

    python -m tests.netns.test_vlan_wire send IFACE HEXFRAME...
    python -m tests.netns.test_vlan_wire recv IFACE SRCMAC COUNT   "ready", then JSON frames
"""

from __future__ import annotations

import json
import select
import socket
import struct
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from p4switch.pcap import read_pcap
from tests.netns.harness import PROJECT, ns_python
from tests.netns.topology import Host, TwoHostNet

pytestmark = pytest.mark.netns

MODULE = "tests.netns.test_vlan_wire"
ETH_P_ALL = 0x0003
SOL_PACKET, PACKET_AUXDATA, PACKET_OUTGOING = 263, 8, 4
TP_STATUS_VLAN_VALID, TP_STATUS_VLAN_TPID_VALID = 0x10, 0x40
AUXDATA = struct.Struct("=IIIHHHH")  # struct tpacket_auxdata
IDLE_S = 2.0  # the receiver gives up this long after the last frame (or after "ready")

TAGS = {  # outer (TPID, TCI), and the inner tag the frame also carries
    "8021q-vid5-pcp5": ((0x8100, 5 << 13 | 5), b""),
    "priority-vid0": ((0x8100, 0x0000), b""),
    "8021ad-over-8021q": ((0x88A8, 0x0007), bytes.fromhex("81000009")),
}


def tagged(frame: bytes, tpid: int, tci: int, inner: bytes = b"") -> bytes:
    """`frame` with an outer tag (and `inner`, an inner tag) after its MAC addresses."""
    return frame[:12] + struct.pack("!HH", tpid, tci) + inner + frame[12:]


# -- the helper inside the host namespaces ----------------------------------------------------


def send_frames(iface: str, frames: Sequence[bytes]) -> None:
    with socket.socket(socket.AF_PACKET, socket.SOCK_RAW) as sock:
        sock.bind((iface, 0))
        for frame in frames:
            sock.send(frame)


def receive_frames(iface: str, src_mac: bytes, count: int) -> list[dict[str, Any]]:
    """Up to `count` frames from `src_mac`: the data the kernel leaves and its auxdata."""
    with socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ALL)) as sock:
        sock.setsockopt(SOL_PACKET, PACKET_AUXDATA, 1)
        sock.bind((iface, ETH_P_ALL))
        print("ready", flush=True)
        frames: list[dict[str, Any]] = []
        while len(frames) < count and select.select([sock], [], [], IDLE_S)[0]:
            data, ancdata, _, address = sock.recvmsg(65536, socket.CMSG_SPACE(AUXDATA.size))
            if address[2] == PACKET_OUTGOING or data[6:12] != src_mac:
                continue
            aux = next(a for level, kind, a in ancdata if (level, kind) == (SOL_PACKET, 8))
            status, _, _, _, _, tci, tpid = AUXDATA.unpack_from(aux)
            frames.append({"data": data.hex(), "status": status, "tci": tci, "tpid": tpid})
        return frames


def main(argv: Sequence[str]) -> int:
    if argv[:1] == ["send"]:
        send_frames(argv[1], [bytes.fromhex(text) for text in argv[2:]])
        return 0
    if argv[:1] == ["recv"]:
        frames = receive_frames(argv[1], bytes.fromhex(argv[2].replace(":", "")), int(argv[3]))
        print(json.dumps(frames), flush=True)
        return 0
    print(__doc__, file=sys.stderr)
    return 2


# -- driving it from the tests ----------------------------------------------------------------


def send(host: Host, frames: Sequence[bytes]) -> None:
    done = subprocess.run(
        ns_python(host.namespace, MODULE, "send", host.interface, *(f.hex() for f in frames)),
        cwd=PROJECT,
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert done.returncode == 0, done.stderr


def send_and_receive(net: TwoHostNet, frames: Sequence[bytes]) -> list[dict[str, Any]]:
    """Send `frames` from h1; what h2 received from h1 (data without the outer tag, auxdata)."""
    args = ("recv", net.h2.interface, net.h1.mac, str(len(frames)))
    receiver = subprocess.Popen(
        ns_python(net.h2.namespace, MODULE, *args),
        cwd=PROJECT,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        assert receiver.stdout is not None
        ready, _, _ = select.select([receiver.stdout], [], [], 10.0)
        assert ready and receiver.stdout.readline().strip() == b"ready", "receiver not ready"
        send(net.h1, frames)
        out, err = receiver.communicate(timeout=30)
        assert receiver.returncode == 0, err.decode(errors="replace")
    finally:
        if receiver.poll() is None:
            receiver.kill()
            receiver.communicate()
    return json.loads(out)


def raw_frame(net: TwoHostNet) -> bytes:
    """An untagged frame from h1 to h2 of a local experimental ethertype."""
    mac = (bytes.fromhex(h.mac.replace(":", "")) for h in (net.h2, net.h1))
    return b"".join(mac) + struct.pack("!H", 0x88B6) + b"vlan-wire-test".ljust(46, b".")


def test_tags_cross_an_unchanging_forwarder_as_sent(net: TwoHostNet, switches, tmp_path: Path):
    captures = tmp_path / "pcap"
    switch = switches.start(pcap_dir=captures)
    plain = raw_frame(net)
    sent = [tagged(plain, *outer, inner) for outer, inner in TAGS.values()] + [plain]
    received = send_and_receive(net, sent)
    assert len(received) == len(sent), received
    for (name, ((tpid, tci), _)), frame, got in zip(TAGS.items(), sent, received, strict=False):
        assert got["status"] & TP_STATUS_VLAN_VALID, (name, got)  # h2's kernel took a tag off,
        assert got["status"] & TP_STATUS_VLAN_TPID_VALID, (name, got)
        assert (got["tpid"], got["tci"]) == (tpid, tci), (name, got)  # the outer one h1 sent,
        assert tagged(bytes.fromhex(got["data"]), tpid, tci) == frame, name  # and left the rest
    untagged = received[-1]
    assert not untagged["status"] & TP_STATUS_VLAN_VALID
    assert bytes.fromhex(untagged["data"]) == plain
    switch.terminate()
    seen = [record.data for record in read_pcap(captures / "1-in.pcap").records]
    assert [frame for frame in seen if frame[6:12] == plain[6:12]] == sent


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
