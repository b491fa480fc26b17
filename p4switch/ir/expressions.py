"""Storage roots and typed expressions of the program model."""

from __future__ import annotations

from dataclasses import dataclass, field

from p4switch.ir.types import BoolT, Type

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
    type: Type


@dataclass(frozen=True)
class ListExpr(Expr):
    items: tuple[Expr, ...]
    type: Type
