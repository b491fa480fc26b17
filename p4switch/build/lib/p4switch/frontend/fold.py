"""Compile-time evaluation of operators on constants, with P4's wraparound semantics.

`bit<N>` and `int<N>` constants are held as their N-bit pattern; `int` (no width) constants as
plain Python integers. The generated per-packet code follows the same rules (compiler/exprs.py).
"""

from __future__ import annotations

from p4switch import ir


def to_signed(value: int, width: int) -> int:
    """The value of an N-bit two's complement pattern."""
    sign = 1 << (width - 1)
    return (value ^ sign) - sign


def wrap(value: int, t: ir.Type) -> int | bool:
    """`value` (any Python int) as a constant of type `t`."""
    if isinstance(t, ir.BitT):
        return value & t.mask
    if isinstance(t, ir.BoolT):
        return bool(value)
    return value


def numeric(c: ir.Const) -> int:
    """The mathematical value of a numeric constant (signed ones interpreted)."""
    t = c.type
    if isinstance(t, ir.BitT) and t.signed:
        return to_signed(int(c.value), t.width)
    return int(c.value)


def fold_unary(op: str, c: ir.Const) -> ir.Const:
    t = c.type
    if op == "!":
        return ir.Const(t, not c.value)
    if op == "-":
        return ir.Const(t, wrap(-numeric(c), t))
    if op == "~":
        assert isinstance(t, ir.BitT)
        return ir.Const(t, int(c.value) ^ t.mask)
    return c  # unary plus


def fold_binary(op: str, a: ir.Const, b: ir.Const, result: ir.Type) -> ir.Const:
    """Fold `a op b`; operands already have their unified types, `result` is the result's."""
    if op in ("&&", "||"):
        return ir.Const(result, (a.value and b.value) if op == "&&" else (a.value or b.value))
    if op in ("==", "!="):
        same = a.value == b.value
        return ir.Const(result, same if op == "==" else not same)
    x, y = numeric(a), numeric(b)
    if op in ("<", ">", "<=", ">="):
        table = {"<": x < y, ">": x > y, "<=": x <= y, ">=": x >= y}
        return ir.Const(result, table[op])
    if op == "++":
        assert isinstance(b.type, ir.BitT)
        return ir.Const(result, (int(a.value) << b.type.width) | int(b.value))
    if op in ("<<", ">>"):
        if isinstance(a.type, ir.BitT) and not a.type.signed:
            x = int(a.value)
        return ir.Const(result, wrap(x << y if op == "<<" else x >> y, result))
    if op in ("|+|", "|-|"):
        return ir.Const(result, saturate(x + y if op == "|+|" else x - y, result))
    simple = {
        "+": lambda: x + y,
        "-": lambda: x - y,
        "*": lambda: x * y,
        "/": lambda: x // y,
        "%": lambda: x % y,
        "&": lambda: int(a.value) & int(b.value),
        "|": lambda: int(a.value) | int(b.value),
        "^": lambda: int(a.value) ^ int(b.value),
    }
    return ir.Const(result, wrap(simple[op](), result))


def saturate(value: int, t: ir.Type) -> int:
    if not isinstance(t, ir.BitT):
        return value
    if t.signed:
        lo, hi = -(1 << (t.width - 1)), (1 << (t.width - 1)) - 1
        return max(lo, min(hi, value)) & t.mask
    return max(0, min(t.mask, value))


def fold_cast(c: ir.Const, target: ir.Type) -> ir.Const:
    source = c.type
    if isinstance(target, ir.BoolT):
        return ir.Const(target, bool(c.value))
    if isinstance(target, ir.BitT):
        if isinstance(source, ir.BoolT):
            return ir.Const(target, int(bool(c.value)))
        return ir.Const(target, numeric(c) & target.mask)
    return ir.Const(target, c.value)
