"""Type-check expressions the way p4c does, folding constants on the way.

Implicit conversions are those of P4_16: an integer literal without a width takes the type the
other operand (or the context) asks for; nothing else converts implicitly, so mixing `bit<16>`
and `bit<8>` in one operation, or assigning one to the other, needs a cast.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import Any

from p4switch import ir
from p4switch.exceptions import P4CompileError
from p4switch.frontend import stacks
from p4switch.frontend import syntax as s
from p4switch.frontend.callargs import lookahead_field, positional
from p4switch.frontend.env import FunctionEntity, PacketEntity, Scope, TableEntity, TypeEnv
from p4switch.frontend.equality import aggregate_equal
from p4switch.frontend.fold import fold_binary, fold_cast, fold_unary, wrap
from p4switch.frontend.lowerings import field_items

log = logging.getLogger(__name__)

ARITH = ("+", "-", "*", "/", "%", "|+|", "|-|")
BITWISE = ("&", "|", "^")
ORDER = ("<", ">", "<=", ">=")


def is_numeric(t: ir.Type) -> bool:
    return isinstance(t, ir.BitT | ir.IntLitT)


class ExprChecker:
    def __init__(self, env: TypeEnv) -> None:
        self.env = env
        # per action or function called so far, which parameters are out or inout: the
        # arguments it writes, places rather than values (for ordering calls, `StmtChecker`)
        self.writes: dict[str, tuple[bool, ...]] = {}

    # --- entry points ---------------------------------------------------------------------------

    def expr(self, e: s.ExprSyntax, scope: Scope, expected: ir.Type | None = None) -> ir.Expr:
        """Check `e`; with `expected`, convert it to that type (literals) or insist on it."""
        if isinstance(e, s.ListLit) and isinstance(expected, ir.StructT) and not expected.is_union:
            return self.struct_list(e, expected, scope)
        out = self._expr(e, scope)
        return self.coerce(out, expected, e.loc) if expected is not None else out

    def const_int(self, e: s.ExprSyntax, scope: Scope) -> int:
        c = self.expr(e, scope)
        if not isinstance(c, ir.Const) or not is_numeric(c.type):
            raise P4CompileError.at(e.loc, "a compile-time integer constant is needed here")
        return int(c.value)

    def bool_expr(self, e: s.ExprSyntax, scope: Scope) -> ir.Expr:
        out = self.expr(e, scope)
        if not isinstance(out.type, ir.BoolT):
            raise P4CompileError.at(e.loc, f"a condition must be bool, not {out.type}")
        return out

    def lvalue(self, e: s.ExprSyntax, scope: Scope) -> ir.Expr:
        """Check `e` as something assigned to: a variable, a field of one, or a slice of those."""
        out = self._expr(e, scope)
        root: ir.Expr = out
        while isinstance(root, ir.Member | ir.Slice | ir.StackIndex):
            root = root.stack if isinstance(root, ir.StackIndex) else root.base
        if not isinstance(root, ir.VarRef):
            raise P4CompileError.at(e.loc, "this expression cannot be assigned to")
        if scope.is_readonly(root.var):
            raise P4CompileError.at(e.loc, f"{root.var.name!r} is read-only here")
        return out

    def coerce(self, value: ir.Expr, target: ir.Type, loc: ir.Loc) -> ir.Expr:
        if value.type == target or isinstance(target, ir.TypeVar):
            return value
        if isinstance(value, ir.Const) and isinstance(value.type, ir.IntLitT):
            if isinstance(target, ir.BitT):
                return self._literal(value.value, target, loc)
            if isinstance(target, ir.IntLitT):
                return value
        if isinstance(value, ir.ListExpr) and isinstance(target, ir.TupleT):
            return value
        if isinstance(value, ir.Mux) and isinstance(value.type, ir.IntLitT):
            yes, no = self.coerce(value.yes, target, loc), self.coerce(value.no, target, loc)
            return ir.Mux(value.cond, yes, no, target)
        raise P4CompileError.at(loc, f"expected a value of type {target}, got {value.type}")

    def _literal(self, value: int | bool, t: ir.BitT, loc: ir.Loc) -> ir.Const:
        v = int(value)
        lo = -(1 << (t.width - 1)) if t.signed else -(1 << t.width)
        hi = (1 << (t.width - 1)) - 1 if t.signed else t.mask
        if not lo <= v <= hi:
            log.warning("%s: value %d does not fit in %s; truncated", loc, v, t)
        return ir.Const(t, v & t.mask)

    # --- the cases --------------------------------------------------------------------------------

    def _expr(self, e: s.ExprSyntax, scope: Scope) -> ir.Expr:
        check = _EXPRESSIONS.get(type(e))
        if check is not None:
            return check(self, e, scope)
        if isinstance(e, s.NamedArg):
            what = "named arguments (name = value) are supported in calls of actions and functions"
            raise P4CompileError.at(e.loc, what)
        what = _KEYSET_ONLY.get(type(e), type(e).__name__)
        raise P4CompileError.at(e.loc, f"{what} is only allowed in select cases and table entries")

    def _int(self, e: s.IntLit, scope: Scope) -> ir.Expr:
        if e.width is None:
            return ir.Const(ir.IntLitT(), e.value)
        if e.width < 1 or (e.signed and e.width < 2):
            raise P4CompileError.at(e.loc, f"{e.text}: invalid width")
        return self._literal(e.value, ir.BitT(e.width, e.signed), e.loc)

    def _bool(self, e: s.BoolLit, scope: Scope) -> ir.Expr:
        return ir.Const(ir.BoolT(), e.value)

    def _string(self, e: s.StrLit, scope: Scope) -> ir.Expr:
        return ir.Const(ir.StringT(), 0)

    def _error_member(self, e: s.ErrorMember, scope: Scope) -> ir.Expr:
        return ir.Const(ir.ErrorT(), self.env.error_code(e.name, e.loc))

    def _list(self, e: s.ListLit, scope: Scope) -> ir.Expr:
        items = tuple(self.expr(i, scope) for i in e.items)
        return ir.ListExpr(items, ir.TupleT(tuple(i.type for i in items)))

    def struct_list(self, e: s.ListLit, t: ir.StructT, scope: Scope) -> ir.Expr:
        """`{...}` where a value of struct or header type `t` is expected (an argument, a
        returned value): its fields' values in field order, set into a temporary before the
        statement (`stmtcheck.StatementChecker.lower`)."""
        items = field_items(e, t)
        values = tuple(self.expr(i, scope, f.type) for f, i in zip(t.fields, items, strict=True))
        return ir.ListExpr(values, t)

    def _name(self, e: s.Name, scope: Scope) -> ir.Expr:
        found = scope.lookup(e.name)
        if isinstance(found, ir.Var):
            return ir.VarRef(found)
        if isinstance(found, ir.Expr):  # a constant, or a nested block's out/inout parameter
            return found
        if found is not None:
            raise P4CompileError.at(e.loc, f"{e.name!r} is not a value")
        if e.name in self.env.types:
            raise P4CompileError.at(e.loc, f"{e.name!r} is a type, not a value")
        if e.name in self.env.unsupported:
            raise P4CompileError.at(e.loc, f"{e.name} is not supported by p4switch")
        raise P4CompileError.at(e.loc, f"{e.name!r} is not declared")

    def _member(self, e: s.MemberExpr, scope: Scope) -> ir.Expr:
        if isinstance(e.base, s.Name) and scope.lookup(e.base.name) is None:
            t = self.env.types.get(e.base.name)
            if isinstance(t, ir.EnumT):
                if e.name not in t.members:
                    raise P4CompileError.at(e.loc, f"{t.name} has no member {e.name!r}")
                value = t.value_of(e.name)
                return ir.Const(t.underlying or t, value) if t.underlying else ir.Const(t, value)
        if isinstance(e.base, s.CallExpr) and e.name in ("hit", "miss"):
            table = self._table_apply(e.base, scope)
            if table is not None:
                return ir.TableHit(table, e.name == "hit")
        base = self._expr(e.base, scope)
        t = base.type
        if isinstance(base, ir.Lookahead) and isinstance(t, ir.StructT) and t.field(e.name):
            return lookahead_field(t, e.name)
        if isinstance(t, ir.StructT):
            f = t.field(e.name)
            if f is None:
                kind = "header" if t.is_header else "struct"
                raise P4CompileError.at(e.loc, f"{kind} {t.name} has no field {e.name!r}")
            return ir.Member(base, e.name, f.type)
        if isinstance(t, ir.StackT):
            return stacks.stack_member(base, e)
        raise P4CompileError.at(e.loc, f"a value of type {t} has no member {e.name!r}")

    def _table_apply(self, call: s.CallExpr, scope: Scope) -> str | None:
        callee = call.callee
        if not (isinstance(callee, s.MemberExpr) and callee.name == "apply"):
            return None
        found = scope.lookup(callee.base.name) if isinstance(callee.base, s.Name) else None
        if not isinstance(found, TableEntity):
            return None
        if call.args:
            raise P4CompileError.at(call.loc, "apply() takes no arguments")
        return found.name

    def _slice(self, e: s.SliceExpr, scope: Scope) -> ir.Expr:
        base = self._expr(e.base, scope)
        if not isinstance(base.type, ir.BitT):
            raise P4CompileError.at(e.loc, f"cannot take a bit slice of a {base.type}")
        hi, lo = self.const_int(e.hi, scope), self.const_int(e.lo, scope)
        if not 0 <= lo <= hi < base.type.width:
            raise P4CompileError.at(e.loc, f"slice [{hi}:{lo}] is outside {base.type}")
        t = ir.BitT(hi - lo + 1)
        if isinstance(base, ir.Const):
            return ir.Const(t, (int(base.value) >> lo) & t.mask)
        return ir.Slice(base, hi, lo, t)

    def _index(self, e: s.IndexExpr, scope: Scope) -> ir.Expr:
        """`hs[i]`: a constant index is the element itself; any other is a `StackIndex`
        (lowered away by `stacks.lower`). A tuple's index is a constant."""
        stack = self._expr(e.base, scope)
        t = stack.type
        if isinstance(t, ir.TupleT) and not isinstance(stack, ir.ListExpr):
            i = self.const_int(e.index, scope)
            if not 0 <= i < len(t.elements):
                raise P4CompileError.at(e.index.loc, f"index {i} is outside {t}")
            return ir.Member(stack, str(i), t.elements[i])
        if not isinstance(t, ir.StackT):
            raise P4CompileError.at(e.loc, f"cannot index a {t} (only header stacks)")
        index = self._expr(e.index, scope)
        if isinstance(index, ir.Const) and isinstance(index.type, ir.BitT | ir.IntLitT):
            i = int(index.value)
            if not 0 <= i < t.size:
                raise P4CompileError.at(e.index.loc, f"index {i} is outside {t} (0..{t.size - 1})")
            return ir.Member(stack, str(i), t.element)
        if not isinstance(index.type, ir.BitT):
            raise P4CompileError.at(
                e.index.loc, f"a stack index must be bit<N> or int<N>, not {index.type}"
            )
        if any(isinstance(part, ir.TableHit) for part in ir.walk(index)):
            raise P4CompileError.at(e.index.loc, "a stack index may not apply a table")
        return ir.StackIndex(stack, index, t.element, "index", e.loc)

    def _cast(self, e: s.CastExpr, scope: Scope) -> ir.Expr:
        target = self.env.resolve(e.type)
        value = self._expr(e.expr, scope)
        source = value.type
        ok = source == target or (
            isinstance(target, ir.BitT)
            and (
                isinstance(source, ir.IntLitT)
                or (isinstance(source, ir.BoolT) and target.width == 1 and not target.signed)
                or (isinstance(source, ir.BitT) and source.signed == target.signed)
                or (isinstance(source, ir.BitT) and source.width == target.width)
            )
        )
        ok = ok or (
            isinstance(target, ir.BoolT)
            and isinstance(source, ir.BitT | ir.IntLitT)
            and (isinstance(source, ir.IntLitT) or source.width == 1)
        )
        if not ok:
            raise P4CompileError.at(e.loc, f"cannot cast {source} to {target}")
        if isinstance(value, ir.Const):
            return fold_cast(value, target)
        same = source == target and getattr(source, "named", None) == getattr(target, "named", None)
        return value if same else ir.Cast(target, value)  # a cast to a `type` names it

    def _unary(self, e: s.UnaryExpr, scope: Scope) -> ir.Expr:
        value = self._expr(e.expr, scope)
        t = value.type
        if e.op == "!":
            if not isinstance(t, ir.BoolT):
                raise P4CompileError.at(e.loc, f"! needs a bool operand, not {t}")
        elif e.op == "~":
            if not isinstance(t, ir.BitT):
                raise P4CompileError.at(e.loc, f"~ needs a bit<N> or int<N> operand, not {t}")
        elif not is_numeric(t):
            raise P4CompileError.at(e.loc, f"unary {e.op} needs a number, not {t}")
        if isinstance(value, ir.Const):
            return fold_unary(e.op, value)
        return value if e.op == "+" else ir.Unary(e.op, value, t)

    def _ternary(self, e: s.TernaryExpr, scope: Scope) -> ir.Expr:
        cond = self.bool_expr(e.cond, scope)
        yes, no = self._expr(e.yes, scope), self._expr(e.no, scope)
        yes, no, t = self._unify(yes, no, e.loc, "?:")
        if isinstance(t, ir.StructT | ir.TupleT):
            raise P4CompileError.at(e.loc, f"?: on {t} values is not supported")
        if isinstance(cond, ir.Const):
            return yes if cond.value else no
        return ir.Mux(cond, yes, no, t)

    def _unify(
        self, a: ir.Expr, b: ir.Expr, loc: ir.Loc, op: str
    ) -> tuple[ir.Expr, ir.Expr, ir.Type]:
        if a.type == b.type:
            return a, b, a.type
        if isinstance(a.type, ir.IntLitT) and isinstance(b.type, ir.BitT):
            return self.coerce(a, b.type, loc), b, b.type
        if isinstance(b.type, ir.IntLitT) and isinstance(a.type, ir.BitT):
            return a, self.coerce(b, a.type, loc), a.type
        hint = (
            "; cast one side" if isinstance(a.type, ir.BitT) and isinstance(b.type, ir.BitT) else ""
        )
        raise P4CompileError.at(loc, f"{op} cannot mix {a.type} and {b.type}{hint}")

    def _binary(self, e: s.BinaryExpr, scope: Scope) -> ir.Expr:
        op = e.op
        a, b = self._expr(e.left, scope), self._expr(e.right, scope)
        if op in ("&&", "||"):
            for x, side in ((a, e.left), (b, e.right)):
                if not isinstance(x.type, ir.BoolT):
                    raise P4CompileError.at(side.loc, f"{op} needs bool operands, not {x.type}")
            result: ir.Type = ir.BoolT()
        elif op in ("<<", ">>"):
            a, b, result = self._shift(e, a, b)
        elif op == "++":
            for x, side in ((a, e.left), (b, e.right)):
                if not isinstance(x.type, ir.BitT):
                    raise P4CompileError.at(
                        side.loc, f"++ needs operands with a width, not {x.type}"
                    )
            assert isinstance(a.type, ir.BitT) and isinstance(b.type, ir.BitT)
            result = ir.BitT(a.type.width + b.type.width, a.type.signed)
        else:
            a, b, result = self._unify(a, b, e.loc, op)
            aggregate = ir.StructT | ir.TupleT | ir.StackT | ir.VarbitT
            if op in ("==", "!=") and isinstance(result, aggregate):
                return aggregate_equal(a, b, op == "!=", e.loc)  # compared scalar by scalar
            self._check_operands(e, result)
            if op in ("==", "!=", *ORDER):
                result = ir.BoolT()
        if isinstance(a, ir.Const) and isinstance(b, ir.Const):
            if op in ("/", "%") and not b.value:
                raise P4CompileError.at(e.loc, "division by zero")
            return fold_binary(op, a, b, result)
        if op == "&&" and isinstance(a, ir.Const):
            return b if a.value else a
        if op == "||" and isinstance(a, ir.Const):
            return a if a.value else b
        return ir.Binary(op, a, b, result)

    def _check_operands(self, e: s.BinaryExpr, t: ir.Type) -> None:
        op = e.op
        if op in ("==", "!="):
            if isinstance(t, ir.StructT | ir.TupleT | ir.ExternT | ir.StringT | ir.VarbitT):
                raise P4CompileError.at(e.loc, f"comparing values of type {t} is not supported")
            return
        if not is_numeric(t):
            raise P4CompileError.at(e.loc, f"{op} needs numbers, not {t}")
        if op in ("/", "%") and isinstance(t, ir.BitT) and t.signed:
            raise P4CompileError.at(e.loc, f"{op} is not defined on signed values")

    def _shift(self, e: s.BinaryExpr, a: ir.Expr, b: ir.Expr) -> tuple[ir.Expr, ir.Expr, ir.Type]:
        if not is_numeric(a.type):
            raise P4CompileError.at(e.left.loc, f"cannot shift a {a.type}")
        if (isinstance(b.type, ir.BitT) and b.type.signed) or not is_numeric(b.type):
            raise P4CompileError.at(e.right.loc, f"a shift amount must be unsigned, not {b.type}")
        if isinstance(b, ir.Const) and int(b.value) < 0:
            raise P4CompileError.at(e.right.loc, "a shift amount must not be negative")
        if isinstance(a.type, ir.IntLitT) and not isinstance(b, ir.Const):
            raise P4CompileError.at(
                e.left.loc, "shifting an integer without a width needs a constant amount"
            )
        return a, b, a.type

    def call_args(
        self,
        call: s.CallExpr,
        params: Sequence[ir.Param],
        decls: Sequence[s.ParamDecl],
        scope: Scope,
        what: str,
        callee: str | None = None,
    ) -> tuple[ir.Expr, ...]:
        """The arguments of a call of an action or a function, one per parameter (`decls`
        as declared, named and default arguments in place): l-values of the parameter's type
        for out and inout, values converted to it for the others. `callee`: the action's
        name, whose written parameters `writes` then records."""
        out = []
        if callee is not None:
            self.writes[callee] = tuple(p.direction in ("out", "inout") for p in params)
        for p, a in zip(params, positional(call, decls, what), strict=True):
            if p.direction in ("out", "inout"):
                arg = self.lvalue(a, scope)
                if arg.type != p.type:
                    raise P4CompileError.at(
                        a.loc, f"parameter {p.name} is {p.type}, the argument is {arg.type}"
                    )
                out.append(arg)
            else:
                out.append(self.expr(a, scope, p.type))
        return tuple(out)

    def _call(self, e: s.CallExpr, scope: Scope) -> ir.Expr:
        callee = e.callee
        if isinstance(callee, s.Name):
            found = scope.lookup(callee.name)
            if isinstance(found, FunctionEntity):
                return self.function_call(e, found, scope)
            if found is None and callee.name == "static_assert":
                return self.static_assert(e, scope)
            if found is None:
                self._name(callee, scope)  # raises: not declared, or a type
        if isinstance(callee, s.MemberExpr):
            if callee.name == "isValid":
                if e.args:
                    raise P4CompileError.at(e.loc, "isValid() takes no arguments")
                header = self._expr(callee.base, scope)
                t = header.type
                if isinstance(t, ir.StructT) and t.is_union:  # one of its headers is valid
                    valid: ir.Expr = ir.Const(ir.BoolT(), False)
                    for k, f in enumerate(t.fields):
                        test = ir.IsValid(ir.Member(header, f.name, f.type))
                        valid = test if k == 0 else ir.Binary("||", valid, test, ir.BoolT())
                    return valid
                if not (isinstance(t, ir.StructT) and t.is_header):
                    raise P4CompileError.at(e.loc, "isValid() applies to headers and header unions")
                return ir.IsValid(header)
            if callee.name == "lookahead" and isinstance(callee.base, s.Name):
                packet = scope.lookup(callee.base.name)
                if isinstance(packet, PacketEntity) and packet.kind == "packet_in":
                    return self._lookahead(e)
            if self._table_apply(e, scope) is not None:
                raise P4CompileError.at(
                    e.loc, "use t.apply() as a statement, or t.apply().hit / .miss"
                )
            if isinstance(callee.base, s.Name) and scope.lookup(callee.base.name) is None:
                self._name(callee.base, scope)  # raises: not declared, or not a value
        raise P4CompileError.at(e.loc, "this call has no value; it can only be a statement")

    def function_call(self, e: s.CallExpr, fn: FunctionEntity, scope: Scope) -> ir.Expr:
        """A function's call in an expression: its value (see `ir.FunctionCall`)."""
        if isinstance(fn.returns, ir.VoidT):
            raise P4CompileError.at(e.loc, f"function {fn.decl.name} returns no value")
        args = self.call_args(
            e, fn.params, fn.decl.params, scope, f"function {fn.decl.name}", fn.name
        )
        pure = all(p.direction in ("", "in") for p in fn.params)
        return ir.FunctionCall(fn.name, args, fn.returns, pure, e.loc)

    def static_assert(self, e: s.CallExpr, scope: Scope) -> ir.Expr:
        """`static_assert(check[, message])`: `check` must be a constant true, or the program
        is refused with the message; its value is true."""
        if len(e.args) not in (1, 2):
            raise P4CompileError.at(e.loc, "static_assert takes a condition and a message")
        check = self.expr(e.args[0], scope)
        if not (isinstance(check, ir.Const) and isinstance(check.type, ir.BoolT)):
            raise P4CompileError.at(e.args[0].loc, "static_assert needs a constant bool")
        if not check.value:
            message = e.args[1] if len(e.args) == 2 else None
            text = message.value if isinstance(message, s.StrLit) else "condition is false"
            raise P4CompileError.at(e.loc, f"static_assert failed: {text}")
        return ir.Const(ir.BoolT(), True)

    def _lookahead(self, e: s.CallExpr) -> ir.Expr:
        """`packet.lookahead<T>()`: T's bits, read without consuming them."""
        if len(e.type_args) != 1 or e.args:
            raise P4CompileError.at(e.loc, "use lookahead<T>() with one type and no arguments")
        t = self.env.resolve(e.type_args[0])
        if isinstance(t, ir.StructT) and all(
            isinstance(f.type, ir.BitT | ir.BoolT) for f in t.fields
        ):
            return ir.Lookahead(t)  # a header or flat struct: read by field (lookahead_field)
        if not isinstance(t, ir.BitT) or t.signed:
            what = f"lookahead of {t} is not supported (use bit<N>, or a header or struct of bits)"
            raise P4CompileError.at(e.loc, what)
        return ir.Lookahead(t)


# How each kind of expression is checked: a method taking the expression and its scope.
_EXPRESSIONS: dict[type[s.ExprSyntax], Callable[[ExprChecker, Any, Scope], ir.Expr]] = {
    s.IntLit: ExprChecker._int,
    s.BoolLit: ExprChecker._bool,
    s.StrLit: ExprChecker._string,
    s.Name: ExprChecker._name,
    s.ErrorMember: ExprChecker._error_member,
    s.MemberExpr: ExprChecker._member,
    s.SliceExpr: ExprChecker._slice,
    s.CastExpr: ExprChecker._cast,
    s.UnaryExpr: ExprChecker._unary,
    s.BinaryExpr: ExprChecker._binary,
    s.TernaryExpr: ExprChecker._ternary,
    s.CallExpr: ExprChecker._call,
    s.ListLit: ExprChecker._list,
    s.IndexExpr: ExprChecker._index,
}
# expressions that are keysets, not values
_KEYSET_ONLY: dict[type[s.ExprSyntax], str] = {
    s.MaskExpr: "a mask (&&&)",
    s.RangeExpr: "a range (..)",
    s.DontCare: "`_`",
    s.DefaultKey: "`default`",
}


def literal(value: int, t: ir.Type) -> ir.Const:
    return ir.Const(t, wrap(value, t))
