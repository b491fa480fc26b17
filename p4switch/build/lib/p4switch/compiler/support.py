"""What generated code calls at run time: parser outcomes, exit, hashes and checksums."""

from __future__ import annotations

import struct
import zlib

# ParserReject and ControlExit are control flow of the generated code, not errors: the parser
# and the controls it generates catch them, so they never leave the pipeline (not InnetErrors).


# A parser that takes more transitions than this for one packet is stopped with
# error.ParserTimeout (a loop that consumes nothing would otherwise never end).
PARSER_STEPS = 4096


class ParserReject(Exception):
    """The parser reached `reject`: `code` is the error, `offset` where parsing stopped."""

    def __init__(self, code: int, offset: int) -> None:
        super().__init__(code, offset)
        self.code = code
        self.offset = offset


class ControlExit(Exception):
    """`exit`: leave the current control at once. Raised in an action with out or inout
    parameters, it carries their values, which its caller copies out before leaving too."""

    def __init__(self, values: tuple[int, ...] = ()) -> None:
        super().__init__()
        self.values = values


def peek(
    data: bytes, off: int, nbytes: int, shift: int, mask: int, too_short: int, skip: int, need: int
) -> int:
    """`lookahead`: `nbytes` bytes from `skip` bytes ahead, shifted and masked, without
    consuming them; the packet must hold `need` bytes from `off`."""
    if off + need > len(data):
        raise ParserReject(too_short, off)
    return (int.from_bytes(data[off + skip : off + skip + nbytes], "big") >> shift) & mask


def pack_bits(parts: tuple[tuple[int, int], ...]) -> bytes:
    """(value, width) pairs concatenated bit by bit, most significant first, and padded with
    zero bits to whole bytes: a field list holding varbit fields, whose widths are known only
    at run time."""
    acc = bits = 0
    for value, width in parts:
        acc = (acc << width) | value
        bits += width
    size = (bits + 7) // 8
    return (acc << (size * 8 - bits)).to_bytes(size, "big")


def _crc16_table() -> tuple[int, ...]:
    table = []
    for byte in range(256):
        crc = byte
        for _ in range(8):
            crc = (crc >> 1) ^ 0xA001 if crc & 1 else crc >> 1
        table.append(crc)
    return tuple(table)


_CRC16 = _crc16_table()


def crc16(data: bytes) -> int:
    """CRC-16 as BMv2's `crc16` (polynomial 0x8005, reflected, initial value and xor 0)."""
    crc = 0
    table = _CRC16
    for b in data:
        crc = (crc >> 8) ^ table[(crc ^ b) & 0xFF]
    return crc


def crc32(data: bytes) -> int:
    """CRC-32 as BMv2's `crc32` (the Ethernet/zlib CRC)."""
    return zlib.crc32(data)


def csum16(data: bytes) -> int:
    """The Internet checksum (RFC 1071) of `data`, padded with a zero byte if odd."""
    if len(data) % 2:
        data += b"\x00"
    total: int = sum(struct.unpack(f"!{len(data) // 2}H", data))
    while total >> 16:
        total = (total & 0xFFFF) + (total >> 16)
    return ~total & 0xFFFF


def xor16(data: bytes) -> int:
    if len(data) % 2:
        data += b"\x00"
    out = 0
    for (word,) in struct.iter_unpack("!H", data):
        out ^= word
    return out


def identity(data: bytes) -> int:
    return int.from_bytes(data, "big")


HASHES = {"crc16": crc16, "crc32": crc32, "csum16": csum16, "xor16": xor16, "identity": identity}
