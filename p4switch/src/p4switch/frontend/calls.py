"""Lower call statements (actions, tables, externs) to their own `ir` statements.

The v1model externs p4switch implements are checked here, argument by argument, rather than
through their generic declarations in v1model.p4: the semantics are built in anyway, and this
gives each misuse its own message.
"""

from __future__ import annotations

from collections.abc import Callable

from p4switch import ir
from p4switch.exceptions import P4CompileError
from p4switch.frontend import syntax as s
from p4switch.frontend.context import BlockContext
from p4switch.frontend.digests import DigestLowering
from p4switch.frontend.env import (
    ActionEntity,
    BlockInstanceEntity,
    FunctionEntity,
    InstanceEntity,
    PacketEntity,
    Scope,
    TableEntity,
)
from p4switch.frontend.exprcheck import ExprChecker
from p4switch.frontend.lowerings import (
    headers_in,
    need_header,
    next_index_plus,
    random_hash,
    shift_stack,
    union_siblings_invalid,
    varbit_of,
)

HASHES = ("crc16", "crc32", "identity", "csum16", "xor16")
# BMv2's crc16_custom and crc32_custom start with crc16's and crc32's parameters; p4switch
# offers no way to change them, so they are those algorithms
CUSTOM = {"crc16_custom": "crc16", "crc32_custom": "crc32"}
U32 = ir.BitT(32)


ApplyBlock = Callable[[s.CallExpr, BlockInstanceEntity, Scope, BlockContext], list[ir.Stmt]]


class CallLowering:
    def __init__(self, exprs: ExprChecker) -> None:
        self.x = exprs
        self.digests = DigestLowering(exprs)
        # set by the program checker: `c.apply(...)` of a control instance, inlined
        self.apply_control: ApplyBlock | None = None
        self.apply_parser: ApplyBlock | None = None  # `p.apply(...)` of a sub-parser
        # `T.apply(...)` of a parser or control type (None: T is no such type)
        self.apply_direct: (
            Callable[[s.CallExpr, str, Scope, BlockContext], list[ir.Stmt] | None] | None
        ) = None
        self._functions: dict[str, Callable[[s.CallExpr, Scope, BlockContext], list[ir.Stmt]]]
        self._functions = {
            "mark_to_drop": self._mark_to_drop,
            "clone": self._clone,
            "clone_preserving_field_list": self._clone,
            "resubmit_preserving_field_list": self._resubmit,
            "recirculate_preserving_field_list": self._resubmit,
            "hash": self._hash,
            "verify_checksum": self._checksum,
            "update_checksum": self._checksum,
            "verify_checksum_with_payload": self._checksum,
            "update_checksum_with_payload": self._checksum,
            "verify": self._verify,
            "truncate": self._truncate,
            "random": self._random,
            "log_msg": lambda call, scope, ctx: [],
            "static_assert": self._static_assert,
            "digest": lambda call, scope, ctx: [
                self.digests.lower(call, scope, ctx.kind == "parser")
            ],
        }

    def lower(self, call: s.CallExpr, scope: Scope, ctx: BlockContext) -> list[ir.Stmt]:
        callee = call.callee
        if isinstance(callee, s.Name):
            found = scope.lookup(callee.name)
            if isinstance(found, ActionEntity):
                return [self.action_call(call, found, scope, ctx)]
            if isinstance(found, FunctionEntity):
                return self.function_call(call, found, scope, ctx)
            if found is None and callee.name in self._functions:
                return self._functions[callee.name](call, scope, ctx)
            if found is None and callee.name in self.x.env.unsupported:
                raise P4CompileError.at(callee.loc, f"{callee.name} is not supported by p4switch")
            if found is None and callee.name in self.x.env.extern_functions:
                what = (
                    f"extern {callee.name} has no implementation in p4switch (user-defined externs)"
                )
                raise P4CompileError.at(callee.loc, what)
            if found is None:
                raise P4CompileError.at(callee.loc, f"{callee.name!r} is not declared")
            raise P4CompileError.at(callee.loc, f"{callee.name!r} cannot be called")
        if isinstance(callee, s.MemberExpr):
            return self._method(call, callee, scope, ctx)
        raise P4CompileError.at(call.loc, "this call is not supported")

    def action_call(
        self, call: s.CallExpr, action: ActionEntity, scope: Scope, ctx: BlockContext
    ) -> ir.CallAction:
        if ctx.kind in ("parser", "function"):
            raise P4CompileError.at(call.loc, f"actions cannot be called from a {ctx.kind}")
        what = f"action {action.decl.name}"
        args = self.x.call_args(call, action.params, action.decl.params, scope, what, action.name)
        ctx.called_actions.add(action.name)
        called = ctx.called_actions
        (called.in_actions if ctx.kind == "action" else called.elsewhere).add(action.name)
        return ir.CallAction(action.name, args)

    def function_call(
        self, call: s.CallExpr, fn: FunctionEntity, scope: Scope, ctx: BlockContext
    ) -> list[ir.Stmt]:
        """A function called as a statement: its value, if any, is dropped."""
        ctx.called_actions.add(fn.name)
        if isinstance(fn.returns, ir.VoidT):
            what = f"function {fn.decl.name}"
            args = self.x.call_args(call, fn.params, fn.decl.params, scope, what, fn.name)
            return [ir.CallAction(fn.name, args)]
        value = self.x.function_call(call, fn, scope)
        return [ir.Declare(ir.Var("dropped", fn.returns, in_slots=False), value)]

    # --- methods --------------------------------------------------------------------------------

    def _method(
        self, call: s.CallExpr, callee: s.MemberExpr, scope: Scope, ctx: BlockContext
    ) -> list[ir.Stmt]:
        method = callee.name
        found = scope.lookup(callee.base.name) if isinstance(callee.base, s.Name) else None
        if isinstance(found, TableEntity):
            if method != "apply":
                raise P4CompileError.at(callee.loc, f"tables have no method {method!r}")
            if ctx.kind in ("parser", "action", "function"):
                raise P4CompileError.at(call.loc, f"tables cannot be applied in an {ctx.kind}")
            _arity(call, 0, "apply()")
            return [ir.ApplyTable(found.name)]
        if isinstance(found, InstanceEntity):
            return self._instance(call, method, found, scope)
        if isinstance(found, BlockInstanceEntity):
            if method != "apply":
                raise P4CompileError.at(callee.loc, f"a {found.kind} has no method {method!r}")
            if found.kind == "parser":
                assert self.apply_parser is not None
                return self.apply_parser(call, found, scope, ctx)
            assert self.apply_control is not None
            return self.apply_control(call, found, scope, ctx)
        if isinstance(found, PacketEntity):
            return self._packet(call, method, found, scope, ctx)
        if method in ("setValid", "setInvalid", "isValid", "push_front", "pop_front"):
            return self._header_method(call, callee, scope)
        if isinstance(callee.base, s.Name) and found is None and method == "apply":
            assert self.apply_direct is not None
            applied = self.apply_direct(call, callee.base.name, scope, ctx)
            if applied is not None:
                return applied
        if isinstance(callee.base, s.Name) and found is None:
            self.x.expr(callee.base, scope)  # raises: not declared, or a type
        raise P4CompileError.at(callee.loc, f"method {method!r} is not supported here")

    def _header_method(self, call: s.CallExpr, callee: s.MemberExpr, scope: Scope) -> list[ir.Stmt]:
        """setValid, setInvalid and isValid of headers; push_front and pop_front of stacks."""
        method = callee.name
        if method == "isValid":
            self.x.expr(call, scope)
            return []
        if method in ("setValid", "setInvalid"):
            _arity(call, 0, f"{method}()")
            header = self.x.lvalue(callee.base, scope)
            need_header(header, call.loc, method)
            if method == "setValid":
                return [ir.SetValid(header, True), *union_siblings_invalid(header)]
            return [ir.SetValid(header, False)]
        _arity(call, 1, f"{method}(count)")
        stack = self.x.lvalue(callee.base, scope)
        if not isinstance(stack.type, ir.StackT):
            raise P4CompileError.at(call.loc, f"{method} applies to header stacks only")
        count = self.x.const_int(call.args[0], scope)
        if count < 0:
            raise P4CompileError.at(call.args[0].loc, f"{method} needs a count of 0 or more")
        return shift_stack(stack, count if method == "push_front" else -count)

    def _instance(
        self, call: s.CallExpr, method: str, inst: InstanceEntity, scope: Scope
    ) -> list[ir.Stmt]:
        if inst.kind == "register" and method == "read":
            _arity(call, 2, "register.read(result, index)")
            dest = self.x.lvalue(call.args[0], scope)
            if dest.type != inst.value_type:
                raise P4CompileError.at(
                    call.args[0].loc, f"{inst.name} holds {inst.value_type}, not {dest.type}"
                )
            return [ir.RegisterRead(inst.name, dest, self._index(call.args[1], scope))]
        if inst.kind == "register" and method == "write":
            _arity(call, 2, "register.write(index, value)")
            assert inst.value_type is not None
            value = self.x.expr(call.args[1], scope, inst.value_type)
            return [ir.RegisterWrite(inst.name, self._index(call.args[0], scope), value)]
        if inst.kind == "counter" and method == "count":
            _arity(call, 1, "counter.count(index)")
            return [ir.CounterCount(inst.name, self._index(call.args[0], scope))]
        if inst.kind == "direct_counter" and method == "count":
            _arity(call, 0, "direct_counter.count()")
            return []  # a direct counter counts every hit of its table by itself
        if inst.kind == "meter" and method == "execute_meter":
            _arity(call, 2, "meter.execute_meter(index, result)")
            dest = self._color(call.args[1], scope)
            return [ir.MeterExecute(inst.name, self._index(call.args[0], scope), dest)]
        if inst.kind == "direct_meter" and method == "read":
            _arity(call, 1, "direct_meter.read(result)")
            dest = self._color(call.args[0], scope)
            assert inst.color is not None  # the color of its table's hit entry
            assert isinstance(dest.type, ir.BitT)
            return [ir.Assign(dest, ir.Cast(dest.type, ir.VarRef(inst.color)))]
        raise P4CompileError.at(call.loc, f"{inst.kind} has no method {method!r}")

    def _color(self, e: s.ExprSyntax, scope: Scope) -> ir.Expr:
        dest = self.x.lvalue(e, scope)
        if not isinstance(dest.type, ir.BitT) or dest.type.signed or dest.type.width < 2:
            raise P4CompileError.at(
                e.loc, f"a meter's color goes to a bit<N>, N >= 2, not {dest.type}"
            )
        return dest

    def _index(self, e: s.ExprSyntax, scope: Scope) -> ir.Expr:
        index = self.x.expr(e, scope)
        if isinstance(index, ir.Const) and isinstance(index.type, ir.IntLitT):
            return self.x.coerce(index, U32, e.loc)
        if not isinstance(index.type, ir.BitT) or index.type.signed:
            raise P4CompileError.at(e.loc, f"an index must be bit<N>, not {index.type}")
        return index

    def _packet(
        self, call: s.CallExpr, method: str, packet: PacketEntity, scope: Scope, ctx: BlockContext
    ) -> list[ir.Stmt]:
        if call.type_args:  # `p.extract<H>(h)`: H must be the argument's type
            if len(call.type_args) != 1 or not call.args:
                raise P4CompileError.at(call.loc, f"{method}<T>(...) takes one type argument")
            named = self.x.env.resolve(call.type_args[0])
            given = self.x.expr(call.args[0], scope).type
            if named != given:
                raise P4CompileError.at(call.loc, f"{method}<{named}> of a {given}")
        if packet.kind == "packet_in" and method == "extract":
            header = self.x.lvalue(call.args[0], scope) if call.args else None
            varbit = isinstance(header, ir.Expr) and varbit_of(header) is not None
            _arity(
                call, 2 if varbit else 1, "extract(header, bits)" if varbit else "extract(header)"
            )
            assert header is not None
            need_header(header, call.loc, "extract")
            bits = self.x.expr(call.args[1], scope, U32) if varbit else None
            extract = [ir.Extract(header, bits), *union_siblings_invalid(header)]
            element = header.base if isinstance(header, ir.Member) else header  # of a union?
            if isinstance(element, ir.StackIndex) and element.kind == "next":
                return [*extract, next_index_plus(element.stack, 1)]
            return extract
        if packet.kind == "packet_in" and method == "advance":
            _arity(call, 1, "advance(bits)")
            return [ir.Advance(self.x.expr(call.args[0], scope, U32))]
        if packet.kind == "packet_out" and method == "emit":
            _arity(call, 1, "emit(header)")
            value = self.x.expr(call.args[0], scope)
            if not isinstance(value.type, ir.StructT | ir.StackT):
                raise P4CompileError.at(call.loc, f"cannot emit a {value.type}")
            return [ir.Emit(h) for h in headers_in(value)]
        raise P4CompileError.at(call.loc, f"{packet.kind}.{method}() is not supported here")

    # --- extern functions -------------------------------------------------------------------

    def _mark_to_drop(self, call: s.CallExpr, scope: Scope, ctx: BlockContext) -> list[ir.Stmt]:
        if ctx.kind == "parser":
            raise P4CompileError.at(call.loc, "mark_to_drop cannot be called from a parser")
        if call.args:
            _arity(call, 1, "mark_to_drop(standard_metadata)")
            sm = self.x.lvalue(call.args[0], scope)
            if not (isinstance(sm.type, ir.StructT) and sm.type.name == "standard_metadata_t"):
                raise P4CompileError.at(call.args[0].loc, "mark_to_drop takes standard_metadata")
        return [ir.MarkToDrop()]

    def _clone(self, call: s.CallExpr, scope: Scope, ctx: BlockContext) -> list[ir.Stmt]:
        name = call.callee.name if isinstance(call.callee, s.Name) else "clone"
        preserving = name == "clone_preserving_field_list"
        _arity(call, 3 if preserving else 2, name)
        kind = self._enum_member(call.args[0], scope, "CloneType")
        session = self.x.expr(call.args[1], scope, U32)
        field_list = self.x.const_int(call.args[2], scope) if preserving else None
        return [ir.Clone(kind, session, field_list)]

    def _static_assert(self, call: s.CallExpr, scope: Scope, ctx: BlockContext) -> list[ir.Stmt]:
        self.x.static_assert(call, scope)  # refuses the program if false
        return []

    def _resubmit(self, call: s.CallExpr, scope: Scope, ctx: BlockContext) -> list[ir.Stmt]:
        name = call.callee.name if isinstance(call.callee, s.Name) else "resubmit"
        if ctx.kind == "parser":
            raise P4CompileError.at(call.loc, f"{name} cannot be called from a parser")
        _arity(call, 1, f"{name}(index)")
        index = self.x.const_int(call.args[0], scope)
        if not 0 <= index < 256:
            raise P4CompileError.at(call.args[0].loc, "a field list index is a bit<8>")
        return [ir.Resubmit(name.startswith("recirculate"), index)]

    def _hash(self, call: s.CallExpr, scope: Scope, ctx: BlockContext) -> list[ir.Stmt]:
        _arity(call, 5, "hash(result, algorithm, base, data, max)")
        dest = self.x.lvalue(call.args[0], scope)
        if not isinstance(dest.type, ir.BitT):
            raise P4CompileError.at(
                call.args[0].loc, f"a hash result must be bit<N>, not {dest.type}"
            )
        base = self._number(call.args[2], scope, dest.type)
        data = self._data(call.args[3], scope)
        limit = self._number(call.args[4], scope, U32)
        if self._enum_member(call.args[1], scope, "HashAlgorithm") == "random":
            return random_hash(dest, base, limit, call.args[4].loc)
        algo = self._algorithm(call.args[1], scope)
        return [ir.Hash(dest, algo, base, data, limit)]

    def _checksum(self, call: s.CallExpr, scope: Scope, ctx: BlockContext) -> list[ir.Stmt]:
        name = call.callee.name if isinstance(call.callee, s.Name) else "checksum"
        verify = name.startswith("verify_checksum")
        _arity(call, 4, f"{name}(condition, data, checksum, algorithm)")
        cond = self.x.bool_expr(call.args[0], scope)
        data = self._data(call.args[1], scope)
        checksum = (
            self.x.expr(call.args[2], scope) if verify else self.x.lvalue(call.args[2], scope)
        )
        if not isinstance(checksum.type, ir.BitT):
            raise P4CompileError.at(call.args[2].loc, "the checksum must be a bit<N> field")
        algo = self._algorithm(call.args[3], scope)
        payload = name.endswith("_with_payload")
        return [ir.Checksum(verify, cond, data, checksum, algo, payload)]

    def _verify(self, call: s.CallExpr, scope: Scope, ctx: BlockContext) -> list[ir.Stmt]:
        if ctx.kind != "parser":
            raise P4CompileError.at(call.loc, "verify() can only be called in a parser")
        _arity(call, 2, "verify(condition, error)")
        cond = self.x.bool_expr(call.args[0], scope)
        error = self.x.expr(call.args[1], scope, ir.ErrorT())
        return [ir.Verify(cond, error)]

    def _truncate(self, call: s.CallExpr, scope: Scope, ctx: BlockContext) -> list[ir.Stmt]:
        _arity(call, 1, "truncate(length)")
        return [ir.Truncate(self.x.expr(call.args[0], scope, U32))]

    def _random(self, call: s.CallExpr, scope: Scope, ctx: BlockContext) -> list[ir.Stmt]:
        _arity(call, 3, "random(result, lo, hi)")
        dest = self.x.lvalue(call.args[0], scope)
        if not isinstance(dest.type, ir.BitT):
            raise P4CompileError.at(
                call.args[0].loc, f"random needs a bit<N> result, not {dest.type}"
            )
        lo = self.x.expr(call.args[1], scope, dest.type)
        hi = self.x.expr(call.args[2], scope, dest.type)
        return [ir.Random(dest, lo, hi)]

    # --- argument helpers ---------------------------------------------------------------------

    def _enum_member(self, e: s.ExprSyntax, scope: Scope, enum: str) -> str:
        value = self.x.expr(e, scope)
        t = value.type
        if not (isinstance(value, ir.Const) and isinstance(t, ir.EnumT) and t.name == enum):
            raise P4CompileError.at(e.loc, f"expected a {enum} member here")
        return t.members[t.values.index(int(value.value))]

    def _algorithm(self, e: s.ExprSyntax, scope: Scope) -> str:
        algo = self._enum_member(e, scope, "HashAlgorithm")
        algo = CUSTOM.get(algo, algo)
        if algo not in HASHES:
            raise P4CompileError.at(e.loc, f"HashAlgorithm.{algo} is not supported by p4switch")
        return algo

    def _number(self, e: s.ExprSyntax, scope: Scope, default: ir.Type) -> ir.Expr:
        value = self.x.expr(e, scope)
        if isinstance(value.type, ir.IntLitT):
            return self.x.coerce(value, default, e.loc)
        if not isinstance(value.type, ir.BitT):
            raise P4CompileError.at(e.loc, f"expected a number, got {value.type}")
        return value

    def _data(self, e: s.ExprSyntax, scope: Scope) -> tuple[ir.Expr, ...]:
        value = self.x.expr(e, scope)
        items = value.items if isinstance(value, ir.ListExpr) else (value,)
        for item in items:
            if isinstance(item.type, ir.IntLitT | ir.StringT | ir.TupleT | ir.ExternT):
                raise P4CompileError.at(e.loc, f"cannot hash a {item.type} (give it a width)")
        return items


def _arity(call: s.CallExpr, n: int, what: str) -> None:
    if len(call.args) != n:
        raise P4CompileError.at(call.loc, f"{what} takes {n} argument(s), got {len(call.args)}")
