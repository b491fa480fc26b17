"""Frames a generated case sends that are not well-formed contributions (`p4diff.generate`):
innet frames broken one way or another, frames that are not IPv4, and plain IPv4.

Each maker takes a random source and what it needs, and returns the `send` step's body (as the
case file writes it: docs/p4diff.md, "Frames") and a note. The broken innet frames start from a
well-formed contribution (`Sent`) and break one thing: its length (cut short), its UDP port,
one of its length fields, one field of its IPv4 or innet header; none of them can reach a slot
(docs/protocol.md, "What the edge switch does", step 1).

    >>> import random
    >>> base = Sent(3, "singapore", [{"innet": {"type": "CONTRIBUTION", "src": 1}}], {"chunk": 2})
    >>> send, note = broken(random.Random(4), "truncated", base, PacketFormat())
    >>> 14 <= send["truncate"] < 186, send["frame"]
    (True, 'singapore')
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from innet.packetformat import PacketFormat
from p4diff.frames import build
from topo.siteplan import gateway_mac, host_ip, host_mac

INNET_UDP_PORT = PacketFormat.UDP_PORT

Body = dict[str, Any]
INNET_KINDS = ("truncated", "wrong_udp_port", "wrong_length", "bad_header")
OTHER_KINDS = ("random_bytes", "non_ip", "vlan")


@dataclass(frozen=True)
class Sent:
    """A contribution as a step sends it: its port, its frame's name and layers (with the
    frame's own innet fields), and the innet fields the step changes."""

    port: int
    frame: str
    layers: Sequence[dict[str, Any]]
    innet: dict[str, Any]

    def body(self, **more: Any) -> Body:
        changes = {"innet": dict(self.innet), **more.pop("with_", {})}
        return {"port": self.port, "frame": self.frame, "with": changes, **more}

    def explicit(self) -> list[dict[str, Any]]:
        """The frame's layers written out, the step's innet fields merged in."""
        out = []
        for layer in self.layers:
            ((kind, fields),) = layer.items()
            out.append({kind: {**fields, **self.innet} if kind == "innet" else dict(fields)})
        return out


def broken(
    rng: random.Random, kind: str, base: Sent, packet_format: PacketFormat
) -> tuple[Body, str]:
    """`base` (a frame of `packet_format`) broken as `kind` (one of INNET_KINDS) says; the
    step's body and a note."""
    if kind == "truncated":
        values_at = packet_format.frame_bytes - packet_format.slot_bytes  # the headers end
        keep = rng.choice(
            [rng.randint(14, values_at - 1), rng.randint(values_at, packet_format.frame_bytes - 1)]
        )
        return base.body(truncate=keep), f"cut to {keep} bytes (malformed or not innet)"
    if kind == "wrong_udp_port":
        port = rng.choice([INNET_UDP_PORT - 1, INNET_UDP_PORT + 1, 53, rng.randrange(1, 65536)])
        port = port if port != INNET_UDP_PORT else 9
        return base.body(with_={"udp": {"dport": port}}), f"to UDP port {port}: not innet"
    if kind == "wrong_length":
        return _wrong_length(rng, base, packet_format)
    return _bad_header(rng, base, packet_format)


def _wrong_length(rng: random.Random, base: Sent, packet_format: PacketFormat) -> tuple[Body, str]:
    """A length field off by a little or a lot (never the right one), or bytes beyond."""
    choice = rng.randrange(3)
    if choice == 0:
        length = _near(rng, packet_format.ipv4_length, 20)
        return base.body(with_={"ipv4": {"length": length}}), f"IPv4 total length {length}"
    if choice == 1:
        length = _near(rng, packet_format.udp_length, 8)
        return base.body(with_={"udp": {"length": length}}), f"UDP length {length}"
    extra = rng.randint(1, 64)
    trailer = {"hex": rng.randbytes(extra).hex()}
    layers: Body = {"port": base.port, "layers": [*base.explicit(), trailer]}
    whole = packet_format.frame_bytes
    return layers, f"{extra} bytes beyond innet's {whole}, the lengths saying so"


def _near(rng: random.Random, right: int, header: int) -> int:
    """A length that is not `right`: 0, the bare header, one off either way, 8 over, or any."""
    length = rng.choice([0, header, right - 1, right + 1, right + 8, rng.randrange(65536)])
    return length if length != right else right - 2


def _bad_header(rng: random.Random, base: Sent, packet_format: PacketFormat) -> tuple[Body, str]:
    field, value = rng.choice(
        [
            ("version", rng.choice([0, 2, 15])),
            ("type", rng.choice([0, "RESULT", 5, 6, 15])),
            ("src", rng.randint(32, 255)),
            ("ipv4 checksum", _wrong_checksum(rng, base, packet_format)),
            ("ipv4 version", rng.choice([0, 5, 6])),
            ("ipv4 options", "01010100"),
            ("ipv4 fragment", rng.randint(1, 8191)),
        ]
    )
    if not field.startswith("ipv4"):
        innet = {**base.innet, field: value}
        return {**base.body(), "with": {"innet": innet}}, f"innet {field} {value} (malformed)"
    name = {"checksum": "checksum", "version": "version", "options": "options"}.get(
        field.split()[1], "frag"
    )
    what = f"{field} {value}" + ("" if name != "frag" else ": a fragment, routed as IPv4")
    return base.body(with_={"ipv4": {name: value}}), what


def _wrong_checksum(rng: random.Random, base: Sent, packet_format: PacketFormat) -> int:
    """An IPv4 header checksum that is not the frame's."""
    right = int.from_bytes(build(base.explicit(), packet_format)[24:26], "big")
    return right ^ rng.randint(1, 0xFFFF)


def other(
    rng: random.Random, kind: str, port: int, island: int, packet_format: PacketFormat
) -> tuple[Body, str]:
    """A frame that is no innet frame at all, of `kind` (one of OTHER_KINDS), into `port`; none
    of `packet_format`'s size."""
    src = rng.choice([host_mac(island, 1), "02:00:0a:00:01:fe", "ff:ff:ff:ff:ff:ff"])
    eth = {"dst": gateway_mac(island), "src": src}
    if kind == "random_bytes":
        size = rng.randint(14, 200)
        size = size if size != packet_format.frame_bytes else size - 1
        return {"port": port, "hex": rng.randbytes(size).hex()}, f"{size} random bytes"
    ip = {"src": host_ip(island, 1), "dst": rng.choice(["10.0.1.1", host_ip(island, 2)])}
    udp = {"udp": {"sport": 40001, "dport": rng.choice([5001, INNET_UDP_PORT])}}
    payload = {"hex": rng.randbytes(rng.randint(0, 32)).hex()}
    if kind == "vlan":
        tags = [{"vlan": {"vid": rng.choice([0, 5, 4095]), "pcp": rng.randrange(8)}}]
        if rng.random() < 0.3:
            tags.insert(0, {"vlan": {"tpid": 0x88A8, "vid": rng.randrange(4096)}})
        layers = [{"ethernet": eth}, *tags, {"ipv4": ip}, udp, payload]
        return {"port": port, "layers": layers}, f"{len(tags)} VLAN tag(s) around IPv4"
    choice = rng.randrange(4)
    if choice == 0:
        arp = {
            "op": rng.choice(["request", "reply"]),
            "sha": src,
            "spa": ip["src"],
            "tpa": ip["dst"],
        }
        return {"port": port, "layers": [{"ethernet": eth}, {"arp": arp}]}, "ARP"
    if choice == 1:
        v6 = {"src": "fe80::1", "dst": "ff02::1"}
        return {"port": port, "layers": [{"ethernet": eth}, {"ipv6": v6}, udp, payload]}, "IPv6"
    if choice == 2:
        kind_ = rng.choice([0x88B5, 0x0801, 0x86DD, 0x9000, rng.randrange(0x600, 0x10000)])
        kind_ = kind_ if kind_ not in (0x0800, 0x8100, 0x88A8) else 0x88B5
        layers = [{"ethernet": {**eth, "type": kind_}}, payload]
        return {"port": port, "layers": layers}, f"EtherType {kind_:#06x}"
    extra = {"hex": rng.randbytes(rng.randint(0, 19)).hex()}
    bare = [{"ethernet": {**eth, "type": 0x0800}}, extra]
    return {"port": port, "layers": bare}, "an IPv4 EtherType and less than an IPv4 header"


def ipv4(
    rng: random.Random, port: int, island: int, islands: int, routes: Sequence[str]
) -> tuple[Body, str]:
    """A plain IPv4 datagram into `port`, to a host, a route of the case's or nowhere."""
    dst = rng.choice(
        [
            host_ip(rng.randrange(islands), rng.randint(1, 3)),
            host_ip(island, rng.randint(1, 3)),
            f"10.0.{island}.254",
            f"10.{rng.randint(1, 255)}.{rng.randrange(256)}.{rng.randint(1, 254)}",
            _inside(rng, rng.choice(list(routes))) if routes else "192.168.1.1",
        ]
    )
    src_island = rng.randrange(islands)
    header: Body = {"src": host_ip(src_island, 1), "dst": dst, "id": rng.randrange(65536)}
    header["ttl"] = rng.choice([64, 64, 64, 2, 1, 0, 255])
    if rng.random() < 0.1:
        header["options"] = "01010100"
    eth = {"dst": gateway_mac(island), "src": host_mac(src_island, 1)}
    payload = {"hex": rng.randbytes(rng.randint(0, 48)).hex()}
    if rng.random() < 0.7:
        dport = rng.choice([5001, 20043, INNET_UDP_PORT + 1])
        inner = [{"udp": {"sport": rng.randint(1024, 65535), "dport": dport}}, payload]
    else:
        inner = [payload]
        header["proto"] = rng.choice([1, 6, 47])
    body: Body = {"port": port, "layers": [{"ethernet": eth}, {"ipv4": header}, *inner]}
    if rng.random() < 0.15:
        body["repeat"] = rng.randint(2, 3)
    return body, f"IPv4 to {dst}, TTL {header['ttl']}"


def _inside(rng: random.Random, prefix: str) -> str:
    """An address inside `a.b.c.d/len`."""
    address, length = prefix.split("/")
    value = int.from_bytes(bytes(int(x) for x in address.split(".")), "big")
    host_bits = 32 - int(length)
    value |= rng.randrange(1 << host_bits) if host_bits else 0
    return ".".join(str(b) for b in value.to_bytes(4, "big"))
