"""Storage roots and typed expressions of the program model."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field, fields

from p4switch.ir.types import BoolT, Loc, Type

# --- storage ------------------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class Var:
    """A named storage root: a block parameter, a local variable, or an action parameter.

    `in_slots` variables live in the packet's slot list (visible to every action and table of a
    block, copied with the packet); the others are Python locals of one generated function.
    """

    name: str
    type: Type
    in_slots: bool


# --- expressions ------------------------------------------------------------------------------


class Expr:
    type: Type


@dataclass(frozen=True)
class Const(Expr):
    type: Type
    value: int | bool


@dataclass(frozen=True)
class VarRef(Expr):
    var: Var

    @property
    def type(self) -> Type:  # type: ignore[override]  # read-only: a VarRef has its Var's type
        return self.var.type


@dataclass(frozen=True)
class Member(Expr):
    base: Expr
    name: str
    type: Type


@dataclass(frozen=True)
class StackIndex(Expr):
    """`hs[i]` with an index known only at run time, `hs.next` or `hs.last`.

    The front end only: each statement holding one is lowered to an if-else chain over the
    stack's elements (`frontend/stacks.py`), so the back ends see constant elements alone.
    """

    stack: Expr
    index: Expr
    type: Type
    kind: str  # "index", "next" or "last"
    loc: Loc


@dataclass(frozen=True)
class FunctionCall(Expr):
    """A call of a P4 function that has a value, `f(a, b)`.

    The front end only: each statement holding one calls the function first, into a
    temporary (`StmtChecker.lower`), so the back ends see a `CallAction` and the temporary.
    """

    function: str  # the function's action name
    args: tuple[Expr, ...]  # one per parameter but the result; out/inout ones are l-values
    type: Type
    pure: bool  # no out or inout parameter: calling it early changes nothing
    loc: Loc


@dataclass(frozen=True)
class Slice(Expr):
    base: Expr
    hi: int
    lo: int
    type: Type


@dataclass(frozen=True)
class Cast(Expr):
    type: Type
    expr: Expr


@dataclass(frozen=True)
class Unary(Expr):
    op: str  # "-", "~", "!"
    expr: Expr
    type: Type


@dataclass(frozen=True)
class Binary(Expr):
    op: str  # + - * / % |+| |-| & | ^ << >> ++ == != < > <= >= && ||
    left: Expr
    right: Expr
    type: Type


@dataclass(frozen=True)
class Mux(Expr):
    cond: Expr
    yes: Expr
    no: Expr
    type: Type


@dataclass(frozen=True)
class IsValid(Expr):
    header: Expr
    type: Type = field(default_factory=BoolT)


@dataclass(frozen=True)
class TableHit(Expr):
    """`t.apply().hit` (or `.miss` when `hit` is False): applies the table, then tests."""

    table: str
    hit: bool
    type: Type = field(default_factory=BoolT)


@dataclass(frozen=True)
class Lookahead(Expr):
    """The packet's next bits, not consumed: `type`'s width of them after `skip` bits, and
    the packet must hold `need` bits (a field of `lookahead<H>()` reads its own bits but
    needs all of H's)."""

    type: Type
    skip: int = 0
    need: int = 0


@dataclass(frozen=True)
class ListExpr(Expr):
    items: tuple[Expr, ...]
    type: Type


def walk(e: Expr) -> Iterator[Expr]:
    """`e` and every expression inside it, outermost first."""
    yield e
    for f in fields(e):  # type: ignore[arg-type]  # every Expr is a dataclass
        value = getattr(e, f.name)
        items = value if isinstance(value, tuple) else (value,)
        for item in items:
            if isinstance(item, Expr):
                yield from walk(item)
