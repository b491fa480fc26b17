"""Check table declarations: keys, actions, default action, size, direct counter, entries."""

from __future__ import annotations

import re
from collections.abc import Callable

from p4switch import ir
from p4switch.exceptions import P4CompileError
from p4switch.frontend import syntax as s
from p4switch.frontend.context import BlockContext, CalledActions
from p4switch.frontend.env import ActionEntity, InstanceEntity, Scope
from p4switch.frontend.exprcheck import ExprChecker
from p4switch.frontend.profiles import Profiles
from p4switch.frontend.stmtcheck import StmtChecker

MATCH_KINDS = ("exact", "lpm", "ternary", "range", "optional")
PRIORITY_KINDS = ("ternary", "range", "optional")  # entries may overlap: ordered by priority
SYMBOL_WIDTH = 32  # how wide the codes of an error or enum key are (ir.key_mask)
KNOWN_PROPERTIES = (
    "key",
    "actions",
    "default_action",
    "size",
    "entries",
    "counters",
    "meters",
    "support_timeout",
)


class TableChecker:
    def __init__(self, stmts: StmtChecker, noaction: Callable[[], ActionEntity | None]):
        self.stmts = stmts
        self.x: ExprChecker = stmts.x
        self._noaction = noaction
        self.direct_counters: dict[str, str] = {}  # direct counter -> its table
        self.direct_meters: dict[str, str] = {}  # direct meter -> its table
        self.profiles = Profiles(self.x)
        self._bound = 0  # actions made for `a(x)` in action lists, so far
        # set by the program checker: takes in such an action (and marks it, a and the
        # functions its arguments call used)
        self.add_action: Callable[[ir.Action, CalledActions], None] | None = None

    def check(self, decl: s.TableDecl, name: str, scope: Scope) -> ir.Table:
        props: dict[str, s.TableProperty] = {}
        for p in decl.properties:
            if p.name in props:
                raise P4CompileError.at(p.loc, f"table property {p.name!r} is given twice")
            if p.name not in (*KNOWN_PROPERTIES, "implementation"):
                raise P4CompileError.at(p.loc, f"unknown table property {p.name!r}")
            props[p.name] = p
        keys = self._keys(props.get("key"), scope)
        selector_keys = tuple(k for k in keys if k.match_kind == "selector")
        keys = [k for k in keys if k.match_kind != "selector"]  # hash inputs, not match fields
        if "actions" not in props:
            raise P4CompileError.at(decl.loc, f"table {decl.name} has no actions property")
        refs = self._actions(props["actions"], scope)
        default, args, const_default = self._default(props.get("default_action"), refs, scope)
        if default is None:  # p4c: NoAction, added as a default-only action if not listed
            noaction = self._noaction()
            if noaction is None:
                raise P4CompileError.at(decl.loc, "NoAction is not declared (include core.p4)")
            if noaction.name not in {r.action for r in refs}:
                refs.append(ir.TableActionRef(noaction.name, (ir.Annotation("defaultonly"),)))
            default, args = noaction.name, ()
        noaction = self._noaction()
        default_is_noaction = noaction is not None and default == noaction.name
        actions = frozenset(r.action for r in refs)
        profile = self.profiles.attach(
            props, name, actions, selector_keys, default_is_noaction, scope
        )
        size = 1024
        if "size" in props:
            size = self.x.const_int(_expr(props["size"]), scope)
            if size <= 0:
                raise P4CompileError.at(props["size"].loc, "a table size must be positive")
        counter = self._direct(props.get("counters"), name, scope, "direct_counter")
        meter = self._direct(props.get("meters"), name, scope, "direct_meter")
        entries = self._entries(props.get("entries"), keys, refs, scope)
        support_timeout = self._support_timeout(props.get("support_timeout"), scope)
        return ir.Table(
            name=name,
            keys=tuple(keys),
            actions=tuple(refs),
            default_action=default,
            default_args=args,
            const_default=const_default,
            size=size,
            entries=entries,
            const_entries=bool(entries is not None and props["entries"].const),
            direct_counter=counter,
            annotations=decl.annotations,
            loc=decl.loc,
            direct_meter=meter,
            implementation=profile,
            selector_keys=tuple(k.expr for k in selector_keys),
            support_timeout=support_timeout,
        )

    def _support_timeout(self, prop: s.TableProperty | None, scope: Scope) -> bool:
        """v1model's `support_timeout = true;`: the entries age (P4Runtime idle timeouts)."""
        if prop is None:
            return False
        if not isinstance(prop.value, s.ExprSyntax):
            raise P4CompileError.at(prop.loc, "support_timeout takes true or false")
        value = self.x.expr(prop.value, scope)
        if not (isinstance(value, ir.Const) and isinstance(value.type, ir.BoolT)):
            raise P4CompileError.at(prop.loc, "support_timeout takes true or false")
        return bool(value.value)

    def _keys(self, prop: s.TableProperty | None, scope: Scope) -> list[ir.MatchKey]:
        if prop is None:
            return []
        keys = []
        for k in _items(prop):
            assert isinstance(k, s.KeyElement)
            if k.match_kind not in self.x.env.match_kinds:
                raise P4CompileError.at(k.loc, f"unknown match kind {k.match_kind!r}")
            if k.match_kind not in (*MATCH_KINDS, "selector"):
                raise P4CompileError.at(k.loc, f"match kind {k.match_kind} is not supported")
            expr = self.x.expr(k.expr, scope)
            if isinstance(expr, ir.Const) and isinstance(expr.type, ir.IntLitT):
                raise P4CompileError.at(k.loc, "a constant key needs a width (8w1, not 1)")
            symbols = self._symbols(expr.type, k)
            if not symbols and not isinstance(expr.type, ir.BitT | ir.BoolT):
                raise P4CompileError.at(k.loc, f"cannot match on a {expr.type}")
            if any(isinstance(e, ir.FunctionCall) for e in ir.walk(expr)):
                what = "a table key cannot call a function (keys are read where the table is)"
                raise P4CompileError.at(k.loc, what)
            if any(isinstance(e, ir.StackIndex) for e in ir.walk(expr)):
                what = "a table key cannot pick a stack element at run time (use a constant index)"
                raise P4CompileError.at(k.loc, what)
            named = ir.find_annotation(k.annotations, "name")
            key_name = str(named.args[0]) if named and named.args else key_source(k.expr, expr)
            width = SYMBOL_WIDTH if symbols else ir.bit_width(expr.type)
            keys.append(ir.MatchKey(expr, k.match_kind, key_name, width, k.annotations, symbols))
        if sum(k.match_kind == "lpm" for k in keys) > 1:
            raise P4CompileError.at(prop.loc, "a table can have one lpm key at most")
        return keys

    def _symbols(self, t: ir.Type, k: s.KeyElement) -> tuple[str, ...]:
        """The names of an error or enum key's values (its code is the name's position): the
        control plane matches such a key by name. Only `exact` and `optional` compare names."""
        if isinstance(t, ir.ErrorT):
            names = tuple(self.x.env.errors)
        elif isinstance(t, ir.EnumT) and t.underlying is None:
            names = t.members
        else:
            return ()
        if k.match_kind not in ("exact", "optional"):
            what = f"a key of type {t} has no numeric value: match it exact or optional"
            raise P4CompileError.at(k.loc, what)
        return names

    def _actions(self, prop: s.TableProperty, scope: Scope) -> list[ir.TableActionRef]:
        refs: list[ir.TableActionRef] = []
        for ref in _items(prop):
            assert isinstance(ref, s.ActionRefSyntax)
            expr = ref.expr
            bound: tuple[s.ExprSyntax, ...] = ()
            if isinstance(expr, s.CallExpr):
                bound = expr.args
                expr = expr.callee
            action = self._action(expr, scope, len(bound))
            if any(r.action == action.name for r in refs):
                raise P4CompileError.at(ref.loc, f"action {action.decl.name} is listed twice")
            via = self._bind(action, ref, bound, scope) if bound else None
            refs.append(ir.TableActionRef(action.name, ref.annotations, via))
        return refs

    def _action(self, e: s.ExprSyntax, scope: Scope, bound: int = 0) -> ActionEntity:
        found = scope.lookup(e.name) if isinstance(e, s.Name) else None
        if not isinstance(found, ActionEntity):
            raise P4CompileError.at(e.loc, "expected the name of an action")
        directional = [p for p in found.params if p.direction]
        if bound and not directional:
            what = (
                f"action {found.decl.name}: the control plane gives its arguments; list it as"
                f" `{found.decl.name}` (binding them in the action list is not supported)"
            )
            raise P4CompileError.at(e.loc, what)
        if found.params[: len(directional)] != tuple(directional) or len(directional) != bound:
            what = (
                f"action {found.decl.name}: a table binds its {len(directional)} directional"
                f" parameter(s) in its action list, `{found.decl.name}(...)`, and only those"
            )
            raise P4CompileError.at(e.loc, what)
        return found

    def _bind(
        self,
        action: ActionEntity,
        ref: s.ActionRefSyntax,
        bound: tuple[s.ExprSyntax, ...],
        scope: Scope,
    ) -> str:
        """`a(x)` in a table's action list: an action of a's control-plane parameters that
        runs a with x bound (not in P4Info: the table still lists a)."""
        n = len(bound)
        call = s.CallExpr(ref.loc, s.Name(ref.loc, action.decl.name), bound)
        what = f"action {action.decl.name}"
        args = self.x.call_args(call, action.params[:n], action.decl.params[:n], scope, what)
        params = []
        for p in action.params[n:]:
            var = ir.Var(p.var.name, p.type, in_slots=False)
            params.append(ir.Param(p.name, p.type, "", var, p.annotations))
        call_a = ir.CallAction(action.name, (*args, *(ir.VarRef(p.var) for p in params)))
        self._bound += 1
        name = f"{action.name}$bound{self._bound}"
        ctx = BlockContext("action", name)  # a function an argument calls runs first
        body = tuple(self.stmts.lower([call_a], ctx, ref.loc))
        assert self.add_action is not None
        action_made = ir.Action(name, tuple(params), body, (), ref.loc, function=True)
        self.add_action(action_made, ctx.called_actions)
        return name

    def _call(
        self, e: s.ExprSyntax, refs: list[ir.TableActionRef], scope: Scope
    ) -> tuple[ActionEntity, tuple[int, ...], ir.TableActionRef]:
        callee, args = (e.callee, e.args) if isinstance(e, s.CallExpr) else (e, ())
        found = scope.lookup(callee.name) if isinstance(callee, s.Name) else None
        bound = (
            sum(1 for p in found.params if p.direction) if isinstance(found, ActionEntity) else 0
        )
        action = self._action(callee, scope, bound)
        ref = next((r for r in refs if r.action == action.name), None)
        if ref is None:
            raise P4CompileError.at(e.loc, f"{action.decl.name} is not in the table's actions")
        if len(args) != len(action.params):
            raise P4CompileError.at(
                e.loc, f"action {action.decl.name} takes {len(action.params)} arguments"
            )
        values = []  # the control plane's arguments: the bound ones are the action list's
        for p, a in zip(action.params[bound:], args[bound:], strict=True):
            c = self.x.expr(a, scope, p.type)
            if not isinstance(c, ir.Const):
                raise P4CompileError.at(a.loc, "action arguments here must be constants")
            values.append(int(c.value))
        return action, tuple(values), ref

    def _default(
        self, prop: s.TableProperty | None, refs: list[ir.TableActionRef], scope: Scope
    ) -> tuple[str | None, tuple[int, ...], bool]:
        if prop is None:
            return None, (), False
        action, args, ref = self._call(_expr(prop), refs, scope)
        if ref.scope == "TABLE_ONLY":
            raise P4CompileError.at(prop.loc, f"{action.decl.name} is @tableonly")
        return action.name, args, prop.const

    def _direct(
        self, prop: s.TableProperty | None, table: str, scope: Scope, kind: str
    ) -> str | None:
        """`counters = c` (a direct_counter) or `meters = m` (a direct_meter): its name."""
        if prop is None:
            return None
        e = _expr(prop)
        found = scope.lookup(e.name) if isinstance(e, s.Name) else None
        if not isinstance(found, InstanceEntity) or found.kind != kind:
            raise P4CompileError.at(e.loc, f"{prop.name} = ... must name a {kind}")
        attached = self.direct_counters if kind == "direct_counter" else self.direct_meters
        if found.name in attached:
            raise P4CompileError.at(e.loc, f"{found.name} is already attached to a table")
        attached[found.name] = table
        return found.name

    def _entries(
        self,
        prop: s.TableProperty | None,
        keys: list[ir.MatchKey],
        refs: list[ir.TableActionRef],
        scope: Scope,
    ) -> tuple[ir.ConstEntry, ...] | None:
        if prop is None:
            return None
        if not keys:
            raise P4CompileError.at(prop.loc, "a table without keys cannot have entries")
        entries = []
        items = _items(prop)
        ordered = any(k.match_kind in PRIORITY_KINDS for k in keys)
        given = [e.priority is not None for e in items if isinstance(e, s.EntrySyntax)]
        if any(given) and not all(given):
            raise P4CompileError.at(prop.loc, "give every entry a priority, or none")
        if any(given) and prop.const:  # as p4c (1.2.5) refuses them
            raise P4CompileError.at(
                prop.loc, "const entries take no priorities: list them in order, or use entries"
            )
        ranks = _bmv2_ranks(items) if ordered else []
        for i, entry in enumerate(items):
            assert isinstance(entry, s.EntrySyntax)
            match = self.stmts.keyset(entry.keyset, [k.expr for k in keys], scope)
            fields = []
            for k, m in zip(keys, match, strict=True):
                fields.append(_field(k, m, entry.loc))
            action, args, ref = self._call(entry.action, refs, scope)
            if ref.scope == "DEFAULT_ONLY":
                raise P4CompileError.at(entry.loc, f"{action.decl.name} is @defaultonly")
            priority = ranks[i] if ordered else 0  # by default the first entry listed wins
            if entry.priority is not None:
                if not ordered:
                    what = "entries of a table with only exact and lpm keys take no priority"
                    raise P4CompileError.at(entry.priority.loc, what)
                priority = self.stmts.x.const_int(entry.priority, scope)
                if priority <= 0:
                    raise P4CompileError.at(entry.priority.loc, "a priority must be 1 or more")
            entries.append(ir.ConstEntry(tuple(fields), action.name, args, priority))
        return tuple(entries)


def _bmv2_ranks(items: tuple[object, ...]) -> list[int]:
    """The priority of each entry, larger winning (as in P4Runtime), from the order BMv2 gives
    them: p4c's BMv2 back end writes an entry's `@priority(n)` as its priority, and its
    position (1, 2, ...) for an entry without one, and the smaller priority wins, the first
    listed among equals. With no `@priority`, that is the order listed."""
    bmv2 = []
    for i, entry in enumerate(items):
        assert isinstance(entry, s.EntrySyntax)
        given = _priority_annotation(entry)
        bmv2.append(i + 1 if given is None else given)
    order = sorted(range(len(items)), key=lambda i: (bmv2[i], i))
    ranks = [0] * len(items)
    for place, i in enumerate(order):
        ranks[i] = len(items) - place
    return ranks


def _priority_annotation(entry: s.EntrySyntax) -> int | None:
    """The n of an entry's `@priority(n)`, if it has one."""
    found = ir.find_annotation(entry.annotations, "priority")
    if found is None:
        return None
    if entry.priority is not None:
        raise P4CompileError.at(
            entry.loc, "give an entry `priority = n:` or @priority(n), not both"
        )
    try:
        value = int(found.text.replace("_", ""), 0)
    except ValueError:
        value = -1
    if value < 0:
        raise P4CompileError.at(entry.loc, f"@priority({found.text}) needs a number, 0 or more")
    return value


def _field(
    key: ir.MatchKey, m: tuple[int, int] | ir.KeyRange | ir.ValueSetKey | None, loc: ir.Loc
) -> tuple[int, int] | ir.KeyRange:
    full = (1 << key.bitwidth) - 1
    if isinstance(m, ir.ValueSetKey):
        raise P4CompileError.at(loc, f"{m.value_set} is a value set: it belongs in a select case")
    if key.match_kind == "range":
        if m is None:
            return ir.KeyRange(0, full)
        if isinstance(m, ir.KeyRange):
            if m.low > m.high:
                raise P4CompileError.at(loc, f"range {m.low}..{m.high} of {key.name} is empty")
            return m
        if m[1] != full:
            raise P4CompileError.at(loc, f"range key {key.name} takes a value or a range")
        return ir.KeyRange(m[0], m[0])
    if isinstance(m, ir.KeyRange):
        raise P4CompileError.at(loc, f"{key.match_kind} key {key.name} cannot take a range")
    if m is None:
        if key.match_kind == "exact":
            raise P4CompileError.at(loc, f"exact key {key.name} cannot be a wildcard")
        return 0, 0
    value, mask = m
    if key.match_kind == "optional" and mask != full:
        raise P4CompileError.at(loc, f"optional key {key.name} takes a value or _, not a mask")
    if key.match_kind == "exact" and mask != full:
        raise P4CompileError.at(loc, f"exact key {key.name} cannot take a mask")
    if key.match_kind == "lpm" and (mask | (mask - 1 if mask else full)) != full:
        raise P4CompileError.at(loc, f"the mask of lpm key {key.name} is not a prefix")
    return value & mask, mask


def _items(prop: s.TableProperty) -> tuple[s.KeyElement | s.ActionRefSyntax | s.EntrySyntax, ...]:
    """The list a `key`, `actions` or `entries` property holds (the grammar makes it a list)."""
    assert isinstance(prop.value, tuple)
    return prop.value


def _expr(prop: s.TableProperty) -> s.ExprSyntax:
    assert isinstance(prop.value, s.ExprSyntax)
    return prop.value


_WIDTH_PREFIX = re.compile(r"^[0-9]+[ws]")  # 48w0xff: p4c names the constant 0xff
_LEADING_ZEROS = re.compile(r"(?P<base>0[xXbBoOdD])?(?P<digits>.*)", re.DOTALL)


def key_source(e: s.ExprSyntax, typed: ir.Expr | None = None) -> str:
    """A key expression named as p4c names match fields: `hdr.ipv4.dstAddr` (a struct field's
    `@name` for its name, a `.`-name alone), `h.h.$valid$` for `h.h.isValid()`,
    `hdr.eth.dstAddr & 0xff` (a mask), `hdr.a[0]`, constants in their base without a width.
    `typed`: the checked expression beside the syntax, where the field annotations are."""
    if isinstance(e, s.Name):
        return ("." if e.top_level else "") + e.name
    if isinstance(e, s.MemberExpr):
        base = typed.base if isinstance(typed, ir.Member) else None
        name = e.name
        if base is not None and isinstance(base.type, ir.StructT):
            field = base.type.field(e.name)
            named = ir.find_annotation(field.annotations, "name") if field else None
            name = str(named.args[0]) if named and named.args else e.name
            if name.startswith("."):
                return name[1:]  # a global name: the left-hand side is left out
        return f"{key_source(e.base, base)}.{name}"
    if isinstance(e, s.IndexExpr):  # a constant element is checked as a member of its stack
        stack = typed.base if isinstance(typed, ir.Member) else None
        stack = typed.stack if isinstance(typed, ir.StackIndex) else stack
        return f"{key_source(e.base, stack)}[{key_source(e.index)}]"
    if isinstance(e, s.SliceExpr):
        base = typed.base if isinstance(typed, ir.Slice) else None
        return f"{key_source(e.base, base)}[{key_source(e.hi)}:{key_source(e.lo)}]"
    if isinstance(e, s.IntLit):  # p4c writes the value: no leading zeros after a 0x
        literal = _LEADING_ZEROS.match(_WIDTH_PREFIX.sub("", e.text))
        assert literal is not None  # the pattern matches any text
        return (literal["base"] or "") + (literal["digits"].lstrip("0") or "0")
    if isinstance(e, s.BinaryExpr) and e.op == "&":
        left = typed.left if isinstance(typed, ir.Binary) else None
        return f"{key_source(e.left, left)} & {key_source(e.right)}"
    if isinstance(e, s.CallExpr):
        callee = e.callee
        if isinstance(callee, s.MemberExpr) and callee.name == "isValid" and not e.args:
            header = typed.header if isinstance(typed, ir.IsValid) else None
            return f"{key_source(callee.base, header)}.$valid$"  # what P4Runtime expects
        return f"{key_source(e.callee)}()"
    if isinstance(e, s.CastExpr):
        t = e.type
        if isinstance(t, s.BitsRef):
            written = f"{'int' if t.signed else 'bit'}<{key_source(t.width)}>"
        else:
            written = t.name if isinstance(t, s.NamedTypeRef | s.KeywordTypeRef) else "?"
        return f"({written}){key_source(e.expr)}"
    return "key"
