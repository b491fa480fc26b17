"""Build P4Runtime entities from names, using a P4Info for ids and bit widths.

    schema = Schema(p4info)
    entry = schema.table_entry(
        "InnetIngress.membership",
        {"hdr.innet.job": 1, "hdr.innet.round": 7, "hdr.innet.group": 0},
        "InnetIngress.member",
        {"expected": 0b111, "my_bit": 0b001, "local_grp": 1},
    )
    group = schema.multicast_group(1, [(1, 1), (2, 1)])   # (egress port, replica id)
    update = insert(entry)

Values are ints, IPv4 addresses ("10.0.1.1"), MAC addresses ("02:00:0a:00:01:01") or bytes;
they are encoded as canonical (shortest) big-endian binary strings that must fit the field's bit
width. An lpm field takes `Lpm(value, prefix_len)`, a ternary one `Ternary(value, mask)`; an
omitted lpm or ternary field is a wildcard.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TypeVar

from p4.config.v1 import p4info_pb2
from p4.v1 import p4runtime_pb2

from controller.p4rt.exceptions import SchemaError

Value = int | str | bytes
T = TypeVar("T")


@dataclass(frozen=True)
class Lpm:
    """A longest-prefix match: the first `prefix_len` bits of `value`."""

    value: Value
    prefix_len: int


@dataclass(frozen=True)
class Ternary:
    """A ternary match: the bits of `value` under `mask`."""

    value: Value
    mask: Value


Match = Value | Lpm | Ternary


def to_int(value: Value) -> int:
    """An int from an int, a dotted IPv4 address, a colon-separated MAC address or bytes."""
    if isinstance(value, bool):
        raise SchemaError(f"a field value cannot be a bool ({value!r})")
    if isinstance(value, int):
        return value
    if isinstance(value, bytes):
        return int.from_bytes(value, "big")
    if ":" in value:
        parts = value.split(":")
        if len(parts) != 6 or not all(len(p) in (1, 2) for p in parts):
            raise SchemaError(f"{value!r} is not a MAC address (write 02:00:0a:00:01:01)")
        return int("".join(p.zfill(2) for p in parts), 16)
    if "." in value:
        try:
            return int(ipaddress.IPv4Address(value))
        except ValueError as err:
            raise SchemaError(f"{value!r} is not an IPv4 address: {err}") from None
    try:
        return int(value, 0)
    except ValueError:
        raise SchemaError(f"{value!r} is not a number, an IPv4 or a MAC address") from None


def encode(value: Value, bitwidth: int, what: str = "value") -> bytes:
    """The canonical P4Runtime binary string of `value` for a field of `bitwidth` bits."""
    number = to_int(value)
    if number < 0 or number >= 1 << bitwidth:
        raise SchemaError(f"{what}: {value!r} does not fit in {bitwidth} bits")
    return number.to_bytes(max(1, (number.bit_length() + 7) // 8), "big")


def decode(data: bytes) -> int:
    return int.from_bytes(data, "big")


def insert(entity: p4runtime_pb2.Entity) -> p4runtime_pb2.Update:
    return p4runtime_pb2.Update(type=p4runtime_pb2.Update.INSERT, entity=entity)


def modify(entity: p4runtime_pb2.Entity) -> p4runtime_pb2.Update:
    return p4runtime_pb2.Update(type=p4runtime_pb2.Update.MODIFY, entity=entity)


def delete(entity: p4runtime_pb2.Entity) -> p4runtime_pb2.Update:
    return p4runtime_pb2.Update(type=p4runtime_pb2.Update.DELETE, entity=entity)


class Schema:
    """Names to ids for one P4Info, and entity builders."""

    def __init__(self, p4info: p4info_pb2.P4Info) -> None:
        self.p4info = p4info
        self._tables = {t.preamble.name: t for t in p4info.tables}
        self._actions = {a.preamble.name: a for a in p4info.actions}
        self._counters = {c.preamble.name: c for c in p4info.counters}
        self._packet_meta = {m.preamble.name: m for m in p4info.controller_packet_metadata}
        self._names: dict[int, str] = {
            obj.preamble.id: obj.preamble.name
            for group in (p4info.tables, p4info.actions, p4info.counters)
            for obj in group
        }

    # --- look-ups ---------------------------------------------------------------------------

    def table(self, name: str) -> p4info_pb2.Table:
        return _lookup(self._tables, name, "table")

    def action(self, name: str) -> p4info_pb2.Action:
        return _lookup(self._actions, name, "action")

    def counter(self, name: str) -> p4info_pb2.Counter:
        return _lookup(self._counters, name, "counter")

    def packet_metadata(self, name: str) -> p4info_pb2.ControllerPacketMetadata:
        """The `packet_in` or `packet_out` controller header."""
        return _lookup(self._packet_meta, name, "controller packet metadata")

    def name_of(self, object_id: int) -> str:
        """The name of a table, action or counter id (the id itself if unknown)."""
        return self._names.get(object_id, str(object_id))

    # --- builders ---------------------------------------------------------------------------

    def table_entry(
        self,
        table: str,
        match: Mapping[str, Match],
        action: str | None = None,
        params: Mapping[str, Value] | None = None,
        *,
        priority: int = 0,
        default: bool = False,
    ) -> p4runtime_pb2.Entity:
        """A TableEntry entity; without `action` it names only the key (for DELETE and Read)."""
        info = self.table(table)
        entry = p4runtime_pb2.TableEntry(table_id=info.preamble.id, priority=priority)
        fields = {m.name: m for m in info.match_fields}
        unknown = sorted(set(match) - set(fields))
        if unknown:
            raise SchemaError(f"table {table} has no match fields {unknown}; it has {list(fields)}")
        for name, spec in fields.items():
            if name not in match:
                if spec.match_type == p4info_pb2.MatchField.EXACT and not default:
                    raise SchemaError(f"table {table}: exact field {name} needs a value")
                continue
            entry.match.append(_field_match(table, spec, match[name]))
        if default:
            entry.is_default_action = True
        if action is not None:
            allowed = {ref.id for ref in info.action_refs}
            act = self.action(action)
            if act.preamble.id not in allowed:
                names = sorted(self.name_of(i) for i in allowed)
                raise SchemaError(f"table {table} has no action {action}; it has {names}")
            entry.action.action.CopyFrom(self.action_call(action, params or {}))
        return p4runtime_pb2.Entity(table_entry=entry)

    def table_query(self, table: str) -> p4runtime_pb2.Entity:
        """A TableEntry that reads every entry of `table`."""
        info = self.table(table)
        return p4runtime_pb2.Entity(table_entry=p4runtime_pb2.TableEntry(table_id=info.preamble.id))

    def action_call(self, action: str, params: Mapping[str, Value]) -> p4runtime_pb2.Action:
        info = self.action(action)
        declared = {p.name: p for p in info.params}
        missing = sorted(set(declared) - set(params))
        extra = sorted(set(params) - set(declared))
        if missing or extra:
            raise SchemaError(
                f"action {action} takes parameters {list(declared)}; "
                f"missing {missing}, unknown {extra}"
            )
        call = p4runtime_pb2.Action(action_id=info.preamble.id)
        for name, spec in declared.items():
            value = encode(params[name], spec.bitwidth, f"{action}({name})")
            call.params.append(p4runtime_pb2.Action.Param(param_id=spec.id, value=value))
        return call

    def multicast_group(
        self, group_id: int, replicas: Iterable[tuple[int, int]] = ()
    ) -> p4runtime_pb2.Entity:
        """A MulticastGroupEntry; replicas are (egress port, replica id) pairs."""
        if not 0 < group_id < 1 << 32:
            raise SchemaError(f"multicast group id must be positive, got {group_id}")
        group = p4runtime_pb2.MulticastGroupEntry(multicast_group_id=group_id)
        for port, instance in replicas:
            group.replicas.append(p4runtime_pb2.Replica(egress_port=port, instance=instance))
        return p4runtime_pb2.Entity(
            packet_replication_engine_entry=p4runtime_pb2.PacketReplicationEngineEntry(
                multicast_group_entry=group
            )
        )

    def counter_entry(self, counter: str, index: int | None = None) -> p4runtime_pb2.Entity:
        """A CounterEntry: one cell, or every cell when `index` is None (for Read)."""
        info = self.counter(counter)
        entry = p4runtime_pb2.CounterEntry(counter_id=info.preamble.id)
        if index is not None:
            if not 0 <= index < info.size:
                raise SchemaError(f"counter {counter} has cells 0..{info.size - 1}, not {index}")
            entry.index.index = index
        return p4runtime_pb2.Entity(counter_entry=entry)

    def packet_metadata_values(
        self, header: str, values: Mapping[str, Value]
    ) -> list[p4runtime_pb2.PacketMetadata]:
        """PacketOut/PacketIn metadata by field name for the `header` controller header."""
        fields = {m.name: m for m in self.packet_metadata(header).metadata}
        unknown = sorted(set(values) - set(fields))
        if unknown:
            raise SchemaError(f"{header} has no fields {unknown}; it has {list(fields)}")
        return [
            p4runtime_pb2.PacketMetadata(
                metadata_id=fields[name].id,
                value=encode(value, fields[name].bitwidth, f"{header}.{name}"),
            )
            for name, value in values.items()
        ]

    def packet_metadata_names(
        self, header: str, metadata: Iterable[p4runtime_pb2.PacketMetadata]
    ) -> dict[str, int]:
        """Metadata of a received packet by field name (ids the P4Info lacks stay numbers)."""
        known = self._packet_meta.get(header)
        names = {m.id: m.name for m in known.metadata} if known is not None else {}
        return {names.get(m.metadata_id, str(m.metadata_id)): decode(m.value) for m in metadata}

    # --- descriptions for messages ----------------------------------------------------------

    def describe(self, entity: p4runtime_pb2.Entity) -> str:
        """One line naming what an entity is, for error messages and logs."""
        kind = entity.WhichOneof("entity")
        if kind == "table_entry":
            e = entity.table_entry
            table = self.name_of(e.table_id)
            fields = (
                {m.id: m.name for m in self._tables[table].match_fields}
                if (table in self._tables)
                else {}
            )
            key = ", ".join(
                f"{fields.get(m.field_id, m.field_id)}={_match_text(m)}" for m in e.match
            )
            action = self.name_of(e.action.action.action_id) if e.HasField("action") else "-"
            if e.is_default_action:
                return f"{table} default -> {action}"
            return f"{table} [{key}] -> {action}"
        if kind == "packet_replication_engine_entry":
            pre = entity.packet_replication_engine_entry
            if pre.HasField("multicast_group_entry"):
                g = pre.multicast_group_entry
                ports = ", ".join(f"{r.egress_port}/{r.instance}" for r in g.replicas)
                return f"multicast group {g.multicast_group_id} [{ports}]"
            return f"clone session {pre.clone_session_entry.session_id}"
        if kind == "counter_entry":
            c = entity.counter_entry
            return f"counter {self.name_of(c.counter_id)}[{c.index.index}]"
        return str(kind)


def _lookup(table: Mapping[str, T], name: str, kind: str) -> T:
    try:
        return table[name]
    except KeyError:
        known = ", ".join(sorted(table)) or "none"
        raise SchemaError(f"the P4Info has no {kind} {name!r}; known: {known}") from None


def _field_match(table: str, spec: p4info_pb2.MatchField, value: Match) -> p4runtime_pb2.FieldMatch:
    what = f"{table} key {spec.name}"
    fm = p4runtime_pb2.FieldMatch(field_id=spec.id)
    kind = spec.match_type
    if kind == p4info_pb2.MatchField.EXACT and not isinstance(value, Lpm | Ternary):
        fm.exact.value = encode(value, spec.bitwidth, what)
    elif kind == p4info_pb2.MatchField.LPM and isinstance(value, Lpm):
        if not 0 < value.prefix_len <= spec.bitwidth:
            raise SchemaError(
                f"{what}: prefix length {value.prefix_len} outside 1..{spec.bitwidth} "
                "(omit the field for a wildcard)"
            )
        host_bits = spec.bitwidth - value.prefix_len
        masked = (to_int(value.value) >> host_bits) << host_bits
        fm.lpm.value = encode(masked, spec.bitwidth, what)
        fm.lpm.prefix_len = value.prefix_len
    elif kind == p4info_pb2.MatchField.TERNARY and isinstance(value, Ternary):
        mask = to_int(value.mask)
        if mask == 0:
            raise SchemaError(f"{what}: a zero mask is a wildcard; omit the field instead")
        fm.ternary.value = encode(to_int(value.value) & mask, spec.bitwidth, what)
        fm.ternary.mask = encode(mask, spec.bitwidth, what)
    else:
        kinds = {
            p4info_pb2.MatchField.LPM: "Lpm(value, prefix_len)",
            p4info_pb2.MatchField.TERNARY: "Ternary(value, mask)",
        }
        raise SchemaError(f"{what}: expects {kinds.get(kind, 'a plain value')}, got {value!r}")
    return fm


def _match_text(m: p4runtime_pb2.FieldMatch) -> str:
    kind = m.WhichOneof("field_match_type")
    if kind == "exact":
        return str(decode(m.exact.value))
    if kind == "lpm":
        return f"{decode(m.lpm.value):#x}/{m.lpm.prefix_len}"
    if kind == "ternary":
        return f"{decode(m.ternary.value):#x}&{decode(m.ternary.mask):#x}"
    return str(kind)
