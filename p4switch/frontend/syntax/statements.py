"""Statements as written in the P4 source."""

from __future__ import annotations

from dataclasses import dataclass

from p4switch.frontend.syntax.expressions import Expr, TypeRef
from p4switch.ir import Annotation, Loc


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
