"""`digest<T>(receiver, data)` (v1model): T names the digest in P4Info, a struct type (given
as `<T>`, or as the type of `data`); `data` is a struct value, or `{...}` of T's fields by
position or by name. Without `<T>`, `{a, b}` is a tuple, named `digest_0`, `digest_1`, ... as
p4c names them. Its values are taken at the call, as the spec's `in` says; the
ingress control's last digest is the packet's one (runtime.digests says what happens next).
"""

from __future__ import annotations

from p4switch import ir
from p4switch.exceptions import P4CompileError
from p4switch.frontend import syntax as s
from p4switch.frontend.env import Scope
from p4switch.frontend.exprcheck import ExprChecker
from p4switch.frontend.lowerings import field_items

U32 = ir.BitT(32)


class DigestLowering:
    """`digest(receiver, data)` calls, lowered to `ir.DigestCall`; each digest type is
    recorded in the type environment (`TypeEnv.digests`), for P4Info."""

    def __init__(self, exprs: ExprChecker) -> None:
        self.x = exprs

    def lower(self, call: s.CallExpr, scope: Scope, in_parser: bool) -> ir.DigestCall:
        if in_parser:
            raise P4CompileError.at(call.loc, "digest cannot be called from a parser")
        if len(call.args) != 2:
            what = f"digest(receiver, data) takes 2 argument(s), got {len(call.args)}"
            raise P4CompileError.at(call.loc, what)
        if len(call.type_args) > 1:
            raise P4CompileError.at(call.loc, "digest takes one type argument: digest<T>")
        receiver = self.x.expr(call.args[0], scope, U32)
        data = call.args[1]
        given = self.x.env.resolve(call.type_args[0]) if call.type_args else None
        if isinstance(data, s.ListLit) and given is None and not data.names:
            return self._tuple_digest(call, receiver, data, scope)
        if isinstance(data, s.ListLit):
            if given is None:
                what = "give the digest's struct type for {f = ...}: digest<T>(receiver, {...})"
                raise P4CompileError.at(data.loc, what)
            t = _struct(given, call.loc)
            values = self._list_values(data, t, scope)
        else:
            value = self.x.expr(data, scope)
            t = _struct(value.type, data.loc)
            if given is not None and given != t:
                raise P4CompileError.at(data.loc, f"digest<{given}> is given a {t}")
            _check_fields(t, data.loc)
            values = tuple(_scalars(value, t))
        digests = self.x.env.digests
        if t.name in digests and digests[t.name].type != t:  # pragma: no cover - names are unique
            raise P4CompileError.at(call.loc, f"two digest types are named {t.name}")
        digests[t.name] = ir.Digest(t.name, t)
        return ir.DigestCall(t.name, receiver, values)

    def _tuple_digest(
        self, call: s.CallExpr, receiver: ir.Expr, data: s.ListLit, scope: Scope
    ) -> ir.DigestCall:
        """`digest(r, {a, b})`: a digest of a tuple type, named `digest_<n>` for the n-th such
        call, as p4c names it in P4Info."""
        values = tuple(self.x.expr(item, scope) for item in data.items)
        for v, item in zip(values, data.items, strict=True):
            if not isinstance(v.type, ir.BitT | ir.BoolT | ir.ErrorT | ir.EnumT):
                what = (
                    f"a digest's {{...}} holds bit<N>, int<N>, bool, error or enums, not {v.type}"
                )
                raise P4CompileError.at(item.loc, what)
        digests = self.x.env.digests
        name = f"digest_{sum(isinstance(d.type, ir.TupleT) for d in digests.values())}"
        digests[name] = ir.Digest(name, ir.TupleT(tuple(v.type for v in values)))
        return ir.DigestCall(name, receiver, values)

    def _list_values(self, data: s.ListLit, t: ir.StructT, scope: Scope) -> tuple[ir.Expr, ...]:
        """The scalars of `{...}` for struct type t: by position, or `{f = e}` by name."""
        items = field_items(data, t)
        out: list[ir.Expr] = []
        for f, item in zip(t.fields, items, strict=True):
            if isinstance(f.type, ir.StructT) and isinstance(item, s.ListLit):
                out += self._list_values(item, _struct(f.type, item.loc), scope)
                continue
            value = self.x.expr(item, scope, f.type)
            if isinstance(f.type, ir.StructT):
                _check_fields(_struct(f.type, item.loc), item.loc)
                out += _scalars(value, f.type)
            elif isinstance(f.type, ir.BitT | ir.BoolT | ir.ErrorT | ir.EnumT):
                out.append(value)
            else:
                _check_fields(t, item.loc)  # refuses the field's type by name
        return tuple(out)


def _struct(t: ir.Type, loc: ir.Loc) -> ir.StructT:
    if not isinstance(t, ir.StructT) or t.is_header or t.is_union:
        what = f"digest data must be a struct (its type names the digest in P4Info), not {t}"
        raise P4CompileError.at(loc, what)
    return t


def _check_fields(t: ir.StructT, loc: ir.Loc) -> None:
    for f in t.fields:
        if isinstance(f.type, ir.StructT) and not (f.type.is_header or f.type.is_union):
            _check_fields(f.type, loc)
        elif not isinstance(f.type, ir.BitT | ir.BoolT | ir.ErrorT | ir.EnumT):
            what = (
                f"digest field {t.name}.{f.name} is a {f.type}: p4switch sends bit<N>, int<N>,"
                " bool, error, enums and structs of them"
            )
            raise P4CompileError.at(loc, what)


def _scalars(value: ir.Expr, t: ir.StructT) -> list[ir.Expr]:
    """`value.f` for each scalar field f of a struct value, nested structs in order."""
    out: list[ir.Expr] = []
    for f in t.fields:
        member = ir.Member(value, f.name, f.type)
        out += _scalars(member, f.type) if isinstance(f.type, ir.StructT) else [member]
    return out
