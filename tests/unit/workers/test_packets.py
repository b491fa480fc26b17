import re
import struct

import numpy as np
import pytest

from innet.packetformat import PacketFormat
from workers.exceptions import PacketError
from workers.packets import Flag, InnetPacket, PacketType

PACKET_FORMAT = PacketFormat()  # 32 lanes
PACKET_BYTES = PACKET_FORMAT.payload_bytes


def packet(**changes):
    fields = dict(
        type=PacketType.CONTRIBUTION,
        flags=Flag.WAN | Flag.LOCAL,
        job=7,
        round=300,
        group=2,
        src=5,
        chunk=123_456,
        bitmap=0,
        values=tuple(range(-16, 16)),
        packet_format=PACKET_FORMAT,
    )
    return InnetPacket.of(**(fields | changes))


def test_round_trip_and_layout():
    p = packet()
    data = p.encode()
    assert len(data) == PACKET_BYTES == 16 + 128
    assert data[0] == 0x11 and data[1] == 0x03  # version 1, type 1; WAN | LOCAL
    assert struct.unpack_from("!HHBBII", data, 2) == (7, 300, 2, 5, 123_456, 0)
    assert struct.unpack_from("!i", data, 16)[0] == -16
    assert InnetPacket.decode(data, PACKET_FORMAT) == p
    assert p.packet_format == PACKET_FORMAT
    assert np.array_equal(p.array(), np.arange(-16, 16, dtype=np.int32))


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"\x11" * 10, "bytes"),
        (b"\x21" + bytes(PACKET_BYTES - 1), "version"),
        (b"\x19" + bytes(PACKET_BYTES - 1), "type"),
        (packet().encode() + b"\x00", f"{PACKET_BYTES + 1} bytes"),  # one byte more: refused
    ],
)
def test_bad_bytes_are_refused(data, message):
    with pytest.raises(PacketError, match=message):
        InnetPacket.decode(data, PACKET_FORMAT)


@pytest.mark.parametrize(
    "changes", [dict(src=32), dict(group=256), dict(chunk=-1), dict(values=(1, 2, 3))]
)
def test_fields_out_of_range_are_refused(changes):
    with pytest.raises(PacketError):
        packet(**changes)


def test_a_packet_built_from_an_array_is_the_packet_built_from_its_values():
    values = np.arange(-16, 16, dtype=np.int32)
    from_array = InnetPacket.of(
        PacketType.RESULT, Flag(0), 7, 300, 2, 5, 9, 0xFF, values, PACKET_FORMAT
    )
    from_tuple = InnetPacket.of(
        PacketType.RESULT, Flag(0), 7, 300, 2, 5, 9, 0xFF, tuple(range(-16, 16)), PACKET_FORMAT
    )
    assert from_array == from_tuple and from_array.encode() == from_tuple.encode()
    assert from_array.values == tuple(range(-16, 16))
    nack = InnetPacket.of(PacketType.NACK, Flag.WAN, 7, 300, 2, 5, 9, 0, None, PACKET_FORMAT)
    assert nack.values == (0,) * 32  # no values: zeros


@pytest.mark.parametrize(
    "values",
    [np.arange(31, dtype=np.int32), np.full(32, 2**31, dtype=np.int64), (2**31,) * 32],
)
def test_values_that_are_no_lanes_of_int32_are_refused(values):
    with pytest.raises(PacketError):
        InnetPacket.of(PacketType.CONTRIBUTION, Flag.WAN, 7, 300, 2, 5, 9, 0, values, PACKET_FORMAT)


def test_one_process_holds_two_packet_formats_at_once() -> None:
    """A 256-lane and a 32-lane packet side by side: each encodes to its own format's size and
    decodes, with its format, to itself."""
    wide, narrow = PacketFormat(256), PacketFormat()
    wide_values = np.arange(-128, 128, dtype=np.int32)
    wide_packet = packet(values=wide_values, packet_format=wide)
    narrow_packet = packet()
    wide_data, narrow_data = wide_packet.encode(), narrow_packet.encode()
    assert (len(wide_data), len(narrow_data)) == (1040, 144)
    assert (wide.payload_bytes, narrow.payload_bytes) == (1040, 144)
    assert wide_data[:16] == narrow_data[:16]  # the same header, whatever the lanes
    assert InnetPacket.decode(wide_data, wide) == wide_packet
    assert InnetPacket.decode(narrow_data, narrow) == narrow_packet
    assert (wide_packet.packet_format, narrow_packet.packet_format) == (wide, narrow)
    assert np.array_equal(InnetPacket.decode(wide_data, wide).array(), wide_values)
    assert InnetPacket.decode(narrow_data, narrow).values == tuple(range(-16, 16))


@pytest.mark.parametrize(
    ("sent_lanes", "read_lanes", "message"),
    [
        (256, 32, "1040 bytes, an innet packet of 32 lanes has 144"),
        (32, 256, "144 bytes, an innet packet of 256 lanes has 1040"),
        (64, 128, "272 bytes, an innet packet of 128 lanes has 528"),
    ],
)
def test_a_payload_of_another_format_is_refused_naming_both_sizes(
    sent_lanes: int, read_lanes: int, message: str
) -> None:
    data = packet(values=None, packet_format=PacketFormat(sent_lanes)).encode()
    with pytest.raises(PacketError, match=re.escape(message)):
        InnetPacket.decode(data, PacketFormat(read_lanes))
