"""`==` and `!=` on headers, header unions, structs, header stacks and tuples (P4_16 8.6 and
8.16-8.20), lowered to comparisons of their scalars, so the back ends see bit strings and bools:

- two headers are equal when both are invalid, or both are valid with equal fields;
- two header unions when the same member is valid (or none is) and those members are equal;
- two structs, stacks or tuples when their fields, elements or items are pairwise equal (a
  stack's next index is not compared: it is no element);
- two varbit values when they are as long and hold the same bits.
"""

from __future__ import annotations

from p4switch import ir
from p4switch.exceptions import P4CompileError

BOOL = ir.BoolT()
TRUE = ir.Const(BOOL, True)


def aggregate_equal(a: ir.Expr, b: ir.Expr, negate: bool, loc: ir.Loc) -> ir.Expr:
    """`a == b` (or `a != b`) of two values of one header, union, struct, stack or tuple
    type, as an expression over their scalars."""
    same = _equal(a, b, loc)
    return ir.Unary("!", same, BOOL) if negate else same


def _and(parts: list[ir.Expr]) -> ir.Expr:
    out = TRUE if not parts else parts[0]
    for p in parts[1:]:
        out = ir.Binary("&&", out, p, BOOL)
    return out


def _part(e: ir.Expr, name: str, t: ir.Type) -> ir.Expr:
    """A field, element or item of `e` (an item of a `{...}` by position)."""
    if isinstance(e, ir.ListExpr):
        return e.items[int(name)]
    return ir.Member(e, name, t)


def _pair(a: ir.Expr, b: ir.Expr, name: str, t: ir.Type, loc: ir.Loc) -> ir.Expr:
    return _equal(_part(a, name, t), _part(b, name, t), loc)


def _equal(a: ir.Expr, b: ir.Expr, loc: ir.Loc) -> ir.Expr:
    t = a.type
    if isinstance(t, ir.StructT) and t.is_union:
        parts: list[ir.Expr] = []
        for f in t.fields:
            x, y = ir.Member(a, f.name, f.type), ir.Member(b, f.name, f.type)
            parts.append(ir.Binary("==", ir.IsValid(x), ir.IsValid(y), BOOL))
            parts.append(_header_fields_if_valid(x, y, f.type, loc))
        return _and(parts)
    if isinstance(t, ir.StructT) and t.is_header:
        valid = ir.Binary("==", ir.IsValid(a), ir.IsValid(b), BOOL)
        return ir.Binary("&&", valid, _header_fields_if_valid(a, b, t, loc), BOOL)
    if isinstance(t, ir.StructT):
        return _and(
            [_equal(_part(a, f.name, f.type), _part(b, f.name, f.type), loc) for f in t.fields]
        )
    if isinstance(t, ir.StackT):
        return _and([_pair(a, b, str(i), t.element, loc) for i in range(t.size)])
    if isinstance(t, ir.TupleT):
        return _and([_pair(a, b, str(i), e, loc) for i, e in enumerate(t.elements)])
    if isinstance(t, ir.VarbitT):  # as long, with the same bits
        length = ir.BitT(32)
        a_len, b_len = ir.Member(a, ir.VARBIT_LEN, length), ir.Member(b, ir.VARBIT_LEN, length)
        same_length = ir.Binary("==", a_len, b_len, BOOL)
        return ir.Binary("&&", same_length, ir.Binary("==", a, b, BOOL), BOOL)
    if isinstance(t, ir.BitT | ir.BoolT | ir.EnumT | ir.ErrorT):
        return ir.Binary("==", a, b, BOOL)
    raise P4CompileError.at(loc, f"comparing values of type {t} is not supported")


def _header_fields_if_valid(a: ir.Expr, b: ir.Expr, t: ir.Type, loc: ir.Loc) -> ir.Expr:
    """`!a.isValid() || <a's fields equal b's>` for headers a and b."""
    assert isinstance(t, ir.StructT)
    fields = _and(
        [_equal(ir.Member(a, f.name, f.type), ir.Member(b, f.name, f.type), loc) for f in t.fields]
    )
    return ir.Binary("||", ir.Unary("!", ir.IsValid(a), BOOL), fields, BOOL)
