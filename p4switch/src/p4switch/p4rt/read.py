"""Answering the requests of a P4Runtime Read from a pipeline's state, wildcards included.

Each request of a ReadRequest is a filter: a zero id means every object of that kind, a message
field left unset (a table entry's match, a counter's index) means every entry. The caller holds
`state.lock` while a request is answered.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping
from typing import Any, TypeVar

from google.rpc import code_pb2
from p4.v1 import p4runtime_pb2

from p4switch.exceptions import P4RTError, StateError
from p4switch.p4rt.codec import (
    InstalledPipeline,
    check_priority,
    counter_data,
    decode_match,
    default_entry_to_proto,
    encode_match,
    encode_uint,
    entry_to_proto,
    index_cells,
    invalid,
    meter_config,
    pre_to_proto,
    refused_by_state,
    table_of,
    untranslated,
)
from p4switch.p4rt.digests import read_digests
from p4switch.p4rt.profiles import entry_action, read_groups, read_members
from p4switch.p4rt.schema import CounterInfo, MeterInfo, RegisterInfo, TableInfo
from p4switch.runtime import ActionCall, ProfileRef, TableEntry

log = logging.getLogger(__name__)

Entities = list[p4runtime_pb2.Entity]

# entity kinds p4switch does not program, and the P4Info objects they would refer to
_UNSUPPORTED = {
    "extern_entry": "externs",
}


def read_entity(pipeline: InstalledPipeline, query: p4runtime_pb2.Entity) -> Entities:
    """Every entity `query` selects; raise P4RTError if the query is invalid."""
    kind = query.WhichOneof("entity")
    if kind is None:
        raise invalid("the read request's entity is not set")
    handler = _HANDLERS.get(kind)
    if handler is None:
        if _UNSUPPORTED.get(kind) in pipeline.schema.unsupported:
            raise P4RTError(code_pb2.UNIMPLEMENTED, f"p4switch does not read {kind} entities")
        return []  # the program has none of them
    try:
        return handler(pipeline, getattr(query, kind))
    except StateError as err:
        raise refused_by_state(err) from None
    except P4RTError:
        raise
    except Exception as err:  # a bug here must not take the server down
        log.exception("unexpected failure reading %s", kind)
        raise P4RTError(code_pb2.INTERNAL, f"internal error: {err}") from err


def _tables(pipeline: InstalledPipeline, q: p4runtime_pb2.TableEntry) -> Entities:
    counters = q.HasField("counter_data")
    # time_since_last_hit asked for: only of tables with support_timeout, as PI allows it
    now = pipeline.state.clock() if q.HasField("time_since_last_hit") else None
    if q.table_id == 0:
        if q.match or q.HasField("action") or q.priority or q.controller_metadata or q.metadata:
            raise invalid("reading every table (table_id 0) allows no other filter")
        if q.is_default_action:
            raise invalid("reading every table (table_id 0) allows no other filter")
        out: Entities = []
        for info in pipeline.schema.tables.values():
            _check_ageing(info, now)
            entries = pipeline.state.table(info.name).entries()
            out += _entities(pipeline, info, entries, counters, now)
        return out
    info, table = table_of(pipeline, q.table_id)
    if q.is_default_action:
        if now is not None:
            raise invalid(f"{info.name}: the default entry does not age: no time_since_last_hit")
        if q.match or q.priority:
            raise invalid(f"{info.name}: the default entry has no match and priority 0")
        entry = default_entry_to_proto(pipeline.schema, info, table, counters=counters)
        return [p4runtime_pb2.Entity(table_entry=entry)]
    selected = list(table.entries())
    if q.match:
        match = decode_match(info, q.match)
        selected = [e for e in selected if e.match == match]
    if q.priority:
        selected = [e for e in selected if e.priority == q.priority]
    if q.HasField("action"):
        keep = _action_filter(pipeline, info, q.action)
        selected = [e for e in selected if keep(e.action)]
    if q.controller_metadata:
        selected = [e for e in selected if e.controller_metadata == q.controller_metadata]
    if q.metadata:
        selected = [e for e in selected if e.metadata == q.metadata]
    _check_ageing(info, now)
    return _entities(pipeline, info, selected, counters, now)


def _check_ageing(info: TableInfo, now: int | None) -> None:
    if now is not None and not info.idle_timeout:
        what = "does not support idle timeouts: do not ask for time_since_last_hit"
        raise invalid(f"{info.name} {what} (nor in a read of every table)")


def _entities(
    pipeline: InstalledPipeline,
    info: TableInfo,
    entries: Iterable[TableEntry],
    counters: bool,
    now: int | None = None,
) -> Entities:
    return [
        p4runtime_pb2.Entity(
            table_entry=entry_to_proto(pipeline.schema, info, e, counters=counters, now=now)
        )
        for e in entries
    ]


def _key(info: TableInfo, entry: TableEntry) -> p4runtime_pb2.TableEntry:
    key = p4runtime_pb2.TableEntry(table_id=info.id, priority=entry.priority)
    key.match.extend(encode_match(info, entry.match))
    return key


def _direct_counters(pipeline: InstalledPipeline, q: p4runtime_pb2.DirectCounterEntry) -> Entities:
    te = q.table_entry
    schema = pipeline.schema
    out: Entities = []
    for info in _tables_with(pipeline, te.table_id, "direct_counter_id", "direct counter"):
        table = pipeline.state.table(info.name)
        unit = schema.direct_counters[info.direct_counter_id].unit
        if te.is_default_action:
            key = p4runtime_pb2.TableEntry(table_id=info.id, is_default_action=True)
            data = counter_data(table.default_packets, table.default_bytes, unit)
            out.append(_direct(key, data))
            continue
        entries = _selected(pipeline, info, te)
        out += [_direct(_key(info, e), counter_data(e.packets, e.bytes, unit)) for e in entries]
    return out


def _tables_with(
    pipeline: InstalledPipeline, table_id: int, resource: str, what: str
) -> list[TableInfo]:
    """The tables a direct-resource read names (every one with the resource for id 0)."""
    if table_id == 0:
        return [t for t in pipeline.schema.tables.values() if getattr(t, resource)]
    info, _ = table_of(pipeline, table_id)
    if not getattr(info, resource):
        raise invalid(f"{info.name} has no {what}")
    return [info]


def _selected(
    pipeline: InstalledPipeline, info: TableInfo, te: p4runtime_pb2.TableEntry
) -> list[TableEntry]:
    """The entries of a table a direct-resource read names: the one matching, or all."""
    table = pipeline.state.table(info.name)
    if not te.match:
        return list(table.entries())
    match = decode_match(info, te.match)
    check_priority(info, table, te.priority)
    found = table.get(match, te.priority)
    if found is None:
        raise P4RTError(code_pb2.NOT_FOUND, f"{info.name}: no entry with this key")
    return [found]


def _direct(key: p4runtime_pb2.TableEntry, data: p4runtime_pb2.CounterData) -> p4runtime_pb2.Entity:
    return p4runtime_pb2.Entity(
        direct_counter_entry=p4runtime_pb2.DirectCounterEntry(table_entry=key, data=data)
    )


_Info = TypeVar("_Info", CounterInfo, RegisterInfo, MeterInfo)


def _chosen(by_id: Mapping[int, _Info], wanted: int, kind: str) -> list[_Info]:
    """Every object of a kind for id 0 (a wildcard), else the one with this id."""
    if wanted == 0:
        return list(by_id.values())
    if wanted in by_id:
        return [by_id[wanted]]
    raise P4RTError(code_pb2.NOT_FOUND, f"no {kind} with id {wanted:#x}")


def _counters(pipeline: InstalledPipeline, q: p4runtime_pb2.CounterEntry) -> Entities:
    out: Entities = []
    for info in _chosen(pipeline.schema.counters, q.counter_id, "counter"):
        counter = pipeline.state.counter(info.name)
        for i in index_cells(q, info.size, info.name):
            entry = p4runtime_pb2.CounterEntry(counter_id=info.id)
            entry.index.index = i
            entry.data.CopyFrom(counter_data(counter.packets[i], counter.bytes[i], info.unit))
            out.append(p4runtime_pb2.Entity(counter_entry=entry))
    return out


def _registers(pipeline: InstalledPipeline, q: p4runtime_pb2.RegisterEntry) -> Entities:
    out: Entities = []
    for info in _chosen(pipeline.schema.registers, q.register_id, "register"):
        if info.translated and q.register_id:
            raise untranslated(f"register {info.name}", info.translated)
        if info.translated:  # not among every register's cells: its values are the program's
            continue
        register = pipeline.state.register(info.name)
        for i in index_cells(q, info.size, info.name):
            entry = p4runtime_pb2.RegisterEntry(register_id=info.id)
            entry.index.index = i
            entry.data.bitstring = encode_uint(register.cells[i])
            out.append(p4runtime_pb2.Entity(register_entry=entry))
    return out


def _pre(pipeline: InstalledPipeline, q: p4runtime_pb2.PacketReplicationEngineEntry) -> Entities:
    which = q.WhichOneof("type")
    pre = pipeline.state.pre
    out: Entities = []
    if which == "multicast_group_entry":
        wanted = q.multicast_group_entry.multicast_group_id
        for gid in sorted(pre.groups):
            if wanted in (0, gid):
                msg = pre_to_proto("group", gid, pre.groups[gid], pipeline)
                out.append(p4runtime_pb2.Entity(packet_replication_engine_entry=msg))
    elif which == "clone_session_entry":
        wanted = q.clone_session_entry.session_id
        for sid in sorted(pre.sessions):
            if wanted in (0, sid):
                s = pre.sessions[sid]
                extra = (s.class_of_service, s.packet_length_bytes)
                msg = pre_to_proto("session", sid, s.replicas, pipeline, extra)
                out.append(p4runtime_pb2.Entity(packet_replication_engine_entry=msg))
    else:
        raise invalid("packet replication read: set a multicast group or a clone session")
    return out


def _meters(pipeline: InstalledPipeline, q: p4runtime_pb2.MeterEntry) -> Entities:
    out: Entities = []
    for info in _chosen(pipeline.schema.meters, q.meter_id, "meter"):
        meter = pipeline.state.meter(info.name)
        for i in index_cells(q, info.size, info.name):
            entry = p4runtime_pb2.MeterEntry(meter_id=info.id)
            entry.index.index = i
            config = meter.config(i)
            if config is not None:
                entry.config.CopyFrom(meter_config(config))
            out.append(p4runtime_pb2.Entity(meter_entry=entry))
    return out


def _direct_meters(pipeline: InstalledPipeline, q: p4runtime_pb2.DirectMeterEntry) -> Entities:
    te = q.table_entry
    out: Entities = []
    for info in _tables_with(pipeline, te.table_id, "direct_meter_id", "direct meter"):
        for e in _selected(pipeline, info, te):
            entry = p4runtime_pb2.DirectMeterEntry(table_entry=_key(info, e))
            if e.meter is not None:
                entry.config.CopyFrom(meter_config(e.meter.config))
            out.append(p4runtime_pb2.Entity(direct_meter_entry=entry))
    return out


def _value_sets(pipeline: InstalledPipeline, q: p4runtime_pb2.ValueSetEntry) -> Entities:
    out: Entities = []
    wanted = q.value_set_id
    if wanted and wanted not in pipeline.schema.value_sets:
        raise P4RTError(code_pb2.NOT_FOUND, f"no value set with id {wanted:#x}")
    for info in pipeline.schema.value_sets.values():
        if wanted not in (0, info.id):
            continue
        entry = p4runtime_pb2.ValueSetEntry(value_set_id=info.id)
        for member in pipeline.state.value_set(info.name).members:
            entry.members.add().match.extend(encode_match(info, member))
        out.append(p4runtime_pb2.Entity(value_set_entry=entry))
    return out


def _action_filter(
    pipeline: InstalledPipeline, info: TableInfo, q: p4runtime_pb2.TableAction
) -> Callable[[ActionCall | ProfileRef], bool]:
    """Whether an entry runs what a read asks for: a member or a group (a table with an
    action profile), or an action, of which only the id counts."""
    if q.WhichOneof("type") != "action":
        ref = entry_action(pipeline, info, q)
        return lambda action: action == ref
    found = pipeline.schema.actions.get(q.action.action_id)
    if found is None:
        raise invalid(f"no action with id {q.action.action_id:#x}")
    name = found.name
    return lambda action: isinstance(action, ActionCall) and action.name == name


_HANDLERS: dict[str, Callable[[InstalledPipeline, Any], Entities]] = {
    "value_set_entry": _value_sets,
    "meter_entry": _meters,
    "direct_meter_entry": _direct_meters,
    "table_entry": _tables,
    "direct_counter_entry": _direct_counters,
    "counter_entry": _counters,
    "register_entry": _registers,
    "packet_replication_engine_entry": _pre,
    "digest_entry": read_digests,
    "action_profile_member": read_members,
    "action_profile_group": read_groups,
}
