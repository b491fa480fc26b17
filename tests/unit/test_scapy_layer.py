"""innet.scapy_layer: the scapy layer and innet's other codecs agree byte for byte, and a
capture of innet.p4's traffic on p4switch reads back with innet fields."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from scapy.fields import FlagValue
from scapy.layers.inet import IP, UDP
from scapy.layers.l2 import Ether
from scapy.packet import Packet, Raw, fuzz
from scapy.utils import PcapWriter, rdpcap

import workers.packets as codec
from innet import scapy_layer
from innet.packetformat import LANE_CHOICES, PacketFormat, PacketFormatError
from innet.scapy_layer import Innet, innet_of
from tests.unit.dataplane import harness
from tests.unit.fuzz_profile import fuzz_settings

PAYLOAD_BYTES = scapy_layer.DEFAULT.payload_bytes  # 144: the default format's message
EXAMPLES = fuzz_settings(100, slow=False)
INT32 = st.integers(-(2**31), 2**31 - 1)
# Ethernet and IPv4 with their addresses given: scapy would otherwise look them up on this machine
ADDRESSED = Ether(src="02:00:00:00:00:01", dst="02:00:00:00:00:fe") / IP(
    src="10.0.0.1", dst="10.0.0.254"
)


@st.composite
def packets(draw: st.DrawFn, lane_counts: tuple[int, ...] = LANE_CHOICES) -> codec.InnetPacket:
    """Any message the worker library can encode, in any of these packet formats."""
    lanes = draw(st.sampled_from(lane_counts))
    return codec.InnetPacket.of(
        draw(st.sampled_from(codec.PacketType)),
        codec.Flag(draw(st.integers(0, 15))),
        draw(st.integers(0, 2**16 - 1)),
        draw(st.integers(0, 2**16 - 1)),
        draw(st.integers(0, 255)),
        draw(st.integers(0, codec.MAX_ISLANDS - 1)),
        draw(st.integers(0, 2**32 - 1)),
        draw(st.integers(0, 2**32 - 1)),
        tuple(draw(st.lists(INT32, min_size=lanes, max_size=lanes))),
        PacketFormat(lanes),
    )


def layer_of(msg: codec.InnetPacket) -> Innet:
    return Innet(
        type=int(msg.type),
        flags=int(msg.flags),
        job=msg.job,
        round=msg.round,
        group=msg.group,
        src=msg.src,
        chunk=msg.chunk,
        bitmap=msg.bitmap,
        values=list(msg.values),
    )


def fields_of(layer: Packet) -> tuple[object, ...]:
    return (
        layer.version,
        layer.type,
        int(layer.flags),
        layer.job,
        layer.round,
        layer.group,
        layer.src,
        layer.chunk,
        layer.bitmap,
        layer.values,
    )


def test_the_layer_states_the_facts_the_rest_of_innet_uses() -> None:
    assert scapy_layer.INNET_UDP_PORT == PacketFormat.UDP_PORT == harness.UDP_PORT == 20041
    assert scapy_layer.PLAIN_UDP_PORT == PacketFormat.PLAIN_UDP_PORT == 20043
    assert scapy_layer.DEFAULT == harness.PACKET_FORMAT and scapy_layer.DEFAULT.lanes == harness.N
    assert len(bytes(Innet())) == scapy_layer.DEFAULT.payload_bytes == 16 + 4 * harness.N
    assert max(LANE_CHOICES) == scapy_layer.MOST_LANES
    assert scapy_layer.VERSION == codec.VERSION
    assert {int(t): t.name for t in codec.PacketType} == scapy_layer.TYPES
    assert [f.name for f in codec.Flag] == scapy_layer.FLAGS
    assert [1 << i for i in range(4)] == [int(f) for f in codec.Flag]


@EXAMPLES
@given(msg=packets())
def test_the_layer_builds_what_the_worker_codec_encodes(msg: codec.InnetPacket) -> None:
    wire = msg.encode()
    assert bytes(layer_of(msg)) == wire
    assert codec.InnetPacket.decode(bytes(layer_of(msg)), msg.packet_format) == msg
    read = Innet(wire)
    assert fields_of(read) == (
        1,
        int(msg.type),
        int(msg.flags),
        msg.job,
        msg.round,
        msg.group,
        msg.src,
        msg.chunk,
        msg.bitmap,
        msg.values,
    )
    assert not read.payload


@EXAMPLES
@given(payload=st.binary(min_size=PAYLOAD_BYTES, max_size=PAYLOAD_BYTES))
def test_any_payload_dissects_as_the_worker_codec_reads_it(payload: bytes) -> None:
    read = Innet(payload)
    assert bytes(read) == payload  # dissecting loses nothing
    try:
        msg = codec.InnetPacket.decode(payload, scapy_layer.DEFAULT)
    except codec.PacketError:
        vt, src = payload[0], payload[7]
        assert vt >> 4 != 1 or vt & 15 not in scapy_layer.TYPES or src >= codec.MAX_ISLANDS
        return
    assert fields_of(read) == fields_of(layer_of(msg))


@EXAMPLES
@given(msg=packets((harness.N,)), island=st.sampled_from(harness.ISLANDS))
def test_a_frame_built_with_scapy_is_the_frame_a_host_sends(
    msg: codec.InnetPacket, island: int
) -> None:
    """The dataplane tests' frames (tests/unit/dataplane/harness.py) and scapy's are the same
    bytes, Ethernet to values, checksums included."""
    as_harness = harness.Innet(
        int(msg.type),
        int(msg.flags),
        msg.job,
        msg.round,
        msg.group,
        msg.src,
        msg.chunk,
        msg.values,
        msg.bitmap,
    )
    ip = ".".join(map(str, harness.host_ip(island)))
    built = (
        Ether(src=harness.host_mac(island).hex(":"), dst="00:00:00:00:00:00")
        / IP(src=ip, dst="10.0.255.254", id=1)
        / UDP(chksum=0)
        / layer_of(msg)
    )
    assert bytes(built) == harness.innet_frame(as_harness, island)
    assert Ether(harness.innet_frame(as_harness, island))[Innet] == layer_of(msg)


def test_udp_to_the_innet_or_plain_port_dissects_as_innet_and_other_ports_do_not() -> None:
    body = bytes(Innet(src=2, chunk=5))
    for sport, dport, is_innet in [
        (20041, 20041, True),
        (5000, 20041, True),  # the switch's parser looks at the destination port alone
        (20043, 20043, True),  # the plain network's collectives carry the innet header
        (20041, 5000, False),
        (5000, 5000, False),
    ]:
        frame = ADDRESSED / UDP(sport=sport, dport=dport) / Raw(body)
        assert (Innet in Ether(bytes(frame))) == is_innet, (sport, dport)
    made = UDP() / Innet()
    assert (made.sport, made.dport) == (20041, 20041)  # as a worker's socket sends


def test_a_frame_cut_short_keeps_the_whole_values_it_has() -> None:
    frame = bytes(ADDRESSED / UDP() / Innet(chunk=9, values=list(range(32))))
    cut = Ether(frame[: 14 + 20 + 8 + 16 + 4 * 5 + 3])
    assert cut[Innet].chunk == 9 and cut[Innet].values == (0, 1, 2, 3, 4)
    assert bytes(cut[Innet].payload) == frame[78:81]  # the partial value is left over
    header_cut = Ether(frame[: 14 + 20 + 8 + 10])
    assert Innet not in header_cut and Raw in header_cut


def test_a_256_lane_frame_dissects_with_its_256_values() -> None:
    """The demo's packets (256 lanes): every value read, nothing left over, and the layer of
    that format built as the workers' codec encodes it."""
    wide = PacketFormat(256)
    values = list(range(-128, 128))
    layer = innet_of(wide, type="RESULT", src=3, chunk=7, values=values)
    frame = Ether(bytes(ADDRESSED / UDP() / layer))
    assert frame[Innet].values == tuple(values) and not frame[Innet].payload
    packet = codec.InnetPacket.of(
        codec.PacketType.RESULT, codec.Flag(0), 0, 0, 0, 3, 7, 0, values, wide
    )
    assert bytes(frame[Innet]) == packet.encode()
    assert len(bytes(innet_of(wide))) == wide.payload_bytes  # its zeros by default
    with pytest.raises(PacketFormatError, match="32 values, a packet of this format carries 256"):
        innet_of(wide, values=[0] * 32)


def test_flags_read_by_name() -> None:
    layer = Innet(flags="WAN+REMOTE")
    assert int(layer.flags) == 0x09
    assert isinstance(layer.flags, FlagValue) and layer.flags.WAN and not layer.flags.LOCAL
    assert Innet(type="NACK").type == 3
    assert Innet(bytes(Innet(type=9))).summary().startswith("innet type 9 ")


def test_fuzz_draws_every_field_and_keeps_the_size() -> None:
    fuzzed = fuzz(Innet())
    seen = [Innet(bytes(fuzzed)) for _ in range(40)]  # each build draws anew
    assert {len(bytes(p)) for p in seen} == {PAYLOAD_BYTES}
    for name in ("version", "type", "job", "round", "src", "chunk", "bitmap"):
        assert len({getattr(p, name) for p in seen}) > 1, name
    assert len({tuple(p.values) for p in seen}) == len(seen)


def test_a_p4switch_capture_of_a_round_reads_back_with_innet_fields(tmp_path: Path) -> None:
    """Three islands aggregate one chunk on innet.p4; the frames A's host port sent and
    received, captured in a pcap file (Ethernet, as p4switch writes them), read back in scapy
    as innet messages."""
    net = harness.Triangle(16)
    net.install_group(3, 9, 1, harness.ISLANDS)
    sent = []
    for island in harness.ISLANDS:
        msg = harness.Innet(
            harness.CONTRIBUTION,
            harness.WAN | harness.LOCAL,
            3,
            9,
            1,
            island,
            4,
            (island + 1,) * harness.N,
        )
        frame = harness.innet_frame(msg, island)
        sent.append(frame)
        net.send(island, frame)
    path = tmp_path / "1-out.pcap"
    with PcapWriter(str(path), linktype=1) as writer:  # Ethernet, as p4switch captures
        writer.write_header(None)
        writer.write_packet(sent[0], sec=1, usec=0)  # what A's host sent (its edge's port 1 in)
        for frame in net.hosts[harness.A]:  # and what it got back
            writer.write_packet(frame, sec=2, usec=0)
    got = rdpcap(str(path))
    assert len(got) == 2
    contribution, result = (p[Innet] for p in got)
    assert contribution.type == 1 and contribution.flags == "WAN+LOCAL"
    assert (result.type, result.src, result.chunk, result.bitmap) == (2, 2, 4, 0b111)
    assert result.values == (1 + 2 + 3,) * 32
    assert got[1][IP].dst == "10.0.0.1" and got[1][UDP].chksum == 0
