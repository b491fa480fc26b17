import struct

import numpy as np
import pytest

from workers.exceptions import PacketError
from workers.packets import PACKET_BYTES, Flag, InnetPacket, PacketType


def packet(**changes):
    fields = dict(
        type=PacketType.CONTRIBUTION, flags=Flag.WAN | Flag.LOCAL, job=7, round=300, group=2,
        src=5, chunk=123_456, bitmap=0, values=tuple(range(-16, 16)),
    )  # fmt: skip
    return InnetPacket.of(**(fields | changes))


def test_round_trip_and_layout():
    p = packet()
    data = p.encode()
    assert len(data) == PACKET_BYTES == 16 + 128
    assert data[0] == 0x11 and data[1] == 0x03  # version 1, type 1; WAN | LOCAL
    assert struct.unpack_from("!HHBBII", data, 2) == (7, 300, 2, 5, 123_456, 0)
    assert struct.unpack_from("!i", data, 16)[0] == -16
    assert InnetPacket.decode(data) == p
    assert np.array_equal(p.array(), np.arange(-16, 16, dtype=np.int32))


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"\x11" * 10, "bytes"),
        (b"\x21" + bytes(PACKET_BYTES - 1), "version"),
        (b"\x19" + bytes(PACKET_BYTES - 1), "type"),
    ],
)
def test_bad_bytes_are_refused(data, message):
    with pytest.raises(PacketError, match=message):
        InnetPacket.decode(data)


@pytest.mark.parametrize(
    "changes", [dict(src=32), dict(group=256), dict(chunk=-1), dict(values=(1, 2, 3))]
)
def test_fields_out_of_range_are_refused(changes):
    with pytest.raises(PacketError):
        packet(**changes)


def test_a_packet_built_from_an_array_is_the_packet_built_from_its_values():
    values = np.arange(-16, 16, dtype=np.int32)
    from_array = InnetPacket.of(PacketType.RESULT, Flag(0), 7, 300, 2, 5, 9, 0xFF, values)
    from_tuple = InnetPacket.of(PacketType.RESULT, Flag(0), 7, 300, 2, 5, 9, 0xFF,
                                tuple(range(-16, 16)))  # fmt: skip
    assert from_array == from_tuple and from_array.encode() == from_tuple.encode()
    assert from_array.values == tuple(range(-16, 16))
    nack = InnetPacket.of(PacketType.NACK, Flag.WAN, 7, 300, 2, 5, 9, 0)
    assert nack.values == (0,) * 32  # no values: zeros


@pytest.mark.parametrize(
    "values",
    [np.arange(31, dtype=np.int32), np.full(32, 2**31, dtype=np.int64), (2**31,) * 32],
)
def test_values_that_are_no_lanes_of_int32_are_refused(values):
    with pytest.raises(PacketError):
        InnetPacket.of(PacketType.CONTRIBUTION, Flag.WAN, 7, 300, 2, 5, 9, 0, values)
