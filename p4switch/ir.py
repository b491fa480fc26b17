"""The typed program model: what the front-end produces and the compiler and P4Info consume.

Everything here is checked: names are resolved, widths agree, constants are folded, and each
extern call is lowered to its own statement (`RegisterRead`, `Emit`, ...). The P4 source is no
longer needed past this point. Values of `bit<N>` and `int<N>` are carried as their N-bit two's
complement pattern (a Python int in 0..2**N-1); `bool` as a Python bool.
"""

from __future__ import annotations

from dataclasses import dataclass, field

# --- where ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Loc:
    path: str
    line: int
    col: int

    def __str__(self) -> str:
        return f"{self.path}:{self.line}:{self.col}"


@dataclass(frozen=True)
class Annotation:
    name: str
    args: tuple[str | int | bool, ...] = ()
    text: str = ""  # the argument list as written, without parentheses

    def source(self) -> str:
        """The annotation as p4c prints it into P4Info, e.g. `@controller_header("packet_in")`."""
        return f"@{self.name}({self.text})" if self.text else f"@{self.name}"


def find_annotation(annotations: tuple[Annotation, ...], name: str) -> Annotation | None:
    return next((a for a in annotations if a.name == name), None)


# --- types ------------------------------------------------------------------------------------


class Type:
    """A P4 type."""

    def __str__(self) -> str:
        return type(self).__name__


@dataclass(frozen=True)
class BitT(Type):
    width: int
    signed: bool = False

    @property
    def mask(self) -> int:
        return (1 << self.width) - 1

    def __str__(self) -> str:
        return f"{'int' if self.signed else 'bit'}<{self.width}>"


@dataclass(frozen=True)
class BoolT(Type):
    def __str__(self) -> str:
        return "bool"


@dataclass(frozen=True)
class IntLitT(Type):
    """An integer constant without a width (P4's arbitrary-precision `int`)."""

    def __str__(self) -> str:
        return "int"


@dataclass(frozen=True)
class VoidT(Type):
    def __str__(self) -> str:
        return "void"


@dataclass(frozen=True)
class StringT(Type):
    def __str__(self) -> str:
        return "string"


@dataclass(frozen=True)
class ErrorT(Type):
    def __str__(self) -> str:
        return "error"


@dataclass(frozen=True)
class MatchKindT(Type):
    def __str__(self) -> str:
        return "match_kind"


@dataclass(frozen=True)
class EnumT(Type):
    name: str
    members: tuple[str, ...]
    values: tuple[int, ...]  # the member's code (its position for a plain enum)
    underlying: BitT | None = None  # serializable enums only

    def value_of(self, member: str) -> int:
        return self.values[self.members.index(member)]

    def __str__(self) -> str:
        return self.name


@dataclass(frozen=True)
class Field:
    name: str
    type: Type
    annotations: tuple[Annotation, ...] = ()


@dataclass(frozen=True)
class StructT(Type):
    """A struct or a header (`is_header`)."""

    name: str
    fields: tuple[Field, ...]
    is_header: bool = False
    annotations: tuple[Annotation, ...] = ()

    def field(self, name: str) -> Field | None:
        return next((f for f in self.fields if f.name == name), None)

    @property
    def width(self) -> int:
        """Total bit width of a header's fields."""
        return sum(bit_width(f.type) for f in self.fields)

    def __str__(self) -> str:
        return self.name


@dataclass(frozen=True)
class TupleT(Type):
    elements: tuple[Type, ...]

    def __str__(self) -> str:
        return "tuple<" + ", ".join(str(e) for e in self.elements) + ">"


@dataclass(frozen=True)
class TypeVar(Type):
    """A type parameter of a generic extern, parser, control or package declaration."""

    name: str

    def __str__(self) -> str:
        return self.name


@dataclass(frozen=True)
class ExternT(Type):
    name: str
    args: tuple[Type, ...] = ()

    def __str__(self) -> str:
        if not self.args:
            return self.name
        return f"{self.name}<" + ", ".join(str(a) for a in self.args) + ">"


@dataclass(frozen=True)
class BlockT(Type):
    """A parser or control type (a block's signature), or a package."""

    kind: str  # "parser", "control" or "package"
    name: str

    def __str__(self) -> str:
        return self.name


def bit_width(t: Type) -> int:
    """Width in bits of a scalar type as it sits in a header or a P4Runtime message."""
    if isinstance(t, BitT):
        return t.width
    if isinstance(t, BoolT):
        return 1
    if isinstance(t, EnumT) and t.underlying is not None:
        return t.underlying.width
    if isinstance(t, StructT):
        return t.width
    raise TypeError(f"{t} has no bit width")


# --- storage ------------------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class Var:
    """A named storage root: a block parameter, a local variable, or an action parameter.

    `in_slots` variables live in the packet's slot list (visible to every action and table of a
    block, copied with the packet); the others are Python locals of one generated function.
    """

    name: str
    type: Type
    in_slots: bool


# --- expressions ------------------------------------------------------------------------------


class Expr:
    type: Type


@dataclass(frozen=True)
class Const(Expr):
    type: Type
    value: int | bool


@dataclass(frozen=True)
class VarRef(Expr):
    var: Var

    @property
    def type(self) -> Type:  # type: ignore[override]  # read-only: a VarRef has its Var's type
        return self.var.type


@dataclass(frozen=True)
class Member(Expr):
    base: Expr
    name: str
    type: Type


@dataclass(frozen=True)
class Slice(Expr):
    base: Expr
    hi: int
    lo: int
    type: Type


@dataclass(frozen=True)
class Cast(Expr):
    type: Type
    expr: Expr


@dataclass(frozen=True)
class Unary(Expr):
    op: str  # "-", "~", "!"
    expr: Expr
    type: Type


@dataclass(frozen=True)
class Binary(Expr):
    op: str  # + - * / % |+| |-| & | ^ << >> ++ == != < > <= >= && ||
    left: Expr
    right: Expr
    type: Type


@dataclass(frozen=True)
class Mux(Expr):
    cond: Expr
    yes: Expr
    no: Expr
    type: Type


@dataclass(frozen=True)
class IsValid(Expr):
    header: Expr
    type: Type = field(default_factory=BoolT)


@dataclass(frozen=True)
class TableHit(Expr):
    """`t.apply().hit` (or `.miss` when `hit` is False): applies the table, then tests."""

    table: str
    hit: bool
    type: Type = field(default_factory=BoolT)


@dataclass(frozen=True)
class Lookahead(Expr):
    type: Type


@dataclass(frozen=True)
class ListExpr(Expr):
    items: tuple[Expr, ...]
    type: Type


# --- statements -------------------------------------------------------------------------------


class Stmt:
    pass


@dataclass(frozen=True)
class Assign(Stmt):
    target: Expr
    value: Expr


@dataclass(frozen=True)
class Declare(Stmt):
    var: Var
    init: Expr | None


@dataclass(frozen=True)
class If(Stmt):
    cond: Expr
    then: tuple[Stmt, ...]
    else_: tuple[Stmt, ...] = ()


@dataclass(frozen=True)
class ApplyTable(Stmt):
    table: str


@dataclass(frozen=True)
class SwitchCase:
    actions: tuple[str, ...]  # fully qualified action names; () for `default`
    body: tuple[Stmt, ...]


@dataclass(frozen=True)
class SwitchTable(Stmt):
    table: str
    cases: tuple[SwitchCase, ...]


@dataclass(frozen=True)
class CallAction(Stmt):
    action: str
    args: tuple[Expr, ...]  # one per parameter; out/inout ones are l-values


@dataclass(frozen=True)
class Return(Stmt):
    pass


@dataclass(frozen=True)
class Exit(Stmt):
    pass


@dataclass(frozen=True)
class SetValid(Stmt):
    header: Expr
    valid: bool


@dataclass(frozen=True)
class Extract(Stmt):
    header: Expr


@dataclass(frozen=True)
class Advance(Stmt):
    bits: Expr


@dataclass(frozen=True)
class Emit(Stmt):
    header: Expr


@dataclass(frozen=True)
class Verify(Stmt):
    cond: Expr
    error: Expr


@dataclass(frozen=True)
class RegisterRead(Stmt):
    register: str
    dest: Expr
    index: Expr


@dataclass(frozen=True)
class RegisterWrite(Stmt):
    register: str
    index: Expr
    value: Expr


@dataclass(frozen=True)
class CounterCount(Stmt):
    counter: str
    index: Expr


@dataclass(frozen=True)
class MarkToDrop(Stmt):
    pass


@dataclass(frozen=True)
class Clone(Stmt):
    kind: str  # "I2E" or "E2E"
    session: Expr
    field_list: int | None = None


@dataclass(frozen=True)
class Hash(Stmt):
    dest: Expr
    algorithm: str
    base: Expr
    data: tuple[Expr, ...]
    max: Expr


@dataclass(frozen=True)
class Truncate(Stmt):
    length: Expr  # bytes


@dataclass(frozen=True)
class Random(Stmt):
    dest: Expr
    lo: Expr
    hi: Expr


@dataclass(frozen=True)
class Checksum(Stmt):
    verify: bool  # verify_checksum (True) or update_checksum (False)
    cond: Expr
    data: tuple[Expr, ...]
    checksum: Expr
    algorithm: str


# --- program objects ------------------------------------------------------------------------


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


@dataclass(frozen=True)
class TableActionRef:
    action: str
    annotations: tuple[Annotation, ...] = ()

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
    match: tuple[tuple[int, int], ...]  # (value, mask) per key
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
class SelectCase:
    keysets: tuple[tuple[int, int] | None, ...]  # (value, mask) per key; None: any value
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

    def action(self, name: str) -> Action:
        return next(a for a in self.actions if a.name == name)

    def table(self, name: str) -> Table:
        return next(t for t in self.tables if t.name == name)
