"""The innet protocol as a scapy layer: craft innet frames, and read them in any capture.

`Innet` is the innet header (docs/protocol.md) and the 32 int32 values behind it, one layer as
it is one UDP payload. Importing this module binds it to UDP: a datagram to port 20041 (innet's)
or 20043 (the `plain` network's host-side collectives, which carry the same header) dissects as
`Innet`, and `UDP() / Innet()` is built with both ports 20041, as a worker's socket sends it.
So `rdpcap` of a p4switch capture (`p4switch --pcap DIR`) shows innet fields:

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

A frame cut short in the values dissects with the whole values it has; one cut in the header
does not dissect as `Innet` (scapy keeps it as `Raw`). `fuzz(Innet())` draws every field at
random, the values included: tests/unit/dataplane/test_fuzz_frames.py feeds such frames to
innet.p4. docs/scapy.md shows more.
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

# The facts of docs/protocol.md (topo.siteplan holds the same; a test checks they agree).
INNET_UDP_PORT = 0x4E49  # 20041
PLAIN_UDP_PORT = 20043  # the plain network's leaders: the innet header between hosts
VERSION = 1
LANES = 32
HEADER_BYTES = 16
PAYLOAD_BYTES = HEADER_BYTES + 4 * LANES  # 144: one innet message, the UDP payload
TYPES = {1: "CONTRIBUTION", 2: "RESULT", 3: "NACK", 4: "RECOVER", 5: "BOUNCE"}
FLAGS = ["WAN", "LOCAL", "RETRANSMIT", "REMOTE"]  # bits 0..3 of `flags`

_INT32 = struct.Struct("!i")


class RandLanes(VolatileValue[list[int]]):
    """LANES random int32 values, drawn anew each time a fuzzed packet is built."""

    def _fix(self) -> list[int]:
        return [random.randint(-(2**31), 2**31 - 1) for _ in range(LANES)]


class LanesField(FieldListField):
    """The values: LANES int32, big-endian two's complement; fewer if the frame is cut short.

    A tuple, as in the worker library (and a tuple default stays a default: `fuzz` replaces it).
    """

    def __init__(self, name: str) -> None:
        zeros: Any = (0,) * LANES
        super().__init__(name, zeros, SignedIntField("value", 0))

    def any2i(self, pkt: Packet | None, x: Any) -> Any:
        if isinstance(x, VolatileValue):
            return x
        return tuple(self.field.any2i(pkt, v) for v in (x if isinstance(x, list | tuple) else [x]))

    def i2m(self, pkt: Packet | None, x: Any) -> list[Any]:
        if isinstance(x, VolatileValue):
            x = x._fix()
        return list(x) if x is not None else [0] * LANES

    def getfield(self, pkt: Packet, s: bytes) -> tuple[bytes, Any]:
        count = min(LANES, len(s) // _INT32.size)
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


# Dissect: what the switch's parser takes for innet (the destination port), and the plain
# network's datagrams. Build: both ports innet's, as a worker's socket on port 20041 sends them.
bind_bottom_up(UDP, Innet, dport=INNET_UDP_PORT)
bind_bottom_up(UDP, Innet, dport=PLAIN_UDP_PORT)
bind_top_down(UDP, Innet, sport=INNET_UDP_PORT, dport=INNET_UDP_PORT)
