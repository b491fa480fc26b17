"""P4Runtime writes as a case file gives them, by P4Info names, and their P4Runtime updates.

A batch is one Write request: table entries, multicast groups and clone sessions, inserted,
modified or deleted, or the controller's own changes for an innet round
(`controller.rounds.Change`). `updates(schema, batch)` builds the request's updates with ids
and widths from a P4Info (`controller.p4rt.schema`), so the same batch goes to targets whose
P4Info ids differ.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from p4.v1 import p4runtime_pb2

from controller.p4rt.schema import Lpm, Match, Schema, Ternary, Value, delete, insert, modify
from controller.rounds import Change, GroupWrite, to_updates
from p4diff.fields import Where
from p4diff.yamlfile import Mapping

Op = Literal["insert", "modify", "delete"]
OPS: dict[str, Op] = {"write": "insert", "modify": "modify", "delete": "delete"}


@dataclass(frozen=True)
class EntryWrite:
    table: str
    match: tuple[tuple[str, Match], ...] = ()
    action: str | None = None
    params: tuple[tuple[str, Value], ...] = ()
    priority: int = 0
    default: bool = False  # the table's default action (modify only)


@dataclass(frozen=True)
class CloneWrite:
    session_id: int
    replicas: tuple[tuple[int, int], ...] = ()
    class_of_service: int = 0
    packet_length: int = 0  # bytes kept of each clone; 0: the whole packet


Entity = EntryWrite | GroupWrite | CloneWrite


@dataclass(frozen=True)
class Update:
    op: Op
    entity: Entity


@dataclass(frozen=True)
class Batch:
    """One Write request. `expect_refused`: the target must refuse it, and with `atomic`
    (ROLLBACK_ON_ERROR) nothing of it may stay applied."""

    updates: tuple[Update | Change, ...]
    expect_refused: bool = False
    atomic: bool = False

    def ports(self) -> set[int]:
        """Every egress port a group or session of the batch names."""
        found: set[int] = set()
        for update in self.updates:
            entity = update.entity if isinstance(update, Update) else update.item
            if isinstance(entity, GroupWrite | CloneWrite):
                found.update(port for port, _ in entity.replicas)
        return found


def updates(schema: Schema, batch: Batch) -> list[p4runtime_pb2.Update]:
    """The batch's P4Runtime updates for a target with this schema (SchemaError if a name or a
    value does not fit its P4Info)."""
    out: list[p4runtime_pb2.Update] = []
    for item in batch.updates:
        if isinstance(item, Change):
            out += to_updates(schema, [item])
        else:
            out.append(_update(schema, item))
    return out


def _update(schema: Schema, update: Update) -> p4runtime_pb2.Update:
    entity = update.entity
    if isinstance(entity, EntryWrite):
        with_action = update.op != "delete"
        built = schema.table_entry(
            entity.table,
            dict(entity.match),
            entity.action if with_action else None,
            dict(entity.params) if with_action else None,
            priority=entity.priority,
            default=entity.default,
        )
    elif isinstance(entity, GroupWrite):  # the controller's own description of a group
        built = schema.multicast_group(entity.group_id, entity.replicas)
    else:
        built = _clone_session(entity)
    return {"insert": insert, "modify": modify, "delete": delete}[update.op](built)


def _clone_session(session: CloneWrite) -> p4runtime_pb2.Entity:
    entry = p4runtime_pb2.CloneSessionEntry(
        session_id=session.session_id,
        class_of_service=session.class_of_service,
        packet_length_bytes=session.packet_length,
    )
    for port, instance in session.replicas:
        entry.replicas.append(p4runtime_pb2.Replica(egress_port=port, instance=instance))
    return p4runtime_pb2.Entity(
        packet_replication_engine_entry=p4runtime_pb2.PacketReplicationEngineEntry(
            clone_session_entry=entry
        )
    )


# --- reading batches from a case file ----------------------------------------------------------

BATCH_KEYS = ("updates", "expect", "atomic")
TABLE_KEYS = ("table", "match", "action", "params", "priority", "default")
GROUP_KEYS = ("multicast_group", "replicas")
SESSION_KEYS = ("clone_session", "replicas", "class_of_service", "packet_length")


def read_batch(where: Where, value: object, op: Op) -> Batch:
    """A batch: a list of updates, or {updates: [...], expect: refused, atomic: true}."""
    expect_refused, atomic = False, False
    if isinstance(value, Mapping):
        where.keys(value, "a batch", ("updates",), ("expect", "atomic"))
        expect = value.get("expect", "applied")
        if expect not in ("applied", "refused"):
            raise where.fail(f"expect: {expect!r}; a batch is expected 'applied' or 'refused'")
        expect_refused = expect == "refused"
        atomic = where.flag(value.get("atomic", expect_refused), "atomic")
        value = value["updates"]
    items = where.sequence(value, "a batch's updates")
    if not items:
        raise where.fail("a batch needs at least one update")
    read = [
        _read_update(where.at(item, f"update {k + 1}"), item, op) for k, item in enumerate(items)
    ]
    return Batch(tuple(read), expect_refused, atomic)


def _read_update(where: Where, value: object, op: Op) -> Update:
    item = where.mapping(value, "an update")
    kind = where.one_of(item, "an update", ("table", "multicast_group", "clone_session"))
    if kind == "table":
        where.keys(item, "a table entry", ("table",), TABLE_KEYS)
        return Update(op, _table_entry(where, item, op))
    if kind == "multicast_group":
        where.keys(item, "a multicast group", ("multicast_group",), GROUP_KEYS)
        group_id = where.integer(item["multicast_group"], "multicast_group", 1, 2**32 - 1)
        return Update(op, GroupWrite(group_id, _replicas(where, item.get("replicas", []))))
    where.keys(item, "a clone session", ("clone_session",), SESSION_KEYS)
    session = CloneWrite(
        where.integer(item["clone_session"], "clone_session", 1, 2**32 - 1),
        _replicas(where, item.get("replicas", [])),
        where.integer(item.get("class_of_service", 0), "class_of_service", 0, 2**32 - 1),
        where.integer(item.get("packet_length", 0), "packet_length", 0, 2**32 - 1),
    )
    return Update(op, session)


def _table_entry(where: Where, item: Mapping, op: Op) -> EntryWrite:
    default = where.flag(item.get("default", False), "default")
    if default and op != "modify":
        raise where.fail("a default action is set with modify, not inserted or deleted")
    if op != "delete" and "action" not in item:
        raise where.fail("a table entry to write or modify needs an action")
    match = where.mapping(item.get("match", Mapping()), "match")
    params = where.mapping(item.get("params", Mapping()), "params")
    return EntryWrite(
        table=where.text(item["table"], "table"),
        match=tuple((str(k), _match(where, str(k), v)) for k, v in match.items()),
        action=where.text(item["action"], "action") if "action" in item else None,
        params=tuple((str(k), _value(where, str(k), v)) for k, v in params.items()),
        priority=where.integer(item.get("priority", 0), "priority", 0, 2**31 - 1),
        default=default,
    )


def _value(where: Where, what: str, value: object) -> Value:
    if isinstance(value, bool) or not isinstance(value, int | str):
        raise where.fail(f"{what}: {value!r} is not a number, an address or a string")
    return value


def _match(where: Where, field: str, value: Any) -> Match:
    """exact: a value or {exact: v}; {lpm: "10.0.1.0/24"} or {lpm: [v, len]};
    {ternary: [v, mask]}."""
    if not isinstance(value, Mapping):
        return _value(where, field, value)
    kind = where.one_of(value, f"match {field}", ("exact", "lpm", "ternary"))
    where.keys(value, f"match {field}", (kind,))
    given = value[kind]
    if kind == "exact":
        return _value(where, field, given)
    if kind == "lpm" and isinstance(given, str) and "/" in given:
        address, _, length = given.partition("/")
        given = [address, int(length) if length.isdigit() else length]
    if not isinstance(given, list) or len(given) != 2:
        form = "[value, prefix_len] or 'a.b.c.d/len'" if kind == "lpm" else "[value, mask]"
        raise where.fail(f"match {field}: {kind} takes {form}, got {given!r}")
    first = _value(where, field, given[0])
    if kind == "lpm":
        return Lpm(first, where.integer(given[1], f"match {field} prefix length", 1))
    return Ternary(first, _value(where, field, given[1]))


def _replicas(where: Where, value: object) -> tuple[tuple[int, int], ...]:
    """[[port, instance], ...] or [port, ...] (instance 0)."""
    out = []
    for item in where.sequence(value, "replicas"):
        pair = item if isinstance(item, list) else [item, 0]
        if len(pair) != 2:
            raise where.fail(f"a replica is [port, instance] or a port, got {item!r}")
        port = where.integer(pair[0], "a replica's port", 0, 511)
        out.append((port, where.integer(pair[1], "a replica's instance", 0, 65535)))
    return tuple(out)
