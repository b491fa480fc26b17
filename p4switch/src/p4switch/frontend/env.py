"""Names in scope during checking, and how written types resolve to `ir` types."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from p4switch import ir
from p4switch.exceptions import P4CompileError
from p4switch.frontend import syntax as s

MAX_WIDTH = 2048
MAX_STACK = 256  # elements of a header stack: each dynamic access is a chain over them


@dataclass(frozen=True)
class ActionEntity:
    name: str  # fully qualified
    decl: s.ActionDecl
    params: tuple[ir.Param, ...]


@dataclass(frozen=True)
class FunctionEntity:
    name: str  # its action's name
    decl: s.FunctionDecl
    params: tuple[ir.Param, ...]  # without the result
    returns: ir.Type  # VoidT for none


@dataclass(frozen=True)
class TableEntity:
    name: str
    decl: s.TableDecl


@dataclass(frozen=True)
class InstanceEntity:
    """An extern object instance: register, counter, direct_counter, meter or direct_meter."""

    kind: str
    name: str  # fully qualified
    value_type: ir.Type | None = None  # registers
    size: int = 0
    unit: str = ""
    loc: ir.Loc | None = None
    color: ir.Var | None = None  # direct meters: where the hit entry's color is put
    annotations: tuple[ir.Annotation, ...] = ()  # direct counters and meters: for P4Info


@dataclass(eq=False)
class BlockInstanceEntity:
    """An instance of a user's control (or parser) inside another: applied by inlining."""

    kind: str  # "control" or "parser"
    name: str  # control-plane prefix of its tables and actions: `Outer.inst`
    decl: s.ControlDecl | s.ParserDecl
    ctor: dict[str, ir.Const | BlockInstanceEntity]  # constructor arguments by parameter name
    loc: ir.Loc
    locals_: list[ir.Var]  # where its own variables go (the enclosing block's)
    own: dict[str, ir.Var] = field(default_factory=dict)  # its `in` parameters' copies
    body: tuple[ir.Stmt, ...] | None = None  # a control's, checked at the first apply
    states: tuple[ir.ParserState, ...] | None = None  # a parser's, checked at the first apply
    aliases: tuple[ir.Expr, ...] = ()  # the out/inout arguments of that apply


@dataclass(frozen=True)
class ValueSetEntity:
    """A parser value set, named in select cases."""

    name: str  # fully qualified
    bitwidth: int
    widths: tuple[int, ...] = ()  # of the keys it matches: one, or a struct's fields


@dataclass(frozen=True)
class PacketEntity:
    kind: str  # "packet_in" or "packet_out"


Entity = (
    ir.Var
    | ir.Expr  # a constant, or what a nested block's out/inout parameter names
    | ActionEntity
    | FunctionEntity
    | TableEntity
    | InstanceEntity
    | BlockInstanceEntity
    | PacketEntity
    | ValueSetEntity
)


@dataclass
class Scope:
    """One level of names; lookups walk outwards. `readonly` holds `in` parameters."""

    parent: Scope | None = None
    names: dict[str, Entity] = field(default_factory=dict)
    readonly: set[ir.Var] = field(default_factory=set)

    def child(self) -> Scope:
        return Scope(self)

    def declare(self, name: str, entity: Entity, loc: ir.Loc) -> None:
        if name in self.names:
            raise P4CompileError.at(loc, f"{name!r} is already declared in this scope")
        self.names[name] = entity

    def lookup(self, name: str) -> Entity | None:
        scope: Scope | None = self
        while scope is not None:
            found = scope.names.get(name)
            if found is not None:
                return found
            scope = scope.parent
        return None

    def is_readonly(self, var: ir.Var) -> bool:
        scope: Scope | None = self
        while scope is not None:
            if var in scope.readonly:
                return True
            scope = scope.parent
        return False


@dataclass
class TypeEnv:
    """Declared types by name, the error and match_kind members, and type resolution."""

    types: dict[str, ir.Type] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)
    match_kinds: list[str] = field(default_factory=list)
    unsupported: set[str] = field(default_factory=set)  # names declared @p4switch_unsupported
    extern_functions: set[str] = field(default_factory=set)  # every extern function declared
    const_int: Callable[[s.ExprSyntax], int] | None = None
    # generic structs and headers by name, and how the checker makes one for type arguments
    generics: dict[str, s.StructDecl] = field(default_factory=dict)
    instantiate: Callable[[s.StructDecl, tuple[ir.Type, ...], ir.Loc], ir.StructT] | None = None
    digests: dict[str, ir.Digest] = field(default_factory=dict)  # the types given to digest()

    def declare(self, name: str, t: ir.Type, loc: ir.Loc) -> None:
        if name in self.types:
            raise P4CompileError.at(loc, f"type {name!r} is already declared")
        self.types[name] = t

    def resolve(self, ref: s.TypeRef, type_vars: Mapping[str, ir.Type] | None = None) -> ir.Type:
        if isinstance(ref, s.BitsRef):
            return self._bits(ref)
        if isinstance(ref, s.KeywordTypeRef):
            return self._keyword(ref)
        if isinstance(ref, s.StackTypeRef):
            return self._stack(ref, type_vars)
        if isinstance(ref, s.VarbitRef):
            assert self.const_int is not None
            size = self.const_int(ref.max)
            if not 8 <= size <= MAX_WIDTH or size % 8:
                raise P4CompileError.at(
                    ref.loc, f"varbit<{size}>: a multiple of 8 in 8..{MAX_WIDTH}"
                )
            return ir.VarbitT(size)
        assert isinstance(ref, s.NamedTypeRef)
        if type_vars and ref.name in type_vars:
            return type_vars[ref.name]
        if ref.name in self.unsupported:
            raise P4CompileError.at(ref.loc, f"{ref.name} is not supported by p4switch")
        generic = self.generics.get(ref.name)
        if generic is not None:  # a generic struct or header, made for these type arguments
            args = tuple(self.resolve(a, type_vars) for a in ref.args)
            assert self.instantiate is not None
            return self.instantiate(generic, args, ref.loc)
        found = self.types.get(ref.name)
        if found is None and ref.name == "tuple" and ref.args:
            return ir.TupleT(tuple(self.resolve(a, type_vars) for a in ref.args))
        if found is None:
            raise P4CompileError.at(ref.loc, f"unknown type {ref.name!r}")
        if isinstance(found, ir.ExternT):
            args = tuple(self.resolve(a, type_vars) for a in ref.args)
            return ir.ExternT(found.name, args)
        if ref.args:
            raise P4CompileError.at(ref.loc, f"type {ref.name!r} takes no type arguments")
        if isinstance(found, ir.EnumT) and found.underlying is not None:
            # serializable enums are carried as their underlying type, named for P4Info
            under = found.underlying
            return ir.BitT(under.width, under.signed, ir.TypeName(found.name, enum=found))
        return found

    def _stack(self, ref: s.StackTypeRef, type_vars: Mapping[str, ir.Type] | None) -> ir.StackT:
        element = self.resolve(ref.element, type_vars)
        if not (isinstance(element, ir.StructT) and (element.is_header or element.is_union)):
            what = f"a header stack holds headers or header unions, not {element}"
            raise P4CompileError.at(ref.loc, what)
        assert self.const_int is not None
        size = self.const_int(ref.size)
        if not 1 <= size <= MAX_STACK:
            raise P4CompileError.at(ref.size.loc, f"a stack size must be in 1..{MAX_STACK}")
        return ir.StackT(element, size)

    def _bits(self, ref: s.BitsRef) -> ir.BitT:
        assert self.const_int is not None
        width = self.const_int(ref.width)
        if not 1 <= width <= MAX_WIDTH:
            raise P4CompileError.at(ref.loc, f"width {width} is outside 1..{MAX_WIDTH}")
        return ir.BitT(width, ref.signed)

    def _keyword(self, ref: s.KeywordTypeRef) -> ir.Type:
        simple: dict[str, ir.Type] = {
            "bool": ir.BoolT(),
            "error": ir.ErrorT(),
            "void": ir.VoidT(),
            "string": ir.StringT(),
            "int": ir.IntLitT(),
            "_": ir.TypeVar("_"),
        }
        if ref.name in simple:
            return simple[ref.name]
        raise P4CompileError.at(ref.loc, f"type {ref.name} is not supported by p4switch")

    def error_code(self, name: str, loc: ir.Loc) -> int:
        if name not in self.errors:
            raise P4CompileError.at(loc, f"error.{name} is not declared")
        return self.errors.index(name)


def control_plane_name(local: str, annotations: tuple[ir.Annotation, ...], prefix: str) -> str:
    """The P4Info name: `prefix.local`, `@name` honoured, a leading dot meaning top level."""
    named = ir.find_annotation(annotations, "name")
    if named is not None and named.args:
        local = str(named.args[0])
        if local.startswith("."):
            return local[1:]
    return f"{prefix}.{local}" if prefix else local
