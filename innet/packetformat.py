"""innet's packet format as a value: how many int32 values one packet carries, and every size
and layout that follows from it (docs/protocol.md, "Packet format").

A run chooses its format once (the scenario's `lanes`, or `--lanes`) and passes it to whatever
builds, reads, paces or counts packets: the site plan's slot pool, the planner's parameters, the
island processes (in their configuration), the switches (as innet.p4's -D defines), the scapy
layer and p4diff. Nothing reads it from the environment, so one process can hold two at once:

    >>> small, large = PacketFormat(), PacketFormat(256)
    >>> small.slot_bytes, small.frame_bytes, large.slot_bytes, large.frame_bytes
    (128, 186, 1024, 1082)
    >>> large.defines()
    {'LANES': '256'}
    >>> PacketFormat(48)
    Traceback (most recent call last):
    ...
    innet.packetformat.PacketFormatError: 48 lanes per packet: innet.p4 takes 32, 64, 128 or 256

The header (16 bytes, big-endian): version:4 type:4 | flags:8 | job:16 | round:16 | group:8 |
src:8 | chunk:32 | bitmap:32, then `lanes` int32 values, big-endian two's complement.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from functools import lru_cache
from typing import ClassVar

from innet.exceptions import InputError

LANE_CHOICES = (32, 64, 128, 256)  # the lane counts innet.p4 compiles with (-D LANES)
DEFAULT_LANES = 32  # innet.p4's own default


class PacketFormatError(InputError, ValueError):
    """A packet format innet.p4 cannot be built with."""


@dataclass(frozen=True, slots=True)
class PacketFormat:
    """One packet format: `lanes` int32 values behind the innet header, over UDP."""

    lanes: int = DEFAULT_LANES

    HEADER: ClassVar[struct.Struct] = struct.Struct("!BBHHBBII")  # the innet header's fields
    VERSION: ClassVar[int] = 1  # the header's `version`
    VALUE_BYTES: ClassVar[int] = 4  # one int32 value
    UDP_PORT: ClassVar[int] = 0x4E49  # 20041: innet packets, to and from the switches
    PLAIN_UDP_PORT: ClassVar[int] = 20043  # the same header between hosts (the plain network)
    # Ethernet, IPv4 and UDP headers in front of the innet header (no IPv4 options, no VLAN).
    ETHERNET_BYTES: ClassVar[int] = 14
    IPV4_BYTES: ClassVar[int] = 20
    UDP_BYTES: ClassVar[int] = 8

    def __post_init__(self) -> None:
        lanes = self.lanes
        if isinstance(lanes, bool) or not isinstance(lanes, int) or lanes not in LANE_CHOICES:
            raise _refused(lanes)

    @classmethod
    def parse(cls, text: str) -> PacketFormat:
        """The format of a lane count written as text (a -D define, a word on a command line)."""
        if not text.strip().isdigit():
            raise _refused(text)
        return cls(int(text))

    @property
    def header_bytes(self) -> int:
        return self.HEADER.size

    @property
    def slot_bytes(self) -> int:
        """The values of one packet: one chunk, and one aggregator slot's partial sums."""
        return self.lanes * self.VALUE_BYTES

    @property
    def payload_bytes(self) -> int:
        """One innet message: the UDP payload."""
        return self.header_bytes + self.slot_bytes

    @property
    def udp_length(self) -> int:
        return self.UDP_BYTES + self.payload_bytes

    @property
    def ipv4_length(self) -> int:
        return self.IPV4_BYTES + self.udp_length

    @property
    def frame_bytes(self) -> int:
        """One innet packet on the wire, as an Ethernet frame."""
        return self.ETHERNET_BYTES + self.ipv4_length

    @property
    def frame_bits(self) -> int:
        return self.frame_bytes * 8

    @property
    def values(self) -> struct.Struct:
        """The values' layout: `lanes` big-endian int32."""
        return _values_struct(self.lanes)

    def defines(self) -> dict[str, str]:
        """innet.p4's -D defines for this format (its headers.p4 derives every size from them)."""
        return {"LANES": str(self.lanes)}


def _refused(lanes: object) -> PacketFormatError:
    *first, last = map(str, LANE_CHOICES)
    return PacketFormatError(
        f"{lanes!r} lanes per packet: innet.p4 takes {', '.join(first)} or {last}"
    )


@lru_cache(maxsize=len(LANE_CHOICES))
def _values_struct(lanes: int) -> struct.Struct:
    return struct.Struct(f"!{lanes}i")
