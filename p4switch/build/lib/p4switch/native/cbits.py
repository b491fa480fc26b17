"""Headers and field lists to and from bytes, in C: big-endian words of whole bytes.

Fields are grouped into the byte-aligned chunks of `p4switch.compiler.bits.chunks`; a chunk of
at most 8 bytes is one `p4s_get` / `p4s_put` of a `uint64_t` and shifts, a longer one (fields
that only end on a byte boundary after more than 64 bits) goes bit by bit.
"""

from __future__ import annotations

from typing import Protocol

from p4switch import ir
from p4switch.compiler.bits import chunks


class Lines(Protocol):
    def line(self, text: str) -> None: ...
    def temp(self, prefix: str = "_t") -> str: ...


def _mask(width: int) -> str:
    return f"{(1 << width) - 1:#x}ull"


def unpack(src: Lines, header: ir.StructT, targets: list[str], at: str) -> None:
    """Lines reading `header` from the bytes at `at` into `targets` (one per field)."""
    k = 0
    for c in chunks(header):
        if c.nbytes > 8:
            for i, shift, width in c.fields:
                pos = c.nbytes * 8 - shift - width
                src.line(f"{targets[i]} = p4s_get_bits({at} + {k}, {pos}, {width});")
        elif len(c.fields) == 1:
            src.line(f"{targets[c.fields[0][0]]} = p4s_get({at} + {k}, {c.nbytes});")
        else:
            word = src.temp("_w")
            src.line(f"uint64_t {word} = p4s_get({at} + {k}, {c.nbytes});")
            for i, shift, width in c.fields:
                value = f"({word} >> {shift})" if shift else word
                if shift + width < c.nbytes * 8:
                    value = f"({value} & {_mask(width)})"
                src.line(f"{targets[i]} = {value};")
        k += c.nbytes


def pack(src: Lines, header: ir.StructT, values: list[str], at: str) -> None:
    """Lines writing `header`, whose fields read `values`, to the bytes at `at`."""
    k = 0
    for c in chunks(header):
        if c.nbytes > 8:
            src.line(f"memset({at} + {k}, 0, {c.nbytes});")
            for i, shift, width in c.fields:
                pos = c.nbytes * 8 - shift - width
                src.line(f"p4s_put_bits({at} + {k}, {pos}, {values[i]}, {width});")
        else:
            word = " | ".join(f"({values[i]} << {s})" if s else values[i] for i, s, _ in c.fields)
            src.line(f"p4s_put({at} + {k}, {word}, {c.nbytes});")
        k += c.nbytes


def serialise(src: Lines, parts: list[tuple[str, int]], buf: str) -> int:
    """Declare `buf` holding `parts` ((C value, width) each) bit after bit, the last byte padded
    with zero bits, as `p4switch.compiler.stmts` builds the bytes of a hash or checksum."""
    total = sum(w for _, w in parts)
    nbytes = (total + 7) // 8
    groups: list[list[tuple[str, int]]] = []
    pending: list[tuple[str, int]] = []
    bits = 0
    for part in parts:
        pending.append(part)
        bits += part[1]
        if bits % 8 == 0:
            groups.append(pending)
            pending, bits = [], 0
    if pending:
        groups.append(pending)
    wide = any(sum(w for _, w in g) > 64 for g in groups)
    src.line(f"uint8_t {buf}[{max(nbytes, 1)}]" + (" = {0};" if wide else ";"))
    pos = 0
    for g in groups:
        width = sum(w for _, w in g)
        gbytes = (width + 7) // 8
        if width > 64:
            bit = pos * 8
            for code, w in g:
                src.line(f"p4s_put_bits({buf}, {bit}, {code}, {w});")
                bit += w
        else:
            rest = gbytes * 8
            terms = []
            for code, w in g:
                rest -= w
                terms.append(f"({code} << {rest})" if rest else code)
            src.line(f"p4s_put({buf} + {pos}, {' | '.join(terms)}, {gbytes});")
        pos += gbytes
    return nbytes
