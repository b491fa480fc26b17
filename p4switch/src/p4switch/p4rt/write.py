"""Applying the updates of a P4Runtime Write to a pipeline's state, each with its undo.

The caller holds `state.lock` for the whole batch, so the data plane sees either none or all of
an atomic batch: if one update fails, the ones already applied are undone in reverse order.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from google.rpc import code_pb2
from p4.v1 import p4runtime_pb2

from p4switch.exceptions import P4RTError, StateError
from p4switch.p4rt.codec import (
    InstalledPipeline,
    PreRecord,
    Undo,
    check_priority,
    decode_action,
    decode_match,
    decode_replicas,
    decode_uint,
    index_cells,
    invalid,
    refused_by_state,
    table_of,
    untranslated,
)
from p4switch.p4rt.digests import digest_entry
from p4switch.p4rt.profiles import entry_action, group_entry, member_entry
from p4switch.p4rt.schema import TableInfo
from p4switch.p4rt.write_meters import (
    direct_meter_entry,
    meter_cell,
    meter_entry,
    value_set_entry,
)
from p4switch.runtime import (
    CloneSession,
    FieldMatch,
    TableEntry,
    TableState,
)

log = logging.getLogger(__name__)

INSERT, MODIFY, DELETE = (
    p4runtime_pb2.Update.INSERT,
    p4runtime_pb2.Update.MODIFY,
    p4runtime_pb2.Update.DELETE,
)
_MAX_INSTANCE = 0xFFFF  # v1model's egress_rid is bit<16>
_MAX_GROUP = 0xFFFF  # v1model's mcast_grp is bit<16>: a group above is never chosen
_K = TypeVar("_K")
_V = TypeVar("_V")


def _noop() -> None:
    return None


ReportCheck = Callable[[Sequence[P4RTError | None]], P4RTError | None]


def apply_batch(
    pipeline: InstalledPipeline,
    updates: Sequence[p4runtime_pb2.Update],
    *,
    atomic: bool,
    check_report: ReportCheck | None = None,
) -> list[P4RTError | None]:
    """Apply `updates` in order; one result per update (None: applied).

    With `atomic`, the first failure undoes the updates already applied and the others are
    reported ABORTED. `check_report` sees the results first: when it returns an error (they
    cannot be reported), every update applied is undone and that error raised, so that the
    batch is refused whole.
    """
    results: list[P4RTError | None] = []
    undos: list[Undo] = []
    for i, update in enumerate(updates):
        try:
            undos.append(apply_update(pipeline, update))
            results.append(None)
        except P4RTError as err:
            results.append(err)
            if atomic:
                for undo in reversed(undos):
                    undo()
                aborted = P4RTError(
                    code_pb2.ABORTED, f"not applied: update {i} failed, the batch was rolled back"
                )
                done: list[P4RTError | None] = [aborted if r is None else r for r in results]
                return _checked(done + [aborted] * (len(updates) - len(done)), [], check_report)
    return _checked(results, undos, check_report)


def _checked(
    results: list[P4RTError | None], undos: list[Undo], check_report: ReportCheck | None
) -> list[P4RTError | None]:
    refusal = check_report(results) if check_report is not None else None
    if refusal is None:
        return results
    for undo in reversed(undos):
        undo()
    raise refusal


def apply_update(pipeline: InstalledPipeline, update: p4runtime_pb2.Update) -> Undo:
    """Apply one update and return how to take it back; raise P4RTError if it is refused."""
    if update.type not in (INSERT, MODIFY, DELETE):
        raise invalid("update type must be INSERT, MODIFY or DELETE")
    kind = update.entity.WhichOneof("entity")
    if kind is None:
        raise invalid("the update's entity is not set")
    handler = _HANDLERS.get(kind)
    if handler is None:
        raise P4RTError(code_pb2.UNIMPLEMENTED, f"p4switch does not program {kind} entities")
    try:
        return handler(pipeline, update.type, getattr(update.entity, kind))
    except StateError as err:
        raise refused_by_state(err) from None
    except P4RTError:
        raise
    except Exception as err:  # a bug here must not take the server down
        log.exception("unexpected failure applying a %s update", kind)
        raise P4RTError(code_pb2.INTERNAL, f"internal error: {err}") from err


def _counts(data: p4runtime_pb2.CounterData, what: str) -> tuple[int, int]:
    if data.packet_count < 0 or data.byte_count < 0:
        raise invalid(f"{what}: counts cannot be negative")
    return data.packet_count, data.byte_count


def _table_entry(pipeline: InstalledPipeline, utype: int, msg: p4runtime_pb2.TableEntry) -> Undo:
    info, table = table_of(pipeline, msg.table_id)
    if msg.is_default_action:
        return _default_entry(pipeline, info, table, utype, msg)
    match = decode_match(info, msg.match)
    check_priority(info, table, msg.priority)
    if info.is_const and (utype != MODIFY or msg.HasField("action")):
        raise P4RTError(code_pb2.PERMISSION_DENIED, f"{info.name} has const entries")
    if utype == DELETE:  # only the key counts for a delete
        deleted = table.get(match, msg.priority)
        if deleted is None:
            raise P4RTError(code_pb2.NOT_FOUND, f"{info.name}: no entry with this key to delete")
        table.delete(match, msg.priority)
        return lambda: table.insert(deleted)
    _check_entry_fields(info, msg)
    which = msg.action.WhichOneof("type")
    if utype == INSERT:
        if which is None:
            raise invalid(f"{info.name}: an inserted entry needs an action")
        return _insert(pipeline, info, table, match, msg)
    old = table.get(match, msg.priority)
    if old is None:
        raise P4RTError(code_pb2.NOT_FOUND, f"{info.name}: no entry with this key to modify")
    saved = (old.action, old.metadata, old.controller_metadata, old.packets, old.bytes, old.meter)
    saved_timeout = old.idle_timeout_ns
    counts = _counts(msg.counter_data, info.name) if msg.HasField("counter_data") else None
    meter = meter_cell(msg.meter_config, info.name) if msg.HasField("meter_config") else None
    if which is not None:
        table.modify(TableEntry(match, entry_action(pipeline, info, msg.action), msg.priority))
    old.metadata, old.controller_metadata = msg.metadata, msg.controller_metadata
    old.idle_timeout_ns = msg.idle_timeout_ns  # as PI: a MODIFY sets it (0: no longer ages)
    if counts is not None:
        old.packets, old.bytes = counts
    if meter is not None:
        old.meter = meter

    def undo() -> None:
        (old.action, old.metadata, old.controller_metadata, old.packets, old.bytes, old.meter) = (
            saved
        )
        old.idle_timeout_ns = saved_timeout

    return undo


def _insert(
    pipeline: InstalledPipeline,
    info: TableInfo,
    table: TableState,
    match: tuple[FieldMatch, ...],
    msg: p4runtime_pb2.TableEntry,
) -> Undo:
    entry = TableEntry(
        match,
        entry_action(pipeline, info, msg.action),
        msg.priority,
        metadata=msg.metadata,
        controller_metadata=msg.controller_metadata,
        idle_timeout_ns=msg.idle_timeout_ns,
    )
    if msg.HasField("counter_data"):
        entry.packets, entry.bytes = _counts(msg.counter_data, info.name)
    if msg.HasField("meter_config"):
        entry.meter = meter_cell(msg.meter_config, info.name)
    table.insert(entry)
    return lambda: table.delete(match, msg.priority)


def _check_entry_fields(info: TableInfo, msg: p4runtime_pb2.TableEntry) -> None:
    if msg.is_const:
        raise invalid(f"{info.name}: is_const must be false in a write")
    if msg.HasField("time_since_last_hit"):  # as PI says: a read gives it, a write does not
        raise invalid(f"{info.name}: time_since_last_hit must not be set in a write")
    if msg.idle_timeout_ns < 0:
        raise invalid(f"{info.name}: idle_timeout_ns cannot be negative")
    if msg.idle_timeout_ns and not info.idle_timeout:
        what = "does not support idle timeouts (no support_timeout): idle_timeout_ns must be 0"
        raise invalid(f"{info.name} {what}")
    if msg.idle_timeout_ns and msg.is_default_action:
        raise invalid(f"{info.name}: the default entry does not age (idle_timeout_ns must be 0)")
    if msg.HasField("meter_counter_data"):
        raise P4RTError(code_pb2.UNIMPLEMENTED, "p4switch keeps no meter counters")
    if msg.HasField("meter_config") and not info.direct_meter_id:
        raise invalid(f"{info.name} has no direct meter")
    if msg.HasField("counter_data") and not info.direct_counter_id:
        raise invalid(f"{info.name} has no direct counter")


def _default_entry(
    pipeline: InstalledPipeline,
    info: TableInfo,
    table: TableState,
    utype: int,
    msg: p4runtime_pb2.TableEntry,
) -> Undo:
    if utype != MODIFY:
        raise invalid(f"{info.name}: the default entry can only be modified")
    if msg.match or msg.priority:
        raise invalid(f"{info.name}: the default entry has no match and priority 0")
    _check_entry_fields(info, msg)
    if table.spec.const_default:
        raise P4RTError(code_pb2.PERMISSION_DENIED, f"{info.name}: the default action is const")
    if info.profile_id:  # BMv2 would take a default member; a miss runs NoAction here
        what = f"{info.name} has an action profile: p4switch keeps its default action, NoAction"
        raise P4RTError(code_pb2.UNIMPLEMENTED, what)
    saved = (table.default, table.default_packets, table.default_bytes)
    which = msg.action.WhichOneof("type")
    counts = _counts(msg.counter_data, info.name) if msg.HasField("counter_data") else None
    if which is None:
        table.reset_default()  # a MODIFY without action restores the program's default
    elif which == "action":
        table.set_default(decode_action(pipeline.schema, info, msg.action.action))
    else:
        raise invalid(f"{info.name} is a direct table: {which} cannot be its default action")
    if counts is not None:
        table.default_packets, table.default_bytes = counts

    def undo() -> None:
        table.default, table.default_packets, table.default_bytes = saved

    return undo


def _counter_entry(
    pipeline: InstalledPipeline, utype: int, msg: p4runtime_pb2.CounterEntry
) -> Undo:
    if utype != MODIFY:
        raise invalid("counter entries can only be modified")
    if msg.counter_id == 0:
        raise invalid("counter id 0 is not valid in a write")
    info = pipeline.schema.counters.get(msg.counter_id)
    if info is None:
        raise P4RTError(code_pb2.NOT_FOUND, f"no counter with id {msg.counter_id:#x}")
    counter = pipeline.state.counter(info.name)
    cells = index_cells(msg, info.size, info.name)
    if not msg.HasField("data"):
        return _noop
    packets, nbytes = _counts(msg.data, info.name)
    saved = [(i, counter.packets[i], counter.bytes[i]) for i in cells]
    for i in cells:
        counter.set(i, packets, nbytes)

    def undo() -> None:
        for cell in saved:
            counter.set(*cell)

    return undo


def _direct_counter_entry(
    pipeline: InstalledPipeline, utype: int, msg: p4runtime_pb2.DirectCounterEntry
) -> Undo:
    if utype != MODIFY:
        raise invalid("direct counter entries can only be modified")
    info, table = table_of(pipeline, msg.table_entry.table_id)
    if not info.direct_counter_id:
        raise invalid(f"{info.name} has no direct counter")
    if not msg.HasField("data"):
        return _noop
    counts = _counts(msg.data, info.name)
    if msg.table_entry.is_default_action:
        saved = (table.default_packets, table.default_bytes)
        table.default_packets, table.default_bytes = counts

        def undo_default() -> None:
            table.default_packets, table.default_bytes = saved

        return undo_default
    match = decode_match(info, msg.table_entry.match)
    check_priority(info, table, msg.table_entry.priority)
    entry = table.get(match, msg.table_entry.priority)
    if entry is None:
        raise P4RTError(code_pb2.NOT_FOUND, f"{info.name}: no entry with this key")
    saved_entry = (entry.packets, entry.bytes)
    entry.packets, entry.bytes = counts

    def undo_entry() -> None:
        entry.packets, entry.bytes = saved_entry

    return undo_entry


def _register_entry(
    pipeline: InstalledPipeline, utype: int, msg: p4runtime_pb2.RegisterEntry
) -> Undo:
    if utype != MODIFY:
        raise invalid("register entries can only be modified")
    if msg.register_id == 0:
        raise invalid("register id 0 is not valid in a write")
    info = pipeline.schema.registers.get(msg.register_id)
    if info is None:
        raise P4RTError(code_pb2.NOT_FOUND, f"no register with id {msg.register_id:#x}")
    if info.translated:
        raise untranslated(f"register {info.name}", info.translated)
    if msg.data.WhichOneof("data") != "bitstring":
        raise invalid(f"{info.name} holds bit<{info.bitwidth}>: data must be a bitstring")
    value = decode_uint(msg.data.bitstring, info.bitwidth, info.name)
    register = pipeline.state.register(info.name)
    cells = index_cells(msg, info.size, info.name)
    saved = [(i, register.cells[i]) for i in cells]
    for i in cells:
        register.write(i, value)

    def undo() -> None:
        for cell in saved:
            register.write(*cell)

    return undo


def _pre_entry(
    pipeline: InstalledPipeline, utype: int, msg: p4runtime_pb2.PacketReplicationEngineEntry
) -> Undo:
    which = msg.WhichOneof("type")
    if which is None:
        raise invalid("packet replication entry: set a multicast group or a clone session")
    pre, records = pipeline.state.pre, pipeline.pre_records
    if which == "multicast_group_entry":
        kind, key = "group", msg.multicast_group_entry.multicast_group_id
        what = f"multicast group {key}"
        restore_entry = _restorer(pre.groups, key)
    else:
        kind, key = "session", msg.clone_session_entry.session_id
        what = f"clone session {key}"
        restore_entry = _restorer(pre.sessions, key)
    if key == 0:
        raise invalid(f"{what}: id 0 is not valid in a write")
    if kind == "group" and key > _MAX_GROUP:
        raise P4RTError(
            code_pb2.OUT_OF_RANGE,
            f"{what}: v1model's mcast_grp is bit<16>, so a group id is at most {_MAX_GROUP}",
        )
    restore_record = _restorer(records, (kind, key))
    if utype == DELETE:
        if kind == "group":
            pre.delete_group(key)
        else:
            pre.delete_session(key)
        records.pop((kind, key), None)
    else:
        body = msg.multicast_group_entry if kind == "group" else msg.clone_session_entry
        replicas = decode_replicas(body.replicas, pipeline.cpu_port, what)
        if any(r.instance > _MAX_INSTANCE for r in replicas):
            raise invalid(f"{what}: replica instance above {_MAX_INSTANCE}")
        if kind == "group":
            (pre.insert_group if utype == INSERT else pre.modify_group)(key, replicas)
        else:
            c = msg.clone_session_entry
            session = CloneSession(key, replicas, c.class_of_service, c.packet_length_bytes)
            (pre.insert_session if utype == INSERT else pre.modify_session)(session)
        kept = p4runtime_pb2.PacketReplicationEngineEntry()
        kept.CopyFrom(msg)
        records[(kind, key)] = PreRecord(kept, replicas)

    def undo() -> None:
        restore_entry()
        restore_record()

    return undo


def _restorer(entries: dict[_K, _V], key: _K) -> Undo:
    """How to put `entries[key]` back as it is now (absent: removed again)."""
    saved = entries.get(key)

    def restore() -> None:
        if saved is None:
            entries.pop(key, None)
        else:
            entries[key] = saved

    return restore


_HANDLERS: dict[str, Callable[[InstalledPipeline, int, Any], Undo]] = {
    "table_entry": _table_entry,
    "counter_entry": _counter_entry,
    "direct_counter_entry": _direct_counter_entry,
    "meter_entry": meter_entry,
    "value_set_entry": value_set_entry,
    "direct_meter_entry": direct_meter_entry,
    "register_entry": _register_entry,
    "packet_replication_engine_entry": _pre_entry,
    "digest_entry": digest_entry,
    "action_profile_member": member_entry,
    "action_profile_group": group_entry,
}
