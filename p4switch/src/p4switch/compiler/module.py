"""The whole program as one generated Python module, compiled once.

The module defines one function per action (`A<i>`), per table (`apply_T<i>` returns hit,
`run_T<i>` returns the action run), per control (`C_ingress`, ...), per parser state
(`P_<name>`), plus `parse(S, data)` and `deparse(S, out)`. It refers to the switch state
through globals (`T<i>` tables, `R<i>` register cells, `CP<i>`/`CB<i>` counter lists) that
`bind` supplies, so the code object is shared by every pipeline made from the program.
"""

from __future__ import annotations

import random
import struct
import types
from dataclasses import dataclass, field
from typing import Any

from p4switch import ir, runtime
from p4switch.compiler import bits
from p4switch.compiler.exprs import ExprCompiler, Storage, literal
from p4switch.compiler.layout import PAYLOAD, Layout, field_list_slots, leaves
from p4switch.compiler.source import Source, hoist_invariant_fields
from p4switch.compiler.stmts import Block, Names, StmtCompiler
from p4switch.compiler.support import (
    HASHES,
    PARSER_STEPS,
    ControlExit,
    ParserReject,
    pack_bits,
    peek,
)
from p4switch.exceptions import CompilerBug

CONTROLS = ("verify_checksum", "ingress", "egress", "compute_checksum")


@dataclass(frozen=True, eq=False)
class CompiledCode:
    """The generated module and what the pipeline needs to know about its slot layout."""

    source: str
    code: types.CodeType
    template: tuple[int, ...]
    sm: dict[str, int]  # standard metadata field -> slot
    meta_slots: tuple[int, ...]  # user metadata (reset in clones)
    field_lists: dict[int, tuple[int, ...]]  # @field_list index -> user metadata slots
    errors: tuple[str, ...]
    tables: dict[str, str]  # table -> global name of its runtime.TableState
    registers: dict[str, str]  # register -> global name of its cells
    counters: dict[str, tuple[str, str]]  # counter -> globals of its packets and bytes lists
    meters: dict[str, str] = field(default_factory=dict)  # meter -> global of its MeterState
    value_sets: dict[str, str] = field(default_factory=dict)  # value set -> its state's global
    profiles: dict[str, str] = field(default_factory=dict)  # action profile -> its state's global
    statics: dict[str, Any] = field(default_factory=dict)
    empty_controls: frozenset[str] = frozenset()  # controls whose apply block does nothing

    def bind(self, state: runtime.SwitchState, rng: random.Random) -> dict[str, Any]:
        """Run the module against `state`: the namespace holding its functions."""
        ns: dict[str, Any] = dict(self.statics)
        ns["RNG"] = rng
        ns["PAYLOAD_DATA"] = [b""]  # the current packet's payload, set by the pipeline
        ns["DIGEST"] = [None]  # (digest, values) of ingress's last digest call, for the pipeline
        for name, g in self.tables.items():
            table = state.table(name)
            ns[g] = table
            ns["L" + g] = table.lookup
        for name, g in self.registers.items():
            ns[g] = state.register(name).cells
        for name, (gp, gb) in self.counters.items():
            counter = state.counter(name)
            ns[gp], ns[gb] = counter.packets, counter.bytes
        for name, g in self.meters.items():
            ns[g] = state.meter(name)
        for name, g in self.value_sets.items():
            ns[g] = state.value_set(name)
        for name, g in self.profiles.items():
            ns[g] = state.profile(name)
        ns["CLOCK"] = state.clock
        ns["DIRECT_METER"] = runtime.direct_meter_color
        exec(self.code, ns)
        return ns


def _no_action(S: Any) -> None:
    """What a hit on an empty group of an action selector runs: nothing (as BMv2)."""


def generate(program: ir.Program) -> CompiledCode:
    return _Builder(program).build()


class _Builder:
    def __init__(self, program: ir.Program) -> None:
        self.p = program
        self.layout = Layout()
        slot_vars = [program.headers, program.meta, program.standard_metadata]
        slot_vars += list(program.parser.locals)
        for c in CONTROLS:
            slot_vars += list(getattr(program, c).locals)
        slot_vars += list(program.deparser.locals)
        for v in slot_vars:
            self.layout.add(v)
        self.storage = Storage(self.layout)
        self.names = Names()
        self.src = Source()
        self.x = ExprCompiler(self.storage, self.names.tables)
        self.stmts = StmtCompiler(self.x, self.names, self.src)
        self.statics: dict[str, Any] = {
            "ParserReject": ParserReject,
            "ControlExit": ControlExit,
            "peek": peek,
            "pack_bits": pack_bits,
            "NO_ACTION": _no_action,
            **HASHES,
        }
        self._slot_vars = slot_vars
        self._profiles = {ap.name: f"AP{i}" for i, ap in enumerate(program.action_profiles)}

    def build(self) -> CompiledCode:
        p, names = self.p, self.names
        sm = p.standard_metadata
        assert isinstance(sm.type, ir.StructT)
        names.sm = {f.name: self.layout.slot(sm, (f.name,)) for f in sm.type.fields}
        names.too_short = p.errors.index("PacketTooShort")
        names.header_too_short = p.errors.index("HeaderTooShort")
        names.invalid_argument = p.errors.index("ParserInvalidArgument")
        for i, a in enumerate(p.actions):
            names.actions[a.name] = f"A{i}"
            names.action_ir[a.name] = a
        tables = {}
        for i, t in enumerate(p.tables):
            names.tables[t.name], names.table_runs[t.name] = f"apply_T{i}", f"run_T{i}"
            tables[t.name] = f"T{i}"
        for i, r in enumerate(p.registers):
            names.registers[r.name] = (f"R{i}", r.size)
        counters = {}
        for i, counter in enumerate(p.counters):
            names.counters[counter.name] = (f"CP{i}", f"CB{i}", counter.size, counter.unit)
            counters[counter.name] = (f"CP{i}", f"CB{i}")
        for i, m in enumerate(p.meters):
            names.meters[m.name] = f"M{i}"
        for i, v in enumerate(p.value_sets):
            names.value_sets[v.name] = f"VS{i}"
        self._structs()
        self.src.line(f"# generated by p4switch from {p.path}")
        for a in p.actions:
            self._action(a)
        for t in p.tables:
            self._table(t, tables[t.name])
        for c in CONTROLS:
            self._control(getattr(p, c), f"C_{c}")
        self._parser()
        with self.src.block("def deparse(S, out):"):
            self.stmts.block(p.deparser.body, Block("deparser"))
        source = hoist_invariant_fields(self.src.text())
        try:
            code = compile(source, f"<p4switch {p.path}>", "exec")
        except (SyntaxError, RecursionError, MemoryError, ValueError) as err:
            raise CompilerBug(f"the generated Python does not compile: {err}") from err
        return CompiledCode(
            source=source,
            code=code,
            template=tuple(self.layout.template()),
            sm=names.sm,
            meta_slots=tuple(self._slots_of(p.meta)),
            field_lists=self._field_lists(),
            errors=p.errors,
            tables=tables,
            registers={n: g for n, (g, _) in names.registers.items()},
            counters=counters,
            meters=dict(names.meters),
            value_sets=dict(names.value_sets),
            profiles=dict(self._profiles),
            statics=self.statics,
            empty_controls=frozenset(c for c in CONTROLS if not getattr(p, c).body),
        )

    # --- pieces -----------------------------------------------------------------------------------

    def _structs(self) -> None:
        headers: dict[str, ir.StructT] = {}

        def walk(t: ir.Type) -> None:
            if isinstance(t, ir.StructT):
                if t.is_header:
                    headers.setdefault(t.name, t)
                for f in t.fields:
                    walk(f.type)
            elif isinstance(t, ir.StackT):
                walk(t.element)

        for v in self._slot_vars:
            walk(v.type)
        for i, (name, h) in enumerate(sorted(headers.items())):
            self.names.structs[name] = f"ST{i}"
            self.statics[f"ST{i}"] = struct.Struct(bits.struct_format(h.fixed))

    def _action(self, a: ir.Action) -> None:
        params = ", ".join(["S", *(n for p in a.params for n in self._param_names(p))])
        outs = [
            n for p in a.params if p.direction in ("out", "inout") for n in self._param_names(p)
        ]
        returns = f"return ({', '.join(outs)},)" if outs else "return"
        with self.src.block(f"def {self.names.actions[a.name]}({params}):"):
            exiting = f"({', '.join(outs)},)" if outs else ""
            self.stmts.block(a.body, Block("action", returns, exiting))
            if outs:
                self.src.line(returns)

    def _param_names(self, p: ir.Param) -> list[str]:
        """A parameter's locals: one, or one per scalar of a struct or header."""
        return [self.storage.ref(p.var, leaf) for leaf, _ in leaves(p.type)]

    def _table(self, t: ir.Table, g: str) -> None:
        actions = ", ".join(
            f"{a.action!r}: {self.names.actions[a.via or a.action]}" for a in t.actions
        )
        if t.implementation is not None:  # a hit on an empty group runs nothing
            actions += f", {runtime.EMPTY_GROUP.name!r}: NO_ACTION"
        self.src.line(f"A{g} = {{{actions}}}")
        counter = next((d for d in self.p.direct_counters if d.name == t.direct_counter), None)
        meter = next((d for d in self.p.direct_meters if d.name == t.direct_meter), None)
        plen = self.names.sm["packet_length"]
        for fn, result in (
            (self.names.tables[t.name], "entry is not None"),
            (self.names.table_runs[t.name], "call.name"),
        ):
            with self.src.block(f"def {fn}(S):"):
                if t.keys:
                    keys = "".join(f"{self.x.expr(k.expr)}, " for k in t.keys)
                    self.src.line(f"call, entry = L{g}(({keys}))")
                else:
                    self.src.line(f"call, entry = {g}.default, None")
                if t.implementation is not None:
                    self._indirect(t)
                if t.support_timeout:  # only ageing tables pay for recording hits
                    with self.src.block("if entry is not None:"):
                        self.src.line("entry.last_hit = CLOCK()")
                if counter is not None:
                    with self.src.block("if entry is not None:"):
                        self._direct_count("entry.packets", "entry.bytes", counter.unit, plen)
                    with self.src.block("else:"):
                        self._direct_count(
                            f"{g}.default_packets", f"{g}.default_bytes", counter.unit, plen
                        )
                if meter is not None:  # the hit entry's meter runs before its action
                    color = self.layout.slot(meter.color, ())
                    with self.src.block("if entry is not None:"):
                        self.src.line(
                            f"S[{color}] = DIRECT_METER(entry.meter, {meter.unit!r}, "
                            f"S[{plen}], CLOCK())"
                        )
                self.src.line(f"A{g}[call.name](S, *call.args)")
                self.src.line(f"return {result}")

    def _indirect(self, t: ir.Table) -> None:
        """A hit entry's member or group: the action it runs (a group's member chosen by the
        selector's hash of the table's selector keys, packed as a field list)."""
        ap = next(a for a in self.p.action_profiles if a.name == t.implementation)
        g = self._profiles[ap.name]
        with self.src.block("if entry is not None:"):
            if not ap.selector:
                self.src.line(f"call = {g}.member_action(call)")
                return
            value = f"{ap.algorithm}({self.stmts.field_bytes(t.selector_keys)})"
            with self.src.block("if call.group:"):
                self.src.line(f"call = {g}.group_action(call, {value})")
            with self.src.block("else:"):
                self.src.line(f"call = {g}.member_action(call)")

    def _direct_count(self, packets: str, nbytes: str, unit: str, plen: int) -> None:
        if unit != "bytes":
            self.src.line(f"{packets} += 1")
        if unit != "packets":
            self.src.line(f"{nbytes} += S[{plen}]")

    def _control(self, c: ir.Control, fn: str) -> None:
        with self.src.block(f"def {fn}(S):"):
            with self.src.block("try:"):
                self.stmts.block(c.body, Block("control"))
            with self.src.block("except ControlExit:"):
                self.src.line("pass")

    def _parser(self) -> None:
        p = self.p
        perr = self.names.sm["parser_error"]
        self.x.lookahead = f"peek(data, off, {{}}, {{}}, {{}}, {self.names.too_short}, {{}}, {{}})"
        no_match = p.errors.index("NoMatch")
        for state in p.parser.states:
            with self.src.block(f"def P_{state.name}(S, data, off, n):"):
                self.stmts.block(state.body, Block("parser"))
                self._select(state, no_match, perr)
        self.x.lookahead = None
        timeout = p.errors.index("ParserTimeout")
        with self.src.block("def parse(S, data):"):
            self.src.line("state, off, n = P_start, 0, len(data)")
            with self.src.block("try:"):
                with self.src.block(f"for _ in range({PARSER_STEPS}):"):
                    self.src.line("state, off = state(S, data, off, n)")
                    with self.src.block("if state is None:"):
                        self.src.line("return off")
                self.src.line(f"raise ParserReject({timeout}, off)")
            with self.src.block("except ParserReject as r:"):
                self.src.line(f"S[{perr}] = r.code")
                self.src.line(f"S[{PAYLOAD}] = r.offset")
                self.src.line("return -1")

    def _select(self, state: ir.ParserState, no_match: int, perr: int) -> None:
        keys = []
        for k in state.keys:
            tmp = self.src.temp("_k")
            self.src.line(f"{tmp} = {self.x.expr(k)}")
            keys.append((tmp, ir.key_mask(k.type)))
        for case in state.cases:
            conds = []
            for i, ((key, full), ks) in enumerate(zip(keys, case.keysets, strict=True)):
                if isinstance(ks, ir.KeyRange):
                    conds.append(f"{literal(ks.low)} <= {key} <= {literal(ks.high)}")
                    continue
                if isinstance(ks, ir.ValueSetKey):  # this key and the span - 1 after it
                    args = ", ".join(k for k, _ in keys[i : i + ks.span])
                    conds.append(f"{self.names.value_sets[ks.value_set]}.contains({args})")
                    continue
                if ks is None or ks[1] == 0:
                    continue
                value, mask = ks
                conds.append(
                    f"{key} == {literal(value)}"
                    if mask == full
                    else f"({key} & {literal(mask)}) == {literal(value)}"
                )
            go = self._goto(case.next_state, perr)
            if not conds:
                self.src.line(go)
                return
            with self.src.block(f"if {' and '.join(conds)}:"):
                self.src.line(go)
        self.src.line(f"raise ParserReject({no_match}, off)")

    @staticmethod
    def _goto(state: str, perr: int) -> str:
        if state == "accept":
            return "return None, off"
        if state == "reject":
            return f"raise ParserReject(S[{perr}], off)"
        return f"return P_{state}, off"

    def _slots_of(self, var: ir.Var) -> list[int]:
        return [self.layout.slot(var, leaf) for leaf, _ in leaves(var.type)]

    def _field_lists(self) -> dict[int, tuple[int, ...]]:
        return {k: tuple(v) for k, v in field_list_slots(self.layout, self.p.meta).items()}
