"""Where things are in the P4 source, annotations, and the P4 types of the program model."""

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
class TypeName:
    """The name under which P4Info shows a `bit<N>`: a new type (`type bit<N> T;`), with the
    URI and width of its `@p4runtime_translation` if it has one, or a serializable enum."""

    name: str
    uri: str = ""  # translated: the controller's values are of this type ...
    translated_width: int = 0  # ... and this width (0: a string)
    enum: EnumT | None = None
    annotations: tuple[Annotation, ...] = ()  # a new type's, for P4Info

    @property
    def translated(self) -> bool:
        return bool(self.uri)


@dataclass(frozen=True)
class BitT(Type):
    """`bit<N>` or `int<N>`. `named` is the type P4Info names for the control plane (a new type
    or serializable enum); it does not take part in comparisons, since a new type's values mix
    with its underlying type's here (as after p4c's EliminateNewtype pass)."""

    width: int
    signed: bool = False
    named: TypeName | None = field(default=None, compare=False, repr=False)

    @property
    def mask(self) -> int:
        return (1 << self.width) - 1

    def __str__(self) -> str:
        return f"{'int' if self.signed else 'bit'}<{self.width}>"


@dataclass(frozen=True)
class VarbitT(Type):
    """`varbit<max>`: up to `max` bits, as many as the parser extracted (a header's last
    field). Kept as its value and its length in bits (the member `VARBIT_LEN`)."""

    max: int

    def __str__(self) -> str:
        return f"varbit<{self.max}>"


VARBIT_LEN = "$len"


@dataclass(frozen=True)
class BoolT(Type):
    named: TypeName | None = field(default=None, compare=False, repr=False)  # as BitT's

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
    """A struct, a header (`is_header`) or a header union (`is_union`: a struct of headers
    of which at most one is valid)."""

    name: str
    fields: tuple[Field, ...]
    is_header: bool = False
    annotations: tuple[Annotation, ...] = ()
    is_union: bool = False

    def field(self, name: str) -> Field | None:
        return next((f for f in self.fields if f.name == name), None)

    @property
    def width(self) -> int:
        """Total bit width of a header's fields (its fixed ones, for one with a varbit)."""
        return sum(bit_width(f.type) for f in self.fields if not isinstance(f.type, VarbitT))

    @property
    def varbit(self) -> Field | None:
        """A header's varbit field (always its last), if it has one."""
        last = self.fields[-1] if self.fields else None
        return last if last is not None and isinstance(last.type, VarbitT) else None

    @property
    def fixed(self) -> StructT:
        """A header as it moves to and from bytes: without its varbit field (the part of
        fixed size), its struct fields spread into their scalars (named `s.f`)."""
        fields = self.fields[:-1] if self.varbit is not None else self.fields
        if self.varbit is None and not any(isinstance(f.type, StructT) for f in fields):
            return self
        return StructT(self.name, tuple(_flat(fields, "")), self.is_header, self.annotations)

    def __str__(self) -> str:
        return self.name


@dataclass(frozen=True)
class StackT(Type):
    """A header stack `H[size]`: `size` headers and a hidden `nextIndex` (bit<32>).

    Element i is the member named `str(i)`; `nextIndex` the member `STACK_NEXT`.
    """

    element: StructT
    size: int

    def __str__(self) -> str:
        return f"{self.element.name}[{self.size}]"


STACK_NEXT = "$next"
STACK_NEXT_TYPE = BitT(32)


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


def _flat(fields: tuple[Field, ...], prefix: str) -> list[Field]:
    out: list[Field] = []
    for f in fields:
        if isinstance(f.type, StructT):
            out += _flat(f.type.fields, f"{prefix}{f.name}.")
        else:
            out.append(Field(prefix + f.name, f.type, f.annotations))
    return out


def field_path(name: str) -> tuple[str, ...]:
    """The path of a field of `StructT.fixed` (`s.f`: field f of struct field s)."""
    return tuple(name.split("."))


def key_mask(t: Type) -> int:
    """The mask matching all of a select or table key of type `t`: an error's or enum's code is
    a 32-bit number here."""
    if isinstance(t, BitT):
        return t.mask
    return 1 if isinstance(t, BoolT) else (1 << 32) - 1


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
