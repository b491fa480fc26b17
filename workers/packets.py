"""The innet header (docs/protocol.md): what a worker sends and receives over UDP.

version:4 type:4 | flags:8 | job:16 | round:16 | group:8 | src:8 | chunk:32 | bitmap:32
then `lanes` x int32, big-endian (the values, or their sums in a RESULT), as the run's packet
format (innet.packetformat) lays them out:

    >>> wide = PacketFormat(256)
    >>> packet = InnetPacket.of(PacketType.CONTRIBUTION, Flag.WAN, 1, 7, 0, 3, 12, 0, None, wide)
    >>> data = packet.encode()
    >>> len(data), InnetPacket.decode(data, wide) == packet
    (1040, True)
    >>> InnetPacket.decode(data, PacketFormat())
    Traceback (most recent call last):
    ...
    workers.exceptions.PacketError: 1040 bytes, an innet packet of 32 lanes has 144
"""

from __future__ import annotations

import enum
import struct
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from innet.packetformat import LANE_CHOICES, PacketFormat
from topo.siteplan import MAX_ISLANDS
from workers.exceptions import PacketError

VERSION = PacketFormat.VERSION
HEADER = PacketFormat.HEADER


class PacketType(enum.IntEnum):
    CONTRIBUTION = 1
    RESULT = 2
    NACK = 3
    RECOVER = 4
    BOUNCE = 5  # from a switch to its island's hosts: a contribution a busy slot refused


class Flag(enum.IntFlag):
    WAN = 1  # replicate along the source's multicast tree
    LOCAL = 2  # merge at this edge
    RETRANSMIT = 4  # a resend
    REMOTE = 8  # merge at the members' edges but the source's own (its copy comes just in time)


@dataclass(frozen=True, slots=True)
class InnetPacket:
    """One innet packet. Its values are kept as they travel, big-endian int32 (`lanes`, as many
    as its packet format's lanes):
    a leader builds packets from numpy chunks (`of`) and reads sums into numpy (`array`)
    without turning 256 values into Python ints and back on every frame; `values` gives them
    as a tuple where one is wanted."""

    type: PacketType
    flags: Flag
    job: int
    round: int
    group: int
    src: int
    chunk: int
    bitmap: int
    lanes: bytes

    def __post_init__(self) -> None:
        for name, value, bits in (
            ("job", self.job, 16),
            ("round", self.round, 16),
            ("group", self.group, 8),
            ("chunk", self.chunk, 32),
            ("bitmap", self.bitmap, 32),
        ):
            if not 0 <= value < 1 << bits:
                raise PacketError(f"{name} {value} does not fit in {bits} bits")
        if not 0 <= self.src < MAX_ISLANDS:
            raise PacketError(f"src {self.src} outside 0..{MAX_ISLANDS - 1}")
        count, rest = divmod(len(self.lanes), PacketFormat.VALUE_BYTES)
        if rest or count not in LANE_CHOICES:
            counts = ", ".join(map(str, LANE_CHOICES))
            raise PacketError(f"{len(self.lanes)} bytes of values: not {counts} int32")

    @classmethod
    def of(
        cls,
        type: PacketType,
        flags: Flag,
        job: int,
        round: int,
        group: int,
        src: int,
        chunk: int,
        bitmap: int,
        values: Sequence[int] | np.ndarray | None,
        packet_format: PacketFormat,
    ) -> InnetPacket:
        """A packet of `packet_format` carrying `values` (its lanes' int32, an array or a
        sequence; None: zeros)."""
        lanes = lanes_of(values, packet_format)
        return cls(type, flags, job, round, group, src, chunk, bitmap, lanes)

    @property
    def packet_format(self) -> PacketFormat:
        return PacketFormat(len(self.lanes) // PacketFormat.VALUE_BYTES)

    @property
    def values(self) -> tuple[int, ...]:
        return self.packet_format.values.unpack(self.lanes)

    def encode(self) -> bytes:
        head = HEADER.pack(
            VERSION << 4 | int(self.type),
            int(self.flags),
            self.job,
            self.round,
            self.group,
            self.src,
            self.chunk,
            self.bitmap,
        )
        return head + self.lanes

    @classmethod
    def decode(cls, data: bytes, packet_format: PacketFormat) -> InnetPacket:
        """The packet in one UDP payload of `packet_format`; PacketError for any other size
        (another format's packet included), version or type."""
        if len(data) != packet_format.payload_bytes:
            raise PacketError(
                f"{len(data)} bytes, an innet packet of {packet_format.lanes} "
                f"lanes has {packet_format.payload_bytes}"
            )
        vt, flags, job, rnd, group, src, chunk, bitmap = HEADER.unpack_from(data)
        if vt >> 4 != VERSION:
            raise PacketError(f"version {vt >> 4}, expected {VERSION}")
        try:
            kind = PacketType(vt & 0xF)
        except ValueError:
            raise PacketError(f"unknown packet type {vt & 0xF}") from None
        lanes = bytes(data[HEADER.size :])
        return cls(kind, Flag(flags), job, rnd, group, src, chunk, bitmap, lanes)

    def array(self) -> np.ndarray:
        """The values as int32 (a copy, in native byte order)."""
        return values_of(self.lanes)


_WIRE = np.dtype(">i4")


def values_of(lanes: bytes) -> np.ndarray:
    """The int32 values of lanes as they travel (a copy, in native byte order): `lanes_of`
    backwards."""
    return np.frombuffer(lanes, dtype=_WIRE).astype(np.int32)


def lanes_of(values: Sequence[int] | np.ndarray | None, packet_format: PacketFormat) -> bytes:
    """The int32 values of one packet of `packet_format` as they travel (None: zeros);
    PacketError for another count, or a value outside int32."""
    lanes = packet_format.lanes
    if values is None:
        return bytes(packet_format.slot_bytes)
    if isinstance(values, np.ndarray):
        if values.shape != (lanes,):
            raise PacketError(f"{values.size} values, a packet carries {lanes}")
        if (
            values.dtype != np.int32
            and values.size
            and (values.min() < -(2**31) or values.max() >= 2**31)
        ):
            raise PacketError("values outside int32")
        return values.astype(_WIRE).tobytes()
    if len(values) != lanes:
        raise PacketError(f"{len(values)} values, a packet carries {lanes}")
    try:
        return packet_format.values.pack(*values)
    except struct.error as err:
        raise PacketError(f"values outside int32: {err}") from None
