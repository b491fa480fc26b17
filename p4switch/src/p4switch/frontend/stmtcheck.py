"""Type-check statements and parser states."""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from p4switch import ir
from p4switch.exceptions import P4CompileError
from p4switch.frontend import rewrite, stacks
from p4switch.frontend import syntax as s
from p4switch.frontend.callargs import lookahead_field
from p4switch.frontend.calls import CallLowering
from p4switch.frontend.context import BlockContext
from p4switch.frontend.env import Scope, ValueSetEntity
from p4switch.frontend.exprcheck import ExprChecker
from p4switch.frontend.loops import LoopUnroller, jump
from p4switch.frontend.lowerings import field_items, union_siblings_invalid
from p4switch.frontend.switches import SwitchChecker, is_action_run

FINAL_STATES = ("accept", "reject")


class StmtChecker:
    def __init__(self, exprs: ExprChecker, calls: CallLowering, tables: dict[str, ir.Table]):
        self.x = exprs
        self.calls = calls
        self.tables = tables  # checked tables by name, for `switch (t.apply().action_run)`
        self._temps = 0
        self.loops = LoopUnroller(self)
        self.switches = SwitchChecker(self)

    def block(
        self, stmts: Sequence[s.StmtSyntax], scope: Scope, ctx: BlockContext
    ) -> tuple[ir.Stmt, ...]:
        out: list[ir.Stmt] = []
        for st in stmts:
            out += self.stmt(st, scope, ctx)
        return tuple(out)

    def stmt(self, st: s.StmtSyntax, scope: Scope, ctx: BlockContext) -> list[ir.Stmt]:
        return self.lower(self._stmt(st, scope, ctx), ctx, st.loc)

    def lower(self, stmts: Sequence[ir.Stmt], ctx: BlockContext, loc: ir.Loc) -> list[ir.Stmt]:
        """`stmts` with a header or struct read by `lookahead` assigned field by field, and
        their run-time header-stack accesses lowered (`frontend/stacks.py`)."""
        out: list[ir.Stmt] = []
        for st in _lookahead_fields(self._struct_lists(self._hoist_calls(stmts, ctx))):
            if stacks.dynamic(st) is None:
                out.append(st)
                continue
            code = self.x.env.error_code("StackOutOfBounds", loc)
            out += stacks.lower(st, ctx.kind == "parser", code, self._temp)
        return out

    def _hoist_calls(self, stmts: Sequence[ir.Stmt], ctx: BlockContext) -> list[ir.Stmt]:
        """Each function called inside an expression is called just before the statement
        holding it, into a temporary the expression then reads; in P4's evaluation order
        (operands left to right, inner calls first)."""
        out: list[ir.Stmt] = []
        for st in stmts:
            while (call := _first_call(st)) is not None:
                branch = _conditional_around(st, call)
                if branch is not None:  # evaluated as if/else, into a temporary
                    tmp = self._temp(branch.type)
                    out += [ir.Declare(tmp, None), *self._branches(branch, tmp, ctx, call.loc)]
                    st = rewrite.replace(st, _swap(branch, ir.VarRef(tmp)))
                    continue
                ctx.called_actions.add(call.function)
                if not call.pure:  # what it may write is read first where P4 reads it first
                    st, early = self._read_before(st, call)
                    out += early
                if isinstance(st, ir.Declare) and st.init is call:  # straight into the variable
                    out.append(ir.Declare(st.var, None))
                    st = ir.CallAction(call.function, (*call.args, ir.VarRef(st.var)))
                    continue
                tmp = self._temp(call.type)
                out += [ir.Declare(tmp, None)]
                out += [ir.CallAction(call.function, (*call.args, ir.VarRef(tmp)))]
                st = rewrite.replace(st, _swap(call, ir.VarRef(tmp)))
            out.append(st)
        return out

    def _call(self, st: s.CallStmt, scope: Scope, ctx: BlockContext) -> list[ir.Stmt]:
        if not isinstance(st.call, s.CallExpr):
            raise P4CompileError.at(st.loc, "this expression is not a statement")
        if _is_member_call(st.call, "lookahead"):  # its value dropped: a length check
            value = self.x.expr(st.call, scope)
            return [ir.Declare(self._temp(value.type), value)]
        if _extracts_to_dont_care(st.call):
            return self._extract_skipped(st.call, scope, ctx)
        return self.calls.lower(st.call, scope, ctx)

    def _extract_skipped(self, call: s.CallExpr, scope: Scope, ctx: BlockContext) -> list[ir.Stmt]:
        """`p.extract<H>(_)`: an H extracted into a temporary no one reads (the packet moves
        on past it, and rejects if it is too short)."""
        tmp = self._temp(self.x.env.resolve(call.type_args[0]))
        inner = scope.child()
        inner.declare(tmp.name, tmp, call.loc)
        named = dataclasses.replace(call, args=(s.Name(call.loc, tmp.name), *call.args[1:]))
        return [ir.Declare(tmp, None), *self.calls.lower(named, inner, ctx)]

    def _branches(
        self, e: ir.Mux | ir.Binary, tmp: ir.Var, ctx: BlockContext, loc: ir.Loc
    ) -> list[ir.Stmt]:
        """`tmp = e` for a `?:`, `&&` or `||` whose second or third operand calls a function
        with out or inout parameters: an if/else, so that the call runs only when P4 says
        the operand is evaluated."""
        target = ir.VarRef(tmp)
        if isinstance(e, ir.Mux):
            yes = self.lower([ir.Assign(target, e.yes)], ctx, loc)
            no = self.lower([ir.Assign(target, e.no)], ctx, loc)
            return self._hoist_calls([ir.If(e.cond, tuple(yes), tuple(no))], ctx)
        first = self._hoist_calls([ir.Assign(target, e.left)], ctx)
        test: ir.Expr = target if e.op == "&&" else ir.Unary("!", target, ir.BoolT())
        second = self.lower([ir.Assign(target, e.right)], ctx, loc)
        return [*first, ir.If(test, tuple(second))]

    def _struct_lists(self, stmts: Sequence[ir.Stmt]) -> list[ir.Stmt]:
        """Each `{...}` standing for a struct or header value (`ExprChecker.struct_list`) is
        set into a temporary just before the statement holding it, field by field (a header
        made valid), and the statement reads the temporary."""
        out: list[ir.Stmt] = []
        for st in stmts:
            while (value := _first_struct_list(st)) is not None:
                tmp = self._temp(value.type)
                out += [ir.Declare(tmp, None), *_fill(ir.VarRef(tmp), value)]
                st = rewrite.replace(st, _swap(value, ir.VarRef(tmp)))
            out.append(st)
        return out

    def _loop(
        self,
        st: s.ForStmt | s.ForInStmt | s.BreakStmt | s.ContinueStmt,
        scope: Scope,
        ctx: BlockContext,
    ) -> list[ir.Stmt]:
        if isinstance(st, s.ForStmt):
            return self.loops.unroll_for(st, scope, ctx)
        if isinstance(st, s.ForInStmt):
            return self.loops.unroll_for_in(st, scope, ctx)
        return jump(st, ctx)

    def _read_before(self, st: ir.Stmt, call: ir.FunctionCall) -> tuple[ir.Stmt, list[ir.Stmt]]:
        """`st` reading temporaries for what P4 evaluates before `call`, and the statements
        setting them (`_evaluated_before`)."""
        saved: list[ir.Stmt] = []
        save = functools.partial(self._save, saved=saved)
        return _evaluated_before(st, call, save, self.x.writes), saved

    def _save(self, e: ir.Expr, saved: list[ir.Stmt]) -> ir.Expr:
        """`e` read into a new temporary (its declaration added to `saved`), which stands for
        it; `e` itself where no temporary can hold it."""
        if isinstance(e, ir.Const) or not isinstance(e.type, ir.BitT | ir.BoolT):
            return e
        tmp = self._temp(e.type)
        saved.append(ir.Declare(tmp, e))
        return ir.VarRef(tmp)

    def _temp(self, t: ir.Type) -> ir.Var:
        self._temps += 1
        return ir.Var(f"tmp{self._temps}", t, in_slots=False)

    def _stmt(self, st: s.StmtSyntax, scope: Scope, ctx: BlockContext) -> list[ir.Stmt]:
        if isinstance(st, s.AssignStmt):
            return self._assign(st, scope, ctx)
        if isinstance(st, s.CallStmt):
            return self._call(st, scope, ctx)
        if isinstance(st, s.VarDecl):
            return self._var(st, scope, ctx)
        if isinstance(st, s.ConstDecl):
            self.constant(st, scope)
            return []
        if isinstance(st, s.IfStmt):
            cond = self.x.bool_expr(st.cond, scope)
            then = self.block([st.then], scope.child(), ctx)
            else_ = self.block([st.else_], scope.child(), ctx) if st.else_ else ()
            if isinstance(cond, ir.Const):
                return list(then if cond.value else else_)
            return [ir.If(cond, then, else_)]
        if isinstance(st, s.BlockStmt):
            return list(self.block(st.stmts, scope.child(), ctx))
        if isinstance(st, s.ReturnStmt | s.ExitStmt):
            return self._return_or_exit(st, scope, ctx)
        if isinstance(st, s.EmptyStmt):
            return []
        if isinstance(st, s.SwitchStmt):
            if is_action_run(st.expr):
                return [self.switches.on_action_run(st, scope, ctx)]
            return list(self.block([self.switches.on_value(st, scope)], scope, ctx))
        if isinstance(st, s.ForStmt | s.ForInStmt | s.BreakStmt | s.ContinueStmt):
            return self._loop(st, scope, ctx)
        if isinstance(st, s.Instantiation):
            raise P4CompileError.at(st.loc, "instances can only be declared in a control or parser")
        raise P4CompileError.at(st.loc, "this statement is not supported")

    def _assign(self, st: s.AssignStmt, scope: Scope, ctx: BlockContext) -> list[ir.Stmt]:
        target = self.x.lvalue(st.target, scope)
        if isinstance(target.type, ir.ExternT):
            raise P4CompileError.at(st.loc, "extern instances cannot be assigned")
        if isinstance(st.value, s.ListLit) and isinstance(target.type, ir.StructT | ir.TupleT):
            return self._assign_list(st, target, scope, ctx)
        value = self.x.expr(st.value, scope, target.type)
        if st.compound:  # the target's calls, checked twice, are one call made once
            value = rewrite.replace(value, _same_calls(target))
        assign = ir.Assign(target, value)
        others = union_siblings_invalid(target)
        if others:  # a header of a union assigned a valid header: the others become invalid
            return [assign, ir.If(ir.IsValid(target), tuple(others))]
        return [assign]

    def _var(self, st: s.VarDecl, scope: Scope, ctx: BlockContext) -> list[ir.Stmt]:
        if isinstance(st.init, s.ListLit):  # `S s = {...};`: declared, then assigned
            bare = s.VarDecl(st.loc, st.type, st.name, None, st.annotations)
            assign = s.AssignStmt(st.loc, s.Name(st.loc, st.name), st.init)
            return [self.declare(bare, scope, in_slots=False), *self.stmt(assign, scope, ctx)]
        return [self.declare(st, scope, in_slots=False)]

    def _assign_list(
        self, st: s.AssignStmt, target: ir.Expr, scope: Scope, ctx: BlockContext
    ) -> list[ir.Stmt]:
        """`x = {a, b, ...}` for a struct, header or tuple x: each field in order (nested lists
        for nested structs); a header becomes valid, as the spec says."""
        assert isinstance(st.value, s.ListLit)
        t = target.type
        if isinstance(t, ir.TupleT):  # its elements, by position
            if st.value.names:
                raise P4CompileError.at(st.value.loc, "a tuple's elements have no names")
            t = ir.StructT(str(t), tuple(ir.Field(str(i), e) for i, e in enumerate(t.elements)))
        assert isinstance(t, ir.StructT)
        fields, items = t.fields, field_items(st.value, t)
        out: list[ir.Stmt] = []
        for k, (f, item) in enumerate(zip(fields, items, strict=True)):
            member: s.ExprSyntax = s.MemberExpr(item.loc, st.target, f.name)
            if isinstance(target.type, ir.TupleT):
                member = s.IndexExpr(
                    item.loc, st.target, s.IntLit(item.loc, k, None, False, str(k))
                )
            out += self.stmt(s.AssignStmt(item.loc, member, item), scope, ctx)
        if t.is_header:
            out.append(ir.SetValid(target, True))
        return out

    def declare_block_var(
        self, st: s.VarDecl, scope: Scope, ctx: BlockContext
    ) -> tuple[ir.Var, list[ir.Stmt]]:
        """A parser's or control's own variable (kept in slots), and the statements setting
        its initial value (a `{...}` initialiser field by field)."""
        if isinstance(st.init, s.ListLit):
            bare = s.VarDecl(st.loc, st.type, st.name, None, st.annotations)
            decl = self.declare(bare, scope, in_slots=True)
            assign = s.AssignStmt(st.loc, s.Name(st.loc, st.name), st.init)
            return decl.var, [decl, *self.stmt(assign, scope, ctx)]
        decl = self.declare(st, scope, in_slots=True)
        return decl.var, self.lower([decl], ctx, st.loc)

    def declare(self, st: s.VarDecl, scope: Scope, in_slots: bool) -> ir.Declare:
        t = self.x.env.resolve(st.type)
        if isinstance(t, ir.ExternT | ir.VoidT | ir.StringT | ir.IntLitT | ir.TypeVar):
            raise P4CompileError.at(st.loc, f"cannot declare a variable of type {t}")
        init = self.x.expr(st.init, scope, t) if st.init is not None else None
        var = ir.Var(st.name, t, in_slots)
        scope.declare(st.name, var, st.loc)
        return ir.Declare(var, init)

    def constant(self, st: s.ConstDecl, scope: Scope) -> None:
        t = self.x.env.resolve(st.type)
        value = self.x.expr(st.value, scope, t)
        if not isinstance(value, ir.Const):
            raise P4CompileError.at(st.value.loc, "a constant needs a compile-time value")
        scope.declare(st.name, value, st.loc)

    def _return_or_exit(
        self, st: s.ReturnStmt | s.ExitStmt, scope: Scope, ctx: BlockContext
    ) -> list[ir.Stmt]:
        word = "return" if isinstance(st, s.ReturnStmt) else "exit"
        if ctx.kind in ("parser", "function") and isinstance(st, s.ExitStmt):
            raise P4CompileError.at(st.loc, f"exit is not allowed in a {ctx.kind}")
        if ctx.kind == "parser":
            raise P4CompileError.at(st.loc, f"{word} is not allowed in a parser")
        if isinstance(st, s.ExitStmt):
            return [ir.Exit()]
        if ctx.nested:
            what = "return in a control applied by another is not supported (use if/else)"
            raise P4CompileError.at(st.loc, what)
        if ctx.result is not None:
            if st.value is None:
                raise P4CompileError.at(st.loc, f"function {ctx.name} must return a value")
            value = self.x.expr(st.value, scope, ctx.result.type)
            return [ir.Assign(ir.VarRef(ctx.result), value), ir.Return()]
        if st.value is not None:
            no_value = "actions and controls return no value"
            if ctx.kind == "function":
                no_value = "this function returns no value"
            raise P4CompileError.at(st.loc, no_value)
        return [ir.Return()]

    # --- parser states ----------------------------------------------------------------------

    def state(
        self, decl: s.StateDecl, scope: Scope, ctx: BlockContext, names: set[str]
    ) -> ir.ParserState:
        if decl.name in FINAL_STATES:
            raise P4CompileError.at(decl.loc, f"state {decl.name!r} is predefined")
        inner = scope.child()
        body = self.block(decl.stmts, inner, ctx)
        for case in decl.cases:
            if case.state not in names and case.state not in FINAL_STATES:
                raise P4CompileError.at(case.loc, f"no parser state {case.state!r}")
        if decl.select is None:
            next_state = decl.cases[0].state if decl.cases else "reject"
            return ir.ParserState(decl.name, body, (), (ir.SelectCase((), next_state),))
        keys = tuple(self.x.expr(k, inner) for k in decl.select)
        body, keys = self._select_keys(body, keys, ctx, decl.loc)
        for k, src in zip(keys, decl.select, strict=True):
            if not isinstance(k.type, ir.BitT | ir.BoolT):
                raise P4CompileError.at(src.loc, f"cannot select on a {k.type}")
            if isinstance(k.type, ir.BitT) and k.type.signed:
                raise P4CompileError.at(src.loc, "select on signed values is not supported")
        cases = tuple(
            ir.SelectCase(self.keyset(c.keyset, keys, inner), c.state) for c in decl.cases
        )
        return ir.ParserState(decl.name, body, keys, cases)

    def _select_keys(
        self, body: tuple[ir.Stmt, ...], keys: tuple[ir.Expr, ...], ctx: BlockContext, loc: ir.Loc
    ) -> tuple[tuple[ir.Stmt, ...], tuple[ir.Expr, ...]]:
        """A key reading a run-time stack element (`hs.last.bos`) or calling a function is
        read into a temporary at the end of the state's body, where the lowering can reach
        it."""
        out: list[ir.Expr] = []
        more: list[ir.Stmt] = []
        for k in keys:
            if not any(isinstance(e, ir.StackIndex | ir.FunctionCall) for e in ir.walk(k)):
                out.append(k)
                continue
            tmp = self._temp(k.type)
            more += [ir.Declare(tmp, None), ir.Assign(ir.VarRef(tmp), k)]
            out.append(ir.VarRef(tmp))
        return (*body, *self.lower(more, ctx, loc)), tuple(out)

    def keyset(
        self, e: s.ExprSyntax, keys: Sequence[ir.Expr], scope: Scope
    ) -> tuple[tuple[int, int] | ir.KeyRange | ir.ValueSetKey | None, ...]:
        """(value, mask) or a range `low .. high` per key, None for a wildcard: for select
        cases and table entries."""
        if isinstance(e, s.DefaultKey | s.DontCare):
            return (None,) * len(keys)
        found = scope.lookup(e.name) if isinstance(e, s.Name) else None
        if isinstance(found, ValueSetEntity) and len(found.widths) > 1:  # a struct's: every key
            widths = [k.type.width if isinstance(k.type, ir.BitT) else 0 for k in keys]
            if widths != list(found.widths):
                what = f"{found.name} holds fields of {list(found.widths)} bits, the keys {widths}"
                raise P4CompileError.at(e.loc, what)
            return (ir.ValueSetKey(found.name, len(keys)), *(None,) * (len(keys) - 1))
        items = e.items if isinstance(e, s.TupleKey) else (e,)
        if len(items) != len(keys):
            raise P4CompileError.at(e.loc, f"{len(keys)} key values expected, got {len(items)}")
        return tuple(self._key(i, k.type, scope) for i, k in zip(items, keys, strict=True))

    def _key(
        self, e: s.ExprSyntax, t: ir.Type, scope: Scope
    ) -> tuple[int, int] | ir.KeyRange | ir.ValueSetKey | None:
        full = ir.key_mask(t)
        if isinstance(e, s.DefaultKey | s.DontCare):
            return None
        found = scope.lookup(e.name) if isinstance(e, s.Name) else None
        if isinstance(found, ValueSetEntity):
            if not isinstance(t, ir.BitT) or t.width != found.bitwidth:
                raise P4CompileError.at(
                    e.loc, f"{found.name} holds bit<{found.bitwidth}>, the key is {t}"
                )
            return ir.ValueSetKey(found.name)
        if isinstance(e, s.RangeExpr):
            low, high = self._const(e.lo, t, scope), self._const(e.hi, t, scope)
            if low > high:
                raise P4CompileError.at(e.loc, f"range {low}..{high} is empty")
            return ir.KeyRange(low, high)
        if isinstance(e, s.MaskExpr):
            value, mask = self._const(e.value, t, scope), self._const(e.mask, t, scope)
            return value & mask, mask
        return self._const(e, t, scope), full

    def _const(self, e: s.ExprSyntax, t: ir.Type, scope: Scope) -> int:
        c = self.x.expr(e, scope, t)
        if not isinstance(c, ir.Const):
            raise P4CompileError.at(e.loc, "a compile-time constant is needed here")
        return int(c.value)


def _lookahead_fields(stmts: Sequence[ir.Stmt]) -> list[ir.Stmt]:
    """`x = lookahead<T>()` (or `T x = ...`) for a header or struct T, field by field; a
    header becomes valid."""
    out: list[ir.Stmt] = []
    for st in stmts:
        if isinstance(st, ir.Declare) and st.init is not None and _reads_a_header_ahead(st.init):
            out.append(ir.Declare(st.var, None))
            st = ir.Assign(ir.VarRef(st.var), st.init)
        if not (isinstance(st, ir.Assign) and _reads_a_header_ahead(st.value)):
            out.append(st)
            continue
        t = st.value.type
        assert isinstance(t, ir.StructT)
        for f in t.fields:
            out.append(ir.Assign(ir.Member(st.target, f.name, f.type), lookahead_field(t, f.name)))
        if t.is_header:
            out.append(ir.SetValid(st.target, True))
    return out


def _first_call(st: ir.Stmt) -> ir.FunctionCall | None:
    """The first function call `st` evaluates, if any."""
    for e in rewrite.own_exprs(st):
        for c, _ in rewrite.postorder(e):
            if isinstance(c, ir.FunctionCall):
                return c
    return None


# statement fields that are places written (or headers), not values read
PLACES = ("target", "dest", "checksum", "header")


def _evaluated_before(
    st: ir.Stmt,
    call: ir.FunctionCall,
    save: Callable[[ir.Expr], ir.Expr],
    writes: Mapping[str, tuple[bool, ...]],
) -> ir.Stmt:
    """`st`, with what P4 evaluates before `call` (which may write through its out and inout
    arguments) evaluated first, by `save`: the statement's operands to the left of the call's
    (an assignment's target before its value, arguments left to right), the operands to the
    left of each operation holding the call, and the run-time stack indices of the places
    among them, as p4c orders these side effects.

    Places (an assignment's target, out and inout arguments, as `writes` gives them per action
    and function) are not read: only their stack indices are saved; the bases of members,
    slices and stack elements stay as they are."""
    changes: dict[str, Any] = {}
    for f in dataclasses.fields(st):  # type: ignore[arg-type]  # statements are dataclasses
        if f.name in rewrite.BODIES:
            continue
        value = getattr(st, f.name)
        items = value if isinstance(value, tuple) else (value,)
        written = writes.get(st.action, ()) if isinstance(st, ir.CallAction) else ()
        places = [f.name in PLACES or (k < len(written) and written[k]) for k in range(len(items))]
        new, found = _before(items, places, call, save, writes)
        if any(a is not b for a, b in zip(new, items, strict=True)):
            changes[f.name] = new if isinstance(value, tuple) else new[0]
        if found:
            break
    return dataclasses.replace(st, **changes)  # type: ignore[type-var]


def _before(
    items: tuple[Any, ...],
    places: list[bool],
    call: ir.FunctionCall,
    save: Callable[[ir.Expr], ir.Expr],
    writes: Mapping[str, tuple[bool, ...]],
) -> tuple[tuple[Any, ...], bool]:
    """`items` (operands in the order evaluated) up to the one holding `call` saved, that one
    with its own operands before the call saved; and whether it was among them."""
    out: list[Any] = []
    for k, item in enumerate(items):
        if not isinstance(item, ir.Expr):
            out.append(item)
        elif _holds(item, call):
            return (*out, _operands_before(item, call, save, writes), *items[k + 1 :]), True
        elif places[k]:
            out.append(rewrite.replace(item, _indices_saved(save)))
        else:
            out.append(save(item))
    return tuple(out), False


def _operands_before(
    e: ir.Expr,
    call: ir.FunctionCall,
    save: Callable[[ir.Expr], ir.Expr],
    writes: Mapping[str, tuple[bool, ...]],
) -> ir.Expr:
    """`e`, which holds `call`, with what is evaluated before the call saved (see
    `_evaluated_before`)."""
    if e is call:
        return e
    fixed = isinstance(e, ir.Member | ir.Slice | ir.StackIndex | ir.IsValid)  # a place's base
    written = writes.get(e.function, ()) if isinstance(e, ir.FunctionCall) else ()
    changes: dict[str, Any] = {}
    for f in dataclasses.fields(e):  # type: ignore[arg-type]  # every Expr is a dataclass
        value = getattr(e, f.name)
        items = value if isinstance(value, tuple) else (value,)
        if fixed and not any(_holds(i, call) for i in items):
            continue
        places = [k < len(written) and written[k] for k in range(len(items))]
        new, found = _before(items, places, call, save, writes)
        if any(a is not b for a, b in zip(new, items, strict=True)):
            changes[f.name] = new if isinstance(value, tuple) else new[0]
        if found:
            return dataclasses.replace(e, **changes)  # type: ignore[type-var]
    raise AssertionError("the call is not in this expression")


def _indices_saved(save: Callable[[ir.Expr], ir.Expr]) -> Callable[[ir.Expr], ir.Expr | None]:
    """For a place evaluated before a call: its run-time stack indices saved."""

    def pick(e: ir.Expr) -> ir.Expr | None:
        if isinstance(e, ir.StackIndex):
            stack = rewrite.replace(e.stack, pick)
            return dataclasses.replace(e, stack=stack, index=save(e.index))
        return None

    return pick


def _holds(e: object, call: ir.FunctionCall) -> bool:
    return isinstance(e, ir.Expr) and any(c is call for c in ir.walk(e))


def _same_calls(target: ir.Expr) -> Callable[[ir.Expr], ir.Expr | None]:
    """For `x op= e`: a call in the value equal to one of the target `x` (the same call of the
    same source, checked twice) is that one, so it is made once."""
    calls = [c for c in ir.walk(target) if isinstance(c, ir.FunctionCall)]
    return lambda e: next((c for c in calls if c == e), None)


def _extracts_to_dont_care(call: s.CallExpr) -> bool:
    return (
        _is_member_call(call, "extract")
        and len(call.type_args) == 1
        and bool(call.args)
        and isinstance(call.args[0], s.DontCare)
    )


def _is_member_call(call: s.CallExpr, method: str) -> bool:
    return isinstance(call.callee, s.MemberExpr) and call.callee.name == method


def _first_struct_list(st: ir.Stmt) -> ir.ListExpr | None:
    """The outermost `{...}` of struct or header type in `st`'s own expressions, if any."""
    for e in rewrite.own_exprs(st):
        for x in ir.walk(e):
            if isinstance(x, ir.ListExpr) and isinstance(x.type, ir.StructT):
                return x
    return None


def _fill(target: ir.Expr, value: ir.ListExpr) -> list[ir.Stmt]:
    """`target = value` for a `{...}` of `target`'s struct or header type, field by field."""
    t = value.type
    assert isinstance(t, ir.StructT)
    out: list[ir.Stmt] = []
    for f, item in zip(t.fields, value.items, strict=True):
        member = ir.Member(target, f.name, f.type)
        if isinstance(item, ir.ListExpr) and isinstance(item.type, ir.StructT):
            out += _fill(member, item)
        else:
            out.append(ir.Assign(member, item))
    if t.is_header:
        out.append(ir.SetValid(target, True))
    return out


def _conditional_around(st: ir.Stmt, call: ir.FunctionCall) -> ir.Mux | ir.Binary | None:
    """The outermost `?:`, `&&` or `||` in `st` that might not evaluate `call`, if `call` has
    out or inout parameters (a pure call may run whether or not its value is used)."""
    if call.pure:
        return None
    for e in rewrite.own_exprs(st):
        for x in ir.walk(e):
            maybe: tuple[ir.Expr, ...] = ()
            if isinstance(x, ir.Mux):
                maybe = (x.yes, x.no)
            elif isinstance(x, ir.Binary) and x.op in ("&&", "||"):
                maybe = (x.right,)
            if any(c is call for m in maybe for c in ir.walk(m)):
                assert isinstance(x, ir.Mux | ir.Binary)
                return x
    return None


def _swap(old: ir.Expr, new: ir.Expr) -> Callable[[ir.Expr], ir.Expr | None]:
    return lambda e: new if e is old else None


def _reads_a_header_ahead(e: ir.Expr | None) -> bool:
    return isinstance(e, ir.Lookahead) and isinstance(e.type, ir.StructT)
