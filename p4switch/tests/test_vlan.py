"""The switch sees frames as they were on the wire: the outer VLAN tag put back (no root).

Linux hands a packet socket the frame without its outer tag and the tag as PACKET_AUXDATA; these
tests give `p4switch.vlan` and the switch's receive loop what the kernel gives (as observed on
veth: status 0x51 for a tagged frame, 0x01 for an untagged one) and check the bytes that come out.
"""

from __future__ import annotations

import select
import socket
import struct
import threading

import pytest

from p4switch.dataplane import Switch
from p4switch.pcap import read_pcap
from p4switch.ports import PACKET_AUXDATA, SOL_PACKET, Port
from p4switch.vlan import (
    AUXDATA_SPACE,
    TP_STATUS_VLAN_TPID_VALID,
    TP_STATUS_VLAN_VALID,
    as_on_wire,
    restore_outer_tag,
)

TP_STATUS_USER = 0x01
TAGGED = TP_STATUS_USER | TP_STATUS_VLAN_VALID | TP_STATUS_VLAN_TPID_VALID  # 0x51, as on veth
MACS = bytes.fromhex("020000000002") + bytes.fromhex("020000000001")  # destination, source
IPV4 = bytes.fromhex("0800") + bytes(range(46))  # ethertype and a payload
AUXDATA = struct.Struct("=IIIHHHH")  # struct tpacket_auxdata, as <linux/if_packet.h> has it


def auxdata(status: int, tci: int = 0, tpid: int = 0, length: int = 60) -> bytes:
    return AUXDATA.pack(status, length, length, 0, 14, tci, tpid)


def ancdata(status: int, tci: int = 0, tpid: int = 0) -> list[tuple[int, int, bytes]]:
    return [(SOL_PACKET, PACKET_AUXDATA, auxdata(status, tci, tpid))]


def test_8021q_tag_with_priority_bits_goes_back_after_the_macs():
    tci = 5 << 13 | 5  # PCP 5, VID 5
    restored = restore_outer_tag(MACS + IPV4, TAGGED, tci, 0x8100)
    assert restored == MACS + bytes.fromhex("8100a005") + IPV4


@pytest.mark.parametrize("tci", [0x0000, 0xE000], ids=["vid0", "vid0-pcp7"])
def test_priority_tag_vid0_is_restored_too(tci):
    """A priority tag has VID 0 (TCI 0, or PCP bits only): the status flag says it was there."""
    restored = restore_outer_tag(MACS + IPV4, TAGGED, tci, 0x8100)
    assert restored == MACS + struct.pack("!HH", 0x8100, tci) + IPV4


def test_8021ad_outer_tag_goes_back_before_the_inner_8021q_tag():
    inner = bytes.fromhex("81000009")  # the kernel leaves the inner tag in the frame
    restored = restore_outer_tag(MACS + inner + IPV4, TAGGED, 0x0007, 0x88A8)
    assert restored == MACS + bytes.fromhex("88a80007") + inner + IPV4


def test_untagged_frame_is_unchanged():
    frame = MACS + IPV4
    assert restore_outer_tag(frame, TP_STATUS_USER, 0, 0) is frame


def test_tpid_not_given_means_8021q():
    restored = restore_outer_tag(MACS + IPV4, TP_STATUS_USER | TP_STATUS_VLAN_VALID, 0x0005, 0)
    assert restored == MACS + bytes.fromhex("81000005") + IPV4


@pytest.mark.parametrize(
    ("ancillary", "expected"),
    [
        (ancdata(TAGGED, 0xA005, 0x8100), MACS + bytes.fromhex("8100a005") + IPV4),
        (ancdata(TAGGED, 0x0000, 0x8100), MACS + bytes.fromhex("81000000") + IPV4),
        (ancdata(TAGGED, 0x0007, 0x88A8), MACS + bytes.fromhex("88a80007") + IPV4),
        (ancdata(TP_STATUS_USER), MACS + IPV4),
        ([], MACS + IPV4),
        ([(socket.SOL_SOCKET, PACKET_AUXDATA, auxdata(TAGGED, 5, 0x8100))], MACS + IPV4),
    ],
    ids=["8021q", "priority", "8021ad", "untagged", "no-auxdata", "other-level"],
)
def test_as_on_wire_reads_the_auxdata_message(ancillary, expected):
    assert as_on_wire(MACS + IPV4, ancillary) == expected


def test_ancillary_buffer_holds_an_auxdata_message():
    assert socket.CMSG_LEN(AUXDATA.size) <= AUXDATA_SPACE


# -- the receive loop -------------------------------------------------------------------------


class AuxSocket:
    """A datagram socket pair end answering recvmsg as a packet socket with PACKET_AUXDATA does.

    Each datagram the host end sends is an auxdata struct followed by the frame as the kernel
    leaves it (outer tag removed).
    """

    def __init__(self, sock: socket.socket) -> None:
        self._sock = sock

    def fileno(self) -> int:
        return self._sock.fileno()

    def recvmsg(self, size: int, ancbufsize: int) -> tuple[bytes, list, int, tuple]:
        assert ancbufsize >= socket.CMSG_LEN(AUXDATA.size)
        message = self._sock.recv(size + AUXDATA.size)
        aux, data = message[: AUXDATA.size], message[AUXDATA.size :]
        return data, [(SOL_PACKET, PACKET_AUXDATA, aux)], 0, ("fake0", 3, 0, 1, b"")

    def recvfrom(self, size: int) -> tuple[bytes, tuple]:
        raise AssertionError("a port with auxdata must be read with recvmsg")

    def send(self, data: bytes) -> int:
        return self._sock.send(data)

    def getsockopt(self, level: int, option: int, size: int) -> bytes:
        raise OSError("not a packet socket")

    def close(self) -> None:
        self._sock.close()


class Forward:
    """Port 1 -> port 2 with the frame unchanged; remembers what the pipeline saw."""

    def __init__(self) -> None:
        self.seen: list[bytes] = []

    def process(self, ingress_port: int, data: bytes) -> list[tuple[int, bytes]]:
        self.seen.append(data)
        return [(2, data)]


def test_switch_hands_the_pipeline_and_the_wire_the_tagged_frame(tmp_path):
    ends = {n: socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM) for n in (1, 2)}
    for inside, _ in ends.values():
        inside.setblocking(False)
    ports = {
        n: Port(name=f"p{n}", ifindex=n, sock=AuxSocket(inside), auxdata=True)  # type: ignore[arg-type]
        for n, (inside, _) in ends.items()
    }
    pipeline = Forward()
    switch = Switch(ports, pipeline, pcap_dir=tmp_path)
    stop = threading.Event()
    thread = threading.Thread(target=switch.run, args=(stop,), daemon=True)
    thread.start()
    host1, host2 = ends[1][1], ends[2][1]
    try:
        host1.send(auxdata(TAGGED, 0xA005, 0x8100) + MACS + IPV4)
        host1.send(auxdata(TP_STATUS_USER) + MACS + IPV4)
        received = []
        for _ in range(2):
            ready, _, _ = select.select([host2], [], [], 10.0)  # a hang guard
            assert ready, "the switch forwarded nothing"
            received.append(host2.recv(2048))
        stats = switch.stats()["ports"][1]
    finally:
        stop.set()
        switch.wake()
        thread.join(2)
        switch.close()
        for inside, host in ends.values():
            inside.close()
            host.close()
    tagged = MACS + bytes.fromhex("8100a005") + IPV4
    assert pipeline.seen == received == [tagged, MACS + IPV4]
    assert stats["rx_bytes"] == len(tagged) + len(MACS + IPV4)
    assert [r.data for r in read_pcap(tmp_path / "1-in.pcap").records] == [tagged, MACS + IPV4]
