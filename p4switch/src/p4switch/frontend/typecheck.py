"""Check a parsed program and build its typed model (`ir.Program`).

Declarations are checked in order (P4 declares before use). The `V1Switch(...) main`
instantiation picks the six blocks; their parameters are matched against the block types of
v1model.p4, which fixes the headers type H and the metadata type M. Each block's parameters
then name the same three shared variables (headers, metadata, standard metadata).
"""

from __future__ import annotations

from collections.abc import Sequence

from p4switch import ir
from p4switch.exceptions import P4CompileError
from p4switch.frontend import syntax as s
from p4switch.frontend.blocks import BlockInliner, splice_sub_parsers
from p4switch.frontend.calls import CallLowering
from p4switch.frontend.context import BlockContext, CalledActions
from p4switch.frontend.declcheck import DeclarationChecker
from p4switch.frontend.env import ActionEntity, InstanceEntity, Scope, TypeEnv
from p4switch.frontend.exprcheck import ExprChecker
from p4switch.frontend.package import BLOCKS, PackageBinder, type_name
from p4switch.frontend.stmtcheck import StmtChecker
from p4switch.frontend.tables import TableChecker


def check_program(decls: Sequence[s.Decl], path: str) -> ir.Program:
    return ProgramChecker(path).run(decls)


class ProgramChecker:
    """One program's check: what it builds up (types, names, the actions, tables and extern
    instances declared) and the checkers that fill it in. The declaration checker
    (`declcheck`) takes in each declaration; the block inliner (`blocks`) the parsers and
    controls applied inside others; the six blocks of `main` are checked here."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.top = Scope()
        self.env = TypeEnv()
        self.x = ExprChecker(self.env)
        self.env.const_int = lambda e: self.x.const_int(e, self.top)
        self.calls = CallLowering(self.x)
        self.where: list[tuple[str, list[ir.Var]]] = []  # (name prefix, locals) being checked
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
        self.declarations = DeclarationChecker(self)
        self.env.instantiate = self.declarations.instantiate
        self.inliner = BlockInliner(self)
        self.calls.apply_control = self.inliner.apply_control
        self.calls.apply_parser = self.inliner.apply_parser
        self.calls.apply_direct = self.inliner.apply_direct

    def run(self, decls: Sequence[s.Decl]) -> ir.Program:
        for d in decls:
            self.declarations.declare(d)
        if self.main is None:
            raise P4CompileError(self.path, 1, 1, "no `main` package instantiation (V1Switch)")
        blocks, hdr, meta, sm = self.binder.bind(self.main)
        parser = self._parser(blocks["parser"], hdr, meta, sm)
        controls = {b: self._control(blocks[b], hdr, meta, sm, b) for b in BLOCKS if b != "parser"}
        return self._program(parser, controls, hdr, meta, sm)

    def _add_bound_action(self, action: ir.Action, calls: CalledActions) -> None:
        self.actions[action.name] = action
        self.ctx.called_actions.add(action.name)
        self.ctx.called_actions.update(calls)
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
                self.declarations.value_set(st, scope, d.name)
            elif isinstance(st, s.Instantiation):
                self.inliner.parser_instance(st, scope, locals_)
            else:
                raise P4CompileError.at(st.loc, "this declaration is not supported in a parser")
        names = {st.name for st in d.states}
        if "start" not in names:
            raise P4CompileError.at(d.loc, f"parser {d.name} has no start state")
        states = {st.name: self.stmts.state(st, scope, self.ctx, names) for st in d.states}
        start = states.pop("start")
        start = ir.ParserState(start.name, tuple(init) + start.body, start.keys, start.cases)
        return tuple(s for st in (start, *states.values()) for s in splice_sub_parsers(st))

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
                    self.inliner.control_instance(item, scope, prefix, locals_)
                else:
                    self.declarations.instance(item, scope, prefix, locals_)
            elif isinstance(item, s.ActionDecl):
                self.declarations.action(item, scope, prefix)
            elif isinstance(item, s.TableDecl):
                self.declarations.table(item, scope, prefix)
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
            directs.append(ir.DirectCounter(name, entity.unit, table, entity.annotations))
        direct_meters = []
        for name, entity in self.direct_meters.items():
            table = self.table_checker.direct_meters.get(name)
            if table is None:
                raise P4CompileError.at(
                    entity.loc, f"direct meter {name} is not attached to a table"
                )
            assert entity.color is not None
            direct_meters.append(
                ir.DirectMeter(name, entity.unit, table, entity.color, entity.annotations)
            )
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
            package_annotations=self.main.annotations if self.main is not None else (),
        )

    def _controller_headers(self) -> tuple[ir.ControllerHeader, ...]:
        out = []
        for t in self.env.types.values():
            if isinstance(t, ir.StructT) and t.is_header:
                anno = ir.find_annotation(t.annotations, "controller_header")
                if anno is not None and anno.args:
                    out.append(ir.ControllerHeader(str(anno.args[0]), t, t.annotations))
        return tuple(out)
