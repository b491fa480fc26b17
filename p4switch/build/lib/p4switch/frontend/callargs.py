"""Arguments of calls put in parameter order, `static_assert`, and headers read ahead
(`lookahead<T>()`): helpers of the expression and statement checkers."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from p4switch import ir
from p4switch.exceptions import P4CompileError
from p4switch.frontend import syntax as s
from p4switch.frontend.env import Scope

if TYPE_CHECKING:
    from p4switch.frontend.exprcheck import ExprChecker


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


def static_assert(x: ExprChecker, e: s.CallExpr, scope: Scope) -> ir.Expr:
    """`static_assert(check[, message])`: `check` must be a constant true, or the program
    is refused with the message; its value is true."""
    if len(e.args) not in (1, 2):
        raise P4CompileError.at(e.loc, "static_assert takes a condition and a message")
    check = x.expr(e.args[0], scope)
    if not (isinstance(check, ir.Const) and isinstance(check.type, ir.BoolT)):
        raise P4CompileError.at(e.args[0].loc, "static_assert needs a constant bool")
    if not check.value:
        message = e.args[1] if len(e.args) == 2 else None
        text = message.value if isinstance(message, s.StrLit) else "condition is false"
        raise P4CompileError.at(e.loc, f"static_assert failed: {text}")
    return ir.Const(ir.BoolT(), True)


def lookahead(x: ExprChecker, e: s.CallExpr) -> ir.Expr:
    if len(e.type_args) != 1 or e.args:
        raise P4CompileError.at(e.loc, "use lookahead<T>() with one type and no arguments")
    t = x.env.resolve(e.type_args[0])
    if isinstance(t, ir.StructT) and all(isinstance(f.type, ir.BitT | ir.BoolT) for f in t.fields):
        return ir.Lookahead(t)  # a header or flat struct: read by field (lookahead_field)
    if not isinstance(t, ir.BitT) or t.signed:
        what = f"lookahead of {t} is not supported (use bit<N>, or a header or struct of bits)"
        raise P4CompileError.at(e.loc, what)
    return ir.Lookahead(t)
