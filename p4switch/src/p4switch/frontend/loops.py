"""`for` loops (P4_16 1.2.5), unrolled, as p4c does for targets without loops.

The loop variables are declared in the loop with constant initial values, the condition and
the updates are computed at compile time, and the body is checked once per iteration with the
variables bound to their values, so `hs[i]` in the body is a constant element. `break` and
`continue` set flags; the statements after one run only while neither is set.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import TYPE_CHECKING

from p4switch import ir
from p4switch.exceptions import P4CompileError
from p4switch.frontend import syntax as s
from p4switch.frontend.context import BlockContext, LoopFlags
from p4switch.frontend.env import Scope

if TYPE_CHECKING:
    from p4switch.frontend.stmtcheck import StmtChecker

MAX_ITERATIONS = 1024  # a loop unrolled into more iterations than this is refused


class LoopUnroller:
    """`for` loops unrolled for the statement checker (`StmtChecker`), which checks each
    iteration's body."""

    def __init__(self, stmts: StmtChecker) -> None:
        self.stmts = stmts

    def unroll_for(self, st: s.ForStmt, scope: Scope, ctx: BlockContext) -> list[ir.Stmt]:
        """The iterations of a three-part `for`."""
        values: dict[str, tuple[ir.Type, int | bool]] = {}
        for item in st.init:
            if not isinstance(item, s.VarDecl) or item.init is None:
                what = (
                    "p4switch unrolls for loops: declare each loop variable in the loop,"
                    " with a value"
                )
                raise P4CompileError.at(item.loc, what)
            t, value = self._compile_time(item.init, scope, item.type)
            values[item.name] = (t, value)
        flags = _flags()
        out: list[ir.Stmt] = []
        for _ in range(MAX_ITERATIONS + 1):
            here = scope.child()
            for name, (t, value) in values.items():
                here.declare(name, ir.Const(t, value), st.loc)
            if st.cond is not None:
                _, go = self._compile_time(st.cond, here, None)
                if not go:
                    return _with_flags(out, flags)
            body = self.stmts.block([st.body], here.child(), _in_loop(ctx, flags))
            out += _iteration(body, flags)
            for update in st.updates:
                target = update.target if isinstance(update, s.AssignStmt) else None
                if not (isinstance(target, s.Name) and target.name in values):
                    what = "p4switch unrolls for loops: an update assigns a loop variable"
                    raise P4CompileError.at(update.loc, what)
                assert isinstance(update, s.AssignStmt)
                t = values[target.name][0]
                values[target.name] = (t, self._compile_time(update.value, here, t)[1])
        raise P4CompileError.at(st.loc, f"this loop runs more than {MAX_ITERATIONS} times")

    def unroll_for_in(self, st: s.ForInStmt, scope: Scope, ctx: BlockContext) -> list[ir.Stmt]:
        """`for (T v in lo .. hi)` (each value, both ends included) or `for (H v in stack)` (a
        copy of each element, in order)."""
        x = self.stmts.x
        t = x.env.resolve(st.type)
        flags = _flags()
        out: list[ir.Stmt] = []
        if isinstance(st.over, s.RangeExpr):
            low, high = x.const_int(st.over.lo, scope), x.const_int(st.over.hi, scope)
            if high - low >= MAX_ITERATIONS:
                raise P4CompileError.at(st.loc, f"this loop runs more than {MAX_ITERATIONS} times")
            for v in range(low, high + 1):
                here = scope.child()
                here.declare(st.name, x.coerce(ir.Const(ir.IntLitT(), v), t, st.loc), st.loc)
                out += _iteration(self.stmts.block([st.body], here, _in_loop(ctx, flags)), flags)
            return _with_flags(out, flags)
        stack = x.expr(st.over, scope)
        if not isinstance(stack.type, ir.StackT):
            raise P4CompileError.at(
                st.over.loc, "a for-in loop runs over a range or a header stack"
            )
        if stack.type.element != t:
            raise P4CompileError.at(st.loc, f"the elements of {stack.type} are not {t}")
        for i in range(stack.type.size):
            here = scope.child()
            copy = ir.Var(st.name, t, in_slots=False)
            here.declare(st.name, copy, st.loc)
            body = self.stmts.block([st.body], here, _in_loop(ctx, flags))
            element = ir.Member(stack, str(i), t)
            out += [ir.Declare(copy, element), *_iteration(body, flags)]
        return _with_flags(out, flags)

    def _compile_time(self, e: s.ExprSyntax, scope: Scope, t: object) -> tuple[ir.Type, int | bool]:
        """The value of `e`, which must be known at compile time; of type `t` (an ir.Type, a
        TypeRef, or None: any)."""
        x = self.stmts.x
        expected = x.env.resolve(t) if isinstance(t, s.TypeRef) else t
        assert expected is None or isinstance(expected, ir.Type)
        value = x.expr(e, scope, expected)
        if not isinstance(value, ir.Const):
            what = "p4switch unrolls for loops: this must be known at compile time"
            raise P4CompileError.at(e.loc, what)
        return value.type, value.value


def jump(st: s.BreakStmt | s.ContinueStmt, ctx: BlockContext) -> list[ir.Stmt]:
    """`break` or `continue`: set its flag (the statements after it are guarded by it)."""
    flags = ctx.loop
    word = "break" if isinstance(st, s.BreakStmt) else "continue"
    if flags is None:
        raise P4CompileError.at(st.loc, f"{word} outside a loop")
    flags.used = True
    flag = flags.broke if word == "break" else flags.skipped
    return [ir.Assign(ir.VarRef(flag), _TRUE)]


_TRUE = ir.Const(ir.BoolT(), True)
_FALSE = ir.Const(ir.BoolT(), False)


def _flags() -> LoopFlags:
    return LoopFlags(ir.Var("broke", ir.BoolT(), False), ir.Var("skipped", ir.BoolT(), False))


def _in_loop(ctx: BlockContext, flags: LoopFlags) -> BlockContext:
    return dataclasses.replace(ctx, loop=flags)


def _iteration(body: tuple[ir.Stmt, ...], flags: LoopFlags) -> list[ir.Stmt]:
    if not flags.used:
        return list(body)
    not_broke = ir.Unary("!", ir.VarRef(flags.broke), ir.BoolT())
    return [ir.Assign(ir.VarRef(flags.skipped), _FALSE), ir.If(not_broke, _guard(body, flags))]


def _with_flags(out: list[ir.Stmt], flags: LoopFlags) -> list[ir.Stmt]:
    if not flags.used:
        return out
    return [ir.Declare(flags.broke, _FALSE), ir.Declare(flags.skipped, _FALSE), *out]


def _guard(stmts: Sequence[ir.Stmt], flags: LoopFlags) -> tuple[ir.Stmt, ...]:
    """`stmts` with everything after a statement that may break or continue run only if it
    did not."""
    out: list[ir.Stmt] = []
    for i, st in enumerate(stmts):
        if isinstance(st, ir.If):
            st = ir.If(st.cond, _guard(st.then, flags), _guard(st.else_, flags))
        elif isinstance(st, ir.SwitchTable):
            cases = tuple(ir.SwitchCase(c.actions, _guard(c.body, flags)) for c in st.cases)
            st = ir.SwitchTable(st.table, cases)
        out.append(st)
        if _jumps(st, flags):
            rest = _guard(stmts[i + 1 :], flags)
            if rest:
                either = ir.Binary(
                    "||", ir.VarRef(flags.broke), ir.VarRef(flags.skipped), ir.BoolT()
                )
                out.append(ir.If(ir.Unary("!", either, ir.BoolT()), rest))
            break
    return tuple(out)


def _jumps(st: ir.Stmt, flags: LoopFlags) -> bool:
    if isinstance(st, ir.Assign) and isinstance(st.target, ir.VarRef):
        return st.target.var in (flags.broke, flags.skipped) and st.value == _TRUE
    if isinstance(st, ir.If):
        return any(_jumps(x, flags) for x in (*st.then, *st.else_))
    if isinstance(st, ir.SwitchTable):
        return any(_jumps(x, flags) for c in st.cases for x in c.body)
    return False
