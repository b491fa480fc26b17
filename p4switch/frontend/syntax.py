"""The abstract syntax tree the parser builds: P4 as written, names not yet resolved."""

from __future__ import annotations

from dataclasses import dataclass

from p4switch.ir import Annotation, Loc

# --- types ----------------------------------------------------------------------------------


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


# --- expressions ----------------------------------------------------------------------------


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


# --- statements -----------------------------------------------------------------------------


class Stmt:
    loc: Loc


@dataclass(frozen=True)
class AssignStmt(Stmt):
    loc: Loc
    target: Expr
    value: Expr


@dataclass(frozen=True)
class CallStmt(Stmt):
    loc: Loc
    call: Expr


@dataclass(frozen=True)
class VarDecl(Stmt):
    loc: Loc
    type: TypeRef
    name: str
    init: Expr | None
    annotations: tuple[Annotation, ...] = ()


@dataclass(frozen=True)
class ConstDecl(Stmt):
    loc: Loc
    type: TypeRef
    name: str
    value: Expr
    annotations: tuple[Annotation, ...] = ()


@dataclass(frozen=True)
class Instantiation(Stmt):
    loc: Loc
    type: TypeRef
    args: tuple[Expr, ...]
    name: str
    annotations: tuple[Annotation, ...] = ()


@dataclass(frozen=True)
class IfStmt(Stmt):
    loc: Loc
    cond: Expr
    then: Stmt
    else_: Stmt | None


@dataclass(frozen=True)
class BlockStmt(Stmt):
    loc: Loc
    stmts: tuple[Stmt, ...]


@dataclass(frozen=True)
class ReturnStmt(Stmt):
    loc: Loc
    value: Expr | None


@dataclass(frozen=True)
class ExitStmt(Stmt):
    loc: Loc


@dataclass(frozen=True)
class EmptyStmt(Stmt):
    loc: Loc


@dataclass(frozen=True)
class SwitchCaseSyntax:
    loc: Loc
    label: str | None  # None: default
    body: BlockStmt | None  # None: falls through to the next case


@dataclass(frozen=True)
class SwitchStmt(Stmt):
    loc: Loc
    expr: Expr
    cases: tuple[SwitchCaseSyntax, ...]


# --- declarations ---------------------------------------------------------------------------


class Decl:
    loc: Loc
    name: str


@dataclass(frozen=True)
class FieldDecl:
    loc: Loc
    type: TypeRef
    name: str
    annotations: tuple[Annotation, ...] = ()


@dataclass(frozen=True)
class StructDecl(Decl):
    loc: Loc
    name: str
    kind: str  # "struct", "header" or "header_union"
    fields: tuple[FieldDecl, ...]
    annotations: tuple[Annotation, ...] = ()


@dataclass(frozen=True)
class TypedefDecl(Decl):
    loc: Loc
    name: str
    type: TypeRef
    newtype: bool = False


@dataclass(frozen=True)
class EnumDecl(Decl):
    loc: Loc
    name: str
    members: tuple[tuple[str, Expr | None], ...]
    underlying: TypeRef | None = None


@dataclass(frozen=True)
class ErrorDecl(Decl):
    loc: Loc
    members: tuple[str, ...]
    name: str = "error"


@dataclass(frozen=True)
class MatchKindDecl(Decl):
    loc: Loc
    members: tuple[str, ...]
    name: str = "match_kind"


@dataclass(frozen=True)
class ParamDecl:
    loc: Loc
    direction: str
    type: TypeRef
    name: str
    annotations: tuple[Annotation, ...] = ()


@dataclass(frozen=True)
class MethodDecl:
    """An extern method, constructor (`return_type` None) or extern function prototype."""

    loc: Loc
    name: str
    return_type: TypeRef | None
    type_params: tuple[str, ...]
    params: tuple[ParamDecl, ...]
    annotations: tuple[Annotation, ...] = ()


@dataclass(frozen=True)
class ExternDecl(Decl):
    loc: Loc
    name: str
    type_params: tuple[str, ...]
    methods: tuple[MethodDecl, ...]
    annotations: tuple[Annotation, ...] = ()


@dataclass(frozen=True)
class ExternFunctionDecl(Decl):
    loc: Loc
    name: str
    proto: MethodDecl


@dataclass(frozen=True)
class ActionDecl(Decl):
    loc: Loc
    name: str
    params: tuple[ParamDecl, ...]
    body: BlockStmt
    annotations: tuple[Annotation, ...] = ()


@dataclass(frozen=True)
class KeyElement:
    loc: Loc
    expr: Expr
    match_kind: str
    annotations: tuple[Annotation, ...] = ()


@dataclass(frozen=True)
class ActionRefSyntax:
    loc: Loc
    expr: Expr  # a Name, or a CallExpr binding leading arguments
    annotations: tuple[Annotation, ...] = ()


@dataclass(frozen=True)
class EntrySyntax:
    loc: Loc
    keyset: Expr
    action: Expr


@dataclass(frozen=True)
class TableProperty:
    loc: Loc
    name: str  # "key", "actions", "default_action", "entries", or any other (size, counters)
    value: tuple[KeyElement, ...] | tuple[ActionRefSyntax, ...] | tuple[EntrySyntax, ...] | Expr
    const: bool = False


@dataclass(frozen=True)
class TableDecl(Decl):
    loc: Loc
    name: str
    properties: tuple[TableProperty, ...]
    annotations: tuple[Annotation, ...] = ()


@dataclass(frozen=True)
class SelectCaseSyntax:
    loc: Loc
    keyset: Expr
    state: str


@dataclass(frozen=True)
class StateDecl(Decl):
    loc: Loc
    name: str
    stmts: tuple[Stmt, ...]
    select: tuple[Expr, ...] | None  # None: direct transition to `cases[0].state`
    cases: tuple[SelectCaseSyntax, ...]
    annotations: tuple[Annotation, ...] = ()


@dataclass(frozen=True)
class BlockTypeDecl(Decl):
    """`parser P<H>(...);`, `control C<H>(...);` or `package Pkg<H>(...);`."""

    loc: Loc
    kind: str
    name: str
    type_params: tuple[str, ...]
    params: tuple[ParamDecl, ...]
    annotations: tuple[Annotation, ...] = ()


@dataclass(frozen=True)
class ParserDecl(Decl):
    loc: Loc
    name: str
    params: tuple[ParamDecl, ...]
    locals: tuple[Stmt, ...]
    states: tuple[StateDecl, ...]
    annotations: tuple[Annotation, ...] = ()


@dataclass(frozen=True)
class ControlDecl(Decl):
    loc: Loc
    name: str
    params: tuple[ParamDecl, ...]
    locals: tuple[Decl | Stmt, ...]  # ActionDecl, TableDecl, VarDecl, ConstDecl, Instantiation
    apply: BlockStmt
    annotations: tuple[Annotation, ...] = ()


@dataclass(frozen=True)
class TopDecl(Decl):
    """A top-level constant or instantiation, wrapped so every declaration has a name."""

    loc: Loc
    name: str
    stmt: Stmt


@dataclass(frozen=True)
class Unsupported(Decl):
    """A construct the grammar recognises only to refuse it with a clear message."""

    loc: Loc
    what: str
    name: str = ""
