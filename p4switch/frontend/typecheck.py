"""Check a parsed program and build its typed model (`ir.Program`).

Declarations are checked in order (P4 declares before use). The `V1Switch(...) main`
instantiation picks the six blocks; their parameters are matched against the block types of
v1model.p4, which fixes the headers type H and the metadata type M. Each block's parameters
then name the same three shared variables (headers, metadata, standard metadata).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from p4switch import ir
from p4switch.exceptions import P4CompileError
from p4switch.frontend import syntax as s
from p4switch.frontend.calls import BlockContext, CallLowering
from p4switch.frontend.env import (
    ActionEntity,
    BlockInstanceEntity,
    FunctionEntity,
    InstanceEntity,
    PacketEntity,
    Scope,
    TableEntity,
    TypeEnv,
    ValueSetEntity,
)
from p4switch.frontend.exprcheck import ExprChecker, positional
from p4switch.frontend.package import BLOCKS, PackageBinder, type_name
from p4switch.frontend.stmtcheck import StmtChecker
from p4switch.frontend.tables import TableChecker

UNITS = {"packets": "packets", "bytes": "bytes", "packets_and_bytes": "packets_and_bytes"}


def check_program(decls: Sequence[s.Decl], path: str) -> ir.Program:
    return ProgramChecker(path).run(decls)


def control_plane_name(local: str, annotations: tuple[ir.Annotation, ...], prefix: str) -> str:
    """The P4Info name: `prefix.local`, `@name` honoured, a leading dot meaning top level."""
    named = ir.find_annotation(annotations, "name")
    if named is not None and named.args:
        local = str(named.args[0])
        if local.startswith("."):
            return local[1:]
    return f"{prefix}.{local}" if prefix else local


class ProgramChecker:
    def __init__(self, path: str) -> None:
        self.path = path
        self.top = Scope()
        self.env = TypeEnv()
        self.x = ExprChecker(self.env)
        self.env.const_int = lambda e: self.x.const_int(e, self.top)
        self.env.instantiate = self._instantiate
        self._instances: dict[str, ir.StructT] = {}  # generic structs made, by name
        self.calls = CallLowering(self.x)
        self.calls.apply_control = self._apply_control
        self.calls.apply_parser = self._apply_parser
        self.calls.apply_direct = self._apply_direct
        self._where: list[tuple[str, list[ir.Var]]] = []  # (name prefix, locals) being checked
        self._direct: dict[tuple[str, str], BlockInstanceEntity] = {}  # T.apply() instances
        self.tables: dict[str, ir.Table] = {}
        self.stmts = StmtChecker(self.x, self.calls, self.tables)
        self.table_checker = TableChecker(self.stmts, lambda: self._noaction())
        self.table_checker.add_action = self._add_bound_action
        self.actions: dict[str, ir.Action] = {}
        self.registers: list[ir.Register] = []
        self.counters: list[ir.Counter] = []
        self.direct_counters: dict[str, InstanceEntity] = {}
        self.meters: list[ir.Meter] = []
        self.value_sets: list[ir.ValueSet] = []
        self.direct_meters: dict[str, InstanceEntity] = {}
        self.blocks: dict[str, s.ParserDecl | s.ControlDecl] = {}
        self.block_types: dict[str, s.BlockTypeDecl] = {}
        self.ctx = BlockContext("control", "")
        self.main: s.Instantiation | None = None
        self.binder = PackageBinder(self.env, self.top, self.blocks, self.block_types)

    def run(self, decls: Sequence[s.Decl]) -> ir.Program:
        for d in decls:
            self._declare(d)
        if self.main is None:
            raise P4CompileError(self.path, 1, 1, "no `main` package instantiation (V1Switch)")
        blocks, hdr, meta, sm = self.binder.bind(self.main)
        parser = self._parser(blocks["parser"], hdr, meta, sm)
        controls = {b: self._control(blocks[b], hdr, meta, sm, b) for b in BLOCKS if b != "parser"}
        return self._program(parser, controls, hdr, meta, sm)

    # --- declarations -------------------------------------------------------------------------

    def _declare(self, d: s.Decl) -> None:
        declare = _DECLARATIONS.get(type(d))
        if declare is not None:
            declare(self, d)

    def _unsupported(self, d: s.Unsupported) -> None:
        raise P4CompileError.at(d.loc, d.what)

    def _typedef(self, d: s.TypedefDecl) -> None:
        """`typedef`, and `type` (a new type): the same as its underlying type here, as after
        p4c's EliminateNewtype pass, so its values mix with the underlying type's."""
        t = self.env.resolve(d.type)
        if d.newtype and not isinstance(t, ir.BitT | ir.BoolT):
            raise P4CompileError.at(d.loc, f"a new type must be bit<N>, int<N> or bool, not {t}")
        self.env.declare(d.name, t, d.loc)

    def _struct_decl(self, d: s.StructDecl) -> None:
        if d.type_params:  # made for each use's type arguments (`_instantiate`)
            if d.name in self.env.generics or d.name in self.env.types:
                raise P4CompileError.at(d.loc, f"type {d.name!r} is already declared")
            self.env.generics[d.name] = d
            return
        self.env.declare(d.name, self._struct(d), d.loc)

    def _instantiate(self, d: s.StructDecl, args: tuple[ir.Type, ...], loc: ir.Loc) -> ir.StructT:
        """`S<bit<8>>` of `struct S<T> { ... }`: a struct named `S<bit<8>>`, T bound."""
        if len(args) != len(d.type_params):
            n = len(d.type_params)
            raise P4CompileError.at(loc, f"{d.name} takes {n} type argument(s), got {len(args)}")
        name = f"{d.name}<{', '.join(str(a) for a in args)}>"
        made = self._instances.get(name)
        if made is None:
            made = self._instances[name] = self._struct(
                d, dict(zip(d.type_params, args, strict=True)), name
            )
        return made

    def _enum_decl(self, d: s.EnumDecl) -> None:
        self.env.declare(d.name, self._enum(d), d.loc)

    def _members(self, d: s.ErrorDecl | s.MatchKindDecl) -> None:
        members = self.env.errors if isinstance(d, s.ErrorDecl) else self.env.match_kinds
        for m in d.members:
            if m in members:
                raise P4CompileError.at(d.loc, f"{d.name} member {m!r} is declared twice")
            members.append(m)

    def _extern(self, d: s.ExternDecl) -> None:
        self.env.declare(d.name, ir.ExternT(d.name), d.loc)
        if ir.find_annotation(d.annotations, "p4switch_unsupported"):
            self.env.unsupported.add(d.name)

    def _extern_function(self, d: s.ExternFunctionDecl) -> None:
        self.env.extern_functions.add(d.name)
        if ir.find_annotation(d.proto.annotations, "p4switch_unsupported"):
            self.env.unsupported.add(d.name)

    def _top_action(self, d: s.ActionDecl) -> None:
        self._action(d, self.top, "")

    def _block(self, d: s.ParserDecl | s.ControlDecl) -> None:
        if d.name in self.blocks or d.name in self.env.types:
            raise P4CompileError.at(d.loc, f"{d.name!r} is already declared")
        self.blocks[d.name] = d

    def _block_type(self, d: s.BlockTypeDecl) -> None:
        self.block_types[d.name] = d
        self.env.declare(d.name, ir.BlockT(d.kind, d.name), d.loc)

    def _top(self, d: s.TopDecl) -> None:
        st = d.stmt
        if isinstance(st, s.ConstDecl):
            self.stmts.constant(st, self.top)
        elif isinstance(st, s.Instantiation):
            decl = self.block_types.get(type_name(st.type))
            if decl is not None and decl.kind == "package":
                if st.name != "main":
                    raise P4CompileError.at(st.loc, "the package instance must be named main")
                self.main = st
            else:
                self._instance(st, self.top, "")

    def _struct(
        self, d: s.StructDecl, type_vars: dict[str, ir.Type] | None = None, name: str = ""
    ) -> ir.StructT:
        header = d.kind == "header"
        union = d.kind == "header_union"
        fields, names = [], set()
        for f in d.fields:
            if f.name in names:
                raise P4CompileError.at(f.loc, f"field {f.name!r} is declared twice")
            names.add(f.name)
            t = self.env.resolve(f.type, type_vars)
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

    def _enum(self, d: s.EnumDecl) -> ir.EnumT:
        names = [m for m, _ in d.members]
        if len(set(names)) != len(names):
            raise P4CompileError.at(d.loc, f"enum {d.name} lists a member twice")
        if d.underlying is None:
            return ir.EnumT(d.name, tuple(names), tuple(range(len(names))))
        under = self.env.resolve(d.underlying)
        if not isinstance(under, ir.BitT):
            raise P4CompileError.at(d.loc, "an enum's underlying type must be bit<N> or int<N>")
        values = []
        for _, e in d.members:
            assert e is not None
            c = self.x.expr(e, self.top, under)
            if not isinstance(c, ir.Const):
                raise P4CompileError.at(e.loc, "enum values must be constants")
            values.append(int(c.value))
        return ir.EnumT(d.name, tuple(names), tuple(values), under)

    def _instance(
        self, st: s.Instantiation, scope: Scope, prefix: str, locals_: list[ir.Var] | None = None
    ) -> None:
        kind = type_name(st.type)
        name = control_plane_name(st.name, st.annotations, prefix)
        if kind in self.env.unsupported:
            raise P4CompileError.at(st.type.loc, f"{kind} is not supported by p4switch")
        t = self.env.resolve(st.type)
        targs = t.args if isinstance(t, ir.ExternT) else ()
        if kind == "register":
            if len(targs) not in (1, 2) or not isinstance(targs[0], ir.BitT):
                raise P4CompileError.at(st.loc, "declare registers as register<bit<N>>(size)")
            size = self._ctor_args(st, scope, 1)[0]
            entity = InstanceEntity("register", name, targs[0], size, loc=st.loc)
            self.registers.append(ir.Register(name, targs[0], size, st.annotations))
        elif kind == "counter":
            size, unit = self._ctor_args(st, scope, 2, unit_at=1)
            entity = InstanceEntity("counter", name, None, size, unit, st.loc)
            self.counters.append(ir.Counter(name, size, unit, st.annotations))
        elif kind == "direct_counter":
            (unit,) = self._ctor_args(st, scope, 1, unit_at=0)
            entity = InstanceEntity("direct_counter", name, None, 0, unit, st.loc)
            self.direct_counters[name] = entity
        elif kind == "meter":
            size, unit = self._ctor_args(st, scope, 2, unit_at=1, units="MeterType")
            entity = InstanceEntity("meter", name, None, size, unit, st.loc)
            self.meters.append(ir.Meter(name, size, unit, st.annotations))
        elif kind == "direct_meter":
            if locals_ is None:
                raise P4CompileError.at(st.loc, "declare a direct meter in a control")
            (unit,) = self._ctor_args(st, scope, 1, unit_at=0, units="MeterType")
            color = ir.Var(f"{name}.color", ir.BitT(2), in_slots=True)
            locals_.append(color)
            entity = InstanceEntity("direct_meter", name, None, 0, unit, st.loc, color)
            self.direct_meters[name] = entity
        elif isinstance(t, ir.ExternT):
            what = f"extern {kind} has no implementation in p4switch (user-defined externs)"
            raise P4CompileError.at(st.loc, what)
        else:
            raise P4CompileError.at(st.loc, f"cannot instantiate {kind} here")
        names = [*(r.name for r in self.registers), *(c.name for c in self.counters)]
        names += [m.name for m in self.meters]
        if names.count(name) > 1:
            raise P4CompileError.at(st.loc, f"another object is already named {name}")
        scope.declare(st.name, entity, st.loc)

    def _ctor_args(
        self,
        st: s.Instantiation,
        scope: Scope,
        n: int,
        unit_at: int = -1,
        units: str = "CounterType",
    ) -> list:
        if len(st.args) != n:
            raise P4CompileError.at(st.loc, f"{type_name(st.type)} takes {n} argument(s)")
        out: list = []
        for i, a in enumerate(st.args):
            if i == unit_at:
                c = self.x.expr(a, scope)
                t = c.type
                if not (isinstance(c, ir.Const) and isinstance(t, ir.EnumT) and t.name == units):
                    members = ", ".join(f"{units}.{m}" for m in ("packets", "bytes"))
                    raise P4CompileError.at(a.loc, f"expected {members} or the like")
                out.append(UNITS[t.members[int(c.value)]])
            else:
                size = self.x.const_int(a, scope)
                if size <= 0:
                    raise P4CompileError.at(a.loc, "a size must be positive")
                out.append(size)
        return out

    def _action(self, d: s.ActionDecl, scope: Scope, prefix: str) -> None:
        name = control_plane_name(d.name, d.annotations, prefix)
        if name in self.actions:
            raise P4CompileError.at(d.loc, f"another action is already named {name}")
        inner = scope.child()
        params = []
        for p in d.params:
            t = self.env.resolve(p.type)
            _check_param(p, t, "action", directionless_scalar=True)
            var = ir.Var(p.name, t, in_slots=False)
            inner.declare(p.name, var, p.loc)
            if p.direction in ("", "in"):
                inner.readonly.add(var)
            pname = control_plane_name(p.name, p.annotations, "")
            params.append(ir.Param(pname, t, p.direction, var, p.annotations))
        entity = ActionEntity(name, d, tuple(params))
        scope.declare(d.name, entity, d.loc)
        ctx = BlockContext("action", self.ctx.name, self.ctx.called_actions)
        body = self.stmts.block(d.body.stmts, inner, ctx)
        self.actions[name] = ir.Action(name, tuple(params), body, d.annotations, d.loc)

    def _function(self, d: s.FunctionDecl) -> None:
        """A function, compiled as an action whose last parameter (`out`) is its value."""
        if d.type_params:
            raise P4CompileError.at(d.loc, "generic functions are not supported by p4switch")
        name = f"{d.name}()"  # never an action's name, and not in P4Info
        if self.top.lookup(d.name) is not None or name in self.actions:
            raise P4CompileError.at(d.loc, f"{d.name!r} is already declared")
        returns = self.env.resolve(d.return_type)
        if not isinstance(returns, ir.BitT | ir.BoolT | ir.VoidT):
            raise P4CompileError.at(d.loc, f"functions returning {returns} are not supported")
        inner = self.top.child()
        params = []
        for p in d.params:
            t = self.env.resolve(p.type)
            _check_param(p, t, "function", directionless_scalar=False)
            var = ir.Var(p.name, t, in_slots=False)
            inner.declare(p.name, var, p.loc)
            if p.direction in ("", "in"):
                inner.readonly.add(var)
            params.append(ir.Param(p.name, t, p.direction or "in", var, p.annotations))
        result = None
        if not isinstance(returns, ir.VoidT):
            result = ir.Var("result", returns, in_slots=False)
        ctx = BlockContext("function", d.name, self.ctx.called_actions, result)
        body = self.stmts.block(d.body.stmts, inner, ctx)
        if result is not None and not _always_returns(body):
            raise P4CompileError.at(
                d.loc, f"function {d.name} does not return a value on every path"
            )
        everything = list(params)
        if result is not None:
            everything.append(ir.Param("result", returns, "out", result))
        self.top.declare(d.name, FunctionEntity(name, d, tuple(params), returns), d.loc)
        self.actions[name] = ir.Action(
            name, tuple(everything), body, d.annotations, d.loc, function=True
        )

    def _add_bound_action(self, action: ir.Action) -> None:
        self.actions[action.name] = action
        self.ctx.called_actions.add(action.name)
        for st in action.body:
            if isinstance(st, ir.CallAction):
                self.ctx.called_actions.add(st.action)

    def _noaction(self) -> ActionEntity | None:
        found = self.top.lookup("NoAction")
        return found if isinstance(found, ActionEntity) else None

    def _parser(self, d: s.ParserDecl | s.ControlDecl, *shared: ir.Var) -> ir.Parser:
        assert isinstance(d, s.ParserDecl)
        scope = self.binder.block_scope(d, list(shared))
        self.ctx = BlockContext("parser", d.name, self.ctx.called_actions)
        locals_: list[ir.Var] = []
        states = self._parser_states(d, scope, locals_)
        return ir.Parser(d.name, states, tuple(locals_))

    def _parser_states(
        self, d: s.ParserDecl, scope: Scope, locals_: list[ir.Var]
    ) -> tuple[ir.ParserState, ...]:
        """A parser's states, `start` first (with the parser-level variables' initialisers
        ahead of its body), each `sub.apply(...)` of a sub-parser spliced in."""
        self._where.append((d.name, locals_))
        try:
            return self._parser_states_in(d, scope, locals_)
        finally:
            self._where.pop()

    def _parser_states_in(
        self, d: s.ParserDecl, scope: Scope, locals_: list[ir.Var]
    ) -> tuple[ir.ParserState, ...]:
        init: list[ir.Stmt] = []
        for st in d.locals:
            if isinstance(st, s.VarDecl):
                var, stmts = self.stmts.declare_block_var(st, scope, self.ctx)
                locals_.append(var)
                init += stmts
            elif isinstance(st, s.ConstDecl):
                self.stmts.constant(st, scope)
            elif isinstance(st, s.Unsupported):
                raise P4CompileError.at(st.loc, st.what)
            elif isinstance(st, s.ValueSetDecl):
                self._value_set(st, scope, d.name)
            elif isinstance(st, s.Instantiation):
                if not isinstance(self.blocks.get(type_name(st.type)), s.ParserDecl):
                    what = "only parsers can be instantiated in a parser"
                    raise P4CompileError.at(st.loc, what)
                sub = self.blocks[type_name(st.type)]
                ctor = self._block_ctor_args(sub, st, scope)
                entity = BlockInstanceEntity("parser", st.name, sub, ctor, st.loc, locals_)
                scope.declare(st.name, entity, st.loc)
            else:
                raise P4CompileError.at(st.loc, "this declaration is not supported in a parser")
        names = {st.name for st in d.states}
        if "start" not in names:
            raise P4CompileError.at(d.loc, f"parser {d.name} has no start state")
        states = {st.name: self.stmts.state(st, scope, self.ctx, names) for st in d.states}
        start = states.pop("start")
        start = ir.ParserState(start.name, tuple(init) + start.body, start.keys, start.cases)
        return tuple(s for st in (start, *states.values()) for s in _splice_sub_parsers(st))

    def _value_set(self, st: s.ValueSetDecl, scope: Scope, prefix: str) -> None:
        t = self.env.resolve(st.type)
        if not isinstance(t, ir.BitT) or t.signed:
            raise P4CompileError.at(st.loc, f"value sets of {t} are not supported (use bit<N>)")
        size = self.x.const_int(st.size, scope)
        if size <= 0:
            raise P4CompileError.at(st.size.loc, "a value set's size must be positive")
        name = control_plane_name(st.name, st.annotations, prefix)
        if any(v.name == name for v in self.value_sets):
            raise P4CompileError.at(st.loc, f"another value set is already named {name}")
        self.value_sets.append(ir.ValueSet(name, t.width, size, st.annotations))
        scope.declare(st.name, ValueSetEntity(name, t.width), st.loc)

    def _apply_parser(
        self, call: s.CallExpr, inst: BlockInstanceEntity, scope: Scope, ctx: BlockContext
    ) -> list[ir.Stmt]:
        """`sub.apply(args)` in a parser state: a marker the state is split at
        (`_splice_sub_parsers`), after the statements setting the sub-parser's `in`
        parameters. The sub-parser's states are checked once, at the first apply."""
        decl = inst.decl
        assert isinstance(decl, s.ParserDecl)
        if ctx.kind != "parser":
            raise P4CompileError.at(call.loc, "a parser can only be applied in a parser")
        inner, copy_in, aliases = self._bind_block(call, inst, scope)
        if inst.states is None:
            outer = self.ctx
            self.ctx = BlockContext("parser", decl.name, outer.called_actions)
            inst.states = self._parser_states(decl, inner, inst.locals_)
            inst.aliases = aliases
            self.ctx = outer
        elif inst.aliases != aliases:
            what = f"{inst.name} is applied again with other out/inout arguments (not supported)"
            raise P4CompileError.at(call.loc, what)
        return [*copy_in, _EnterSubParser(inst.name, inst.states)]

    def _control(
        self, d: s.ParserDecl | s.ControlDecl, hdr: ir.Var, meta: ir.Var, sm: ir.Var, role: str
    ) -> ir.Control:
        assert isinstance(d, s.ControlDecl)
        scope = self.binder.block_scope(d, [hdr, meta, sm])
        kind = "deparser" if role == "deparser" else "control"
        self.ctx = BlockContext(kind, d.name, self.ctx.called_actions)
        locals_: list[ir.Var] = []
        body = self._control_body(d, scope, d.name, locals_)
        return ir.Control(d.name, body, tuple(locals_))

    def _control_body(
        self, d: s.ControlDecl, scope: Scope, prefix: str, locals_: list[ir.Var]
    ) -> tuple[ir.Stmt, ...]:
        """A control's declarations, then its apply block (as statements, declarations'
        initialisers first). Control-level variables (and those of the controls it applies)
        go to `locals_`; the control-plane names of its tables and actions start `prefix`."""
        self._where.append((prefix, locals_))
        try:
            return self._control_body_in(d, scope, prefix, locals_)
        finally:
            self._where.pop()

    def _control_body_in(
        self, d: s.ControlDecl, scope: Scope, prefix: str, locals_: list[ir.Var]
    ) -> tuple[ir.Stmt, ...]:
        init: list[ir.Stmt] = []
        for item in d.locals:
            if isinstance(item, s.VarDecl):
                var, stmts = self.stmts.declare_block_var(item, scope, self.ctx)
                locals_.append(var)
                init += stmts
            elif isinstance(item, s.ConstDecl):
                self.stmts.constant(item, scope)
            elif isinstance(item, s.Instantiation):
                if isinstance(self.blocks.get(type_name(item.type)), s.ControlDecl):
                    self._control_instance(item, scope, prefix, locals_)
                else:
                    self._instance(item, scope, prefix, locals_)
            elif isinstance(item, s.ActionDecl):
                self._action(item, scope, prefix)
            elif isinstance(item, s.TableDecl):
                name = control_plane_name(item.name, item.annotations, prefix)
                if name in self.tables:
                    raise P4CompileError.at(item.loc, f"another table is already named {name}")
                self.tables[name] = self.table_checker.check(item, name, scope)
                scope.declare(item.name, TableEntity(name, item), item.loc)
            elif isinstance(item, s.Unsupported):
                raise P4CompileError.at(item.loc, item.what)
            else:
                raise P4CompileError.at(item.loc, "this declaration is not supported in a control")
        body = self.stmts.block(d.apply.stmts, scope.child(), self.ctx)
        return tuple(init) + body

    def _control_instance(
        self, st: s.Instantiation, scope: Scope, prefix: str, locals_: list[ir.Var]
    ) -> None:
        """`C(args) c;` in a control: `c.apply(...)` runs C's body in place (`_apply_control`)."""
        decl = self.blocks[type_name(st.type)]
        assert isinstance(decl, s.ControlDecl)
        ctor = self._block_ctor_args(decl, st, scope)
        name = control_plane_name(st.name, st.annotations, prefix)
        entity = BlockInstanceEntity("control", name, decl, ctor, st.loc, locals_)
        scope.declare(st.name, entity, st.loc)

    def _block_ctor_args(
        self, decl: s.ControlDecl | s.ParserDecl, st: s.Instantiation, scope: Scope
    ) -> dict[str, ir.Const]:
        """A block's constructor arguments: compile-time constants, by parameter name."""
        what = f"{decl.name}'s constructor"
        call = s.CallExpr(st.loc, s.Name(st.loc, decl.name), st.args)
        out = {}
        for p, a in zip(decl.ctor_params, positional(call, decl.ctor_params, what), strict=True):
            value = self.x.expr(a, scope, self.env.resolve(p.type))
            if not isinstance(value, ir.Const):
                raise P4CompileError.at(a.loc, "a constructor argument must be a constant")
            out[p.name] = value
        return out

    def _bind_block(
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

    def _apply_direct(
        self, call: s.CallExpr, type_name: str, scope: Scope, ctx: BlockContext
    ) -> list[ir.Stmt] | None:
        """`T.apply(...)` of a parser or control type T: an instance of it made there, named
        as T (as p4c does); None when T is no such type."""
        decl = self.blocks.get(type_name)
        if decl is None or not self._where:
            return None
        if decl.ctor_params:
            what = f"{type_name} takes constructor arguments: declare an instance of it"
            raise P4CompileError.at(call.loc, what)
        prefix, locals_ = self._where[-1]
        key = (prefix, type_name)
        inst = self._direct.get(key)
        if inst is None:
            kind = "parser" if isinstance(decl, s.ParserDecl) else "control"
            name = f"{prefix}.{type_name}"
            inst = self._direct[key] = BlockInstanceEntity(kind, name, decl, {}, call.loc, locals_)
        if inst.kind == "parser":
            return self._apply_parser(call, inst, scope, ctx)
        return self._apply_control(call, inst, scope, ctx)

    def _apply_control(
        self, call: s.CallExpr, inst: BlockInstanceEntity, scope: Scope, ctx: BlockContext
    ) -> list[ir.Stmt]:
        """`c.apply(args)` of a control instance, inlined: its `out` and `inout` parameters
        name the arguments themselves, its `in` ones are its own variables set from them at
        each apply; its declarations are checked once, at the first apply (a later apply must
        pass the same `out`/`inout` arguments)."""
        decl = inst.decl
        assert isinstance(decl, s.ControlDecl)
        if ctx.kind != "control":
            raise P4CompileError.at(call.loc, "a control can only be applied in a control")
        inner, copy_in, aliases = self._bind_block(call, inst, scope)
        if inst.body is None:
            outer = self.ctx
            self.ctx = BlockContext("control", decl.name, outer.called_actions, nested=True)
            inst.body = self._control_body(decl, inner, inst.name, inst.locals_)
            inst.aliases = aliases
            self.ctx = outer
        elif inst.aliases != aliases:
            what = f"{inst.name} is applied again with other out/inout arguments (not supported)"
            raise P4CompileError.at(call.loc, what)
        return [*copy_in, *inst.body]

    def _program(
        self, parser: ir.Parser, c: dict[str, ir.Control], hdr: ir.Var, meta: ir.Var, sm: ir.Var
    ) -> ir.Program:
        used = set(self.ctx.called_actions)
        for t in self.tables.values():
            used.update(r.action for r in t.actions)
        directs = []
        for name, entity in self.direct_counters.items():
            table = self.table_checker.direct_counters.get(name)
            if table is None:
                raise P4CompileError.at(
                    entity.loc, f"direct counter {name} is not attached to a table"
                )
            directs.append(ir.DirectCounter(name, entity.unit, table))
        direct_meters = []
        for name, entity in self.direct_meters.items():
            table = self.table_checker.direct_meters.get(name)
            if table is None:
                raise P4CompileError.at(
                    entity.loc, f"direct meter {name} is not attached to a table"
                )
            assert entity.color is not None
            direct_meters.append(ir.DirectMeter(name, entity.unit, table, entity.color))
        return ir.Program(
            path=self.path,
            headers=hdr,
            meta=meta,
            standard_metadata=sm,
            parser=parser,
            verify_checksum=c["verify_checksum"],
            ingress=c["ingress"],
            egress=c["egress"],
            compute_checksum=c["compute_checksum"],
            deparser=c["deparser"],
            actions=tuple(a for a in self.actions.values() if a.name in used),
            tables=tuple(self.tables.values()),
            registers=tuple(self.registers),
            counters=tuple(self.counters),
            direct_counters=tuple(directs),
            meters=tuple(self.meters),
            value_sets=tuple(self.value_sets),
            direct_meters=tuple(direct_meters),
            controller_headers=self._controller_headers(),
            errors=tuple(self.env.errors),
        )

    def _controller_headers(self) -> tuple[ir.ControllerHeader, ...]:
        out = []
        for t in self.env.types.values():
            if isinstance(t, ir.StructT) and t.is_header:
                anno = ir.find_annotation(t.annotations, "controller_header")
                if anno is not None and anno.args:
                    out.append(ir.ControllerHeader(str(anno.args[0]), t, t.annotations))
        return tuple(out)


@dataclass(frozen=True)
class _EnterSubParser(ir.Stmt):
    """Where a parser state applies a sub-parser; never leaves the front end."""

    instance: str
    states: tuple[ir.ParserState, ...]  # the sub-parser's, `start` first, its own names


def _splice_sub_parsers(state: ir.ParserState) -> list[ir.ParserState]:
    """`state` split at each sub-parser it applies: the statements before the apply, then a
    transition into a copy of the sub-parser's states (renamed for this apply), whose
    `accept` goes on to a state with the statements after the apply and `state`'s own
    transition."""
    body = state.body
    at = next((i for i, st in enumerate(body) if isinstance(st, _EnterSubParser)), None)
    if at is None:
        return [state]
    enter = body[at]
    assert isinstance(enter, _EnterSubParser)
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
    return [head, *sub, *_splice_sub_parsers(rest)]


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


# How each kind of top-level declaration is taken in (any other kind is ignored).
_DECLARATIONS: dict[type[s.Decl], Callable[[ProgramChecker, Any], None]] = {
    s.Unsupported: ProgramChecker._unsupported,
    s.TypedefDecl: ProgramChecker._typedef,
    s.StructDecl: ProgramChecker._struct_decl,
    s.EnumDecl: ProgramChecker._enum_decl,
    s.ErrorDecl: ProgramChecker._members,
    s.MatchKindDecl: ProgramChecker._members,
    s.ExternDecl: ProgramChecker._extern,
    s.ExternFunctionDecl: ProgramChecker._extern_function,
    s.ActionDecl: ProgramChecker._top_action,
    s.FunctionDecl: ProgramChecker._function,
    s.ParserDecl: ProgramChecker._block,
    s.ControlDecl: ProgramChecker._block,
    s.BlockTypeDecl: ProgramChecker._block_type,
    s.TopDecl: ProgramChecker._top,
}
