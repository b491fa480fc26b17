"""Read a switch's state back and bring it to the desired state: delete what should not be
there, insert what is missing, modify what differs. `reconcile(conn, schema, desired)` takes the
desired entities by `entity_key` and returns what it changed (`Reconciled`: deleted, inserted,
modified); `differences(desired, actual)` is its pure part.

What is read: every entry of every table the P4Info lets the controller write (wildcard reads,
one per table), every multicast group, every clone session (skipped on a target that cannot
read them, unless the desired state has some), and the default entry of each table whose
default the desired state sets. Counters and registers are the data plane's, not reconciled.
Changes go in dependency order (table entries that go first, then groups and sessions, then
the new groups, then the new and changed table entries); the switch is read again afterwards
and `ReconcileError` is raised if it still differs.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from p4.v1 import p4runtime_pb2

from controller.p4rt.connection import SwitchConnection
from controller.p4rt.entities import Key, entity_key, entity_value, key_query
from controller.p4rt.exceptions import P4RuntimeError, ReconcileError
from controller.p4rt.schema import Schema, delete, insert, modify

Entities = Mapping[Key, p4runtime_pb2.Entity]


@dataclass(frozen=True, slots=True)
class Reconciled:
    """What reconciling changed on a switch."""

    deleted: int = 0
    inserted: int = 0
    modified: int = 0

    @property
    def changed(self) -> bool:
        return bool(self.deleted or self.inserted or self.modified)

    def __str__(self) -> str:
        return f"deleted {self.deleted}, inserted {self.inserted}, modified {self.modified}"


def _is_default(entity: p4runtime_pb2.Entity) -> bool:
    kind = entity.WhichOneof("entity")
    return kind == "table_entry" and bool(entity.table_entry.is_default_action)


def _reconciled_kind(key: Key) -> bool:
    return key[0] in ("table", "mcast", "clone")


def state_queries(schema: Schema) -> list[p4runtime_pb2.Entity]:
    """Wildcard reads of every writable table's entries and of every multicast group."""
    queries = [
        p4runtime_pb2.Entity(table_entry=p4runtime_pb2.TableEntry(table_id=t.preamble.id))
        for t in schema.p4info.tables
        if not t.is_const_table
    ]
    groups = p4runtime_pb2.Entity()
    groups.packet_replication_engine_entry.multicast_group_entry.multicast_group_id = 0
    return [*queries, groups]


def _clone_query() -> p4runtime_pb2.Entity:
    sessions = p4runtime_pb2.Entity()
    sessions.packet_replication_engine_entry.clone_session_entry.session_id = 0
    return sessions


def read_state(
    conn: SwitchConnection, schema: Schema, desired: Entities
) -> dict[Key, p4runtime_pb2.Entity]:
    """What the switch holds of what reconciling compares, by entity key."""
    found = list(conn.read(state_queries(schema)))
    try:
        found += conn.read([_clone_query()])
    except P4RuntimeError:
        if any(key[0] == "clone" for key in desired):
            raise
    defaults = [key_query(e) for e in desired.values() if _is_default(e)]
    if defaults:
        found += conn.read(defaults)
    return {entity_key(e): e for e in found}


def differences(
    desired: Entities, actual: Mapping[Key, p4runtime_pb2.Entity]
) -> tuple[list[list[p4runtime_pb2.Update]], Reconciled]:
    """The write batches, in order, that turn `actual` into `desired`, and their counts."""
    extra = [e for k, e in actual.items() if k not in desired and not _is_default(e)]
    missing = [e for k, e in desired.items() if k not in actual and _reconciled_kind(k)]
    changed = [
        e
        for k, e in desired.items()
        if k in actual and _reconciled_kind(k) and entity_value(e) != entity_value(actual[k])
    ]

    def tables(entities: Iterable[p4runtime_pb2.Entity]) -> list[p4runtime_pb2.Entity]:
        return [e for e in entities if e.WhichOneof("entity") == "table_entry"]

    def pre(entities: Iterable[p4runtime_pb2.Entity]) -> list[p4runtime_pb2.Entity]:
        return [e for e in entities if e.WhichOneof("entity") != "table_entry"]

    batches = [
        [delete(e) for e in tables(extra)],
        [delete(e) for e in pre(extra)],
        [insert(e) for e in pre(missing)] + [modify(e) for e in pre(changed)],
        [insert(e) for e in tables(missing) if not _is_default(e)]
        + [modify(e) for e in tables(missing) if _is_default(e)]
        + [modify(e) for e in tables(changed)],
    ]
    counts = Reconciled(len(extra), len(missing), len(changed))
    return [b for b in batches if b], counts


def reconcile(conn: SwitchConnection, schema: Schema, desired: Entities) -> Reconciled:
    """Read `conn`'s switch back and make it hold exactly `desired`; what it changed.

    Raises the connection's P4RuntimeError when a read or write fails (a write may end with an
    unknown outcome again), ReconcileError when the switch still differs afterwards.
    """
    actual = read_state(conn, schema, desired)
    batches, done = differences(desired, actual)
    for batch in batches:
        conn.write(batch)
    if done.changed:
        left, counts = differences(desired, read_state(conn, schema, desired))
        if left:
            raise ReconcileError(
                f"switch {conn.name}: still differs from the desired state after reconciling "
                f"({counts}); it may be changed by another client or still applying old writes"
            )
    return done
