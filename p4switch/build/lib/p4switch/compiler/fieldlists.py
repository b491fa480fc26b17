"""Field lists (the data of `hash`, checksums and action selectors) as the bytes BMv2 hashes:
the items concatenated bit by bit, most significant first, padded with zero bits to whole
bytes. A varbit field counts as long as it is in the packet, so a list holding one is packed
at run time (`support.pack_bits`); any other is one constant-shape expression."""

from __future__ import annotations

from collections.abc import Callable

from p4switch import ir
from p4switch.compiler.exprs import ExprCompiler
from p4switch.compiler.layout import leaves

Leaf = Callable[[ir.Expr, tuple[str, ...]], str]  # the code reading a scalar of a reference


def field_bytes(x: ExprCompiler, leaf: Leaf, data: tuple[ir.Expr, ...]) -> str:
    """Code for the bytes of the field list `data`."""
    parts: list[tuple[str, int | str]] = []  # (value, width: bits, or code giving them)
    for item in data:
        if isinstance(item.type, ir.VarbitT):  # as long as it is now
            assert isinstance(item, ir.Member), "varbit values are header fields"
            parts.append((x.expr(item), leaf(item.base, (item.name, ir.VARBIT_LEN))))
        elif isinstance(item.type, ir.StructT | ir.StackT):
            for path, t in leaves(item.type):
                if isinstance(t, ir.VarbitT):
                    parts.append((leaf(item, path), leaf(item, (*path, ir.VARBIT_LEN))))
                elif path[-1] not in ("$valid", ir.VARBIT_LEN):
                    parts.append((leaf(item, path), ir.bit_width(t)))
        else:
            parts.append((x.expr(item), ir.bit_width(item.type)))
    if any(isinstance(w, str) for _, w in parts):
        return f"pack_bits(({''.join(f'({v}, {w}), ' for v, w in parts)}))"
    widths = [w for _, w in parts if isinstance(w, int)]
    nbytes = (sum(widths) + 7) // 8
    rest = nbytes * 8
    terms = []
    for (code, _), width in zip(parts, widths, strict=True):
        rest -= width
        terms.append(f"({code} << {rest})" if rest else code)
    value = " | ".join(terms) if terms else "0"
    return f"({value}).to_bytes({nbytes}, 'big')"
