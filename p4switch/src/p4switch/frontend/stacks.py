"""Header-stack elements chosen at run time (`hs[i]`, `hs.next`, `hs.last`), lowered away.

The back ends address every value by a fixed slot, so a statement that touches `hs[i]` for an
index known only at run time becomes an if-else chain with one branch per element, in which the
element is a constant one: `if (i == 0) <st with hs[0]> else if (i == 1) ... else <out of
range>`. Stacks are small (`MAX_STACK`), so the chain is short; the index is read once per
branch tried and may not apply a table (checked where it is typed). An index that itself reads
a stack element at run time (`hs[hs[i].f]`) is read first, into a temporary.

Out of range (P4_16 8.18 and 8.25, following BMv2 where the spec leaves room): in a parser,
`hs.next` past the end and `hs.last` of an empty stack reject the packet with
`error.StackOutOfBounds`; anywhere else the statement does nothing (a write is lost, and a
read leaves its destination as it was, the spec's "unspecified value").
"""

from __future__ import annotations

from collections.abc import Callable

from p4switch import ir
from p4switch.exceptions import P4CompileError
from p4switch.frontend import rewrite
from p4switch.frontend import syntax as s


def dynamic(st: ir.Stmt) -> ir.StackIndex | None:
    """The first run-time stack access among `st`'s own expressions, if any."""
    for value in rewrite.own_exprs(st):
        for e in ir.walk(value):
            if isinstance(e, ir.StackIndex):
                return e
    return None


def lower(
    st: ir.Stmt, in_parser: bool, out_of_bounds: int, temp: Callable[[ir.Type], ir.Var]
) -> list[ir.Stmt]:
    """`st` without run-time stack accesses. `out_of_bounds` is StackOutOfBounds' code;
    `temp(t)` makes a fresh local variable (for a condition read from a stack element)."""
    found = dynamic(st)
    if found is None:
        return [st]
    if found.kind != "index" and not in_parser:
        raise P4CompileError.at(found.loc, f"hs.{found.kind} can only be used in a parser")
    if isinstance(st, ir.If):  # the condition is read once, into a temporary
        flag = temp(ir.BoolT())
        read = lower(ir.Assign(ir.VarRef(flag), st.cond), in_parser, out_of_bounds, temp)
        return [ir.Declare(flag, None), *read, ir.If(ir.VarRef(flag), st.then, st.else_)]
    if isinstance(st, ir.Declare) and st.init is not None:
        assign = ir.Assign(ir.VarRef(st.var), st.init)
        return [ir.Declare(st.var, None), *lower(assign, in_parser, out_of_bounds, temp)]
    if any(isinstance(e, ir.StackIndex) for e in ir.walk(found.index)):
        # an index that reads a stack at run time itself (`hs[hs[i].f]`): read it first, into
        # a temporary, so the chain below tests a plain value
        held = temp(found.index.type)
        read = lower(ir.Assign(ir.VarRef(held), found.index), in_parser, out_of_bounds, temp)
        plain = ir.StackIndex(found.stack, ir.VarRef(held), found.type, found.kind, found.loc)
        rest = _replace(st, found, plain)
        return [ir.Declare(held, None), *read, *lower(rest, in_parser, out_of_bounds, temp)]
    stack = found.stack.type
    assert isinstance(stack, ir.StackT)
    index = found.index
    assert isinstance(index.type, ir.BitT)
    if found.kind != "index" and in_parser:
        chain: tuple[ir.Stmt, ...] = (ir.Verify(_FALSE, ir.Const(ir.ErrorT(), out_of_bounds)),)
    else:
        chain = ()
    # the elements the index can name (a negative int<N> names none)
    reach = 1 << (index.type.width - 1 if index.type.signed else index.type.width)
    for i in reversed(range(min(stack.size, reach))):
        element = ir.Member(found.stack, str(i), stack.element)
        branch = lower(_replace(st, found, element), in_parser, out_of_bounds, temp)
        test = ir.Binary("==", index, ir.Const(index.type, i), ir.BoolT())
        chain = (ir.If(test, tuple(branch), chain),)
    return list(chain)


_FALSE = ir.Const(ir.BoolT(), False)


def _replace(st: ir.Stmt, found: ir.StackIndex, element: ir.Expr) -> ir.Stmt:
    """`st` with every access to the same element as `found` (same stack, same index: a
    compound assignment reads and writes one) replaced by `element`."""

    def pick(e: ir.Expr) -> ir.Expr | None:
        same = isinstance(e, ir.StackIndex) and (e.stack, e.index) == (found.stack, found.index)
        return element if same else None

    replaced: ir.Stmt = rewrite.replace(st, pick)
    return replaced


def stack_member(stack: ir.Expr, e: s.MemberExpr) -> ir.Expr:
    """`hs.size`, `hs.nextIndex`, `hs.lastIndex`, `hs.next`, `hs.last`."""
    t = stack.type
    assert isinstance(t, ir.StackT)
    next_index = ir.Member(stack, ir.STACK_NEXT, ir.STACK_NEXT_TYPE)
    if e.name == "size":
        return ir.Const(ir.IntLitT(), t.size)
    if e.name == "nextIndex":
        return next_index
    if e.name == "lastIndex":
        return ir.Binary("-", next_index, ir.Const(ir.STACK_NEXT_TYPE, 1), ir.STACK_NEXT_TYPE)
    if e.name == "next":
        return ir.StackIndex(stack, next_index, t.element, "next", e.loc)
    if e.name == "last":
        last = ir.Binary("-", next_index, ir.Const(ir.STACK_NEXT_TYPE, 1), ir.STACK_NEXT_TYPE)
        return ir.StackIndex(stack, last, t.element, "last", e.loc)
    raise P4CompileError.at(e.loc, f"a header stack has no member {e.name!r}")
