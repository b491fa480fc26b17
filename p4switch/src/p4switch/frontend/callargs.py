"""Arguments of calls put in parameter order, and the fields of headers read ahead
(`lookahead<T>()`): helpers of the expression and statement checkers."""

from __future__ import annotations

from collections.abc import Sequence

from p4switch import ir
from p4switch.exceptions import P4CompileError
from p4switch.frontend import syntax as s


def positional(call: s.CallExpr, decls: Sequence[s.ParamDecl], what: str) -> list[s.ExprSyntax]:
    """A call's arguments in parameter order: named ones (`f(b = 1, a = 2)`, all or none, as
    the spec says) put in place, and those left out taken from the parameters' defaults."""
    args = call.args
    arity = f"{what} takes {len(decls)} argument(s), got {len(args)}"
    named = [a for a in args if isinstance(a, s.NamedArg)]
    if named and len(named) != len(args):
        raise P4CompileError.at(call.loc, "a call names all of its arguments or none")
    if len(args) > len(decls):
        raise P4CompileError.at(call.loc, arity)
    given: dict[str, s.ExprSyntax] = {d.name: a for d, a in zip(decls, args, strict=False)}
    if named:
        given = {}
        for a in named:
            if a.name not in {d.name for d in decls}:
                raise P4CompileError.at(a.loc, f"{what} has no parameter {a.name!r}")
            if a.name in given:
                raise P4CompileError.at(a.loc, f"argument {a.name!r} is given twice")
            given[a.name] = a.value
    out = []
    for d in decls:
        value = given.get(d.name, d.default)
        if value is None:
            raise P4CompileError.at(call.loc, f"{arity} (none for {d.name}, which has no default)")
        out.append(value)
    return out


def lookahead_field(t: ir.StructT, name: str) -> ir.Expr:
    """Field `name` of `lookahead<T>()`: its own bits, read without consuming them (the
    packet must hold the whole of T, or the parser rejects it with PacketTooShort)."""
    start = 0
    for f in t.fields:
        ft = f.type
        width = ir.bit_width(ft)
        if f.name == name:
            bits = ir.Lookahead(ir.BitT(width), skip=start, need=t.width)
            if isinstance(ft, ir.BitT) and not ft.signed:
                return bits
            return ir.Cast(ft, bits)  # int<N> (same width) and bool (bit<1>)
        start += width
    raise AssertionError(f"{t} has no field {name}")
