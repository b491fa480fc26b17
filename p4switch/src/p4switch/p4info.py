"""P4Info for a checked program, with the names, aliases and ids p4c gives.

Ids follow p4c (and so BMv2 set-ups): the P4Runtime type prefix in the top byte, the low 24
bits of the Jenkins one-at-a-time hash of the fully qualified name below it; names are hashed
in sorted order and a collision takes the next free value; `@id` wins. So ids are stable across
runs and equal to p4c's for the same program. Aliases are the shortest unique dotted suffix.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from google.protobuf import text_format
from p4.config.v1 import p4info_pb2

from p4switch import ir
from p4switch.exceptions import UsageError

PREFIX = p4info_pb2.P4Ids
SKIPPED_ANNOTATIONS = frozenset({"name", "id", "brief", "description", "hidden"})
_KEY_SKIPPED = SKIPPED_ANNOTATIONS - {"hidden"}
_MATCH = {
    "exact": p4info_pb2.MatchField.EXACT,
    "lpm": p4info_pb2.MatchField.LPM,
    "ternary": p4info_pb2.MatchField.TERNARY,
    "range": p4info_pb2.MatchField.RANGE,
    "optional": p4info_pb2.MatchField.OPTIONAL,
}
_METER_UNIT = {"packets": p4info_pb2.MeterSpec.PACKETS, "bytes": p4info_pb2.MeterSpec.BYTES}
_UNIT = {
    "packets": p4info_pb2.CounterSpec.PACKETS,
    "bytes": p4info_pb2.CounterSpec.BYTES,
    "packets_and_bytes": p4info_pb2.CounterSpec.BOTH,
}
_SCOPE = {
    "TABLE_AND_DEFAULT": p4info_pb2.ActionRef.TABLE_AND_DEFAULT,
    "TABLE_ONLY": p4info_pb2.ActionRef.TABLE_ONLY,
    "DEFAULT_ONLY": p4info_pb2.ActionRef.DEFAULT_ONLY,
}


def jenkins_hash(name: str) -> int:
    """Bob Jenkins' one-at-a-time hash of the name's bytes, as p4c computes ids."""
    h = 0
    for b in name.encode():
        h = (h + b) & 0xFFFFFFFF
        h = (h + (h << 10)) & 0xFFFFFFFF
        h ^= h >> 6
    h = (h + (h << 3)) & 0xFFFFFFFF
    h ^= h >> 11
    return (h + (h << 15)) & 0xFFFFFFFF


class SymbolIds:
    """Ids and aliases for named P4Info objects."""

    def __init__(self) -> None:
        self._wanted: dict[tuple[int, str], int | None] = {}
        self._ids: dict[tuple[int, str], int] = {}
        self._suffixes: Counter[tuple[str, ...]] = Counter()
        self._names: set[str] = set()

    def add(self, prefix: int, name: str, annotations: Iterable[ir.Annotation] = ()) -> None:
        if (prefix, name) in self._wanted:
            return
        explicit = next((a for a in annotations if a.name == "id" and a.args), None)
        wanted = None
        if explicit is not None and isinstance(explicit.args[0], int):
            wanted = explicit.args[0]
            top = wanted & 0xFF000000
            if top and top != prefix << 24:
                raise ValueError(f"@id of {name} has the wrong 8-bit prefix")
            wanted |= prefix << 24
        self._wanted[(prefix, name)] = wanted
        if name not in self._names:
            self._names.add(name)
            parts = tuple(name.split("."))
            for k in range(1, len(parts) + 1):
                self._suffixes[parts[-k:]] += 1

    def assign(self) -> None:
        taken: set[int] = set()
        for key, wanted in self._wanted.items():
            if wanted is not None:
                if wanted in taken:
                    raise ValueError(f"@id {wanted} is given to two objects")
                taken.add(wanted)
                self._ids[key] = wanted
        for prefix, name in sorted(k for k, w in self._wanted.items() if w is None):
            low = jenkins_hash(name) & 0xFFFFFF
            for step in range(1 << 24):
                candidate = (prefix << 24) | ((low + step) & 0xFFFFFF)
                if candidate not in taken:
                    break
            else:  # pragma: no cover - 16 million objects of one kind
                raise ValueError(f"no id left for {name}")
            taken.add(candidate)
            self._ids[(prefix, name)] = candidate

    def id(self, prefix: int, name: str) -> int:
        return self._ids[(prefix, name)]

    def alias(self, name: str) -> str:
        parts = tuple(name.split("."))
        for k in range(1, len(parts) + 1):
            if self._suffixes[parts[-k:]] < 2:
                return ".".join(parts[-k:])
        return name


def build_p4info(program: ir.Program) -> p4info_pb2.P4Info:
    ids = SymbolIds()
    actions = [
        a for a in program.actions if not a.function and a.name not in program.inlined_actions
    ]
    objects: list[tuple[int, Any]] = [
        *((PREFIX.ACTION, a) for a in actions),
        *((PREFIX.TABLE, t) for t in program.tables),
        *((PREFIX.COUNTER, c) for c in program.counters),
        *((PREFIX.DIRECT_COUNTER, d) for d in program.direct_counters),
        *((PREFIX.REGISTER, r) for r in program.registers),
        *((PREFIX.METER, m) for m in program.meters),
        *((PREFIX.DIRECT_METER, d) for d in program.direct_meters),
        *((PREFIX.VALUE_SET, v) for v in program.value_sets),
        *((PREFIX.DIGEST, d) for d in program.digests),
        *((PREFIX.ACTION_PROFILE, ap) for ap in program.action_profiles),
    ]
    for prefix, obj in objects:
        ids.add(prefix, obj.name, getattr(obj, "annotations", ()))
    for h in program.controller_headers:
        ids.add(PREFIX.CONTROLLER_HEADER, h.type.name, h.annotations)
    ids.assign()

    info = p4info_pb2.P4Info()
    info.pkg_info.arch = "v1model"
    _package(info.pkg_info, program.package_annotations)
    for t in program.tables:
        _table(info.tables.add(), t, ids, info)
        _initial_default_action(info.tables[-1], t, program.action(t.default_action), ids)
    # an action no table lists runs only where the control calls it, with its arguments there:
    # p4c 1.2.5 makes its parameters locals and writes it without any (p4c's issue323.p4)
    listed = {r.action for t in program.tables for r in t.actions}
    for a in actions:
        msg = info.actions.add()
        _preamble(msg.preamble, ids, PREFIX.ACTION, a.name, a.annotations)
        params = a.control_params if a.name in listed else ()
        for i, p in enumerate(params, start=1):
            param = msg.params.add(id=i, name=p.name, bitwidth=_width(p.type))
            _type_name(param, p.type, info)
            param.annotations.extend(_annotations(p.annotations))
    for c in program.counters:
        msg = info.counters.add(size=c.size)
        _preamble(msg.preamble, ids, PREFIX.COUNTER, c.name, c.annotations)
        msg.spec.unit = _UNIT[c.unit]
    for d in program.direct_counters:
        msg = info.direct_counters.add(direct_table_id=ids.id(PREFIX.TABLE, d.table))
        _preamble(msg.preamble, ids, PREFIX.DIRECT_COUNTER, d.name, d.annotations)
        msg.spec.unit = _UNIT[d.unit]
    _meters(info, program, ids)
    _profiles(info, program, ids)
    for r in program.registers:
        msg = info.registers.add(size=r.size)
        _preamble(msg.preamble, ids, PREFIX.REGISTER, r.name, r.annotations)
        _type_spec(msg.type_spec, r.value_type, info)
    _digests(info, program, ids)
    for h in program.controller_headers:
        msg = info.controller_packet_metadata.add()
        msg.preamble.id = ids.id(PREFIX.CONTROLLER_HEADER, h.type.name)
        msg.preamble.name = msg.preamble.alias = h.name
        msg.preamble.annotations.extend(_annotations(h.annotations))
        for i, (name, field_type) in enumerate(_leaf_fields(h.type), start=1):
            _type_name(
                msg.metadata.add(id=i, name=name, bitwidth=_width(field_type)), field_type, info
            )
    return info


def _leaf_fields(t: ir.StructT, prefix: str = "") -> Iterable[tuple[str, ir.Type]]:
    """A header's fields in order, a struct field's own fields each in its place named
    `field.member`, as p4c lists a controller header's metadata (p4c's issue3329-bmv2.p4)."""
    for f in t.fields:
        if isinstance(f.type, ir.StructT):
            yield from _leaf_fields(f.type, f"{prefix}{f.name}.")
        else:
            yield f"{prefix}{f.name}", f.type


def _enum(t: ir.Type) -> ir.EnumT | None:
    """The serializable enum a value's type is, if it is one."""
    if isinstance(t, ir.BitT) and t.named is not None:
        return t.named.enum
    return None


def _new_type(t: ir.Type) -> ir.TypeName | None:
    """The new type (`type bit<N> T;`) a value's type is, if it is one."""
    if isinstance(t, ir.BitT | ir.BoolT) and t.named is not None and t.named.enum is None:
        return t.named
    return None


def _width(t: ir.Type) -> int:
    """A value's width in P4Info: a translated new type's width is the controller's (p4c 1.2.5
    writes `@p4runtime_translation`'s W), 0 for one translated to a string."""
    named = _new_type(t)
    return named.translated_width if named is not None and named.translated else ir.bit_width(t)


def _type_name(msg: Any, t: ir.Type, info: p4info_pb2.P4Info) -> None:
    """A match field's, action parameter's or controller header field's `type_name`, as p4c
    writes it for a new type, described in type_info; a serializable enum is described there
    but not named (p4c 1.2.5 writes its bit<N> only)."""
    named, enum = _new_type(t), _enum(t)
    if named is not None:
        msg.type_name.name = named.name
        _describe_new_type(named, t, info)
    elif enum is not None:
        _serializable_enum(enum, info)


def _describe_new_type(named: ir.TypeName, t: ir.Type, info: p4info_pb2.P4Info) -> None:
    """type_info.new_types: a translated type's URI and width, or the bit<N> it stands for."""
    if named.name in info.type_info.new_types:
        return
    msg = info.type_info.new_types[named.name]
    kept = (a for a in named.annotations if a.name != "p4runtime_translation")
    msg.annotations.extend(_annotations(kept))
    if named.translated:
        msg.translated_type.uri = named.uri
        if named.translated_width:
            msg.translated_type.sdn_bitwidth = named.translated_width
        else:
            msg.translated_type.sdn_string.SetInParent()
    elif isinstance(t, ir.BoolT):
        msg.original_type.bool.SetInParent()
    else:
        assert isinstance(t, ir.BitT)
        bitstring = msg.original_type.bitstring
        (bitstring.int if t.signed else bitstring.bit).bitwidth = t.width


def _serializable_enum(enum: ir.EnumT, info: p4info_pb2.P4Info) -> None:
    """type_info.serializable_enums: the underlying width and each member's value, as many
    bytes as the width takes (p4c 1.2.5 lists the ones P4Info's objects use)."""
    assert enum.underlying is not None
    if enum.name in info.type_info.serializable_enums:
        return
    width = enum.underlying.width
    msg = info.type_info.serializable_enums[enum.name]
    msg.underlying_type.bitwidth = width
    for member, value in zip(enum.members, enum.values, strict=True):
        code = (value & enum.underlying.mask).to_bytes((width + 7) // 8, "big")
        msg.members.add(name=member, value=code)


def _meters(info: p4info_pb2.P4Info, program: ir.Program, ids: SymbolIds) -> None:
    """Meters, direct meters and (alike: arrays the control plane sets) parser value sets."""
    for v in program.value_sets:
        value_set = info.value_sets.add(size=v.size)
        _preamble(value_set.preamble, ids, PREFIX.VALUE_SET, v.name, v.annotations)
        if not v.fields:  # bit<N>: one exact field, unnamed, as p4c writes it
            value_set.match.add(id=1, bitwidth=v.bitwidth, match_type=p4info_pb2.MatchField.EXACT)
        for i, (name, width, kind) in enumerate(v.fields, start=1):
            value_set.match.add(id=i, name=name, bitwidth=width, match_type=_MATCH[kind])
    for m in program.meters:
        meter = info.meters.add(size=m.size)
        _preamble(meter.preamble, ids, PREFIX.METER, m.name, m.annotations)
        meter.spec.unit = _METER_UNIT[m.unit]
    for dm in program.direct_meters:
        direct = info.direct_meters.add(direct_table_id=ids.id(PREFIX.TABLE, dm.table))
        _preamble(direct.preamble, ids, PREFIX.DIRECT_METER, dm.name, dm.annotations)
        direct.spec.unit = _METER_UNIT[dm.unit]


def _digests(info: p4info_pb2.P4Info, program: ir.Program, ids: SymbolIds) -> None:
    """Digests, named after their struct types, which P4Info's type_info describes."""
    for d in program.digests:
        msg = info.digests.add()
        _preamble(msg.preamble, ids, PREFIX.DIGEST, d.name, ())
        _type_spec(msg.type_spec, d.type, info)
    if _uses_error(info, program):
        info.type_info.error.members.extend(program.errors)


def _uses_error(info: p4info_pb2.P4Info, program: ir.Program) -> bool:
    """A digest carries an error, or a table matches one: p4c then lists every error."""
    members = (m for s in info.type_info.structs.values() for m in s.members)
    keys = (k for t in program.tables for k in t.keys)
    return any(m.type_spec.HasField("error") for m in members) or any(
        isinstance(k.expr.type, ir.ErrorT) for k in keys
    )


def _type_spec(msg: p4info_pb2.P4DataTypeSpec, t: ir.Type, info: p4info_pb2.P4Info) -> None:
    types = info.type_info
    if isinstance(t, ir.BoolT) and t.named is not None:
        msg.new_type.name = t.named.name
        _describe_new_type(t.named, t, info)
    elif isinstance(t, ir.BoolT):
        msg.bool.SetInParent()
    elif isinstance(t, ir.BitT) and t.named is not None and t.named.enum is not None:
        msg.serializable_enum.name = t.named.name
        _serializable_enum(t.named.enum, info)
    elif isinstance(t, ir.BitT) and t.named is not None:
        msg.new_type.name = t.named.name
        _describe_new_type(t.named, t, info)
    elif isinstance(t, ir.BitT):
        (msg.bitstring.int if t.signed else msg.bitstring.bit).bitwidth = t.width
    elif isinstance(t, ir.ErrorT):
        msg.error.SetInParent()  # its members: type_info.error, every error of the program
    elif isinstance(t, ir.EnumT):  # a serializable enum is its underlying bit<N> here
        msg.enum.name = t.name
        if t.name not in types.enums:
            for member in t.members:
                types.enums[t.name].members.add(name=member)
    elif isinstance(t, ir.TupleT):
        for e in t.elements:
            _type_spec(msg.tuple.members.add(), e, info)
    else:
        assert isinstance(t, ir.StructT), "digest fields are checked by the front end"
        msg.struct.name = t.name
        if t.name not in info.type_info.structs:
            struct = info.type_info.structs[t.name]
            for f in t.fields:
                _type_spec(struct.members.add(name=f.name).type_spec, f.type, info)


# what p4c 1.2.5 turns into an action profile's fields, leaving them out of its annotations
_SELECTOR_ANNOTATIONS = frozenset({"selector_size_semantics", "max_member_weight"})


def _profiles(info: p4info_pb2.P4Info, program: ir.Program, ids: SymbolIds) -> None:
    """Action profiles and selectors, with the tables they implement."""
    for ap in program.action_profiles:
        msg = info.action_profiles.add(with_selector=ap.selector, size=ap.size)
        kept = tuple(a for a in ap.annotations if a.name not in _SELECTOR_ANNOTATIONS)
        _preamble(msg.preamble, ids, PREFIX.ACTION_PROFILE, ap.name, kept)
        msg.table_ids.extend(ids.id(PREFIX.TABLE, t) for t in ap.tables)
        msg.max_group_size = ap.max_group_size
        if ap.selector:
            _size_semantics(msg, ap.annotations)


def _size_semantics(msg: p4info_pb2.ActionProfile, annotations: tuple[ir.Annotation, ...]) -> None:
    """A selector's `@selector_size_semantics("sum_of_weights" or "sum_of_members")`, the
    latter with its `@max_member_weight(n)`; neither given, p4c sets neither."""
    semantics = ir.find_annotation(annotations, "selector_size_semantics")
    weight = ir.find_annotation(annotations, "max_member_weight")
    kind = str(semantics.args[0]).strip('"') if semantics is not None and semantics.args else ""
    if kind == "sum_of_weights":
        msg.sum_of_weights.SetInParent()
    elif kind == "sum_of_members":
        msg.sum_of_members.SetInParent()
        if weight is not None and weight.args and str(weight.args[0]).isdigit():
            msg.sum_of_members.max_member_weight = int(weight.args[0])


def _table(msg: p4info_pb2.Table, t: ir.Table, ids: SymbolIds, info: p4info_pb2.P4Info) -> None:
    _preamble(msg.preamble, ids, PREFIX.TABLE, t.name, t.annotations)
    for i, k in enumerate(t.keys, start=1):
        width = 0 if k.symbols else k.bitwidth  # an error or enum key: by name, as p4c says
        if _new_type(k.expr.type) is not None:
            width = _width(k.expr.type)
        field = msg.match_fields.add(id=i, name=k.name, bitwidth=width)
        _type_name(field, k.expr.type, info)
        field.match_type = _MATCH[k.match_kind]
        # p4c keeps a key's @hidden (it hides a table, not a key)
        field.annotations.extend(a.source() for a in k.annotations if a.name not in _KEY_SKIPPED)
    for ref in t.actions:
        msg_ref = msg.action_refs.add(id=ids.id(PREFIX.ACTION, ref.action))
        if ref.scope != "TABLE_AND_DEFAULT":
            msg_ref.scope = _SCOPE[ref.scope]
        msg_ref.annotations.extend(_annotations(ref.annotations))  # p4c drops @name here
    if t.const_default:
        msg.const_default_action_id = ids.id(PREFIX.ACTION, t.default_action)
    if t.implementation is not None:
        msg.implementation_id = ids.id(PREFIX.ACTION_PROFILE, t.implementation)
    if t.direct_counter is not None:
        msg.direct_resource_ids.append(ids.id(PREFIX.DIRECT_COUNTER, t.direct_counter))
    if t.direct_meter is not None:
        msg.direct_resource_ids.append(ids.id(PREFIX.DIRECT_METER, t.direct_meter))
    msg.size = t.size
    if t.support_timeout:
        msg.idle_timeout_behavior = p4info_pb2.Table.NOTIFY_CONTROL
    if t.entries:  # `entries` or `const entries`, not empty: p4c 1.2.5 says so for both
        msg.has_initial_entries = True
    if t.const_entries:
        msg.is_const_table = True


_PACKAGE_TEXT = ("name", "version", "doc", "organization", "contact", "url")
_KEY_VALUE = re.compile(r'\s*(\w+)\s*=\s*("(?:[^"\\]|\\.)*"|[^,]*)\s*(?:,|$)')


def _package(msg: p4info_pb2.PkgInfo, annotations: tuple[ir.Annotation, ...]) -> None:
    """`@pkginfo(name = "...", ...)` and `@platform_property(key = n, ...)` on `main`, as p4c
    1.2.5 writes them into pkg_info (keys P4Info does not have are left out)."""
    properties = msg.platform_properties
    for annotation in annotations:
        if annotation.name not in ("pkginfo", "platform_property"):
            continue
        for key, value in _KEY_VALUE.findall(annotation.text):
            if annotation.name == "pkginfo" and key in _PACKAGE_TEXT:
                setattr(msg, key, value.strip().strip('"'))
            elif (
                annotation.name == "platform_property"
                and value.strip().isdigit()
                and key in properties.DESCRIPTOR.fields_by_name
            ):
                setattr(properties, key, int(value))


def _initial_default_action(
    msg: p4info_pb2.Table, t: ir.Table, action: ir.Action, ids: SymbolIds
) -> None:
    """The default action a table starts with (const or not), as p4c 1.2.5 writes it for every
    table: its arguments each as many bytes as the parameter's width takes, leading zeros kept
    (a translated parameter's: the controller's width, the value untranslated, as p4c writes it)."""
    default = msg.initial_default_action
    default.action_id = ids.id(PREFIX.ACTION, t.default_action)
    for i, (param, value) in enumerate(
        zip(action.control_params, t.default_args, strict=True), start=1
    ):
        width = _width(param.type) or ir.bit_width(param.type)
        default.arguments.add(param_id=i, value=value.to_bytes((width + 7) // 8, "big"))


def _preamble(
    msg: p4info_pb2.Preamble,
    ids: SymbolIds,
    prefix: int,
    name: str,
    annotations: tuple[ir.Annotation, ...],
) -> None:
    msg.id = ids.id(prefix, name)
    msg.name = name
    msg.alias = ids.alias(name)
    msg.annotations.extend(_annotations(annotations))


def _annotations(annotations: Iterable[ir.Annotation]) -> list[str]:
    return [a.source() for a in annotations if a.name not in SKIPPED_ANNOTATIONS]


TEXT_SUFFIXES = (".txtpb", ".txt")  # protobuf text format: p4c's current name, then its old one


def write_p4info(p4info: p4info_pb2.P4Info, path: Path) -> None:
    """Write P4Info as text (`.txtpb`, or `.txt` as p4c used to name it) or binary (`.bin`)."""
    path = Path(path)
    if path.suffix in TEXT_SUFFIXES:
        path.write_text(text_format.MessageToString(p4info))
    elif path.suffix == ".bin":
        path.write_bytes(p4info.SerializeToString())
    else:
        raise UsageError(f"{path}: a P4Info file name must end in .txtpb, .txt or .bin")


def read_p4info(path: Path) -> p4info_pb2.P4Info:
    path = Path(path)
    info = p4info_pb2.P4Info()
    if path.suffix == ".bin":
        info.ParseFromString(path.read_bytes())
    else:
        text_format.Parse(path.read_text(), info)
    return info
