"""Declarations, checked and taken into the program being checked: types (typedef and type,
structs, headers and unions, generic ones made for their type arguments, enums, error and
match_kind members, externs), parsers, controls and package types, top-level constants and
instances, extern instances, tables, actions, functions and parser value sets."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from p4switch import ir
from p4switch.exceptions import P4CompileError
from p4switch.frontend import syntax as s
from p4switch.frontend.context import BlockContext
from p4switch.frontend.env import (
    MAX_WIDTH,
    ActionEntity,
    FunctionEntity,
    InstanceEntity,
    Scope,
    TableEntity,
    ValueSetEntity,
    control_plane_name,
)
from p4switch.frontend.package import type_name

if TYPE_CHECKING:
    from p4switch.frontend.typecheck import ProgramChecker

UNITS = {"packets": "packets", "bytes": "bytes", "packets_and_bytes": "packets_and_bytes"}


class DeclarationChecker:
    """Each declaration checked, and what it declares recorded in the program being checked
    (`ProgramChecker`): types in the type environment, names in their scope, actions,
    tables, extern instances and value sets in the program's lists."""

    def __init__(self, program: ProgramChecker) -> None:
        self.program = program
        self.env = program.env
        self.top = program.top
        self.x = program.x
        self.generic_instances: dict[str, ir.StructT] = {}  # generic structs made, by name

    def declare(self, d: s.Decl) -> None:
        """A top-level declaration (P4 declares before use); a kind not listed is ignored."""
        declare = _DECLARATIONS.get(type(d))
        if declare is not None:
            declare(self, d)

    def _unsupported(self, d: s.Unsupported) -> None:
        raise P4CompileError.at(d.loc, d.what)

    # --- types --------------------------------------------------------------------------------

    def _typedef(self, d: s.TypedefDecl) -> None:
        """`typedef`, and `type` (a new type): the same as its underlying type here, as after
        p4c's EliminateNewtype pass, so its values mix with the underlying type's."""
        t = self.env.resolve(d.type)
        if d.newtype and not isinstance(t, ir.BitT | ir.BoolT):
            raise P4CompileError.at(d.loc, f"a new type must be bit<N>, int<N> or bool, not {t}")
        if d.newtype and isinstance(t, ir.BitT):  # named for P4Info; a `type` of a `type`
            t = ir.BitT(t.width, t.signed, _new_type(d))  # takes the outer name only, as p4c
        elif d.newtype and isinstance(t, ir.BoolT):
            t = ir.BoolT(_new_type(d))
        self.env.declare(d.name, t, d.loc)

    def _struct(self, d: s.StructDecl) -> None:
        if d.type_params:  # made for each use's type arguments (`instantiate`)
            if d.name in self.env.generics or d.name in self.env.types:
                raise P4CompileError.at(d.loc, f"type {d.name!r} is already declared")
            self.env.generics[d.name] = d
            return
        self.env.declare(d.name, self._struct_type(d), d.loc)

    def instantiate(self, d: s.StructDecl, args: tuple[ir.Type, ...], loc: ir.Loc) -> ir.StructT:
        """`S<bit<8>>` of `struct S<T> { ... }`: a struct named `S<bit<8>>`, T bound."""
        if len(args) != len(d.type_params):
            n = len(d.type_params)
            raise P4CompileError.at(loc, f"{d.name} takes {n} type argument(s), got {len(args)}")
        name = f"{d.name}<{', '.join(str(a) for a in args)}>"
        made = self.generic_instances.get(name)
        if made is None:
            made = self.generic_instances[name] = self._struct_type(
                d, dict(zip(d.type_params, args, strict=True)), name
            )
        return made

    def _struct_type(
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

    def _enum(self, d: s.EnumDecl) -> None:
        self.env.declare(d.name, self._enum_type(d), d.loc)

    def _enum_type(self, d: s.EnumDecl) -> ir.EnumT:
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

    # --- parsers, controls, packages and top-level instances ----------------------------------

    def _block(self, d: s.ParserDecl | s.ControlDecl) -> None:
        if d.name in self.program.blocks or d.name in self.env.types:
            raise P4CompileError.at(d.loc, f"{d.name!r} is already declared")
        self.program.blocks[d.name] = d

    def _block_type(self, d: s.BlockTypeDecl) -> None:
        self.program.block_types[d.name] = d
        self.env.declare(d.name, ir.BlockT(d.kind, d.name), d.loc)

    def _top(self, d: s.TopDecl) -> None:
        st = d.stmt
        if isinstance(st, s.ConstDecl):
            self.program.stmts.constant(st, self.top)
        elif isinstance(st, s.Instantiation):
            decl = self.program.block_types.get(type_name(st.type))
            if decl is not None and decl.kind == "package":
                if st.name != "main":
                    raise P4CompileError.at(st.loc, "the package instance must be named main")
                self.program.main = st
            else:
                self.instance(st, self.top, "")

    # --- extern instances -----------------------------------------------------------------------

    def instance(
        self, st: s.Instantiation, scope: Scope, prefix: str, locals_: list[ir.Var] | None = None
    ) -> None:
        """A register, counter, meter (direct or not), action profile or action selector;
        `locals_` holds a control's variables (a direct meter's color goes there)."""
        program = self.program
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
            program.registers.append(ir.Register(name, targs[0], size, st.annotations))
        elif kind == "counter":
            size, unit = self._ctor_args(st, scope, 2, unit_at=1)
            entity = InstanceEntity("counter", name, None, size, unit, st.loc)
            program.counters.append(ir.Counter(name, size, unit, st.annotations))
        elif kind == "direct_counter":
            (unit,) = self._ctor_args(st, scope, 1, unit_at=0)
            entity = InstanceEntity(
                "direct_counter", name, None, 0, unit, st.loc, annotations=st.annotations
            )
            program.direct_counters[name] = entity
        elif kind == "meter":
            size, unit = self._ctor_args(st, scope, 2, unit_at=1, units="MeterType")
            entity = InstanceEntity("meter", name, None, size, unit, st.loc)
            program.meters.append(ir.Meter(name, size, unit, st.annotations))
        elif kind == "direct_meter":
            if locals_ is None:
                raise P4CompileError.at(st.loc, "declare a direct meter in a control")
            (unit,) = self._ctor_args(st, scope, 1, unit_at=0, units="MeterType")
            color = ir.Var(f"{name}.color", ir.BitT(2), in_slots=True)
            locals_.append(color)
            entity = InstanceEntity(
                "direct_meter", name, None, 0, unit, st.loc, color, st.annotations
            )
            program.direct_meters[name] = entity
        elif kind in ("action_profile", "action_selector"):
            entity = program.table_checker.profiles.declare(st, name, scope)
        elif isinstance(t, ir.ExternT):
            what = f"extern {kind} has no implementation in p4switch (user-defined externs)"
            raise P4CompileError.at(st.loc, what)
        else:
            raise P4CompileError.at(st.loc, f"cannot instantiate {kind} here")
        names = [*(r.name for r in program.registers), *(c.name for c in program.counters)]
        names += [m.name for m in program.meters]
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

    # --- tables, actions and functions --------------------------------------------------------

    def table(self, d: s.TableDecl, scope: Scope, prefix: str) -> None:
        """A control's table; its control-plane name starts `prefix`."""
        name = control_plane_name(d.name, d.annotations, prefix)
        if name in self.program.tables:
            raise P4CompileError.at(d.loc, f"another table is already named {name}")
        self.program.tables[name] = self.program.table_checker.check(d, name, scope)
        scope.declare(d.name, TableEntity(name, d), d.loc)

    def _top_action(self, d: s.ActionDecl) -> None:
        self.action(d, self.top, "")

    def action(self, d: s.ActionDecl, scope: Scope, prefix: str) -> None:
        """An action, top-level or a control's; its control-plane name starts `prefix`."""
        program = self.program
        name = control_plane_name(d.name, d.annotations, prefix)
        if name in program.actions:
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
        ctx = BlockContext("action", program.ctx.name, program.ctx.called_actions)
        body = program.stmts.block(d.body.stmts, inner, ctx)
        program.actions[name] = ir.Action(name, tuple(params), body, d.annotations, d.loc)

    def _function(self, d: s.FunctionDecl) -> None:
        """A function, compiled as an action whose last parameter (`out`) is its value."""
        program = self.program
        if d.type_params:
            raise P4CompileError.at(d.loc, "generic functions are not supported by p4switch")
        name = f"{d.name}()"  # never an action's name, and not in P4Info
        if self.top.lookup(d.name) is not None or name in program.actions:
            raise P4CompileError.at(d.loc, f"{d.name!r} is already declared")
        returns = self.env.resolve(d.return_type)
        if not isinstance(returns, ir.BitT | ir.BoolT | ir.VoidT | ir.StructT):
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
        ctx = BlockContext("function", d.name, program.ctx.called_actions, result)
        body = program.stmts.block(d.body.stmts, inner, ctx)
        if result is not None and not _always_returns(body):
            what = f"function {d.name} does not return a value on every path"
            raise P4CompileError.at(d.loc, what)
        everything = list(params)
        if result is not None:
            everything.append(ir.Param("result", returns, "out", result))
        self.top.declare(d.name, FunctionEntity(name, d, tuple(params), returns), d.loc)
        program.actions[name] = ir.Action(
            name, tuple(everything), body, d.annotations, d.loc, function=True
        )

    # --- parser value sets ----------------------------------------------------------------------

    def value_set(self, st: s.ValueSetDecl, scope: Scope, prefix: str) -> None:
        """A parser's `value_set<T>(size)`, matched in select cases."""
        t = self.env.resolve(st.type)
        fields: tuple[tuple[str, int, str], ...] = ()
        if isinstance(t, ir.StructT) and not (t.is_header or t.is_union):
            fields = tuple(_value_set_fields(t, "", st.loc))
            width = sum(w for _, w, _ in fields)
        elif isinstance(t, ir.BitT) and not t.signed:
            width = t.width
        else:
            what = f"value sets of {t} are not supported (use bit<N> or a struct of them)"
            raise P4CompileError.at(st.loc, what)
        size = self.x.const_int(st.size, scope)
        if size <= 0:
            raise P4CompileError.at(st.size.loc, "a value set's size must be positive")
        name = control_plane_name(st.name, st.annotations, prefix)
        value_sets = self.program.value_sets
        if any(v.name == name for v in value_sets):
            raise P4CompileError.at(st.loc, f"another value set is already named {name}")
        value_sets.append(ir.ValueSet(name, width, size, st.annotations, fields))
        widths = tuple(w for _, w, _ in fields) or (width,)
        scope.declare(st.name, ValueSetEntity(name, width, widths), st.loc)


_TRANSLATION = re.compile(
    r'\s*"((?:[^"\\]|\\.)*)"\s*,\s*(?:(\d+)|bit\s*<\s*(\d+)\s*>|(string))\s*$'
)


def _new_type(d: s.TypedefDecl) -> ir.TypeName:
    """A new type's name for P4Info, with `@p4runtime_translation("uri", W)` (W a number,
    `bit<W>` or `string`) if it has one."""
    annotation = ir.find_annotation(d.annotations, "p4runtime_translation")
    if annotation is None:
        return ir.TypeName(d.name, annotations=d.annotations)
    m = _TRANSLATION.match(annotation.text)
    if m is None or not m.group(1):
        what = '@p4runtime_translation takes ("uri", W), W a width, bit<W> or string'
        raise P4CompileError.at(d.loc, what)
    width = int(m.group(2) or m.group(3) or 0)
    if not (m.group(4) or 1 <= width <= MAX_WIDTH):
        raise P4CompileError.at(
            d.loc, f"@p4runtime_translation: width {width} outside 1..{MAX_WIDTH}"
        )
    return ir.TypeName(d.name, m.group(1), width, annotations=d.annotations)


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


_SET_KINDS = ("exact", "ternary", "lpm", "range")


def _value_set_fields(t: ir.StructT, prefix: str, loc: ir.Loc) -> list[tuple[str, int, str]]:
    """A struct value set's keys: its bit<N> fields in order (nested structs' too, by dotted
    name), each matched as its `@match(kind)` says, exactly if it says nothing."""
    out: list[tuple[str, int, str]] = []
    for f in t.fields:
        name = prefix + f.name
        if isinstance(f.type, ir.StructT) and not (f.type.is_header or f.type.is_union):
            out += _value_set_fields(f.type, name + ".", loc)
            continue
        if not isinstance(f.type, ir.BitT) or f.type.signed:
            raise P4CompileError.at(loc, f"value set field {name} is a {f.type}, not a bit<N>")
        found = ir.find_annotation(f.annotations, "match")
        kind = str(found.args[0]) if found is not None and found.args else "exact"
        if kind not in _SET_KINDS:
            what = (
                f"value set field {name}: @match({kind}) (p4switch takes {', '.join(_SET_KINDS)})"
            )
            raise P4CompileError.at(loc, what)
        out.append((name, f.type.width, kind))
    return out


# How each kind of top-level declaration is taken in (any other kind is ignored).
_DECLARATIONS: dict[type[s.Decl], Callable[[DeclarationChecker, Any], None]] = {
    s.Unsupported: DeclarationChecker._unsupported,
    s.TypedefDecl: DeclarationChecker._typedef,
    s.StructDecl: DeclarationChecker._struct,
    s.EnumDecl: DeclarationChecker._enum,
    s.ErrorDecl: DeclarationChecker._members,
    s.MatchKindDecl: DeclarationChecker._members,
    s.ExternDecl: DeclarationChecker._extern,
    s.ExternFunctionDecl: DeclarationChecker._extern_function,
    s.ActionDecl: DeclarationChecker._top_action,
    s.FunctionDecl: DeclarationChecker._function,
    s.ParserDecl: DeclarationChecker._block,
    s.ControlDecl: DeclarationChecker._block,
    s.BlockTypeDecl: DeclarationChecker._block_type,
    s.TopDecl: DeclarationChecker._top,
}
