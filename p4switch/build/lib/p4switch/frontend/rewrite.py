"""Rewriting checked statements: their own expressions, and replacing parts of them.

The front end lowers a few constructs after type-checking (run-time stack indices, calls of
functions inside expressions); these helpers walk and rebuild the frozen `ir` dataclasses.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator
from typing import Any

from p4switch import ir

# Statement fields that hold statements, not expressions: never searched or rewritten here
# (their statements were lowered when they were checked).
BODIES = ("then", "else_", "cases", "body")


def own_exprs(st: ir.Stmt) -> list[ir.Expr]:
    """The expressions of `st` itself, not of the statements nested in it."""
    out: list[ir.Expr] = []
    for f in dataclasses.fields(st):  # type: ignore[arg-type]  # statements are dataclasses
        if f.name in BODIES:
            continue
        value = getattr(st, f.name)
        for item in value if isinstance(value, tuple) else (value,):
            if isinstance(item, ir.Expr):
                out.append(item)
    return out


def replace(node: Any, pick: Callable[[ir.Expr], ir.Expr | None]) -> Any:
    """`node` with each expression `e` for which `pick(e)` gives a value replaced by it
    (outermost first; nested statements left alone)."""
    if isinstance(node, ir.Expr):
        found = pick(node)
        if found is not None:
            return found
    if isinstance(node, tuple):
        return tuple(replace(x, pick) for x in node)
    if isinstance(node, ir.Expr | ir.Stmt) and dataclasses.is_dataclass(node):
        changes = {
            f.name: replace(getattr(node, f.name), pick)
            for f in dataclasses.fields(node)
            if f.name not in BODIES and f.init
        }
        return dataclasses.replace(node, **changes)
    return node


def postorder(e: ir.Expr, maybe: bool = False) -> Iterator[tuple[ir.Expr, bool]]:
    """Every expression in `e`, operands before the operation and left to right (the order
    P4 evaluates them), each with whether it may go unevaluated (the second operand of `&&`
    or `||`, a branch of `?:`)."""
    for f in dataclasses.fields(e):  # type: ignore[arg-type]  # every Expr is a dataclass
        value = getattr(e, f.name)
        conditional = maybe or (
            (isinstance(e, ir.Binary) and e.op in ("&&", "||") and f.name == "right")
            or (isinstance(e, ir.Mux) and f.name in ("yes", "no"))
        )
        for item in value if isinstance(value, tuple) else (value,):
            if isinstance(item, ir.Expr):
                yield from postorder(item, conditional)
    yield e, maybe
