"""Parsers and controls applied inside others, inlined, and parser value sets.

`c.apply(...)` of a control instance runs the control's body in place; `p.apply(...)` of a
sub-parser marks the state, which `splice_sub_parsers` splits around the sub-parser's renamed
states. Functions of the program checker (`pc`), kept here to keep `typecheck` readable.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

from p4switch import ir
from p4switch.exceptions import P4CompileError
from p4switch.frontend import syntax as s
from p4switch.frontend.callargs import positional
from p4switch.frontend.context import BlockContext
from p4switch.frontend.env import (
    BlockInstanceEntity,
    PacketEntity,
    Scope,
    ValueSetEntity,
    control_plane_name,
)
from p4switch.frontend.package import type_name

if TYPE_CHECKING:
    from p4switch.frontend.typecheck import ProgramChecker


@dataclass(frozen=True)
class EnterSubParser(ir.Stmt):
    """Where a parser state applies a sub-parser; never leaves the front end."""

    instance: str
    states: tuple[ir.ParserState, ...]  # the sub-parser's, `start` first, its own names


def splice_sub_parsers(state: ir.ParserState) -> list[ir.ParserState]:
    """`state` split at each sub-parser it applies: the statements before the apply, then a
    transition into a copy of the sub-parser's states (renamed for this apply), whose
    `accept` goes on to a state with the statements after the apply and `state`'s own
    transition."""
    body = state.body
    at = next((i for i, st in enumerate(body) if isinstance(st, EnterSubParser)), None)
    if at is None:
        return [state]
    enter = body[at]
    assert isinstance(enter, EnterSubParser)
    prefix = f"{state.name}__{re.sub(r'[^A-Za-z0-9_]', '_', enter.instance)}"
    after = f"{prefix}__after"

    def renamed(name: str) -> str:
        if name == "accept":
            return after
        return name if name == "reject" else f"{prefix}__{name}"

    sub = [
        ir.ParserState(
            renamed(st.name),
            st.body,
            st.keys,
            tuple(ir.SelectCase(c.keysets, renamed(c.next_state)) for c in st.cases),
        )
        for st in enter.states
    ]
    head = ir.ParserState(state.name, body[:at], (), (ir.SelectCase((), renamed("start")),))
    rest = ir.ParserState(after, body[at + 1 :], state.keys, state.cases)
    return [head, *sub, *splice_sub_parsers(rest)]


def value_set(pc: ProgramChecker, st: s.ValueSetDecl, scope: Scope, prefix: str) -> None:
    t = pc.env.resolve(st.type)
    fields: tuple[tuple[str, int, str], ...] = ()
    if isinstance(t, ir.StructT) and not (t.is_header or t.is_union):
        fields = tuple(_value_set_fields(t, "", st.loc))
        width = sum(w for _, w, _ in fields)
    elif isinstance(t, ir.BitT) and not t.signed:
        width = t.width
    else:
        what = f"value sets of {t} are not supported (use bit<N> or a struct of them)"
        raise P4CompileError.at(st.loc, what)
    size = pc.x.const_int(st.size, scope)
    if size <= 0:
        raise P4CompileError.at(st.size.loc, "a value set's size must be positive")
    name = control_plane_name(st.name, st.annotations, prefix)
    if any(v.name == name for v in pc.value_sets):
        raise P4CompileError.at(st.loc, f"another value set is already named {name}")
    pc.value_sets.append(ir.ValueSet(name, width, size, st.annotations, fields))
    widths = tuple(w for _, w, _ in fields) or (width,)
    scope.declare(st.name, ValueSetEntity(name, width, widths), st.loc)


_SET_KINDS = ("exact", "ternary", "lpm", "range")


def _value_set_fields(t: ir.StructT, prefix: str, loc: ir.Loc) -> list[tuple[str, int, str]]:
    """A struct value set's keys: its bit<N> fields in order (nested structs' too, by dotted
    name), each matched as its `@match(kind)` says, exactly if it says nothing."""
    out: list[tuple[str, int, str]] = []
    for f in t.fields:
        name = prefix + f.name
        if isinstance(f.type, ir.StructT) and not (f.type.is_header or f.type.is_union):
            out += _value_set_fields(f.type, name + ".", loc)
            continue
        if not isinstance(f.type, ir.BitT) or f.type.signed:
            raise P4CompileError.at(loc, f"value set field {name} is a {f.type}, not a bit<N>")
        found = ir.find_annotation(f.annotations, "match")
        kind = str(found.args[0]) if found is not None and found.args else "exact"
        if kind not in _SET_KINDS:
            what = (
                f"value set field {name}: @match({kind}) (p4switch takes {', '.join(_SET_KINDS)})"
            )
            raise P4CompileError.at(loc, what)
        out.append((name, f.type.width, kind))
    return out


def apply_parser(
    pc: ProgramChecker, call: s.CallExpr, inst: BlockInstanceEntity, scope: Scope, ctx: BlockContext
) -> list[ir.Stmt]:
    """`sub.apply(args)` in a parser state: a marker the state is split at
    (`_splice_sub_parsers`), after the statements setting the sub-parser's `in`
    parameters. The sub-parser's states are checked at the first apply, and again at an apply
    with other `out`/`inout` arguments."""
    decl = inst.decl
    assert isinstance(decl, s.ParserDecl)
    if ctx.kind != "parser":
        raise P4CompileError.at(call.loc, "a parser can only be applied in a parser")
    inner, copy_in, aliases = bind_block(pc, call, inst, scope)
    if inst.states is not None and inst.aliases == aliases:
        return [*copy_in, EnterSubParser(inst.name, inst.states)]
    if inst.states is not None:
        _check_again(inst, call)
    outer = pc.ctx
    pc.ctx = BlockContext("parser", decl.name, outer.called_actions)
    states = pc.parser_states(decl, inner, inst.locals_)
    pc.ctx = outer
    if inst.states is None:
        inst.states, inst.aliases = states, aliases
    return [*copy_in, EnterSubParser(inst.name, states)]


def _check_again(inst: BlockInstanceEntity, call: s.CallExpr) -> None:
    """A block applied again with other `out`/`inout` arguments is checked again for them
    (they are its body's names for those arguments), which only a block declaring nothing
    but variables and constants allows: anything else would be declared twice."""
    for item in inst.decl.locals:
        if not isinstance(item, s.VarDecl | s.ConstDecl):
            what = (
                f"{inst.name} is applied again with other out/inout arguments: p4switch does"
                " this only for a block declaring nothing but variables and constants"
            )
            raise P4CompileError.at(call.loc, what)


def control_instance(
    pc: ProgramChecker, st: s.Instantiation, scope: Scope, prefix: str, locals_: list[ir.Var]
) -> None:
    """`C(args) c;` in a control: `c.apply(...)` runs C's body in place (`_apply_control`)."""
    decl = pc.blocks[type_name(st.type)]
    assert isinstance(decl, s.ControlDecl)
    ctor = block_ctor_args(pc, decl, st, scope)
    name = control_plane_name(st.name, st.annotations, prefix)
    entity = BlockInstanceEntity("control", name, decl, ctor, st.loc, locals_)
    scope.declare(st.name, entity, st.loc)


def block_ctor_args(
    pc: ProgramChecker, decl: s.ControlDecl | s.ParserDecl, st: s.Instantiation, scope: Scope
) -> dict[str, ir.Const]:
    """A block's constructor arguments: compile-time constants, by parameter name."""
    what = f"{decl.name}'s constructor"
    call = s.CallExpr(st.loc, s.Name(st.loc, decl.name), st.args)
    out = {}
    for p, a in zip(decl.ctor_params, positional(call, decl.ctor_params, what), strict=True):
        value = pc.x.expr(a, scope, pc.env.resolve(p.type))
        if not isinstance(value, ir.Const):
            raise P4CompileError.at(a.loc, "a constructor argument must be a constant")
        out[p.name] = value
    return out


def bind_block(
    pc: ProgramChecker, call: s.CallExpr, inst: BlockInstanceEntity, scope: Scope
) -> tuple[Scope, list[ir.Stmt], tuple[ir.Expr, ...]]:
    """The scope a nested block's body is checked in, for `inst.apply(args)`: its
    constructor parameters are constants; its `out` and `inout` parameters name the
    arguments themselves (returned too); its `in` ones are its own variables, set from
    the arguments by the returned statements at each apply."""
    decl = inst.decl
    args = positional(call, decl.params, f"{decl.name}.apply")
    inner = pc.top.child()
    for name, value in inst.ctor.items():
        inner.declare(name, value, decl.loc)
    copy_in: list[ir.Stmt] = []
    aliases: list[ir.Expr] = []
    for p, a in zip(decl.params, args, strict=True):
        t = pc.env.resolve(p.type)
        if isinstance(t, ir.ExternT):
            found = scope.lookup(a.name) if isinstance(a, s.Name) else None
            if not isinstance(found, PacketEntity) or found.kind != t.name:
                raise P4CompileError.at(a.loc, f"expected the {t.name} here")
            inner.declare(p.name, found, p.loc)
        elif p.direction in ("out", "inout"):
            target = pc.x.lvalue(a, scope)
            if target.type != t:
                raise P4CompileError.at(a.loc, f"parameter {p.name} is {t}, not {target.type}")
            inner.declare(p.name, target, p.loc)
            aliases.append(target)
        else:
            own = inst.own.get(p.name)
            if own is None:
                own = inst.own[p.name] = ir.Var(f"{inst.name}.{p.name}", t, in_slots=True)
                inst.locals_.append(own)
            copy_in.append(ir.Assign(ir.VarRef(own), pc.x.expr(a, scope, t)))
            inner.declare(p.name, own, p.loc)
            inner.readonly.add(own)
    return inner, copy_in, tuple(aliases)


def apply_direct(
    pc: ProgramChecker, call: s.CallExpr, type_name: str, scope: Scope, ctx: BlockContext
) -> list[ir.Stmt] | None:
    """`T.apply(...)` of a parser or control type T: an instance of it made there, named
    as T (as p4c does); None when T is no such type."""
    decl = pc.blocks.get(type_name)
    if decl is None or not pc.where:
        return None
    if decl.ctor_params:
        what = f"{type_name} takes constructor arguments: declare an instance of it"
        raise P4CompileError.at(call.loc, what)
    prefix, locals_ = pc.where[-1]
    key = (prefix, type_name)
    inst = pc.direct_instances.get(key)
    if inst is None:
        kind = "parser" if isinstance(decl, s.ParserDecl) else "control"
        name = f"{prefix}.{type_name}"
        inst = pc.direct_instances[key] = BlockInstanceEntity(
            kind, name, decl, {}, call.loc, locals_
        )
    if inst.kind == "parser":
        return apply_parser(pc, call, inst, scope, ctx)
    return apply_control(pc, call, inst, scope, ctx)


def apply_control(
    pc: ProgramChecker, call: s.CallExpr, inst: BlockInstanceEntity, scope: Scope, ctx: BlockContext
) -> list[ir.Stmt]:
    """`c.apply(args)` of a control instance, inlined: its `out` and `inout` parameters
    name the arguments themselves, its `in` ones are its own variables set from them at
    each apply; its declarations are checked at the first apply, and again at an apply with
    other `out`/`inout` arguments (`_check_again`)."""
    decl = inst.decl
    assert isinstance(decl, s.ControlDecl)
    if ctx.kind != "control":
        raise P4CompileError.at(call.loc, "a control can only be applied in a control")
    inner, copy_in, aliases = bind_block(pc, call, inst, scope)
    if inst.body is not None and inst.aliases == aliases:
        return [*copy_in, *inst.body]
    if inst.body is not None:
        _check_again(inst, call)
    outer = pc.ctx
    pc.ctx = BlockContext("control", decl.name, outer.called_actions, nested=True)
    body = pc.control_body(decl, inner, inst.name, inst.locals_)
    pc.ctx = outer
    if inst.body is None:
        inst.body, inst.aliases = body, aliases
    return [*copy_in, *body]
