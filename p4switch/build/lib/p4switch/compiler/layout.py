"""Where every value of a packet lives: one slot per scalar in a flat Python list.

A packet's state (headers, metadata, standard metadata, control and parser locals, and a few
internal values) is one `list`; copying a packet for multicast or cloning is one list copy.
A header takes a validity slot followed by its fields, contiguous and in order, so a whole
header is extracted or emitted with one slice. A header stack is its elements in order, then its
`nextIndex`. Variables local to one action or apply block
are not in the list: they become Python locals of the generated function (`Storage.ref`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from p4switch import ir

Path = tuple[str, ...]

# Internal slots, always the first ones.
PAYLOAD = 0  # byte offset where the parser stopped: the payload the deparser appends
CLONE = 1  # 0: no clone requested; 1: clone() called during the current control
CLONE_SESSION = 2
CLONE_FIELD_LIST = 3  # the field list to preserve, -1 for none
TRUNCATE = 4  # bytes to keep on output, -1 for all
RESUBMIT = 5  # the field list to preserve when resubmitted after ingress; -1: not resubmitted
RECIRCULATE = 6  # the same, recirculated after egress
INTERNAL = 7
INTERNAL_DEFAULTS = (0, 0, 0, -1, -1, -1, -1)


@dataclass(frozen=True)
class HeaderSlots:
    valid: int
    first: int  # slot of the first field
    type: ir.StructT


@dataclass
class Layout:
    size: int = INTERNAL
    _slots: dict[tuple[ir.Var, Path], int] = field(default_factory=dict)
    _headers: dict[tuple[ir.Var, Path], HeaderSlots] = field(default_factory=dict)

    def add(self, var: ir.Var) -> None:
        """Give every scalar of `var` (and every header's validity) a slot."""
        if (var, ()) in self._slots or (var, ()) in self._headers:
            return
        self._place(var, (), var.type)

    def _place(self, var: ir.Var, path: Path, t: ir.Type) -> None:
        if isinstance(t, ir.StructT) and t.is_header:
            valid = self._new(var, (*path, "$valid"))
            first = self.size
            for f in t.fixed.fields:  # struct fields spread into their scalars, in order
                self._new(var, (*path, *ir.field_path(f.name)))
            if t.varbit is not None:  # its value and length in bits, after the fields
                self._new(var, (*path, t.varbit.name))
                self._new(var, (*path, t.varbit.name, ir.VARBIT_LEN))
            self._headers[(var, path)] = HeaderSlots(valid, first, t)
        elif isinstance(t, ir.StructT):
            for f in t.fields:
                self._place(var, (*path, f.name), f.type)
        elif isinstance(t, ir.StackT):
            for i in range(t.size):
                self._place(var, (*path, str(i)), t.element)
            self._new(var, (*path, ir.STACK_NEXT))
        elif isinstance(t, ir.TupleT):
            for i, element in enumerate(t.elements):
                self._place(var, (*path, str(i)), element)
        elif isinstance(t, ir.VarbitT):  # a varbit variable: its value and length
            self._new(var, path)
            self._new(var, (*path, ir.VARBIT_LEN))
        else:
            self._new(var, path)

    def _new(self, var: ir.Var, path: Path) -> int:
        self._slots[(var, path)] = self.size
        self.size += 1
        return self.size - 1

    def slot(self, var: ir.Var, path: Path) -> int:
        return self._slots[(var, path)]

    def header(self, var: ir.Var, path: Path) -> HeaderSlots:
        return self._headers[(var, path)]

    def has(self, var: ir.Var) -> bool:
        return any(v is var for v, _ in self._slots)

    def template(self) -> list[int]:
        """The slot list a new packet starts from: internal defaults, then zeros."""
        return [*INTERNAL_DEFAULTS, *([0] * (self.size - INTERNAL))]


def leaves(t: ir.Type, path: Path = ()) -> list[tuple[Path, ir.Type]]:
    """Every scalar of a value of type `t`, and every header's validity (as `$valid`)."""
    if isinstance(t, ir.StructT):
        out: list[tuple[Path, ir.Type]] = []
        if t.is_header:
            out.append(((*path, "$valid"), ir.BoolT()))
        for f in t.fields:
            out += leaves(f.type, (*path, f.name))
        return out
    if isinstance(t, ir.VarbitT):
        return [(path, t), ((*path, ir.VARBIT_LEN), ir.BitT(32))]
    if isinstance(t, ir.TupleT):
        return [leaf for i, e in enumerate(t.elements) for leaf in leaves(e, (*path, str(i)))]
    if isinstance(t, ir.StackT):
        out = []
        for i in range(t.size):
            out += leaves(t.element, (*path, str(i)))
        return [*out, ((*path, ir.STACK_NEXT), ir.STACK_NEXT_TYPE)]
    return [(path, t)]


def leaf_exprs(e: ir.Expr) -> list[ir.Expr]:
    """`e` itself for a scalar; for a struct, header or stack reference, one reference per
    scalar and validity (as `leaves` lists them): how such a value crosses a call."""
    return [_member(e, leaf, t) for leaf, t in leaves(e.type)]


def _member(e: ir.Expr, path: Path, t: ir.Type) -> ir.Expr:
    for name in path[:-1]:
        e = ir.Member(e, name, ir.VoidT())  # intermediate types are not looked at again
    return ir.Member(e, path[-1], t) if path else e


def path_of(e: ir.Expr) -> tuple[ir.Var, Path] | None:
    """(variable, field path) of a reference such as `hdr.ipv4.ttl`; None for other values."""
    names: list[str] = []
    while isinstance(e, ir.Member):
        names.append(e.name)
        e = e.base
    if not isinstance(e, ir.VarRef):
        return None
    return e.var, tuple(reversed(names))


def field_list_slots(layout: Layout, meta: ir.Var) -> dict[int, list[int]]:
    """The slots of the user-metadata fields in each `@field_list(index)`, by index."""
    out: dict[int, list[int]] = {}

    def walk(t: ir.Type, path: Path, lists: tuple[int, ...]) -> None:
        if not isinstance(t, ir.StructT):
            for index in lists:
                out.setdefault(index, []).extend(
                    layout.slot(meta, path + leaf) for leaf, _ in leaves(t)
                )
            return
        for f in t.fields:
            anno = ir.find_annotation(f.annotations, "field_list")
            more = tuple(int(a) for a in anno.args if isinstance(a, int)) if anno else ()
            walk(f.type, (*path, f.name), lists + more)

    walk(meta.type, (), ())
    return out


def flatten_slice(e: ir.Slice) -> tuple[ir.Expr, int, int]:
    """`x[15:8][3:0]` is `x[11:8]`: the base reference and absolute bit positions."""
    hi, lo = e.hi, e.lo
    base = e.base
    while isinstance(base, ir.Slice):
        hi, lo = hi + base.lo, lo + base.lo
        base = base.base
    return base, hi, lo
