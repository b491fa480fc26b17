"""Parsers and controls applied inside others, inlined.

`c.apply(...)` of a control instance runs the control's body in place; `p.apply(...)` of a
sub-parser marks the state, which `splice_sub_parsers` splits around the sub-parser's renamed
states; `T.apply(...)` of a parser or control type applies an instance of T made in place.
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
from p4switch.frontend.env import BlockInstanceEntity, PacketEntity, Scope, control_plane_name
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


class BlockInliner:
    """Instances of parsers and controls declared in others, and their applies, inlined into
    the block the program checker (`ProgramChecker`) is checking; it checks their bodies."""

    def __init__(self, program: ProgramChecker) -> None:
        self.program = program
        self.env = program.env
        self.top = program.top
        self.x = program.x
        # `T.apply()` instances, by the applying block's name prefix and T
        self.direct_instances: dict[tuple[str, str], BlockInstanceEntity] = {}

    # --- instances ------------------------------------------------------------------------------

    def parser_instance(self, st: s.Instantiation, scope: Scope, locals_: list[ir.Var]) -> None:
        """`P(args) p;` in a parser: `p.apply(...)` runs P's states in place (`apply_parser`)."""
        if not isinstance(self.program.blocks.get(type_name(st.type)), s.ParserDecl):
            what = "only parsers can be instantiated in a parser"
            raise P4CompileError.at(st.loc, what)
        sub = self.program.blocks[type_name(st.type)]
        ctor = self._ctor_args(sub, st, scope)
        entity = BlockInstanceEntity("parser", st.name, sub, ctor, st.loc, locals_)
        scope.declare(st.name, entity, st.loc)

    def control_instance(
        self, st: s.Instantiation, scope: Scope, prefix: str, locals_: list[ir.Var]
    ) -> None:
        """`C(args) c;` in a control: `c.apply(...)` runs C's body in place (`apply_control`)."""
        decl = self.program.blocks[type_name(st.type)]
        assert isinstance(decl, s.ControlDecl)
        ctor = self._ctor_args(decl, st, scope)
        name = control_plane_name(st.name, st.annotations, prefix)
        entity = BlockInstanceEntity("control", name, decl, ctor, st.loc, locals_)
        scope.declare(st.name, entity, st.loc)

    def _ctor_args(
        self, decl: s.ControlDecl | s.ParserDecl, st: s.Instantiation, scope: Scope
    ) -> dict[str, ir.Const | BlockInstanceEntity]:
        """A block's constructor arguments, by parameter name: compile-time constants, or
        instances of parsers or controls declared before (`C2(c1) c2;`, C2 applying its
        parameter applies c1: one instance, wherever it is applied)."""
        what = f"{decl.name}'s constructor"
        call = s.CallExpr(st.loc, s.Name(st.loc, decl.name), st.args)
        out: dict[str, ir.Const | BlockInstanceEntity] = {}
        for p, a in zip(decl.ctor_params, positional(call, decl.ctor_params, what), strict=True):
            instance = self._instance_arg(p, a, scope)
            if instance is not None:
                out[p.name] = instance
                continue
            value = self.x.expr(a, scope, self.env.resolve(p.type))
            if not isinstance(value, ir.Const):
                raise P4CompileError.at(a.loc, "a constructor argument must be a constant")
            out[p.name] = value
        return out

    def _instance_arg(
        self, p: s.ParamDecl, a: s.ExprSyntax, scope: Scope
    ) -> BlockInstanceEntity | None:
        """The instance passed for constructor parameter `p` when `p`'s type is a parser or
        control type (None when it is not); the instance's type must be of that kind and
        have the same parameters' types."""
        expected = self._block_type(p.type)
        if expected is None:
            return None
        kind, name, params = expected
        found = scope.lookup(a.name) if isinstance(a, s.Name) else None
        if not isinstance(found, BlockInstanceEntity) or found.kind != kind:
            raise P4CompileError.at(a.loc, f"expected an instance of {kind} type {name} here")
        given = [(q.direction, self.env.resolve(q.type)) for q in found.decl.params]
        if given != [(q.direction, self.env.resolve(q.type)) for q in params]:
            what = f"{found.decl.name}'s parameters are not those of {name}"
            raise P4CompileError.at(a.loc, what)
        return found

    def _block_type(self, t: s.TypeRef) -> tuple[str, str, tuple[s.ParamDecl, ...]] | None:
        """The kind ("parser" or "control"), name and parameters of the parser or control
        type `t` names (declared as a type, or a parser or control itself), if it names one."""
        if not isinstance(t, s.NamedTypeRef) or t.args:
            return None
        declared = self.program.block_types.get(t.name)
        if declared is not None and declared.kind in ("parser", "control"):
            return declared.kind, declared.name, declared.params
        block = self.program.blocks.get(t.name)
        if block is None:
            return None
        return "parser" if isinstance(block, s.ParserDecl) else "control", block.name, block.params

    # --- applies --------------------------------------------------------------------------------

    def apply_parser(
        self, call: s.CallExpr, inst: BlockInstanceEntity, scope: Scope, ctx: BlockContext
    ) -> list[ir.Stmt]:
        """`sub.apply(args)` in a parser state: a marker the state is split at
        (`splice_sub_parsers`), after the statements setting the sub-parser's `in`
        parameters. The sub-parser's states are checked at the first apply, and again at an
        apply with other `out`/`inout` arguments."""
        decl = inst.decl
        assert isinstance(decl, s.ParserDecl)
        if ctx.kind != "parser":
            raise P4CompileError.at(call.loc, "a parser can only be applied in a parser")
        inner, copy_in, aliases = self._bind(call, inst, scope)
        if inst.states is not None and inst.aliases == aliases:
            return [*copy_in, EnterSubParser(inst.name, inst.states)]
        if inst.states is not None:
            _check_again(inst, call)
        outer = self.program.ctx
        self.program.ctx = BlockContext("parser", decl.name, outer.called_actions)
        states = self.program.parser_states(decl, inner, inst.locals_)
        self.program.ctx = outer
        if inst.states is None:
            inst.states, inst.aliases = states, aliases
        return [*copy_in, EnterSubParser(inst.name, states)]

    def apply_control(
        self, call: s.CallExpr, inst: BlockInstanceEntity, scope: Scope, ctx: BlockContext
    ) -> list[ir.Stmt]:
        """`c.apply(args)` of a control instance, inlined: its `out` and `inout` parameters
        name the arguments themselves, its `in` ones are its own variables set from them at
        each apply; its declarations are checked at the first apply, and again at an apply
        with other `out`/`inout` arguments (`_check_again`)."""
        decl = inst.decl
        assert isinstance(decl, s.ControlDecl)
        if ctx.kind != "control":
            raise P4CompileError.at(call.loc, "a control can only be applied in a control")
        inner, copy_in, aliases = self._bind(call, inst, scope)
        if inst.body is not None and inst.aliases == aliases:
            return [*copy_in, *inst.body]
        if inst.body is not None:
            _check_again(inst, call)
        outer = self.program.ctx
        self.program.ctx = BlockContext("control", decl.name, outer.called_actions, nested=True)
        body = self.program.control_body(decl, inner, inst.name, inst.locals_)
        self.program.ctx = outer
        if inst.body is None:
            inst.body, inst.aliases = body, aliases
        return [*copy_in, *body]

    def apply_direct(
        self, call: s.CallExpr, type_name: str, scope: Scope, ctx: BlockContext
    ) -> list[ir.Stmt] | None:
        """`T.apply(...)` of a parser or control type T: an instance of it made there, named
        as T (as p4c does); None when T is no such type."""
        decl = self.program.blocks.get(type_name)
        if decl is None or not self.program.where:
            return None
        if decl.ctor_params:
            what = f"{type_name} takes constructor arguments: declare an instance of it"
            raise P4CompileError.at(call.loc, what)
        prefix, locals_ = self.program.where[-1]
        key = (prefix, type_name)
        inst = self.direct_instances.get(key)
        if inst is None:
            kind = "parser" if isinstance(decl, s.ParserDecl) else "control"
            name = f"{prefix}.{type_name}"
            inst = self.direct_instances[key] = BlockInstanceEntity(
                kind, name, decl, {}, call.loc, locals_
            )
        if inst.kind == "parser":
            return self.apply_parser(call, inst, scope, ctx)
        return self.apply_control(call, inst, scope, ctx)

    def _bind(
        self, call: s.CallExpr, inst: BlockInstanceEntity, scope: Scope
    ) -> tuple[Scope, list[ir.Stmt], tuple[ir.Expr, ...]]:
        """The scope a nested block's body is checked in, for `inst.apply(args)`: its
        constructor parameters are constants; its `out` and `inout` parameters name the
        arguments themselves (returned too); its `in` ones are its own variables, set from
        the arguments by the returned statements at each apply."""
        decl = inst.decl
        args = positional(call, decl.params, f"{decl.name}.apply")
        inner = self.top.child()
        for name, value in inst.ctor.items():
            inner.declare(name, value, decl.loc)
        copy_in: list[ir.Stmt] = []
        aliases: list[ir.Expr] = []
        for p, a in zip(decl.params, args, strict=True):
            t = self.env.resolve(p.type)
            if isinstance(t, ir.ExternT):
                found = scope.lookup(a.name) if isinstance(a, s.Name) else None
                if not isinstance(found, PacketEntity) or found.kind != t.name:
                    raise P4CompileError.at(a.loc, f"expected the {t.name} here")
                inner.declare(p.name, found, p.loc)
            elif p.direction in ("out", "inout"):
                target = self.x.lvalue(a, scope)
                if target.type != t:
                    raise P4CompileError.at(a.loc, f"parameter {p.name} is {t}, not {target.type}")
                inner.declare(p.name, target, p.loc)
                aliases.append(target)
            else:
                own = inst.own.get(p.name)
                if own is None:
                    own = inst.own[p.name] = ir.Var(f"{inst.name}.{p.name}", t, in_slots=True)
                    inst.locals_.append(own)
                copy_in.append(ir.Assign(ir.VarRef(own), self.x.expr(a, scope, t)))
                inner.declare(p.name, own, p.loc)
                inner.readonly.add(own)
        return inner, copy_in, tuple(aliases)


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
