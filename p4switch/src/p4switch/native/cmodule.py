"""The whole program as one C translation unit, generated once per program.

The unit is `abi.h`, this program's sizes (`P4G_*`), `support.c`, then the generated code --
one function per action (`A<i>`) and per table (`T<i>`, returning the action run), the controls
(`p4g_ingress`, ...), `p4g_parse` (one label per parser state) and `p4g_deparse` -- and last
`v1model.c`, the architecture around them and the exported `p4s_*` functions. The slot layout is
the python back end's (`p4switch.compiler.layout`): one `uint64_t` per slot, on the stack.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from importlib import resources

from p4switch import ir
from p4switch.compiler.layout import PAYLOAD, Layout, field_list_slots, leaves
from p4switch.compiler.module import CONTROLS
from p4switch.exceptions import NativeUnsupported
from p4switch.native.cexprs import CExprCompiler, CStorage, check_width, literal
from p4switch.native.cparser import ParserGenerator
from p4switch.native.cstmts import CBlock, CNames, CSource, CStmtCompiler

_SM = (
    "ingress_port",
    "egress_spec",
    "egress_port",
    "instance_type",
    "packet_length",
    "mcast_grp",
    "egress_rid",
    "parser_error",
    "ingress_global_timestamp",
    "egress_global_timestamp",
)
_SM_MACRO = {"ingress_global_timestamp": "INGRESS_TS", "egress_global_timestamp": "EGRESS_TS"}


@dataclass(frozen=True)
class NativeCode:
    """The generated C and what the Python side needs to drive it."""

    source: str = field(repr=False)  # the whole translation unit
    tables: tuple[str, ...]  # table names, by index
    actions: tuple[str, ...]  # action names, by index
    max_args: int  # arguments an entry holds room for
    registers: tuple[str, ...]
    counters: tuple[str, ...]
    errors: tuple[str, ...]
    direct_units: list[str | None]  # per table: the unit of its direct counter, if it has one


def layout_of(program: ir.Program) -> Layout:
    """The slot layout of the python back end (`p4switch.compiler.module`), slot for slot."""
    layout = Layout()
    slot_vars = [program.headers, program.meta, program.standard_metadata]
    slot_vars += list(program.parser.locals)
    for c in CONTROLS:
        slot_vars += list(getattr(program, c).locals)
    slot_vars += list(program.deparser.locals)
    for v in slot_vars:
        layout.add(v)
    return layout


def runtime_source(name: str) -> str:
    return resources.files("p4switch.native").joinpath(name).read_text(encoding="utf-8")


def generate_c(program: ir.Program) -> NativeCode:
    """The C of `program`; `NativeUnsupported` names what it cannot be written with."""
    return _UnitBuilder(program, layout_of(program)).build()


def _body(stmts: tuple[ir.Stmt, ...]) -> Iterator[ir.Stmt]:
    """Every statement, nested ones included."""
    for st in stmts:
        yield st
        if isinstance(st, ir.If):
            yield from _body(st.then)
            yield from _body(st.else_)
        elif isinstance(st, ir.SwitchTable):
            for case in st.cases:
                yield from _body(case.body)


class _UnitBuilder:
    def __init__(self, program: ir.Program, layout: Layout) -> None:
        self.p = program
        self.layout = layout
        self.storage = CStorage(layout)
        self.names = CNames()
        self.src = CSource()
        self.x = CExprCompiler(self.storage, program.path)
        self.stmts = CStmtCompiler(self.x, self.names, self.src)

    def build(self) -> NativeCode:
        p, names = self.p, self.names
        self._check_widths()
        self._check_externs()
        sm = p.standard_metadata
        assert isinstance(sm.type, ir.StructT)
        names.sm = {f.name: self.layout.slot(sm, (f.name,)) for f in sm.type.fields}
        names.too_short = self.x.too_short = p.errors.index("PacketTooShort")
        for i, a in enumerate(p.actions):
            names.actions[a.name], names.action_ir[a.name] = i, a
        names.exits = self._exits()
        for i, t in enumerate(p.tables):
            names.tables[t.name] = i
            self.x.tables[t.name] = f"T{i}"
            if any(r.action in names.exits for r in t.actions):
                self.x.exits.add(t.name)
        for i, r in enumerate(p.registers):
            check_width(r.value_type, f"register {r.name}", p.path)
            names.registers[r.name] = (i, r.size)
        for i, counter in enumerate(p.counters):
            names.counters[counter.name] = (i, counter.size, counter.unit)
        max_args = max((len(a.params) for a in p.actions), default=0)
        self._prototypes()
        for a in p.actions:
            self._action(a)
        for t in p.tables:
            self._table(t)
        for c in CONTROLS:
            self._control(getattr(p, c), c)
        ParserGenerator(p, self.stmts, self._function).generate()
        self._deparser()
        self._statics()
        head = [
            runtime_source("abi.h"),
            f"/* generated by p4switch from {p.path} */",
            f"#define P4G_SLOTS {self.layout.size}",
            f"#define P4G_TABLES {len(p.tables)}",
            f"#define P4G_REGISTERS {len(p.registers)}",
            f"#define P4G_COUNTERS {len(p.counters)}",
            f"#define P4G_MAX_ARGS {max_args}",
            f"#define P4G_PAYLOAD {PAYLOAD}",
            "#define P4G_CLONE 1\n#define P4G_CLONE_SESSION 2",
            "#define P4G_CLONE_FIELD_LIST 3\n#define P4G_TRUNCATE 4",
            *(f"#define P4G_SM_{_SM_MACRO.get(f, f.upper())} {names.sm[f]}" for f in _SM),
            runtime_source("support.c"),
        ]
        source = "\n".join([*head, *self.src.lines, runtime_source("v1model.c")])
        return NativeCode(
            source=source,
            tables=tuple(t.name for t in p.tables),
            actions=tuple(a.name for a in p.actions),
            max_args=max_args,
            registers=tuple(r.name for r in p.registers),
            counters=tuple(c.name for c in p.counters),
            errors=p.errors,
            direct_units=[self._direct_unit(t) for t in p.tables],
        )

    def _direct_unit(self, t: ir.Table) -> str | None:
        found = next((d for d in self.p.direct_counters if d.name == t.direct_counter), None)
        return None if found is None else found.unit

    # --- checks -----------------------------------------------------------------------------------

    def _check_widths(self) -> None:
        p = self.p
        slot_vars = [p.headers, p.meta, p.standard_metadata, *p.parser.locals]
        for c in (*CONTROLS, "deparser"):
            slot_vars += list(getattr(p, c).locals)
        for v in slot_vars:
            for path, t in leaves(v.type):
                check_width(t, "field " + ".".join((v.name, *path)), p.path)

    def _check_externs(self) -> None:
        """Meters, value sets, digests, action profiles and range keys: python back end only."""
        if self.p.digests:
            raise NativeUnsupported(f"digest {self.p.digests[0].name}", self.p.path)
        if self.p.value_sets:
            raise NativeUnsupported(f"value set {self.p.value_sets[0].name}", self.p.path)
        meters = [m.name for m in self.p.meters] + [m.name for m in self.p.direct_meters]
        if meters:
            raise NativeUnsupported(f"meter {meters[0]}", self.p.path)
        if self.p.action_profiles:
            ap = self.p.action_profiles[0]
            kind = "action selector" if ap.selector else "action profile"
            raise NativeUnsupported(f"{kind} {ap.name}", self.p.path)
        for t in self.p.tables:
            bound = next((r for r in t.actions if r.via is not None), None)
            if bound is not None:
                what = f"table {t.name}: action {bound.action} with arguments bound in its list"
                raise NativeUnsupported(what, str(t.loc or self.p.path))
            ranged = next((k for k in t.keys if k.match_kind == "range"), None)
            if ranged is not None:
                what = f"table {t.name}: range key {ranged.name}"
                raise NativeUnsupported(what, str(t.loc or self.p.path))

    def _exits(self) -> set[str]:
        """Actions that may run `exit`, themselves or through an action they call."""
        found: set[str] = set()
        changed = True
        while changed:
            changed = False
            for a in self.p.actions:
                if a.name not in found and any(
                    isinstance(st, ir.Exit)
                    or (isinstance(st, ir.CallAction) and st.action in found)
                    for st in _body(a.body)
                ):
                    found.add(a.name)
                    changed = True
        return found

    # --- pieces -----------------------------------------------------------------------------------

    def _function(self, header: str, body: Callable[[], None], params: set[str]) -> None:
        """`header { body }` with the C locals the body uses declared (zero) at its top."""
        with self.src.block(header):
            mark = len(self.src.lines)
            self.storage.used = set()
            self.src.line("(void)c; (void)S;")
            body()
            local = sorted(self.storage.used - params)
            if local:
                self.src.lines.insert(mark, "    " + "uint64_t " + " = 0, ".join(local) + " = 0;")

    def _signature(self, a: ir.Action) -> str:
        params = ["p4s_ctx *c", "uint64_t *S"]
        for prm in a.params:
            for leaf, t in leaves(prm.type):  # a struct or header: one parameter per scalar
                check_width(t, f"action parameter {prm.name}", str(a.loc or self.p.path))
                name = self.storage.ref(prm.var, leaf)
                out = prm.direction in ("out", "inout")
                params.append(f"uint64_t *o_{name}" if out else f"uint64_t {name}")
        return f"static void A{self.names.actions[a.name]}({', '.join(params)})"

    def _prototypes(self) -> None:
        for a in self.p.actions:
            self.src.line(self._signature(a) + ";")
        for i in range(len(self.p.tables)):
            self.src.line(f"static uint32_t T{i}(p4s_ctx *c, uint64_t *S, int *hit);")

    def _action(self, a: ir.Action) -> None:
        def names(p: ir.Param) -> list[str]:
            return [self.storage.ref(p.var, leaf) for leaf, _ in leaves(p.type)]

        outs = [n for p in a.params if p.direction in ("out", "inout") for n in names(p)]
        returns = "".join(f"*o_{n} = {n}; " for n in outs) + "return;"
        params = {n for p in a.params if p.direction in ("", "in") for n in names(p)}
        self.x.where = str(a.loc or self.p.path)

        def body() -> None:
            self.storage.used.update(outs)  # locals, copied in and out even when unused
            for n in outs:
                self.src.line(f"{n} = *o_{n};")
            self.stmts.block(a.body, CBlock("action", "{ " + returns + " }"))
            if outs:
                self.src.line(returns)

        self._function(self._signature(a), body, params)

    def _table(self, t: ir.Table) -> None:
        i = self.names.tables[t.name]
        self.x.where = str(t.loc or self.p.path)
        counter = next((d for d in self.p.direct_counters if d.name == t.direct_counter), None)
        plen = self.names.sm["packet_length"]

        def body() -> None:
            self.src.line(f"p4s_table *t = &c->tables[{i}];")
            if t.keys:
                keys = ", ".join(self.x.expr(k.expr) for k in t.keys)
                if self.storage.used:
                    raise NativeUnsupported("a table key read from a local variable", t.loc)
                self.src.line(f"uint64_t k[{len(t.keys)}] = {{{keys}}};")
                self.src.line("int64_t e = p4s_lookup(t, k);")
            else:
                self.src.line("int64_t e = -1;")
            self.src.line("uint32_t act = e >= 0 ? t->action[e] : t->default_action;")
            self.src.line("const uint64_t *a = e >= 0 ? t->args + e * t->nargs : t->default_args;")
            self.src.line("(void)a;")
            if counter is not None:
                self._direct_count(counter.unit, plen, i)
            if t.support_timeout:  # only ageing tables pay for recording hits
                with self.src.block("if (e >= 0)"):
                    self.src.line("t->hit[e] = 1;")
                    if counter is None:  # a direct counter's update tells the hit already
                        self.src.line(f"p4s_touch(c, {i}, e, S[{plen}]);")
            self.src.line("if (hit) *hit = e >= 0;")
            with self.src.block("switch (act)"):
                for ref in t.actions:
                    action = self.p.action(ref.action)
                    if len(action.control_params) != len(action.params):
                        raise NativeUnsupported(
                            f"table action {action.name} with directions", t.loc
                        )
                    args = "".join(f", a[{j}]" for j in range(len(action.params)))
                    k = self.names.actions[ref.action]
                    self.src.line(f"case {k}: A{k}(c, S{args}); break;")
                self.src.line("default: break;")
            self.src.line("return act;")

        self._function(f"static uint32_t T{i}(p4s_ctx *c, uint64_t *S, int *hit)", body, set())

    def _direct_count(self, unit: str, plen: int, i: int) -> None:
        with self.src.block("if (e >= 0)"):
            if unit != "bytes":
                self.src.line("t->packets[e] += 1;")
            if unit != "packets":
                self.src.line(f"t->bytes[e] += S[{plen}];")
        with self.src.block("else"):
            if unit != "bytes":
                self.src.line("t->default_packets += 1;")
            if unit != "packets":
                self.src.line(f"t->default_bytes += S[{plen}];")
        self.src.line(f"p4s_touch(c, {i}, e, S[{plen}]);")

    def _control(self, c: ir.Control, name: str) -> None:
        self.x.where = f"{self.p.path} ({name} control)"
        self._function(
            f"static void C_{name}(p4s_ctx *c, uint64_t *S)",
            lambda: self.stmts.block(c.body, CBlock("control")),
            set(),
        )
        with self.src.block(f"static void p4g_{name}(p4s_ctx *c, uint64_t *S)"):
            self.src.line(f"C_{name}(c, S);")
            self.src.line("c->exiting = 0;")

    def _deparser(self) -> None:
        self.x.where = f"{self.p.path} (deparser)"
        info = CBlock("deparser", "return (int64_t)at;")

        def body() -> None:
            self.src.line("uint64_t at = 0;")
            self.stmts.block(self.p.deparser.body, info)
            self.src.line(info.returns)

        self._function(
            "static int64_t p4g_deparse(p4s_ctx *c, uint64_t *S, uint8_t *o, uint64_t cap)",
            body,
            set(),
        )

    def _statics(self) -> None:
        template = ", ".join("P4S_NONE" if v < 0 else literal(v) for v in self.layout.template())
        self.src.line(f"static const uint64_t p4g_template[P4G_SLOTS] = {{{template}}};")
        slots = [self.layout.slot(self.p.meta, leaf) for leaf, _ in leaves(self.p.meta.type)]
        slots += list(self.names.sm.values())
        self.src.line(f"static const uint32_t p4g_metadata[] = {{{', '.join(map(str, slots))}}};")
        shapes = []
        for t in self.p.tables:
            nargs = max((len(self.p.action(r.action).params) for r in t.actions), default=0)
            exact = int(all(k.match_kind == "exact" for k in t.keys))
            shapes.append(f"{{{len(t.keys)}, {nargs}, {exact}}}")
        shapes.append("{0, 0, 0}")
        self.src.line(
            f"static const uint32_t p4g_shape[P4G_TABLES + 1][3] = {{{', '.join(shapes)}}};"
        )
        with self.src.block(
            "static void p4g_keep(uint64_t list, uint64_t *dst, const uint64_t *src)"
        ):
            self.src.line("(void)dst; (void)src;")
            with self.src.block("switch (list)"):
                for index, kept in sorted(self._field_lists().items()):
                    copies = " ".join(f"dst[{s}] = src[{s}];" for s in kept)
                    self.src.line(f"case {index}ull: {copies} break;")
                self.src.line("default: break;")

    def _field_lists(self) -> dict[int, list[int]]:
        return field_list_slots(self.layout, self.p.meta)
