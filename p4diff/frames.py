"""Frames a researcher writes by hand: hex, or a stack of named headers whose lengths, types and
checksums are filled in unless given.

    >>> frame = build([
    ...     {"ethernet": {"dst": "02:00:0a:00:00:fe", "src": "02:00:0a:00:00:01"}},
    ...     {"ipv4": {"src": "10.0.0.1", "dst": "10.0.1.1"}},
    ...     {"udp": {"sport": 40000, "dport": 5000}},
    ...     {"hex": "c0ffee"},
    ... ], PacketFormat())
    >>> len(frame), frame[12:14].hex(), frame[24:26].hex()  # 14 + 20 + 8 + 3; IPv4; checksum
    (45, '0800', '65cd')
    >>> from_hex("0200 0a00 00fe") == bytes.fromhex("02000a0000fe")
    True

Layers, outermost first (each a one-key mapping; unknown fields are refused):

- `ethernet`: dst, src, type (from the next layer: vlan's tpid, ipv4, ipv6, arp)
- `vlan`: vid, pcp, dei, tpid (0x8100; 0x88a8 for an 802.1ad tag), type
- `ipv4`: src, dst, ttl 64, tos 0, id 0, flags 0, frag 0, proto (17 before udp), options (hex),
  version 4, ihl, length, checksum (computed unless given: give a wrong one to test)
- `ipv6`: src, dst, next (17 before udp, else 59), hop_limit 64, tc 0, flow 0, length
- `arp`: op (request, reply or a number), sha, spa, tha, tpa
- `udp`: sport, dport (20041 before innet), length, checksum 0 (none: valid over IPv4)
- `innet`: type (CONTRIBUTION, RESULT, NACK, RECOVER or a number), flags (a list of WAN,
  LOCAL, RETRANSMIT, REMOTE or a number), job, round, group, src, chunk, bitmap 0, values (up
  to the packet format's lanes of int32, the rest zero), version 1, laid out by the packet
  format (innet.packetformat) `build` is given: the case's (its `LANES` define, or 32)
- `hex`: raw bytes; `zeros`: that many zero bytes
"""

from __future__ import annotations

import functools
import ipaddress
import re
import struct
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from controller.p4rt.exceptions import SchemaError
from controller.p4rt.schema import to_int
from innet.checksum import internet_checksum
from innet.packetformat import PacketFormat
from p4diff.exceptions import FrameError
from workers.packets import Flag, PacketType

MIN_FRAME, MAX_FRAME = 14, 1514  # an Ethernet header; the veths' MTU of 1500 plus it
ETHERTYPES = {"ipv4": 0x0800, "ipv6": 0x86DD, "arp": 0x0806}
IP_PROTOCOLS = {"udp": 17}
NO_NEXT_HEADER = 59
_HEX = re.compile(r"[0-9a-fA-F\s]*")

Fields = Mapping[str, Any]


def from_hex(text: str) -> bytes:
    """Bytes from hex digits, whitespace (spaces, newlines) anywhere allowed."""
    if not isinstance(text, str) or not _HEX.fullmatch(text):
        bad = next((c for c in str(text) if not (c.isspace() or c in "0123456789abcdefABCDEF")), "")
        raise FrameError(f"{text!r} is not hex (the character {bad!r})")
    digits = "".join(text.split())
    if len(digits) % 2:
        raise FrameError(f"{len(digits)} hex digits: a byte is two, so the count must be even")
    return bytes.fromhex(digits)


# --- field values ------------------------------------------------------------------------------


def _number(fields: Fields, name: str, bits: int, default: int | None = None) -> int:
    if name not in fields:
        if default is None:
            raise FrameError(f"needs a value for {name!r}")
        return default
    value = fields[name]
    if isinstance(value, bool) or not isinstance(value, int | str):
        raise FrameError(f"{name}: {value!r} is not a number")
    try:
        number = to_int(value)
    except SchemaError as err:
        raise FrameError(f"{name}: {err}") from None
    if not 0 <= number < 1 << bits:
        raise FrameError(f"{name}: {value!r} does not fit in {bits} bits")
    return number


def _address(fields: Fields, name: str, size: int, default: str | None = None) -> bytes:
    return _number(fields, name, 8 * size, None if default is None else to_int(default)).to_bytes(
        size, "big"
    )


def _ipv6(fields: Fields, name: str) -> bytes:
    if name not in fields:
        raise FrameError(f"needs a value for {name!r}")
    try:
        return ipaddress.IPv6Address(str(fields[name])).packed
    except ValueError as err:
        raise FrameError(f"{name}: {err}") from None


def _named(fields: Fields, name: str, names: Mapping[str, int], bits: int, default: int) -> int:
    value = fields.get(name, default)
    if isinstance(value, str) and value.upper() in names:
        return names[value.upper()]
    return _number({name: value}, name, bits)


def _flags(fields: Fields) -> int:
    value = fields.get("flags", 0)
    if not isinstance(value, list):
        return _named(fields, "flags", Flag.__members__, 8, 0)
    unknown = [f for f in value if str(f).upper() not in Flag.__members__]
    if unknown:
        raise FrameError(f"flags: {unknown[0]!r} is not one of {', '.join(Flag.__members__)}")
    return sum({int(Flag[str(f).upper()]) for f in value})


def _next_type(following: str | None, tpid: int | None, table: Mapping[str, int], what: str) -> int:
    if following == "vlan" and tpid is not None:
        return tpid
    if following is not None and following in table:
        return table[following]
    after = f"a {following} layer" if following else "nothing"
    raise FrameError(f"give {what}: it cannot be inferred from what follows ({after})")


# --- layers ------------------------------------------------------------------------------------
# Each takes its fields, the kind of the next layer (and that layer's tpid if it is a tag), and
# the bytes after it; it returns itself followed by those bytes.


def _ethernet(f: Fields, following: str | None, tpid: int | None, rest: bytes) -> bytes:
    kind = f["type"] if "type" in f else _next_type(following, tpid, ETHERTYPES, "type")
    head = _address(f, "dst", 6) + _address(f, "src", 6)
    return head + _number({"type": kind}, "type", 16).to_bytes(2, "big") + rest


def _vlan(f: Fields, following: str | None, tpid: int | None, rest: bytes) -> bytes:
    kind = f["type"] if "type" in f else _next_type(following, tpid, ETHERTYPES, "type")
    tci = _number(f, "pcp", 3, 0) << 13 | _number(f, "dei", 1, 0) << 12 | _number(f, "vid", 12, 0)
    return struct.pack("!HH", tci, _number({"type": kind}, "type", 16)) + rest


def _ipv4(f: Fields, following: str | None, tpid: int | None, rest: bytes) -> bytes:
    options = from_hex(f.get("options", ""))
    if len(options) % 4:
        raise FrameError(f"options: {len(options)} bytes; IPv4 options come in 4-byte words")
    proto = f["proto"] if "proto" in f else _next_type(following, None, IP_PROTOCOLS, "proto")
    ihl = _number(f, "ihl", 4, 5 + len(options) // 4)
    length = _number(f, "length", 16, 20 + len(options) + len(rest))
    head = (
        struct.pack(
            "!BBHHHBBH4s4s",
            _number(f, "version", 4, 4) << 4 | ihl,
            _number(f, "tos", 8, 0),
            length,
            _number(f, "id", 16, 0),
            _number(f, "flags", 3, 0) << 13 | _number(f, "frag", 13, 0),
            _number(f, "ttl", 8, 64),
            _number({"proto": proto}, "proto", 8),
            0,
            _address(f, "src", 4),
            _address(f, "dst", 4),
        )
        + options
    )
    check = _number(f, "checksum", 16, internet_checksum(head))
    return head[:10] + check.to_bytes(2, "big") + head[12:] + rest


def _ipv6_layer(f: Fields, following: str | None, tpid: int | None, rest: bytes) -> bytes:
    proto = f.get("next", IP_PROTOCOLS.get(following or "", NO_NEXT_HEADER))
    first = 6 << 28 | _number(f, "tc", 8, 0) << 20 | _number(f, "flow", 20, 0)
    head = struct.pack(
        "!IHBB",
        first,
        _number(f, "length", 16, len(rest)),
        _number({"next": proto}, "next", 8),
        _number(f, "hop_limit", 8, 64),
    )
    return head + _ipv6(f, "src") + _ipv6(f, "dst") + rest


def _arp(f: Fields, following: str | None, tpid: int | None, rest: bytes) -> bytes:
    op = _named(f, "op", {"REQUEST": 1, "REPLY": 2}, 16, 1)
    head = struct.pack("!HHBBH", 1, 0x0800, 6, 4, op)
    head += _address(f, "sha", 6) + _address(f, "spa", 4)
    head += _address(f, "tha", 6, "0") + _address(f, "tpa", 4)
    return head + rest


def _udp(f: Fields, following: str | None, tpid: int | None, rest: bytes) -> bytes:
    dport_default = PacketFormat.UDP_PORT if following == "innet" else None
    return (
        struct.pack(
            "!HHHH",
            _number(f, "sport", 16),
            _number(f, "dport", 16, dport_default),
            _number(f, "length", 16, 8 + len(rest)),
            _number(f, "checksum", 16, 0),
        )
        + rest
    )


def _innet(
    f: Fields, following: str | None, tpid: int | None, rest: bytes, *, packet_format: PacketFormat
) -> bytes:
    values, lanes = f.get("values", []), packet_format.lanes
    if not isinstance(values, list) or len(values) > lanes:
        raise FrameError(f"values: a list of at most {lanes} int32 values, got {values!r}")
    bad = [v for v in values if isinstance(v, bool) or not isinstance(v, int)]
    if bad or any(not -(1 << 31) <= v < 1 << 31 for v in values):
        raise FrameError(f"values: {(bad or values)[0]!r} is not an int32")
    kind = _named(f, "type", PacketType.__members__, 4, int(PacketType.CONTRIBUTION))
    head = packet_format.HEADER.pack(
        _number(f, "version", 4, packet_format.VERSION) << 4 | kind,
        _flags(f),
        _number(f, "job", 16),
        _number(f, "round", 16),
        _number(f, "group", 8),
        _number(f, "src", 8),
        _number(f, "chunk", 32),
        _number(f, "bitmap", 32, 0),
    )
    return head + packet_format.values.pack(*values, *[0] * (lanes - len(values))) + rest


Layer = Callable[..., bytes]  # as above; the innet layer also takes the packet format, by keyword
LAYERS: dict[str, tuple[Layer, tuple[str, ...]]] = {
    "ethernet": (_ethernet, ("dst", "src", "type")),
    "vlan": (_vlan, ("vid", "pcp", "dei", "tpid", "type")),
    "ipv4": (
        _ipv4,
        (
            "src",
            "dst",
            "ttl",
            "tos",
            "id",
            "flags",
            "frag",
            "proto",
            "options",
            "version",
            "ihl",
            "length",
            "checksum",
        ),
    ),
    "ipv6": (_ipv6_layer, ("src", "dst", "next", "hop_limit", "tc", "flow", "length")),
    "arp": (_arp, ("op", "sha", "spa", "tha", "tpa")),
    "udp": (_udp, ("sport", "dport", "length", "checksum")),
    "innet": (
        _innet,
        ("type", "flags", "job", "round", "group", "src", "chunk", "bitmap", "values", "version"),
    ),
}
RAW = ("hex", "zeros")


def layer_kind(layer: Mapping[str, Any]) -> str:
    """The one key of a layer, checked."""
    if not isinstance(layer, Mapping) or len(layer) != 1:
        raise FrameError(f"a layer is a one-key mapping such as {{ipv4: {{...}}}}, got {layer!r}")
    (kind,) = layer
    if kind not in LAYERS and kind not in RAW:
        raise FrameError(f"unknown layer {kind!r} (known: {', '.join((*LAYERS, *RAW))})")
    return str(kind)


def build(layers: Sequence[Mapping[str, Any]], packet_format: PacketFormat) -> bytes:
    """The frame a stack of layers describes, built innermost first; an innet layer in
    `packet_format`."""
    kinds = [layer_kind(layer) for layer in layers]
    rest = b""
    for k in range(len(layers) - 1, -1, -1):
        kind, value = kinds[k], layers[k][kinds[k]]
        following = kinds[k + 1] if k + 1 < len(kinds) else None
        if kind == "hex":
            rest = from_hex(value) + rest
            continue
        if kind == "zeros":
            rest = bytes(_number({"zeros": value}, "zeros", 16)) + rest
            continue
        if not isinstance(value, Mapping):
            raise FrameError(f"layer {kind}: its fields are a mapping, got {value!r}")
        encode, known = LAYERS[kind]
        if kind == "innet":
            encode = functools.partial(_innet, packet_format=packet_format)
        unknown = sorted(set(value) - set(known))
        if unknown:
            raise FrameError(
                f"layer {kind}: unknown field {unknown[0]!r} (known: {', '.join(known)})"
            )
        tpid = None
        if following == "vlan":
            tag = layers[k + 1]["vlan"]
            tpid = _number(tag if isinstance(tag, Mapping) else {}, "tpid", 16, 0x8100)
        try:
            rest = encode(value, following, tpid, rest)
        except FrameError as err:
            raise FrameError(f"layer {kind}: {err}") from None
    return rest


def checked(frame: bytes) -> bytes:
    """`frame` if an AF_PACKET socket can send it on an Ethernet veth, else FrameError."""
    if not MIN_FRAME <= len(frame) <= MAX_FRAME:
        raise FrameError(
            f"{len(frame)} bytes: a frame the harness sends has {MIN_FRAME} (an Ethernet header) "
            f"to {MAX_FRAME} bytes"
        )
    return frame
