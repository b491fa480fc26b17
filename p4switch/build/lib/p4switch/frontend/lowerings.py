"""Statements and checks the call lowering builds on: header stack push and pop with nextIndex
kept in range, a union's other members made invalid, the headers `emit` of a struct emits,
which headers hold a varbit field, and `hash` with HashAlgorithm.random."""

from __future__ import annotations

from collections.abc import Sequence

from p4switch import ir
from p4switch.exceptions import P4CompileError
from p4switch.frontend import syntax as s


def union_siblings_invalid(header: ir.Expr) -> list[ir.Stmt]:
    """A header of a union made valid: the union's other headers made invalid (P4_16 8.20)."""
    if not isinstance(header, ir.Member):
        return []
    union = header.base.type
    if not (isinstance(union, ir.StructT) and union.is_union):
        return []
    return [
        ir.SetValid(ir.Member(header.base, f.name, f.type), False)
        for f in union.fields
        if f.name != header.name
    ]


def shift_stack(stack: ir.Expr, count: int) -> list[ir.Stmt]:
    """`push_front(count)` (count > 0) or `pop_front(-count)`, element by element.

    push_front moves element i to i + count (those pushed off the end are lost), makes the
    first `count` invalid and adds `count` to nextIndex, at most the size; pop_front moves
    element i to i - count, makes the last `count` invalid and takes `count` from nextIndex,
    at least 0 (P4_16 8.18).
    """
    t = stack.type
    assert isinstance(t, ir.StackT)
    n = abs(count)

    def element(i: int) -> ir.Expr:
        return ir.Member(stack, str(i), t.element)

    def invalid(i: int) -> list[ir.Stmt]:  # a union element: each of its headers
        e = element(i)
        fields = t.element.fields if t.element.is_union else ()
        headers: list[ir.Expr] = [ir.Member(e, f.name, f.type) for f in fields] or [e]
        return [ir.SetValid(h, False) for h in headers]

    out: list[ir.Stmt] = []
    if count > 0:
        out += [ir.Assign(element(i), element(i - n)) for i in reversed(range(n, t.size))]
        out += [st for i in range(min(n, t.size)) for st in invalid(i)]
    elif count < 0:
        out += [ir.Assign(element(i), element(i + n)) for i in range(t.size - n)]
        out += [st for i in range(max(t.size - n, 0), t.size) for st in invalid(i)]
    return [*out, next_index_plus(stack, count)] if count else []


def next_index_plus(stack: ir.Expr, count: int) -> ir.Stmt:
    """nextIndex += count, kept within 0..size."""
    t = stack.type
    assert isinstance(t, ir.StackT)
    u32 = ir.STACK_NEXT_TYPE
    nxt = ir.Member(stack, ir.STACK_NEXT, u32)
    if count > 0:
        room = t.size - count  # nextIndex > room: the stack is full after the push
        full = ir.Binary(">", nxt, ir.Const(u32, room), ir.BoolT()) if room >= 0 else None
        plus = ir.Binary("+", nxt, ir.Const(u32, count), u32)
        value: ir.Expr = (
            ir.Const(u32, t.size)
            if full is None
            else ir.Mux(full, ir.Const(u32, t.size), plus, u32)
        )
    else:
        enough = ir.Binary(">=", nxt, ir.Const(u32, -count), ir.BoolT())
        minus = ir.Binary("-", nxt, ir.Const(u32, -count), u32)
        value = ir.Mux(enough, minus, ir.Const(u32, 0), u32)
    return ir.Assign(nxt, value)


def has_varbit(t: ir.Type) -> bool:
    if isinstance(t, ir.StackT):
        return has_varbit(t.element)
    if isinstance(t, ir.StructT):
        return any(has_varbit(f.type) for f in t.fields)
    return isinstance(t, ir.VarbitT)


def varbit_of(e: ir.Expr) -> ir.Field | None:
    return e.type.varbit if isinstance(e.type, ir.StructT) and e.type.is_header else None


def headers_in(value: ir.Expr) -> list[ir.Expr]:
    """A header, or every header in a struct or a stack, in order (what `emit` emits)."""
    t = value.type
    if isinstance(t, ir.StackT):
        return [h for i in range(t.size) for h in headers_in(ir.Member(value, str(i), t.element))]
    assert isinstance(t, ir.StructT)
    if t.is_header:
        return [value]
    out: list[ir.Expr] = []
    for f in t.fields:
        if isinstance(f.type, ir.StructT | ir.StackT):
            out += headers_in(ir.Member(value, f.name, f.type))
    return out


def need_header(e: ir.Expr, loc: ir.Loc, what: str) -> None:
    if not (isinstance(e.type, ir.StructT) and e.type.is_header):
        raise P4CompileError.at(loc, f"{what} applies to headers, not to a {e.type}")


def random_hash(dest: ir.Expr, base: ir.Expr, limit: ir.Expr, loc: ir.Loc) -> list[ir.Stmt]:
    """`hash` with HashAlgorithm.random: base plus a uniformly random value below max (BMv2
    hashes nothing: the value is random), truncated to the result's width."""
    if not isinstance(limit, ir.Const):
        raise P4CompileError.at(loc, "HashAlgorithm.random needs a constant max")
    if not limit.value:
        return [ir.Assign(dest, base)]
    t = dest.type
    assert isinstance(t, ir.BitT)
    top = ir.Const(t, min(int(limit.value) - 1, t.mask))
    plus = ir.Binary("+", dest, base, t)
    return [ir.Random(dest, ir.Const(t, 0), top), ir.Assign(dest, plus)]


def field_items(value: s.ListLit, t: ir.StructT) -> Sequence[s.ExprSyntax]:
    """The items of `{...}` for struct `t`, one per field in field order: by position, or
    `{b = 2, a = 1}` naming every field once."""
    items: Sequence[s.ExprSyntax] = value.items
    if value.names:
        given = dict(zip(value.names, items, strict=True))
        names = [f.name for f in t.fields]
        for name in value.names:
            if name not in names:
                raise P4CompileError.at(value.loc, f"{t.name} has no field {name!r}")
        if len(given) != len(value.names) or set(given) != set(names):
            what = f"name each field of {t.name} once: {', '.join(names)}"
            raise P4CompileError.at(value.loc, what)
        items = tuple(given[n] for n in names)
    if len(items) != len(t.fields):
        what = f"{len(items)} values for {t.name}, which has {len(t.fields)} fields"
        raise P4CompileError.at(value.loc, what)
    return items
