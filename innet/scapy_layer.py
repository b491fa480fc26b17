"""The innet protocol as a scapy layer: craft innet frames, and read them in any capture.

`Innet` is the innet header (docs/protocol.md) and the int32 values behind it, one layer as it is
one UDP payload. It reads every packet format (innet.packetformat): the values are as many whole
int32 as the payload holds, up to the widest format's 256, so a 256-lane run's capture dissects as
a 32-lane one does. Built, it carries the values given, or the 32 zeros of the default format
(`innet_of(packet_format, ...)` gives another format's zeros). Importing this module binds it to
UDP: a datagram to port 20041 (innet's) or 20043 (the `plain` network's host-side collectives,
which carry the same header) dissects as `Innet`, and `UDP() / Innet()` is built with both ports
20041, as a worker's socket sends it. So `rdpcap` of a p4switch capture (`p4switch --pcap DIR`)
shows innet fields:

    >>> from scapy.layers.inet import IP, UDP
    >>> from scapy.layers.l2 import Ether
    >>> frame = (Ether(src="02:00:0a:00:03:01", dst="02:00:0a:00:03:fe")
    ...          / IP(src="10.0.3.1", dst="10.0.3.254")
    ...          / UDP()
    ...          / Innet(type="CONTRIBUTION", flags="WAN+LOCAL", job=1, round=7, src=3,
    ...                  chunk=12, values=list(range(32))))
    >>> len(frame)
    186
    >>> again = Ether(bytes(frame))
    >>> again[Innet].summary()
    'innet CONTRIBUTION job 1 round 7 group 0 src 3 chunk 12'
    >>> again[Innet].flags, again[Innet].values[:4]
    (<Flag 3 (WAN+LOCAL)>, (0, 1, 2, 3))

A frame cut short in the values dissects with the whole values it has, a format's lanes or not;
one cut in the header does not dissect as `Innet` (scapy keeps it as `Raw`). `fuzz(Innet())` draws
every field at random, the values included: tests/unit/dataplane/test_fuzz_frames.py feeds such
frames to innet.p4. docs/scapy.md shows more.
"""

from __future__ import annotations

import random
import struct
from typing import Any

from scapy.fields import (
    BitEnumField,
    BitField,
    ByteField,
    FieldListField,
    FlagsField,
    IntField,
    ShortField,
    SignedIntField,
    XIntField,
)
from scapy.layers.inet import UDP
from scapy.packet import Packet, bind_bottom_up, bind_top_down
from scapy.volatile import VolatileValue

from innet.packetformat import LANE_CHOICES, PacketFormat, PacketFormatError

# The facts of docs/protocol.md, from the packet format; the names the workers' codec gives the
# types and flags (a test checks they agree).
INNET_UDP_PORT = PacketFormat.UDP_PORT
PLAIN_UDP_PORT = PacketFormat.PLAIN_UDP_PORT  # the plain network's leaders: the same header
VERSION = PacketFormat.VERSION
DEFAULT = PacketFormat()  # what a layer built without values carries: its zeros
MOST_LANES = max(LANE_CHOICES)  # the most values a layer reads
TYPES = {1: "CONTRIBUTION", 2: "RESULT", 3: "NACK", 4: "RECOVER", 5: "BOUNCE"}
FLAGS = ["WAN", "LOCAL", "RETRANSMIT", "REMOTE"]  # bits 0..3 of `flags`

_INT32 = struct.Struct("!i")


class RandLanes(VolatileValue[list[int]]):
    """The default format's lanes of random int32 values, drawn anew each time a fuzzed packet
    is built."""

    def _fix(self) -> list[int]:
        return [random.randint(-(2**31), 2**31 - 1) for _ in range(DEFAULT.lanes)]


class LanesField(FieldListField):
    """The values: int32, big-endian two's complement, every whole one the payload holds (up to
    MOST_LANES: one packet of any format, or fewer if the frame is cut short).

    A tuple, as in the worker library (and a tuple default stays a default: `fuzz` replaces it).
    """

    def __init__(self, name: str) -> None:
        zeros: Any = (0,) * DEFAULT.lanes
        super().__init__(name, zeros, SignedIntField("value", 0))

    def any2i(self, pkt: Packet | None, x: Any) -> Any:
        if isinstance(x, VolatileValue):
            return x
        return tuple(self.field.any2i(pkt, v) for v in (x if isinstance(x, list | tuple) else [x]))

    def i2m(self, pkt: Packet | None, x: Any) -> list[Any]:
        if isinstance(x, VolatileValue):
            x = x._fix()
        return list(x) if x is not None else [0] * DEFAULT.lanes

    def getfield(self, pkt: Packet, s: bytes) -> tuple[bytes, Any]:
        count = min(MOST_LANES, len(s) // _INT32.size)
        values = tuple(v for (v,) in _INT32.iter_unpack(s[: count * _INT32.size]))
        return s[count * _INT32.size :], values

    def randval(self) -> RandLanes:
        return RandLanes()


class Innet(Packet):
    """One innet message: the 16-byte header and its values (docs/protocol.md, "Packet format")."""

    name = "innet"
    fields_desc = [  # noqa: RUF012 (scapy reads the fields from this class attribute)
        BitField("version", VERSION, 4),
        BitEnumField("type", 1, 4, TYPES),
        FlagsField("flags", 0, 8, FLAGS),
        ShortField("job", 0),
        ShortField("round", 0),
        ByteField("group", 0),
        ByteField("src", 0),
        IntField("chunk", 0),
        XIntField("bitmap", 0),
        LanesField("values"),
    ]

    def mysummary(self) -> str:
        kind = TYPES.get(self.type, f"type {self.type}")
        return (
            f"innet {kind} job {self.job} round {self.round} group {self.group} "
            f"src {self.src} chunk {self.chunk}"
        )


def innet_of(packet_format: PacketFormat, **fields: Any) -> Innet:
    """An `Innet` layer of `packet_format`: `fields`, and its lanes of zeros unless `values`
    gives them (as many as its lanes; PacketFormatError otherwise)."""
    values = tuple(fields.pop("values", (0,) * packet_format.lanes))
    if len(values) != packet_format.lanes:
        raise PacketFormatError(
            f"{len(values)} values, a packet of this format carries {packet_format.lanes}"
        )
    return Innet(values=values, **fields)


# Dissect: what the switch's parser takes for innet (the destination port), and the plain
# network's datagrams. Build: both ports innet's, as a worker's socket on port 20041 sends them.
bind_bottom_up(UDP, Innet, dport=INNET_UDP_PORT)
bind_bottom_up(UDP, Innet, dport=PLAIN_UDP_PORT)
bind_top_down(UDP, Innet, sport=INNET_UDP_PORT, dport=INNET_UDP_PORT)
