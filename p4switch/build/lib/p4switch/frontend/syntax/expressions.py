"""Type references and expressions as written in the P4 source."""

from __future__ import annotations

from dataclasses import dataclass

from p4switch.ir import Loc


class TypeRef:
    loc: Loc


@dataclass(frozen=True)
class BitsRef(TypeRef):
    loc: Loc
    width: ExprSyntax
    signed: bool


@dataclass(frozen=True)
class VarbitRef(TypeRef):
    loc: Loc
    max: ExprSyntax


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


@dataclass(frozen=True)
class StackTypeRef(TypeRef):
    """`H[size]`: a header stack."""

    loc: Loc
    element: TypeRef
    size: ExprSyntax


class ExprSyntax:
    loc: Loc


@dataclass(frozen=True)
class IntLit(ExprSyntax):
    loc: Loc
    value: int
    width: int | None
    signed: bool
    text: str


@dataclass(frozen=True)
class BoolLit(ExprSyntax):
    loc: Loc
    value: bool


@dataclass(frozen=True)
class StrLit(ExprSyntax):
    loc: Loc
    value: str


@dataclass(frozen=True)
class Name(ExprSyntax):
    loc: Loc
    name: str
    top_level: bool = False  # written `.name`


@dataclass(frozen=True)
class ErrorMember(ExprSyntax):
    loc: Loc
    name: str


@dataclass(frozen=True)
class MemberExpr(ExprSyntax):
    loc: Loc
    base: ExprSyntax
    name: str


@dataclass(frozen=True)
class IndexExpr(ExprSyntax):
    loc: Loc
    base: ExprSyntax
    index: ExprSyntax


@dataclass(frozen=True)
class SliceExpr(ExprSyntax):
    loc: Loc
    base: ExprSyntax
    hi: ExprSyntax
    lo: ExprSyntax


@dataclass(frozen=True)
class CallExpr(ExprSyntax):
    loc: Loc
    callee: ExprSyntax
    args: tuple[ExprSyntax, ...]
    type_args: tuple[TypeRef, ...] = ()


@dataclass(frozen=True)
class NamedArg(ExprSyntax):
    """`name = value` in a call's arguments."""

    loc: Loc
    name: str
    value: ExprSyntax


@dataclass(frozen=True)
class CastExpr(ExprSyntax):
    loc: Loc
    type: TypeRef
    expr: ExprSyntax


@dataclass(frozen=True)
class UnaryExpr(ExprSyntax):
    loc: Loc
    op: str
    expr: ExprSyntax


@dataclass(frozen=True)
class BinaryExpr(ExprSyntax):
    loc: Loc
    op: str
    left: ExprSyntax
    right: ExprSyntax


@dataclass(frozen=True)
class TernaryExpr(ExprSyntax):
    loc: Loc
    cond: ExprSyntax
    yes: ExprSyntax
    no: ExprSyntax


@dataclass(frozen=True)
class ListLit(ExprSyntax):
    loc: Loc
    items: tuple[ExprSyntax, ...]
    names: tuple[str, ...] = ()  # `{a = 1, b = 2}`: the field each item initialises


@dataclass(frozen=True)
class DontCare(ExprSyntax):
    loc: Loc


@dataclass(frozen=True)
class DefaultKey(ExprSyntax):
    loc: Loc


@dataclass(frozen=True)
class MaskExpr(ExprSyntax):
    loc: Loc
    value: ExprSyntax
    mask: ExprSyntax


@dataclass(frozen=True)
class RangeExpr(ExprSyntax):
    loc: Loc
    lo: ExprSyntax
    hi: ExprSyntax


@dataclass(frozen=True)
class TupleKey(ExprSyntax):
    """A parenthesised list of keysets in a select case or a const entry."""

    loc: Loc
    items: tuple[ExprSyntax, ...]
