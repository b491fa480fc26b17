"""`switch` statements: on a table's `action_run`, and on a value (as an if-else chain)."""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

from p4switch import ir
from p4switch.exceptions import P4CompileError
from p4switch.frontend import syntax as s
from p4switch.frontend.context import BlockContext
from p4switch.frontend.env import ActionEntity, Scope, TableEntity

if TYPE_CHECKING:
    from p4switch.frontend.stmtcheck import StmtChecker


class SwitchChecker:
    """`switch` statements, for the statement checker (`StmtChecker`), which checks their
    cases' statements."""

    def __init__(self, stmts: StmtChecker) -> None:
        self.stmts = stmts

    def on_action_run(self, st: s.SwitchStmt, scope: Scope, ctx: BlockContext) -> ir.Stmt:
        """`switch (t.apply().action_run)`: labels are the table's actions, each case runs
        its body (labels without one fall through to the next), `default` the others."""
        e = st.expr
        table = None
        if (
            isinstance(e, s.MemberExpr)
            and e.name == "action_run"
            and isinstance(e.base, s.CallExpr)
        ):
            callee = e.base.callee
            if isinstance(callee, s.MemberExpr) and isinstance(callee.base, s.Name):
                found = scope.lookup(callee.base.name)
                if isinstance(found, TableEntity) and callee.name == "apply":
                    table = self.stmts.tables[found.name]
        if table is None:
            raise P4CompileError.at(e.loc, "expected t.apply().action_run of a table t")
        allowed = {r.action for r in table.actions}
        cases: list[ir.SwitchCase] = []
        pending: list[str] = []
        seen: set[str | None] = set()
        for i, case in enumerate(st.cases):
            label = case.label.name if isinstance(case.label, s.Name) else case.label
            if label is not None and not isinstance(label, str):
                raise P4CompileError.at(case.loc, f"expected an action of table {table.name}")
            if label in seen:
                raise P4CompileError.at(case.loc, "this switch label appears twice")
            seen.add(label)
            if label is None:
                if i != len(st.cases) - 1:
                    raise P4CompileError.at(case.loc, "default must be the last switch label")
            else:
                found = scope.lookup(label)
                if not isinstance(found, ActionEntity) or found.name not in allowed:
                    raise P4CompileError.at(
                        case.loc, f"{label!r} is not an action of table {table.name}"
                    )
                pending.append(found.name)
            if case.body is None:
                continue
            body = self.stmts.block(case.body.stmts, scope.child(), ctx)
            cases.append(ir.SwitchCase(() if case.label is None else tuple(pending), body))
            pending = []
        return ir.SwitchTable(table.name, tuple(cases))

    def on_value(self, st: s.SwitchStmt, scope: Scope) -> s.StmtSyntax:
        """`switch` on a bit<N>, int<N>, enum or error value: the cases as an if-else chain
        (`x == label || ...`, fall-through labels joined), checked as such. The value is read
        once per label, so it may not call anything (a call could change it)."""
        if _calls(st.expr):
            what = "switch on a value that calls a method is not supported"
            raise P4CompileError.at(st.expr.loc, what)
        value = self.stmts.x.expr(st.expr, scope)
        if not isinstance(value.type, ir.BitT | ir.EnumT | ir.ErrorT):
            raise P4CompileError.at(st.expr.loc, f"cannot switch on a {value.type}")
        seen: dict[object, s.SwitchCaseSyntax] = {}
        groups: list[tuple[list[s.ExprSyntax], s.BlockStmt]] = []
        pending: list[s.ExprSyntax] = []
        default: s.BlockStmt | None = None
        for i, case in enumerate(st.cases):
            if case.label is None:
                if i != len(st.cases) - 1:
                    raise P4CompileError.at(case.loc, "default must be the last switch label")
                pending = []  # labels falling into default: what the else does anyway
                default = case.body or s.BlockStmt(case.loc, ())
                continue
            label = self.stmts.x.expr(case.label, scope, value.type)
            if not isinstance(label, ir.Const):
                raise P4CompileError.at(case.label.loc, "a switch label must be a constant")
            if label.value in seen:
                raise P4CompileError.at(case.loc, "this switch label appears twice")
            seen[label.value] = case
            pending.append(case.label)
            if case.body is not None:
                groups.append((pending, case.body))
                pending = []
        if pending:
            groups.append((pending, s.BlockStmt(st.loc, ())))  # the last labels fall off the end
        chain: s.StmtSyntax | None = default
        for labels, body in reversed(groups):
            cond: s.ExprSyntax | None = None
            for lab in labels:
                test = s.BinaryExpr(lab.loc, "==", st.expr, lab)
                cond = test if cond is None else s.BinaryExpr(lab.loc, "||", cond, test)
            assert cond is not None
            chain = s.IfStmt(body.loc, cond, body, chain)
        return chain if chain is not None else s.EmptyStmt(st.loc)


def is_action_run(e: s.ExprSyntax) -> bool:
    return isinstance(e, s.MemberExpr) and e.name == "action_run" and isinstance(e.base, s.CallExpr)


def _calls(e: object) -> bool:
    """Whether a call appears anywhere in the expression."""
    if isinstance(e, s.CallExpr):
        return True
    if isinstance(e, tuple):
        return any(_calls(x) for x in e)
    if isinstance(e, s.ExprSyntax) and dataclasses.is_dataclass(e):
        return any(_calls(getattr(e, f.name)) for f in dataclasses.fields(e) if f.name != "loc")
    return False
