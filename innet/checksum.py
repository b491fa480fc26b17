"""The Internet checksum (RFC 1071) innet's own frames carry: IPv4 headers built to send or to
compare."""

from __future__ import annotations

import struct


def internet_checksum(data: bytes) -> int:
    """The ones' complement of the ones' complement sum of `data`'s 16-bit words (a zero byte
    pads an odd length): an IPv4 header with this in its checksum field sums to 0xFFFF.

    >>> hex(internet_checksum(bytes.fromhex("450000730000400040110000c0a80001c0a800c7")))
    '0xb861'
    """
    if len(data) % 2:
        data += b"\0"
    total: int = sum(struct.unpack(f"!{len(data) // 2}H", data))
    while total >> 16:
        total = (total & 0xFFFF) + (total >> 16)
    return ~total & 0xFFFF
