"""Type references and expressions as written in the P4 source."""

from __future__ import annotations

from dataclasses import dataclass

from p4switch.ir import Loc


class TypeRef:
    loc: Loc


@dataclass(frozen=True)
class BitsRef(TypeRef):
    loc: Loc
    width: Expr
    signed: bool


@dataclass(frozen=True)
class KeywordTypeRef(TypeRef):
    """`bool`, `error`, `void`, `string`, `int` (arbitrary precision), `varbit<N>`, ..."""

    loc: Loc
    name: str


@dataclass(frozen=True)
class NamedTypeRef(TypeRef):
    loc: Loc
    name: str
    args: tuple[TypeRef, ...] = ()


class Expr:
    loc: Loc


@dataclass(frozen=True)
class IntLit(Expr):
    loc: Loc
    value: int
    width: int | None
    signed: bool
    text: str


@dataclass(frozen=True)
class BoolLit(Expr):
    loc: Loc
    value: bool


@dataclass(frozen=True)
class StrLit(Expr):
    loc: Loc
    value: str


@dataclass(frozen=True)
class Name(Expr):
    loc: Loc
    name: str
    top_level: bool = False  # written `.name`


@dataclass(frozen=True)
class ErrorMember(Expr):
    loc: Loc
    name: str


@dataclass(frozen=True)
class MemberExpr(Expr):
    loc: Loc
    base: Expr
    name: str


@dataclass(frozen=True)
class IndexExpr(Expr):
    loc: Loc
    base: Expr
    index: Expr


@dataclass(frozen=True)
class SliceExpr(Expr):
    loc: Loc
    base: Expr
    hi: Expr
    lo: Expr


@dataclass(frozen=True)
class CallExpr(Expr):
    loc: Loc
    callee: Expr
    args: tuple[Expr, ...]
    type_args: tuple[TypeRef, ...] = ()


@dataclass(frozen=True)
class CastExpr(Expr):
    loc: Loc
    type: TypeRef
    expr: Expr


@dataclass(frozen=True)
class UnaryExpr(Expr):
    loc: Loc
    op: str
    expr: Expr


@dataclass(frozen=True)
class BinaryExpr(Expr):
    loc: Loc
    op: str
    left: Expr
    right: Expr


@dataclass(frozen=True)
class TernaryExpr(Expr):
    loc: Loc
    cond: Expr
    yes: Expr
    no: Expr


@dataclass(frozen=True)
class ListLit(Expr):
    loc: Loc
    items: tuple[Expr, ...]


@dataclass(frozen=True)
class DontCare(Expr):
    loc: Loc


@dataclass(frozen=True)
class DefaultKey(Expr):
    loc: Loc


@dataclass(frozen=True)
class MaskExpr(Expr):
    loc: Loc
    value: Expr
    mask: Expr


@dataclass(frozen=True)
class RangeExpr(Expr):
    loc: Loc
    lo: Expr
    hi: Expr


@dataclass(frozen=True)
class TupleKey(Expr):
    """A parenthesised list of keysets in a select case or a const entry."""

    loc: Loc
    items: tuple[Expr, ...]
