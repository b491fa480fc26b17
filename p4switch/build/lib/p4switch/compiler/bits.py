"""Headers to and from bytes: one precompiled `struct` format per header.

Fields are grouped into chunks that start and end on byte boundaries (IPv4's version and ihl
share a byte; flags and fragOffset share two). A chunk of 1, 2, 4 or 8 bytes is one struct
code; other sizes are split into such codes (6 bytes: `IH`) and joined with shifts, which is
cheaper than `int.from_bytes`. A header whose fields are all whole chunks moves with one slice.
"""

from __future__ import annotations

from dataclasses import dataclass

from p4switch import ir
from p4switch.compiler.source import Source

_CODES = ((8, "Q"), (4, "I"), (2, "H"), (1, "B"))


@dataclass(frozen=True)
class Chunk:
    nbytes: int
    codes: str
    fields: tuple[tuple[int, int, int], ...]  # (field index, shift within the chunk, width)


def chunks(header: ir.StructT) -> list[Chunk]:
    out: list[Chunk] = []
    pending: list[tuple[int, int]] = []  # (field index, width)
    bits = 0
    for i, f in enumerate(header.fields):
        width = ir.bit_width(f.type)
        pending.append((i, width))
        bits += width
        if bits % 8 == 0:
            out.append(_chunk(pending, bits))
            pending, bits = [], 0
    assert not pending, "headers are whole bytes (checked by the front-end)"
    return out


def _chunk(fields: list[tuple[int, int]], bits: int) -> Chunk:
    nbytes = bits // 8
    codes, left = "", nbytes
    for size, code in _CODES:
        while left >= size:
            codes += code
            left -= size
    placed, shift = [], bits
    for i, width in fields:
        shift -= width
        placed.append((i, shift, width))
    return Chunk(nbytes, codes, tuple(placed))


def struct_format(header: ir.StructT) -> str:
    return ">" + "".join(c.codes for c in chunks(header))


def simple(header: ir.StructT) -> bool:
    """True when every field is exactly one struct code (the header moves as one slice)."""
    return all(len(c.codes) == 1 and len(c.fields) == 1 for c in chunks(header))


def unpack(
    src: Source, header: ir.StructT, targets: list[str], st: str, data: str, off: str
) -> None:
    """Emit code that reads `header` at `data[off:]` into `targets` (one per field)."""
    parts = chunks(header)
    if simple(header):
        src.line(f"{_joined(targets)} = {st}.unpack_from({data}, {off})")
        return
    values = src.temp("_v")
    src.line(f"{values} = {st}.unpack_from({data}, {off})")
    k = 0
    for c in parts:
        sizes = [_size(code) for code in c.codes]
        terms, rest = [], c.nbytes * 8
        for j, size in enumerate(sizes):
            rest -= size * 8
            terms.append(f"({values}[{k + j}] << {rest})" if rest else f"{values}[{k + j}]")
        k += len(sizes)
        value = terms[0] if len(terms) == 1 else "(" + " | ".join(terms) + ")"
        if len(c.fields) == 1:
            src.line(f"{targets[c.fields[0][0]]} = {value}")
            continue
        word = src.temp("_w")
        src.line(f"{word} = {value}")
        for i, shift, width in c.fields:
            mask = (1 << width) - 1
            if shift == 0:
                src.line(f"{targets[i]} = {word} & {mask}")
            elif shift + width == c.nbytes * 8:
                src.line(f"{targets[i]} = {word} >> {shift}")
            else:
                src.line(f"{targets[i]} = ({word} >> {shift}) & {mask}")


def pack_args(header: ir.StructT, values: list[str]) -> str:
    """The argument list of `struct.pack` for a header whose fields read `values`."""
    args = []
    for c in chunks(header):
        terms = [f"({values[i]} << {shift})" if shift else values[i] for i, shift, _ in c.fields]
        value = terms[0] if len(terms) == 1 else "(" + " | ".join(terms) + ")"
        rest = c.nbytes * 8
        for code in c.codes:
            size = _size(code) * 8
            rest -= size
            if len(c.codes) == 1:
                args.append(value)
            elif rest:
                args.append(f"(({value} >> {rest}) & {(1 << size) - 1})")
            else:
                args.append(f"({value} & {(1 << size) - 1})")
    return ", ".join(args)


def _size(code: str) -> int:
    return next(size for size, c in _CODES if c == code)


def _joined(targets: list[str]) -> str:
    """An assignment target for all fields: a slice when they are consecutive slots."""
    slots = [_slot(t) for t in targets]
    if all(s is not None for s in slots):
        first = slots[0]
        assert first is not None
        if slots == list(range(first, first + len(slots))):
            return f"S[{first}:{first + len(slots)}]"
    return ", ".join(targets) + ("," if len(targets) == 1 else "")


def _slot(target: str) -> int | None:
    if target.startswith("S[") and target.endswith("]") and target[2:-1].isdigit():
        return int(target[2:-1])
    return None


def lookahead_bytes(e: ir.Lookahead) -> tuple[int, int, int, int]:
    """(bytes to skip, bytes to read, right shift, bytes the packet must hold) for a lookahead."""
    assert isinstance(e.type, ir.BitT)
    width = e.type.width
    skip, bit = divmod(e.skip, 8)
    nbytes = (bit + width + 7) // 8
    need = (max(e.need, e.skip + width) + 7) // 8
    return skip, nbytes, nbytes * 8 - bit - width, need
