"""Declarations as written in the P4 source: types, externs, actions, tables, blocks."""

from __future__ import annotations

from dataclasses import dataclass

from p4switch.frontend.syntax.expressions import ExprSyntax, TypeRef
from p4switch.frontend.syntax.statements import BlockStmt, StmtSyntax
from p4switch.ir import Annotation, Loc


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
    type_params: tuple[str, ...] = ()  # a generic struct or header: `struct S<T> { ... }`


@dataclass(frozen=True)
class TypedefDecl(Decl):
    loc: Loc
    name: str
    type: TypeRef
    newtype: bool = False
    annotations: tuple[Annotation, ...] = ()


@dataclass(frozen=True)
class EnumDecl(Decl):
    loc: Loc
    name: str
    members: tuple[tuple[str, ExprSyntax | None], ...]
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
    default: ExprSyntax | None = None  # `= value`: the argument when a call leaves it out


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
class FunctionDecl(Decl):
    loc: Loc
    name: str
    return_type: TypeRef
    params: tuple[ParamDecl, ...]
    body: BlockStmt
    annotations: tuple[Annotation, ...] = ()
    type_params: tuple[str, ...] = ()


@dataclass(frozen=True)
class KeyElement:
    loc: Loc
    expr: ExprSyntax
    match_kind: str
    annotations: tuple[Annotation, ...] = ()


@dataclass(frozen=True)
class ActionRefSyntax:
    loc: Loc
    expr: ExprSyntax  # a Name, or a CallExpr binding leading arguments
    annotations: tuple[Annotation, ...] = ()


@dataclass(frozen=True)
class EntrySyntax:
    loc: Loc
    keyset: ExprSyntax
    action: ExprSyntax
    priority: ExprSyntax | None = None  # `priority = 10: ...`
    annotations: tuple[Annotation, ...] = ()  # `@priority(n)` among them


@dataclass(frozen=True)
class TableProperty:
    loc: Loc
    name: str  # "key", "actions", "default_action", "entries", or any other (size, counters)
    value: (
        tuple[KeyElement, ...] | tuple[ActionRefSyntax, ...] | tuple[EntrySyntax, ...] | ExprSyntax
    )
    const: bool = False
    annotations: tuple[Annotation, ...] = ()  # written before it: `@name("ap") implementation`


@dataclass(frozen=True)
class TableDecl(Decl):
    loc: Loc
    name: str
    properties: tuple[TableProperty, ...]
    annotations: tuple[Annotation, ...] = ()


@dataclass(frozen=True)
class ValueSetDecl(Decl):
    """`value_set<T>(size) name;` in a parser."""

    loc: Loc
    name: str
    type: TypeRef
    size: ExprSyntax
    annotations: tuple[Annotation, ...] = ()


@dataclass(frozen=True)
class SelectCaseSyntax:
    loc: Loc
    keyset: ExprSyntax
    state: str


@dataclass(frozen=True)
class StateDecl(Decl):
    loc: Loc
    name: str
    stmts: tuple[StmtSyntax, ...]
    select: tuple[ExprSyntax, ...] | None  # None: direct transition to `cases[0].state`
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
    locals: tuple[StmtSyntax, ...]
    states: tuple[StateDecl, ...]
    annotations: tuple[Annotation, ...] = ()
    ctor_params: tuple[ParamDecl, ...] = ()  # `parser P(...)(bit<8> k)`


@dataclass(frozen=True)
class ControlDecl(Decl):
    loc: Loc
    name: str
    params: tuple[ParamDecl, ...]
    # ActionDecl, TableDecl, VarDecl, ConstDecl, Instantiation
    locals: tuple[Decl | StmtSyntax, ...]
    apply: BlockStmt
    annotations: tuple[Annotation, ...] = ()
    ctor_params: tuple[ParamDecl, ...] = ()  # `control C(...)(bit<8> k)`


@dataclass(frozen=True)
class TopDecl(Decl):
    """A top-level constant or instantiation, wrapped so every declaration has a name."""

    loc: Loc
    name: str
    stmt: StmtSyntax


@dataclass(frozen=True)
class Unsupported(Decl):
    """A construct the grammar recognises only to refuse it with a clear message."""

    loc: Loc
    what: str
    name: str = ""
