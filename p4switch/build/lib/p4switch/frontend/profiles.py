"""Action profiles and action selectors: their instances, and the tables they implement.

`action_profile(size)` and `action_selector(algorithm, size, outputWidth)` are declared in a
control, or constructed in a table's `implementation` property (which p4c names only by an
`@name` on the property). A table they implement takes its actions from the profile's members
(and a selector's groups); its `selector` keys are the selector's hash inputs, not match fields.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from p4switch import ir
from p4switch.exceptions import P4CompileError
from p4switch.frontend import syntax as s
from p4switch.frontend.calls import CUSTOM, HASHES
from p4switch.frontend.env import InstanceEntity, Scope, control_plane_name
from p4switch.frontend.exprcheck import ExprChecker
from p4switch.frontend.package import type_name

PROFILE_KINDS = ("action_profile", "action_selector")


@dataclass
class _Profile:
    name: str
    size: int
    selector: bool
    algorithm: str
    annotations: tuple[ir.Annotation, ...]
    tables: list[str] = field(default_factory=list)
    actions: frozenset[str] | None = None  # those of the first table it implements
    selector_keys: tuple[str, ...] | None = None  # likewise, by their P4Info-style names


class Profiles:
    """The profiles of a program, in declaration order, and the tables each implements."""

    def __init__(self, x: ExprChecker) -> None:
        self.x = x
        self.declared: dict[str, _Profile] = {}

    def declare(self, st: s.Instantiation, name: str, scope: Scope) -> InstanceEntity:
        """`action_profile(size) ap;` or `action_selector(algorithm, size, width) as;`."""
        kind = type_name(st.type)
        self._add(kind, name, st.args, st.loc, st.annotations, scope)
        return InstanceEntity(kind, name, loc=st.loc)

    def _add(
        self,
        kind: str,
        name: str,
        args: tuple[s.ExprSyntax, ...],
        loc: ir.Loc,
        annotations: tuple[ir.Annotation, ...],
        scope: Scope,
    ) -> _Profile:
        selector = kind == "action_selector"
        wanted = "(algorithm, size, outputWidth)" if selector else "(size)"
        if len(args) != (3 if selector else 1):
            raise P4CompileError.at(loc, f"{kind} takes {wanted}")
        algorithm = self._algorithm(args[0], scope) if selector else ""
        size = self.x.const_int(args[1 if selector else 0], scope)
        if size <= 0:
            raise P4CompileError.at(loc, f"the size of {kind} {name} must be positive")
        if selector:
            self.x.const_int(args[2], scope)  # outputWidth: BMv2 does not use it
        if name in self.declared:
            raise P4CompileError.at(loc, f"another action profile is already named {name}")
        profile = _Profile(name, size, selector, algorithm, annotations)
        self.declared[name] = profile
        return profile

    def _algorithm(self, e: s.ExprSyntax, scope: Scope) -> str:
        value = self.x.expr(e, scope)
        t = value.type
        if not (isinstance(value, ir.Const) and isinstance(t, ir.EnumT)):
            raise P4CompileError.at(e.loc, "an action selector's algorithm is a HashAlgorithm")
        algo = t.members[t.values.index(int(value.value))]
        if t.name != "HashAlgorithm" or CUSTOM.get(algo, algo) not in HASHES:
            raise P4CompileError.at(e.loc, f"{t.name}.{algo} is not supported by p4switch")
        return CUSTOM.get(algo, algo)

    def attach(
        self,
        props: dict[str, s.TableProperty],
        table: str,
        actions: frozenset[str],
        selector_keys: tuple[ir.MatchKey, ...],
        default_is_noaction: bool,
        scope: Scope,
    ) -> str | None:
        """The profile named by a table's `implementation` (None: a direct table), checked
        against the table: its selector keys, default action, entries and actions."""
        prop = props.get("implementation")
        if prop is None:
            if selector_keys:
                what = f"table {table}: `selector` keys need `implementation = action_selector`"
                raise P4CompileError.at(_selector_loc(props), what)
            return None
        profile = self._resolve(prop, table, scope)
        if selector_keys and not profile.selector:
            what = f"table {table}: `selector` keys need an action_selector, {profile.name} "
            raise P4CompileError.at(_selector_loc(props), what + "is an action_profile")
        if "entries" in props:
            what = f"table {table} takes its actions from {profile.name}: it cannot have entries"
            raise P4CompileError.at(props["entries"].loc, what)
        if "default_action" in props and not default_is_noaction:
            what = (
                f"table {table} takes its actions from {profile.name}: its default action can"
                " only be NoAction (BMv2 ignores any other)"
            )
            raise P4CompileError.at(props["default_action"].loc, what)
        keys = tuple(k.name for k in selector_keys)
        if profile.actions is None:
            profile.actions, profile.selector_keys = actions, keys
        elif profile.actions != actions:
            first = ", ".join(sorted(profile.actions))
            what = (
                f"{profile.name} is shared: table {table} must list the same actions as table "
                f"{profile.tables[0]} ({first})"
            )
            raise P4CompileError.at(prop.loc, what)
        elif profile.selector_keys != keys:
            what = f"{profile.name} is shared: table {table} must have the same selector keys"
            raise P4CompileError.at(prop.loc, what + f" as table {profile.tables[0]}")
        profile.tables.append(table)
        return profile.name

    def _resolve(self, prop: s.TableProperty, table: str, scope: Scope) -> _Profile:
        e = prop.value
        assert isinstance(e, s.ExprSyntax)
        if isinstance(e, s.CallExpr) and isinstance(e.callee, s.Name):
            kind = e.callee.name
            if kind in PROFILE_KINDS:  # constructed in place: p4c wants it named
                if ir.find_annotation(prop.annotations, "name") is None:
                    what = (
                        f"table {table}: an action profile constructed in `implementation` needs"
                        f' a name, `@name("...") implementation = {kind}(...)` (as p4c asks)'
                    )
                    raise P4CompileError.at(prop.loc, what)
                name = control_plane_name("implementation", prop.annotations, "")
                return self._add(kind, name, e.args, e.loc, prop.annotations, scope)
        found = scope.lookup(e.name) if isinstance(e, s.Name) else None
        if not isinstance(found, InstanceEntity) or found.kind not in PROFILE_KINDS:
            what = "implementation = ... must name an action_profile or an action_selector"
            raise P4CompileError.at(e.loc, what)
        return self.declared[found.name]

    def program(self) -> tuple[ir.ActionProfile, ...]:
        out = []
        for p in self.declared.values():
            sized = ir.find_annotation(p.annotations, "max_group_size")
            max_group = int(sized.args[0]) if p.selector and sized and sized.args else 0
            out.append(
                ir.ActionProfile(
                    p.name,
                    p.size,
                    tuple(p.tables),
                    p.selector,
                    p.algorithm,
                    max_group,
                    tuple(a for a in p.annotations if a.name != "max_group_size"),
                )
            )
        return tuple(out)


def _selector_loc(props: dict[str, s.TableProperty]) -> ir.Loc:
    key = props["key"]
    assert isinstance(key.value, tuple)
    found = next(k for k in key.value if isinstance(k, s.KeyElement) and k.match_kind == "selector")
    return found.loc
