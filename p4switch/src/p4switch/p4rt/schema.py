"""What a P4Info says about a loaded program, bound to the program's run-time state.

P4Runtime names objects by numeric id; `SwitchState` names them as P4Info does (fully qualified
names such as `MyIngress.ipv4_lpm`). `P4InfoIndex.bind` indexes a P4Info by id and checks, object by
object, that the state built from the program has the same tables (keys, actions), actions
(parameters), registers and counters. A P4Info that does not describe the program is refused
when the pipeline is set, with every disagreement listed, rather than on the first write.

A match field, action parameter or controller header field of a new type with
`@p4runtime_translation` carries the controller's values of the translated type (P4Info gives
its width, or a string); p4switch does not translate them, so it binds such a field with the
program's width and marks it `translated`, and refuses each write or packet that carries one.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from p4.config.v1 import p4info_pb2

from p4switch.exceptions import P4InfoMismatchError
from p4switch.p4rt.digestinfo import DigestInfo, bind_digests
from p4switch.p4rt.profile_schema import ProfileInfo, bind_profiles
from p4switch.runtime import SwitchState, TableSpec

_MATCH_KINDS = {
    p4info_pb2.MatchField.EXACT: "exact",
    p4info_pb2.MatchField.LPM: "lpm",
    p4info_pb2.MatchField.TERNARY: "ternary",
    p4info_pb2.MatchField.RANGE: "range",
    p4info_pb2.MatchField.OPTIONAL: "optional",
}
_COUNTER_UNITS = {
    p4info_pb2.CounterSpec.BYTES: "bytes",
    p4info_pb2.CounterSpec.PACKETS: "packets",
    p4info_pb2.CounterSpec.BOTH: "packets_and_bytes",
}


@dataclass(frozen=True)
class FieldInfo:
    id: int
    name: str
    bitwidth: int
    kind: str  # "exact", "lpm", "ternary", "range" or "optional"
    index: int  # position of the field in the run-time key
    symbols: tuple[str, ...] = ()  # an error or enum key: matched by its values' names
    translated: str = ""  # a translated new type: `T (uri)`; p4switch refuses its values


@dataclass(frozen=True)
class ParamInfo:
    id: int
    name: str
    bitwidth: int
    index: int  # position of the parameter in ActionCall.args
    translated: str = ""  # a translated new type: `T (uri)`; p4switch refuses its values


@dataclass(frozen=True)
class ActionInfo:
    id: int
    name: str
    params: tuple[ParamInfo, ...]  # in P4Info order

    def param(self, param_id: int) -> ParamInfo | None:
        return next((p for p in self.params if p.id == param_id), None)


@dataclass(frozen=True)
class TableInfo:
    id: int
    name: str
    fields: tuple[FieldInfo, ...]  # in P4Info order
    action_ids: frozenset[int]
    direct_counter_id: int  # 0: none
    direct_meter_id: int  # 0: none
    is_const: bool  # `const entries`: only the default entry may be changed
    idle_timeout: bool  # NOTIFY_CONTROL: entries take an idle_timeout_ns (support_timeout)
    profile_id: int  # the action profile or selector implementing it; 0: a direct table

    def field(self, field_id: int) -> FieldInfo | None:
        return next((f for f in self.fields if f.id == field_id), None)


@dataclass(frozen=True)
class RegisterInfo:
    id: int
    name: str
    bitwidth: int
    size: int
    translated: str = ""  # a translated new type: `T (uri)`; p4switch refuses its values


@dataclass(frozen=True)
class CounterInfo:
    id: int
    name: str
    size: int
    unit: str  # "packets", "bytes" or "packets_and_bytes"


@dataclass(frozen=True)
class MeterInfo:
    id: int
    name: str
    size: int
    unit: str  # "packets" or "bytes"


@dataclass(frozen=True)
class ValueSetInfo:
    id: int
    name: str
    bitwidth: int
    size: int
    fields: tuple[FieldInfo, ...] = ()  # a member's matches, in P4Info order

    def field(self, field_id: int) -> FieldInfo | None:
        return next((f for f in self.fields if f.id == field_id), None)


@dataclass(frozen=True)
class DirectCounterInfo:
    id: int
    name: str
    table_id: int
    unit: str


@dataclass(frozen=True)
class MetadataInfo:
    id: int
    name: str
    bitwidth: int
    padding: bool  # a padding field: a client may leave it out of a PacketOut
    translated: str = ""  # a translated new type: `T (uri)`; the header's layout is unknown


@dataclass(frozen=True)
class ControllerHeaderInfo:
    """A `@controller_header` header: its fields, most significant first, byte-aligned in all."""

    name: str
    fields: tuple[MetadataInfo, ...]

    @property
    def translated(self) -> MetadataInfo | None:
        """A field of a translated type (its width in the program is not in P4Info), if any."""
        return next((f for f in self.fields if f.translated), None)

    @property
    def byte_len(self) -> int:
        return sum(f.bitwidth for f in self.fields) // 8


@dataclass(frozen=True)
class P4InfoIndex:
    p4info: p4info_pb2.P4Info
    tables: Mapping[int, TableInfo]
    actions: Mapping[int, ActionInfo]
    registers: Mapping[int, RegisterInfo]
    counters: Mapping[int, CounterInfo]
    direct_counters: Mapping[int, DirectCounterInfo]
    meters: Mapping[int, MeterInfo]
    value_sets: Mapping[int, ValueSetInfo]
    digests: Mapping[int, DigestInfo]
    packet_in: ControllerHeaderInfo | None
    packet_out: ControllerHeaderInfo | None
    unsupported: frozenset[str]  # kinds of P4Info objects p4switch cannot program
    action_ids: Mapping[str, int]  # action name -> id
    profiles: Mapping[int, ProfileInfo]

    @classmethod
    def bind(cls, p4info: p4info_pb2.P4Info, state: SwitchState) -> P4InfoIndex:
        """Index `p4info` and check it against `state`.

        Raises P4InfoMismatchError listing every problem.
        """
        problems: list[str] = []
        _check_unique_ids(p4info, problems)
        used = {ref.id for t in p4info.tables for ref in t.action_refs}
        actions = {
            a.preamble.id: _bind_action(a, state, problems, p4info)
            for a in p4info.actions
            if a.preamble.id in used or a.preamble.name in state.actions
        }  # an action no table uses need not be in the program
        action_names = {i: a.name for i, a in actions.items()}
        tables = {
            t.preamble.id: _bind_table(t, state, action_names, problems, p4info)
            for t in p4info.tables
        }
        registers = {
            r.preamble.id: _bind_register(r, state, problems, p4info) for r in p4info.registers
        }
        counters = {c.preamble.id: _bind_counter(c, state, problems) for c in p4info.counters}
        direct = {
            d.preamble.id: _bind_direct_counter(d, state, tables, problems)
            for d in p4info.direct_counters
        }
        meters = {m.preamble.id: _bind_meter(m, state, problems) for m in p4info.meters}
        value_sets = {v.preamble.id: _bind_value_set(v, state, problems) for v in p4info.value_sets}
        _check_direct_meters(p4info, state, tables, problems)
        digests = bind_digests(p4info, state, problems)
        profiles = bind_profiles(p4info, state, problems)
        headers = {
            h.preamble.name: _controller_header(h, problems, p4info)
            for h in p4info.controller_packet_metadata
        }
        if problems:
            raise P4InfoMismatchError(
                "the P4Info does not describe the loaded program: " + "; ".join(problems)
            )
        present = {
            "externs": len(p4info.externs),
        }
        return cls(
            p4info=p4info,
            tables=tables,
            actions=actions,
            registers=registers,
            counters=counters,
            direct_counters=direct,
            meters=meters,
            value_sets=value_sets,
            digests=digests,
            packet_in=headers.get("packet_in"),
            packet_out=headers.get("packet_out"),
            unsupported=frozenset(kind for kind, n in present.items() if n),
            action_ids={a.name: a.id for a in actions.values()},
            profiles=profiles,
        )


def _check_unique_ids(p4info: p4info_pb2.P4Info, problems: list[str]) -> None:
    seen: dict[int, str] = {}
    groups = (
        p4info.tables,
        p4info.actions,
        p4info.action_profiles,
        p4info.counters,
        p4info.direct_counters,
        p4info.meters,
        p4info.direct_meters,
        p4info.controller_packet_metadata,
        p4info.value_sets,
        p4info.registers,
        p4info.digests,
    )
    for group in groups:
        for obj in group:
            pid, name = obj.preamble.id, obj.preamble.name
            if pid == 0:
                problems.append(f"{name or 'an object'} has id 0")
            elif pid in seen:
                problems.append(f"{name} and {seen[pid]} share id {pid:#x}")
            seen[pid] = name


def translation(p4info: p4info_pb2.P4Info, type_name: str) -> str:
    """`T (uri)` for a value P4Info names of a new type T with `@p4runtime_translation`."""
    if not type_name:
        return ""
    new_type = p4info.type_info.new_types.get(type_name)
    if new_type is None or not new_type.HasField("translated_type"):
        return ""
    return f"{type_name} ({new_type.translated_type.uri})"


def _bind_action(
    a: p4info_pb2.Action, state: SwitchState, problems: list[str], p4info: p4info_pb2.P4Info
) -> ActionInfo:
    name = a.preamble.name
    spec = state.actions.get(name)
    if spec is None:
        problems.append(f"action {name} is not in the program")
        return ActionInfo(a.preamble.id, name, ())
    if not a.params and not any(name in t.spec.actions for t in state.tables.values()):
        # no table runs it (only the control calls it, with its own arguments): p4c writes
        # such an action without parameters, and no entry can give it any
        return ActionInfo(a.preamble.id, name, ())
    index = {p.name: (i, p.bitwidth) for i, p in enumerate(spec.params)}
    params = []
    for p in a.params:
        where = index.get(p.name)
        translated = translation(p4info, p.type_name.name)  # of the controller's width, not P4's
        if where is None or (where[1] != p.bitwidth and not translated):
            problems.append(
                f"action {name}: parameter {p.name} bit<{p.bitwidth}> is not in the program"
            )
            continue
        params.append(ParamInfo(p.id, p.name, where[1], where[0], translated))
    if len(a.params) != len(spec.params):
        problems.append(
            f"action {name}: {len(a.params)} parameters, the program has {len(spec.params)}"
        )
    return ActionInfo(a.preamble.id, name, tuple(params))


def _bind_table(
    t: p4info_pb2.Table,
    state: SwitchState,
    action_names: Mapping[int, str],
    problems: list[str],
    p4info: p4info_pb2.P4Info,
) -> TableInfo:
    name = t.preamble.name
    table = state.tables.get(name)
    spec = table.spec if table is not None else None
    fields = []
    if spec is None:
        problems.append(f"table {name} is not in the program")
    else:
        keys = {k.name: (i, k) for i, k in enumerate(spec.keys)}
        for mf in t.match_fields:
            kind = _MATCH_KINDS.get(mf.match_type, mf.other_match_type or "unspecified")
            index, key_spec = keys.get(mf.name, (0, None))
            width = 0 if key_spec is None or key_spec.symbols else key_spec.bitwidth
            translated = translation(p4info, mf.type_name.name)  # of the controller's width
            if (
                key_spec is None
                or key_spec.match_kind != kind
                or (width != mf.bitwidth and not translated)
            ):
                key = f"{mf.name} ({kind}, bit<{mf.bitwidth}>)"
                problems.append(f"table {name}: key {key} is not in the program")
                continue
            fields.append(
                FieldInfo(
                    mf.id, mf.name, key_spec.bitwidth, kind, index, key_spec.symbols, translated
                )
            )
        if len(t.match_fields) != len(spec.keys):
            problems.append(
                f"table {name}: {len(t.match_fields)} key fields, the program has {len(spec.keys)}"
            )
        _check_table_actions(t, spec, action_names, problems)
        notify = t.idle_timeout_behavior == p4info_pb2.Table.NOTIFY_CONTROL
        if notify != spec.support_timeout:
            problems.append(f"table {name}: idle_timeout_behavior differs from the program's")
    direct = [i for i in t.direct_resource_ids if i >> 24 == p4info_pb2.P4Ids.DIRECT_COUNTER]
    metered = [i for i in t.direct_resource_ids if i >> 24 == p4info_pb2.P4Ids.DIRECT_METER]
    return TableInfo(
        id=t.preamble.id,
        name=name,
        fields=tuple(fields),
        action_ids=frozenset(ref.id for ref in t.action_refs),
        direct_counter_id=direct[0] if direct else 0,
        direct_meter_id=metered[0] if metered else 0,
        is_const=t.is_const_table,
        idle_timeout=t.idle_timeout_behavior == p4info_pb2.Table.NOTIFY_CONTROL,
        profile_id=t.implementation_id,
    )


def _check_table_actions(
    t: p4info_pb2.Table, spec: TableSpec, action_names: Mapping[int, str], problems: list[str]
) -> None:
    name = t.preamble.name
    refs = {action_names.get(ref.id, f"{ref.id:#x}"): ref.scope for ref in t.action_refs}
    if set(refs) != set(spec.actions):
        problems.append(
            f"table {name}: actions {sorted(refs)}, the program has {sorted(spec.actions)}"
        )
        return
    table_only = {n for n, s in refs.items() if s == p4info_pb2.ActionRef.TABLE_ONLY}
    default_only = {n for n, s in refs.items() if s == p4info_pb2.ActionRef.DEFAULT_ONLY}
    if table_only != spec.table_only or default_only != spec.default_only:
        problems.append(f"table {name}: @tableonly/@defaultonly actions differ from the program's")
    if (t.const_default_action_id != 0) != spec.const_default:
        problems.append(f"table {name}: const default action differs from the program's")


def _register_width(spec: p4info_pb2.P4DataTypeSpec, types: p4info_pb2.P4TypeInfo) -> int:
    """A register value's width; 0 if it is not bit<W>, int<W> or a name for one of those
    (a translated new type among the latter: the width is the controller's)."""
    which = spec.WhichOneof("type_spec")
    if which == "serializable_enum" and spec.serializable_enum.name in types.serializable_enums:
        return int(types.serializable_enums[spec.serializable_enum.name].underlying_type.bitwidth)
    if which == "new_type" and spec.new_type.name in types.new_types:
        new_type = types.new_types[spec.new_type.name]
        if new_type.HasField("original_type"):
            return _register_width(new_type.original_type, types)
        return 0
    kind = spec.bitstring.WhichOneof("type_spec") if which == "bitstring" else None
    if kind == "bit":
        return int(spec.bitstring.bit.bitwidth)
    return int(spec.bitstring.int.bitwidth) if kind == "int" else 0


def _bind_register(
    r: p4info_pb2.Register, state: SwitchState, problems: list[str], p4info: p4info_pb2.P4Info
) -> RegisterInfo:
    name = r.preamble.name
    spec = state.registers[name].spec if name in state.registers else None
    # a translated new type: the program's width, its values refused
    translated = translation(p4info, r.type_spec.new_type.name)
    if translated and spec is not None and spec.size == r.size:
        return RegisterInfo(r.preamble.id, name, spec.bitwidth, r.size, translated)
    # bit<W> or int<W> (two's complement on the wire, as P4Runtime encodes signed values), or
    # a serializable enum or a new type of one of those, as its underlying bit<W>
    bitwidth = _register_width(r.type_spec, p4info.type_info)
    if bitwidth == 0:
        what = "only bit<W> and int<W> registers (or names of them) are supported"
        problems.append(f"register {name}: {what}")
    elif spec is None or spec.bitwidth != bitwidth or spec.size != r.size:
        problems.append(f"register {name} bit<{bitwidth}>[{r.size}] is not in the program")
    return RegisterInfo(r.preamble.id, name, bitwidth, r.size)


def _bind_meter(m: p4info_pb2.Meter, state: SwitchState, problems: list[str]) -> MeterInfo:
    name = m.preamble.name
    unit = "bytes" if m.spec.unit == p4info_pb2.MeterSpec.BYTES else "packets"
    spec = state.meters[name].spec if name in state.meters else None
    if spec is None or spec.size != m.size or spec.unit != unit:
        problems.append(f"meter {name}[{m.size}] ({unit}) is not in the program")
    return MeterInfo(m.preamble.id, name, m.size, unit)


def _bind_value_set(
    v: p4info_pb2.ValueSet, state: SwitchState, problems: list[str]
) -> ValueSetInfo:
    name = v.preamble.name
    spec = state.value_sets[name].spec if name in state.value_sets else None
    given = [(m.bitwidth, _MATCH_KINDS.get(m.match_type, "")) for m in v.match]
    keys = spec.keys if spec is not None else ()
    if spec is None or spec.size != v.size or given != [(k.bitwidth, k.match_kind) for k in keys]:
        problems.append(f"value set {name}[{v.size}] matching {given} is not in the program")
        return ValueSetInfo(v.preamble.id, name, 0, v.size)
    fields = tuple(
        FieldInfo(m.id, m.name, k.bitwidth, k.match_kind, i)
        for i, (m, k) in enumerate(zip(v.match, keys, strict=True))
    )
    return ValueSetInfo(v.preamble.id, name, spec.bitwidth, v.size, fields)


def _check_direct_meters(
    p4info: p4info_pb2.P4Info,
    state: SwitchState,
    tables: Mapping[int, TableInfo],
    problems: list[str],
) -> None:
    for d in p4info.direct_meters:
        table = tables.get(d.direct_table_id)
        name = d.preamble.name
        if table is None:
            problems.append(f"direct meter {name}: no table with id {d.direct_table_id:#x}")
        elif table.name in state.tables and state.tables[table.name].spec.direct_meter != name:
            problems.append(f"direct meter {name}: the program does not attach it to {table.name}")


def _bind_counter(c: p4info_pb2.Counter, state: SwitchState, problems: list[str]) -> CounterInfo:
    name = c.preamble.name
    spec = state.counters[name].spec if name in state.counters else None
    if spec is None or spec.size != c.size:
        problems.append(f"counter {name}[{c.size}] is not in the program")
    return CounterInfo(
        c.preamble.id, name, c.size, _COUNTER_UNITS.get(c.spec.unit, "packets_and_bytes")
    )


def _bind_direct_counter(
    d: p4info_pb2.DirectCounter,
    state: SwitchState,
    tables: Mapping[int, TableInfo],
    problems: list[str],
) -> DirectCounterInfo:
    name = d.preamble.name
    table = tables.get(d.direct_table_id)
    if table is None:
        problems.append(f"direct counter {name}: no table with id {d.direct_table_id:#x}")
    elif table.name in state.tables and state.tables[table.name].spec.direct_counter != name:
        problems.append(f"direct counter {name}: the program does not attach it to {table.name}")
    unit = _COUNTER_UNITS.get(d.spec.unit, "packets_and_bytes")
    return DirectCounterInfo(d.preamble.id, name, d.direct_table_id, unit)


def _controller_header(
    h: p4info_pb2.ControllerPacketMetadata, problems: list[str], p4info: p4info_pb2.P4Info
) -> ControllerHeaderInfo:
    fields = tuple(
        MetadataInfo(
            m.id,
            m.name,
            m.bitwidth,
            m.name.startswith("_pad") or any(a.startswith("@padding") for a in m.annotations),
            translation(p4info, m.type_name.name),
        )
        for m in h.metadata
    )
    bits = sum(f.bitwidth for f in fields)
    if any(f.translated for f in fields):  # refused packet by packet (its layout is unknown)
        return ControllerHeaderInfo(h.preamble.name, fields)
    if any(f.bitwidth <= 0 for f in fields):
        problems.append(f"controller header {h.preamble.name}: every field needs a bitwidth")
    if bits % 8:
        problems.append(
            f"controller header {h.preamble.name}: {bits} bits, not a whole number of bytes"
        )
    return ControllerHeaderInfo(h.preamble.name, fields)
