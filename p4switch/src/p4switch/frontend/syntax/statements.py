"""Statements as written in the P4 source."""

from __future__ import annotations

from dataclasses import dataclass

from p4switch.frontend.syntax.expressions import ExprSyntax, TypeRef
from p4switch.ir import Annotation, Loc


class StmtSyntax:
    loc: Loc


@dataclass(frozen=True)
class AssignStmt(StmtSyntax):
    loc: Loc
    target: ExprSyntax
    value: ExprSyntax
    compound: bool = False  # `x op= e`, written `x = x op e`: x is evaluated once


@dataclass(frozen=True)
class CallStmt(StmtSyntax):
    loc: Loc
    call: ExprSyntax


@dataclass(frozen=True)
class VarDecl(StmtSyntax):
    loc: Loc
    type: TypeRef
    name: str
    init: ExprSyntax | None
    annotations: tuple[Annotation, ...] = ()


@dataclass(frozen=True)
class ConstDecl(StmtSyntax):
    loc: Loc
    type: TypeRef
    name: str
    value: ExprSyntax
    annotations: tuple[Annotation, ...] = ()


@dataclass(frozen=True)
class Instantiation(StmtSyntax):
    loc: Loc
    type: TypeRef
    args: tuple[ExprSyntax, ...]
    name: str
    annotations: tuple[Annotation, ...] = ()


@dataclass(frozen=True)
class IfStmt(StmtSyntax):
    loc: Loc
    cond: ExprSyntax
    then: StmtSyntax
    else_: StmtSyntax | None


@dataclass(frozen=True)
class BlockStmt(StmtSyntax):
    loc: Loc
    stmts: tuple[StmtSyntax, ...]


@dataclass(frozen=True)
class ReturnStmt(StmtSyntax):
    loc: Loc
    value: ExprSyntax | None


@dataclass(frozen=True)
class ExitStmt(StmtSyntax):
    loc: Loc


@dataclass(frozen=True)
class EmptyStmt(StmtSyntax):
    loc: Loc


@dataclass(frozen=True)
class SwitchCaseSyntax:
    loc: Loc
    label: ExprSyntax | None  # an action's name or a constant; None: default
    body: BlockStmt | None  # None: falls through to the next case


@dataclass(frozen=True)
class SwitchStmt(StmtSyntax):
    loc: Loc
    expr: ExprSyntax
    cases: tuple[SwitchCaseSyntax, ...]


@dataclass(frozen=True)
class ForStmt(StmtSyntax):
    """`for (init; cond; updates) body` (P4_16 1.2.5)."""

    loc: Loc
    init: tuple[StmtSyntax, ...]
    cond: ExprSyntax | None
    updates: tuple[StmtSyntax, ...]
    body: StmtSyntax


@dataclass(frozen=True)
class ForInStmt(StmtSyntax):
    """`for (T x in lo .. hi) body` or `for (H x in stack) body`."""

    loc: Loc
    type: TypeRef
    name: str
    over: ExprSyntax
    body: StmtSyntax


@dataclass(frozen=True)
class BreakStmt(StmtSyntax):
    loc: Loc


@dataclass(frozen=True)
class ContinueStmt(StmtSyntax):
    loc: Loc
