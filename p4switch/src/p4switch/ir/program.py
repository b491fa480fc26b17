"""The program model's objects: actions, tables, externs, blocks and the program itself."""

from __future__ import annotations

from dataclasses import dataclass

from p4switch.ir.expressions import Expr, Var
from p4switch.ir.statements import Stmt
from p4switch.ir.types import Annotation, BitT, Loc, StructT, TupleT, Type

# --- program objects ------------------------------------------------------------------------


@dataclass(frozen=True)
class KeyRange:
    """A range key's `low .. high` in an entry."""

    low: int
    high: int


@dataclass(frozen=True)
class Param:
    name: str
    type: Type
    direction: str  # "", "in", "out" or "inout"
    var: Var
    annotations: tuple[Annotation, ...] = ()


@dataclass(frozen=True)
class Action:
    name: str  # fully qualified control-plane name
    params: tuple[Param, ...]
    body: tuple[Stmt, ...]
    annotations: tuple[Annotation, ...] = ()
    loc: Loc | None = None
    function: bool = False  # a P4 function (its result an `out` parameter): not in P4Info

    @property
    def control_params(self) -> tuple[Param, ...]:
        """The directionless parameters: the ones the control plane supplies."""
        return tuple(p for p in self.params if p.direction == "")


@dataclass(frozen=True)
class MatchKey:
    expr: Expr
    match_kind: str
    name: str  # as P4Info names it
    bitwidth: int
    annotations: tuple[Annotation, ...] = ()
    # an error or enum key: its values' names, matched by name over P4Runtime (P4Info width 0)
    symbols: tuple[str, ...] = ()


@dataclass(frozen=True)
class TableActionRef:
    action: str
    annotations: tuple[Annotation, ...] = ()
    via: str | None = None  # `a(x)` in the action list: the action binding x that runs a

    @property
    def scope(self) -> str:
        names = {a.name for a in self.annotations}
        if "defaultonly" in names:
            return "DEFAULT_ONLY"
        if "tableonly" in names:
            return "TABLE_ONLY"
        return "TABLE_AND_DEFAULT"


@dataclass(frozen=True)
class ConstEntry:
    match: tuple[tuple[int, int] | KeyRange, ...]  # (value, mask) per key, or a range
    action: str
    args: tuple[int, ...]
    priority: int = 0


@dataclass(frozen=True)
class Table:
    name: str
    keys: tuple[MatchKey, ...]
    actions: tuple[TableActionRef, ...]
    default_action: str
    default_args: tuple[int, ...] = ()
    const_default: bool = False
    size: int = 1024
    entries: tuple[ConstEntry, ...] | None = None  # `entries` or `const entries`
    const_entries: bool = False
    direct_counter: str | None = None
    annotations: tuple[Annotation, ...] = ()
    loc: Loc | None = None
    direct_meter: str | None = None
    implementation: str | None = None  # the action profile or selector it takes actions from
    selector_keys: tuple[Expr, ...] = ()  # `selector` keys: the selector's hash inputs
    support_timeout: bool = False  # `support_timeout = true`: its entries age (idle timeouts)


@dataclass(frozen=True)
class Register:
    name: str
    value_type: BitT
    size: int
    annotations: tuple[Annotation, ...] = ()


@dataclass(frozen=True)
class Counter:
    name: str
    size: int
    unit: str  # "packets", "bytes" or "packets_and_bytes"
    annotations: tuple[Annotation, ...] = ()


@dataclass(frozen=True)
class DirectCounter:
    name: str
    unit: str
    table: str
    annotations: tuple[Annotation, ...] = ()


@dataclass(frozen=True)
class Meter:
    name: str
    size: int
    unit: str  # "packets" or "bytes"
    annotations: tuple[Annotation, ...] = ()


@dataclass(frozen=True)
class DirectMeter:
    name: str
    unit: str
    table: str
    color: Var  # where the table's apply puts the color of the hit entry's meter
    annotations: tuple[Annotation, ...] = ()


@dataclass(frozen=True)
class ActionProfile:
    """`action_profile(size)`, or `action_selector(algorithm, size, width)` (`selector`)."""

    name: str
    size: int
    tables: tuple[str, ...]  # the tables it implements, in declaration order
    selector: bool = False
    algorithm: str = ""  # selectors: the hash of the tables' selector keys
    max_group_size: int = 0  # @max_group_size (selectors); 0: no limit
    annotations: tuple[Annotation, ...] = ()


@dataclass(frozen=True)
class ControllerHeader:
    name: str  # from @controller_header("...")
    type: StructT
    annotations: tuple[Annotation, ...] = ()


@dataclass(frozen=True)
class Control:
    name: str
    body: tuple[Stmt, ...]
    locals: tuple[Var, ...] = ()  # control-level variables (kept in slots)


@dataclass(frozen=True)
class ValueSetKey:
    """A select case's key that matches the members of a parser value set: this key and the
    `span - 1` after it (a value set of a struct matches several keys at once)."""

    value_set: str
    span: int = 1


@dataclass(frozen=True)
class Digest:
    """A struct type given to `digest<T>`: P4Info's digest of that name, its fields the values
    each digest carries (bit<N>, int<N> or bool, nested structs flattened in order)."""

    name: str
    type: StructT | TupleT  # a tuple: `digest(r, {a, b})`, named digest_<n>


@dataclass(frozen=True)
class ValueSet:
    """`value_set<T>(size)`: values the control plane gives a select case. T is bit<N> (one
    exact field) or a struct whose fields, each matched as its `@match` says (exact unless
    given), match the select's keys in order."""

    name: str
    bitwidth: int  # bit<N>'s N; a struct's total
    size: int
    annotations: tuple[Annotation, ...] = ()
    fields: tuple[tuple[str, int, str], ...] = ()  # a struct's: (name, width, match kind)


@dataclass(frozen=True)
class SelectCase:
    # (value, mask) per key, or a range `low .. high`; None: any value
    keysets: tuple[tuple[int, int] | KeyRange | ValueSetKey | None, ...]
    next_state: str


@dataclass(frozen=True)
class ParserState:
    name: str
    body: tuple[Stmt, ...]
    keys: tuple[Expr, ...] = ()  # the select expression; () for a direct transition
    cases: tuple[SelectCase, ...] = ()  # with keys: tried in order; without: one case, no keys


@dataclass(frozen=True)
class Parser:
    name: str
    states: tuple[ParserState, ...]  # "start" first; "accept" and "reject" are implicit
    locals: tuple[Var, ...] = ()


@dataclass(frozen=True)
class Program:
    path: str
    headers: Var  # the H argument shared by every block
    meta: Var  # the M argument
    standard_metadata: Var
    parser: Parser
    verify_checksum: Control
    ingress: Control
    egress: Control
    compute_checksum: Control
    deparser: Control
    actions: tuple[Action, ...]
    tables: tuple[Table, ...]
    registers: tuple[Register, ...]
    counters: tuple[Counter, ...]
    direct_counters: tuple[DirectCounter, ...]
    controller_headers: tuple[ControllerHeader, ...]
    errors: tuple[str, ...]  # error members; the code of each is its position
    meters: tuple[Meter, ...] = ()
    direct_meters: tuple[DirectMeter, ...] = ()
    value_sets: tuple[ValueSet, ...] = ()
    # actions only other actions call: run as calls, but not in P4Info (p4c inlines them)
    inlined_actions: frozenset[str] = frozenset()
    digests: tuple[Digest, ...] = ()
    action_profiles: tuple[ActionProfile, ...] = ()
    # the `main` instantiation's, e.g. @pkginfo(...) and @platform_property(...) for P4Info
    package_annotations: tuple[Annotation, ...] = ()

    def action(self, name: str) -> Action:
        return next(a for a in self.actions if a.name == name)

    def table(self, name: str) -> Table:
        return next(t for t in self.tables if t.name == name)
