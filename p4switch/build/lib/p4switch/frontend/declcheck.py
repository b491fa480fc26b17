"""Type, action and function declarations, checked: functions of the program checker (`pc`),
kept here to keep `typecheck` readable."""

from __future__ import annotations

from typing import TYPE_CHECKING

from p4switch import ir
from p4switch.exceptions import P4CompileError
from p4switch.frontend import syntax as s
from p4switch.frontend.context import BlockContext
from p4switch.frontend.env import ActionEntity, FunctionEntity, Scope, control_plane_name

if TYPE_CHECKING:
    from p4switch.frontend.typecheck import ProgramChecker


def instantiate(
    pc: ProgramChecker, d: s.StructDecl, args: tuple[ir.Type, ...], loc: ir.Loc
) -> ir.StructT:
    """`S<bit<8>>` of `struct S<T> { ... }`: a struct named `S<bit<8>>`, T bound."""
    if len(args) != len(d.type_params):
        n = len(d.type_params)
        raise P4CompileError.at(loc, f"{d.name} takes {n} type argument(s), got {len(args)}")
    name = f"{d.name}<{', '.join(str(a) for a in args)}>"
    made = pc.generic_instances.get(name)
    if made is None:
        made = pc.generic_instances[name] = struct_type(
            pc, d, dict(zip(d.type_params, args, strict=True)), name
        )
    return made


def struct_type(
    pc: ProgramChecker, d: s.StructDecl, type_vars: dict[str, ir.Type] | None = None, name: str = ""
) -> ir.StructT:
    header = d.kind == "header"
    union = d.kind == "header_union"
    fields, names = [], set()
    for f in d.fields:
        if f.name in names:
            raise P4CompileError.at(f.loc, f"field {f.name!r} is declared twice")
        names.add(f.name)
        t = pc.env.resolve(f.type, type_vars)
        if header and isinstance(t, ir.VarbitT) and f is not d.fields[-1]:
            what = "a varbit field must be its header's last field (as BMv2 needs)"
            raise P4CompileError.at(f.loc, what)
        if header and not (isinstance(t, ir.BitT | ir.BoolT | ir.VarbitT) or _flat_struct(t)):
            raise P4CompileError.at(
                f.loc,
                f"a header field must be bit<N>, int<N>, bool, varbit or a struct of those,"
                f" not {t}",
            )
        if not header and isinstance(t, ir.VarbitT):
            raise P4CompileError.at(f.loc, "varbit fields belong in headers")
        if union and not (isinstance(t, ir.StructT) and t.is_header):
            raise P4CompileError.at(f.loc, f"a header union holds headers, not {t}")
        if isinstance(t, ir.ExternT | ir.VoidT | ir.StringT | ir.IntLitT | ir.BlockT):
            raise P4CompileError.at(f.loc, f"a field cannot be of type {t}")
        fields.append(ir.Field(f.name, t, f.annotations))
    out = ir.StructT(name or d.name, tuple(fields), header, d.annotations, is_union=union)
    if header and out.width % 8:
        raise P4CompileError.at(
            d.loc, f"header {d.name} is {out.width} bits; headers must be whole bytes"
        )
    return out


def enum_type(pc: ProgramChecker, d: s.EnumDecl) -> ir.EnumT:
    names = [m for m, _ in d.members]
    if len(set(names)) != len(names):
        raise P4CompileError.at(d.loc, f"enum {d.name} lists a member twice")
    if d.underlying is None:
        return ir.EnumT(d.name, tuple(names), tuple(range(len(names))))
    under = pc.env.resolve(d.underlying)
    if not isinstance(under, ir.BitT):
        raise P4CompileError.at(d.loc, "an enum's underlying type must be bit<N> or int<N>")
    values = []
    for _, e in d.members:
        assert e is not None
        c = pc.x.expr(e, pc.top, under)
        if not isinstance(c, ir.Const):
            raise P4CompileError.at(e.loc, "enum values must be constants")
        values.append(int(c.value))
    return ir.EnumT(d.name, tuple(names), tuple(values), under)


def action(pc: ProgramChecker, d: s.ActionDecl, scope: Scope, prefix: str) -> None:
    name = control_plane_name(d.name, d.annotations, prefix)
    if name in pc.actions:
        raise P4CompileError.at(d.loc, f"another action is already named {name}")
    inner = scope.child()
    params = []
    for p in d.params:
        t = pc.env.resolve(p.type)
        _check_param(p, t, "action", directionless_scalar=True)
        var = ir.Var(p.name, t, in_slots=False)
        inner.declare(p.name, var, p.loc)
        if p.direction in ("", "in"):
            inner.readonly.add(var)
        pname = control_plane_name(p.name, p.annotations, "")
        params.append(ir.Param(pname, t, p.direction, var, p.annotations))
    entity = ActionEntity(name, d, tuple(params))
    scope.declare(d.name, entity, d.loc)
    ctx = BlockContext("action", pc.ctx.name, pc.ctx.called_actions)
    body = pc.stmts.block(d.body.stmts, inner, ctx)
    pc.actions[name] = ir.Action(name, tuple(params), body, d.annotations, d.loc)


def function(pc: ProgramChecker, d: s.FunctionDecl) -> None:
    """A function, compiled as an action whose last parameter (`out`) is its value."""
    if d.type_params:
        raise P4CompileError.at(d.loc, "generic functions are not supported by p4switch")
    name = f"{d.name}()"  # never an action's name, and not in P4Info
    if pc.top.lookup(d.name) is not None or name in pc.actions:
        raise P4CompileError.at(d.loc, f"{d.name!r} is already declared")
    returns = pc.env.resolve(d.return_type)
    if not isinstance(returns, ir.BitT | ir.BoolT | ir.VoidT):
        raise P4CompileError.at(d.loc, f"functions returning {returns} are not supported")
    inner = pc.top.child()
    params = []
    for p in d.params:
        t = pc.env.resolve(p.type)
        _check_param(p, t, "function", directionless_scalar=False)
        var = ir.Var(p.name, t, in_slots=False)
        inner.declare(p.name, var, p.loc)
        if p.direction in ("", "in"):
            inner.readonly.add(var)
        params.append(ir.Param(p.name, t, p.direction or "in", var, p.annotations))
    result = None
    if not isinstance(returns, ir.VoidT):
        result = ir.Var("result", returns, in_slots=False)
    ctx = BlockContext("function", d.name, pc.ctx.called_actions, result)
    body = pc.stmts.block(d.body.stmts, inner, ctx)
    if result is not None and not _always_returns(body):
        raise P4CompileError.at(d.loc, f"function {d.name} does not return a value on every path")
    everything = list(params)
    if result is not None:
        everything.append(ir.Param("result", returns, "out", result))
    pc.top.declare(d.name, FunctionEntity(name, d, tuple(params), returns), d.loc)
    pc.actions[name] = ir.Action(name, tuple(everything), body, d.annotations, d.loc, function=True)


def _flat_struct(t: ir.Type) -> bool:
    """A struct of bit<N>, int<N>, bool and such structs: what a header may hold (P4_16 7.2.2)."""
    if not isinstance(t, ir.StructT) or t.is_header or t.is_union:
        return False
    return all(isinstance(f.type, ir.BitT | ir.BoolT) or _flat_struct(f.type) for f in t.fields)


def _check_param(p: s.ParamDecl, t: ir.Type, what: str, directionless_scalar: bool) -> None:
    """Parameters are bit<N>, int<N> or bool, or (with a direction) a header, struct or
    header stack, passed field by field. An action's directionless parameters come from the
    control plane: scalars only."""
    if isinstance(t, ir.BitT | ir.BoolT):
        return
    aggregate = isinstance(t, ir.StructT | ir.StackT)
    if aggregate and not (directionless_scalar and p.direction == ""):
        return
    if aggregate:
        raise P4CompileError.at(
            p.loc,
            f"a directionless {what} parameter of type {t} is not supported"
            " (the control plane supplies bit<N> values)",
        )
    raise P4CompileError.at(p.loc, f"{what} parameters of type {t} are not supported")


def _always_returns(body: tuple[ir.Stmt, ...]) -> bool:
    """Whether every path through `body` ends in `return`."""
    for st in body:
        if isinstance(st, ir.Return):
            return True
        if isinstance(st, ir.If) and _always_returns(st.then) and _always_returns(st.else_):
            return True
    return False
