"""VLAN-tagged frames through a switch process between namespaces: seen and sent as on the wire.

    h1 -- s1-eth1 [switch] s1-eth2 -- h2

h1 sends tagged frames raw (802.1Q VID 5 with priority bits, a priority tag with VID 0, 802.1ad
over 802.1Q) and one untagged. The kernel of the switch's namespace takes the outer tag off each
frame it receives, and so does h2's: both the switch and h2's receiver read it back from
PACKET_AUXDATA. Through a forwarder that leaves frames unchanged the tags must reach h2 as sent,
and the switch's capture must hold them as sent. The frames are sent and read by
tests.netns.rawframes.
"""

from __future__ import annotations

import struct
from pathlib import Path

import pytest

from p4switch.pcap import read_pcap
from tests.netns.rawframes import Interface, send_and_receive
from tests.netns.topology import Host, TwoHostNet

pytestmark = pytest.mark.netns

TP_STATUS_VLAN_VALID, TP_STATUS_VLAN_TPID_VALID = 0x10, 0x40

TAGS = {  # outer (TPID, TCI), and the inner tag the frame also carries
    "8021q-vid5-pcp5": ((0x8100, 5 << 13 | 5), b""),
    "priority-vid0": ((0x8100, 0x0000), b""),
    "8021ad-over-8021q": ((0x88A8, 0x0007), bytes.fromhex("81000009")),
}


def tagged(frame: bytes, tpid: int, tci: int, inner: bytes = b"") -> bytes:
    """`frame` with an outer tag (and `inner`, an inner tag) after its MAC addresses."""
    return frame[:12] + struct.pack("!HH", tpid, tci) + inner + frame[12:]


def interface(host: Host) -> Interface:
    return Interface(host.namespace, host.interface)


def raw_frame(net: TwoHostNet) -> bytes:
    """An untagged frame from h1 to h2 of a local experimental ethertype."""
    mac = (bytes.fromhex(h.mac.replace(":", "")) for h in (net.h2, net.h1))
    return b"".join(mac) + struct.pack("!H", 0x88B6) + b"vlan-wire-test".ljust(46, b".")


def test_tags_cross_an_unchanging_forwarder_as_sent(net: TwoHostNet, switches, tmp_path: Path):
    captures = tmp_path / "pcap"
    switch = switches.start(pcap_dir=captures)
    plain = raw_frame(net)
    sent = [tagged(plain, *outer, inner) for outer, inner in TAGS.values()] + [plain]
    received = send_and_receive(interface(net.h1), interface(net.h2), net.h1.mac, sent)
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
