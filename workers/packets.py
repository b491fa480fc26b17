"""The innet header (docs/protocol.md): what a worker sends and receives over UDP.

version:4 type:4 | flags:8 | job:16 | round:16 | group:8 | src:8 | chunk:32 | bitmap:32
then LANES x int32, big-endian (the values, or their sums in a RESULT)
"""

from __future__ import annotations

import enum
import struct
from dataclasses import dataclass

import numpy as np

from topo.siteplan import LANES, MAX_ISLANDS
from workers.exceptions import PacketError

VERSION = 1
HEADER = struct.Struct("!BBHHBBII")
VALUES = struct.Struct(f"!{LANES}i")
PACKET_BYTES = HEADER.size + VALUES.size


class PacketType(enum.IntEnum):
    CONTRIBUTION = 1
    RESULT = 2
    NACK = 3
    RECOVER = 4


class Flag(enum.IntFlag):
    WAN = 1  # replicate along the source's multicast tree
    LOCAL = 2  # merge at this edge
    RETRANSMIT = 4  # a resend
    REMOTE = 8  # merge at the members' edges but the source's own (its copy comes just in time)


@dataclass(frozen=True)
class InnetPacket:
    type: PacketType
    flags: Flag
    job: int
    round: int
    group: int
    src: int
    chunk: int
    bitmap: int
    values: tuple[int, ...]

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
        if len(self.values) != LANES:
            raise PacketError(f"{len(self.values)} values, a packet carries {LANES}")

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
        return head + VALUES.pack(*self.values)

    @classmethod
    def decode(cls, data: bytes) -> InnetPacket:
        if len(data) < PACKET_BYTES:
            raise PacketError(f"{len(data)} bytes, an innet packet has {PACKET_BYTES}")
        vt, flags, job, rnd, group, src, chunk, bitmap = HEADER.unpack_from(data)
        if vt >> 4 != VERSION:
            raise PacketError(f"version {vt >> 4}, expected {VERSION}")
        try:
            kind = PacketType(vt & 0xF)
        except ValueError:
            raise PacketError(f"unknown packet type {vt & 0xF}") from None
        values = VALUES.unpack_from(data, HEADER.size)
        return cls(kind, Flag(flags), job, rnd, group, src, chunk, bitmap, values)

    def array(self) -> np.ndarray:
        return np.array(self.values, dtype=np.int32)
