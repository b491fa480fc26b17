"""Check a parsed program and build its typed model (`ir.Program`).

Declarations are checked in order (P4 declares before use). The `V1Switch(...) main`
instantiation picks the six blocks; their parameters are matched against the block types of
v1model.p4, which fixes the headers type H and the metadata type M. Each block's parameters
then name the same three shared variables (headers, metadata, standard metadata).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any

from p4switch import ir
from p4switch.exceptions import P4CompileError
from p4switch.frontend import blocks, declcheck
from p4switch.frontend import syntax as s
from p4switch.frontend.calls import CallLowering
from p4switch.frontend.context import BlockContext
from p4switch.frontend.env import (
    ActionEntity,
    BlockInstanceEntity,
    InstanceEntity,
    Scope,
    TableEntity,
    TypeEnv,
    control_plane_name,
)
from p4switch.frontend.exprcheck import ExprChecker
from p4switch.frontend.package import BLOCKS, PackageBinder, type_name
from p4switch.frontend.stmtcheck import StmtChecker
from p4switch.frontend.tables import TableChecker

UNITS = {"packets": "packets", "bytes": "bytes", "packets_and_bytes": "packets_and_bytes"}


def check_program(decls: Sequence[s.Decl], path: str) -> ir.Program:
    return ProgramChecker(path).run(decls)


class ProgramChecker:
    def __init__(self, path: str) -> None:
        self.path = path
        self.top = Scope()
        self.env = TypeEnv()
        self.x = ExprChecker(self.env)
        self.env.const_int = lambda e: self.x.const_int(e, self.top)
        self.env.instantiate = functools.partial(declcheck.instantiate, self)
        self.generic_instances: dict[str, ir.StructT] = {}  # generic structs made, by name
        self.calls = CallLowering(self.x)
        self.calls.apply_control = functools.partial(blocks.apply_control, self)
        self.calls.apply_parser = functools.partial(blocks.apply_parser, self)
        self.calls.apply_direct = functools.partial(blocks.apply_direct, self)
        self.where: list[tuple[str, list[ir.Var]]] = []  # (name prefix, locals) being checked
        # T.apply() instances
        self.direct_instances: dict[tuple[str, str], BlockInstanceEntity] = {}
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
        self.env.declare(d.name, declcheck.struct_type(self, d), d.loc)

    def _enum_decl(self, d: s.EnumDecl) -> None:
        self.env.declare(d.name, declcheck.enum_type(self, d), d.loc)

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
        declcheck.action(self, d, self.top, "")

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
        elif kind in ("action_profile", "action_selector"):
            entity = self.table_checker.profiles.declare(st, name, scope)
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
    ) -> list[Any]:
        if len(st.args) != n:
            raise P4CompileError.at(st.loc, f"{type_name(st.type)} takes {n} argument(s)")
        out: list[Any] = []
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
        states = self.parser_states(d, scope, locals_)
        return ir.Parser(d.name, states, tuple(locals_))

    def parser_states(
        self, d: s.ParserDecl, scope: Scope, locals_: list[ir.Var]
    ) -> tuple[ir.ParserState, ...]:
        """A parser's states, `start` first (with the parser-level variables' initialisers
        ahead of its body), each `sub.apply(...)` of a sub-parser spliced in."""
        self.where.append((d.name, locals_))
        try:
            return self._parser_states_in(d, scope, locals_)
        finally:
            self.where.pop()

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
                blocks.value_set(self, st, scope, d.name)
            elif isinstance(st, s.Instantiation):
                if not isinstance(self.blocks.get(type_name(st.type)), s.ParserDecl):
                    what = "only parsers can be instantiated in a parser"
                    raise P4CompileError.at(st.loc, what)
                sub = self.blocks[type_name(st.type)]
                ctor = blocks.block_ctor_args(self, sub, st, scope)
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
        return tuple(s for st in (start, *states.values()) for s in blocks.splice_sub_parsers(st))

    def _control(
        self, d: s.ParserDecl | s.ControlDecl, hdr: ir.Var, meta: ir.Var, sm: ir.Var, role: str
    ) -> ir.Control:
        assert isinstance(d, s.ControlDecl)
        scope = self.binder.block_scope(d, [hdr, meta, sm])
        kind = "deparser" if role == "deparser" else "control"
        self.ctx = BlockContext(kind, d.name, self.ctx.called_actions)
        locals_: list[ir.Var] = []
        body = self.control_body(d, scope, d.name, locals_)
        return ir.Control(d.name, body, tuple(locals_))

    def control_body(
        self, d: s.ControlDecl, scope: Scope, prefix: str, locals_: list[ir.Var]
    ) -> tuple[ir.Stmt, ...]:
        """A control's declarations, then its apply block (as statements, declarations'
        initialisers first). Control-level variables (and those of the controls it applies)
        go to `locals_`; the control-plane names of its tables and actions start `prefix`."""
        self.where.append((prefix, locals_))
        try:
            return self._control_body_in(d, scope, prefix, locals_)
        finally:
            self.where.pop()

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
                    blocks.control_instance(self, item, scope, prefix, locals_)
                else:
                    self._instance(item, scope, prefix, locals_)
            elif isinstance(item, s.ActionDecl):
                declcheck.action(self, item, scope, prefix)
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

    def _program(
        self, parser: ir.Parser, c: dict[str, ir.Control], hdr: ir.Var, meta: ir.Var, sm: ir.Var
    ) -> ir.Program:
        called = self.ctx.called_actions
        listed = {r.action for t in self.tables.values() for r in t.actions}
        used, inlined = called | listed, called.in_actions - called.elsewhere - listed  # p4c's
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
            inlined_actions=frozenset(inlined),
            tables=tuple(self.tables.values()),
            registers=tuple(self.registers),
            counters=tuple(self.counters),
            direct_counters=tuple(directs),
            meters=tuple(self.meters),
            value_sets=tuple(self.value_sets),
            digests=tuple(self.env.digests.values()),
            action_profiles=self.table_checker.profiles.program(),
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
    s.FunctionDecl: lambda pc, d: declcheck.function(pc, d),
    s.ParserDecl: ProgramChecker._block,
    s.ControlDecl: ProgramChecker._block,
    s.BlockTypeDecl: ProgramChecker._block_type,
    s.TopDecl: ProgramChecker._top,
}
