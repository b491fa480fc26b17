"""Many switches under one controller: all-or-none installation, remembered state, reinstall.

    fabric = Fabric(connections, p4info, p4_source)
    fabric.connect(deadline_after(10))        # every switch: primary, pipeline set (empty)
    fabric.install({"s1": [...], "s2": [...]})  # every switch takes its updates, or none does
    ...
    for name in fabric.lost():                # streams that ended: the switch restarted
        fabric.reinstall(name, deadline_after(10))

`install` writes to one switch after the other. When a switch refuses any update, what was
already written (on the switches before it, and the accepted part of its own batch) is undone
with inverse updates (INSERT <-> DELETE; MODIFY and DELETE restore the entity read from the
switch just before the write) and `InstallError` names the switch and the refused updates. This
is all-or-none in outcome, not in time: other switches run with the new entries between their
write and the rollback.

The fabric remembers what it installed on every switch (the desired state), so that a switch
that restarted with empty tables gets the pipeline and every remembered entity back. A fabric
made with `clear_groups=True` deletes every multicast group a switch still has before it sets
the pipeline again: BMv2 keeps the replication nodes of groups across a pipeline push, so a
live switch given the same groups again would send every copy twice (behavioral-model#891).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterable, Mapping, Sequence

from p4.config.v1 import p4info_pb2
from p4.v1 import p4runtime_pb2

from controller.p4rt.connection import SwitchConnection
from controller.p4rt.exceptions import (
    FabricError,
    InstallError,
    P4RuntimeError,
    UpdateFailure,
    WriteError,
)
from controller.p4rt.schema import Schema, delete, insert, modify

log = logging.getLogger(__name__)

Key = tuple[object, ...]


def entity_key(entity: p4runtime_pb2.Entity) -> Key:
    """What identifies an entity on a switch (its table and key, its group id, its cell...)."""
    kind = entity.WhichOneof("entity")
    if kind == "table_entry":
        e = entity.table_entry
        match = tuple(sorted((m.field_id, _match_key(m)) for m in e.match))
        return ("table", e.table_id, e.is_default_action, match, e.priority)
    if kind == "packet_replication_engine_entry":
        pre = entity.packet_replication_engine_entry
        if pre.HasField("multicast_group_entry"):
            return ("mcast", pre.multicast_group_entry.multicast_group_id)
        return ("clone", pre.clone_session_entry.session_id)
    if kind == "counter_entry":
        return ("counter", entity.counter_entry.counter_id, entity.counter_entry.index.index)
    if kind == "register_entry":
        return ("register", entity.register_entry.register_id, entity.register_entry.index.index)
    if kind == "direct_counter_entry":
        return ("direct", *entity_key(_as_table(entity.direct_counter_entry.table_entry)))
    return (kind, entity.SerializeToString(deterministic=True))


def _as_table(entry: p4runtime_pb2.TableEntry) -> p4runtime_pb2.Entity:
    return p4runtime_pb2.Entity(table_entry=entry)


def _match_key(m: p4runtime_pb2.FieldMatch) -> tuple[object, ...]:
    kind = m.WhichOneof("field_match_type")
    if kind == "exact":
        return (kind, m.exact.value.lstrip(b"\0"))
    if kind == "lpm":
        return (kind, m.lpm.value.lstrip(b"\0"), m.lpm.prefix_len)
    if kind == "ternary":
        return (kind, m.ternary.value.lstrip(b"\0"), m.ternary.mask.lstrip(b"\0"))
    return (kind, m.SerializeToString(deterministic=True))


def key_query(entity: p4runtime_pb2.Entity) -> p4runtime_pb2.Entity:
    """A Read request for exactly the entity with this one's key."""
    kind = entity.WhichOneof("entity")
    if kind == "table_entry":
        e = entity.table_entry
        query = p4runtime_pb2.TableEntry(
            table_id=e.table_id, priority=e.priority, is_default_action=e.is_default_action
        )
        query.match.extend(e.match)
        return _as_table(query)
    if kind == "packet_replication_engine_entry":
        pre = entity.packet_replication_engine_entry
        query_pre = p4runtime_pb2.PacketReplicationEngineEntry()
        if pre.HasField("multicast_group_entry"):
            gid = pre.multicast_group_entry.multicast_group_id
            query_pre.multicast_group_entry.multicast_group_id = gid
        else:
            query_pre.clone_session_entry.session_id = pre.clone_session_entry.session_id
        return p4runtime_pb2.Entity(packet_replication_engine_entry=query_pre)
    return entity


def replay_update(entity: p4runtime_pb2.Entity) -> p4runtime_pb2.Update:
    """The update that puts a remembered entity on a switch with a fresh pipeline."""
    kind = entity.WhichOneof("entity")
    if kind == "table_entry" and not entity.table_entry.is_default_action:
        return insert(entity)
    if kind == "packet_replication_engine_entry":
        return insert(entity)
    return modify(entity)  # default entries, counters, registers: they always exist


def inverse(
    update: p4runtime_pb2.Update, previous: p4runtime_pb2.Entity | None
) -> p4runtime_pb2.Update | None:
    """The update that undoes `update`, given the entity its key held before (if any)."""
    if update.type == p4runtime_pb2.Update.INSERT:
        return delete(update.entity)
    if previous is None:
        return None  # nothing was there: a MODIFY or DELETE of it cannot have succeeded
    if update.type == p4runtime_pb2.Update.DELETE:
        return replay_update(previous)
    return modify(previous)


class Fabric:
    """SwitchConnections by name, programmed with one P4 program, with their desired state."""

    def __init__(
        self,
        connections: Iterable[SwitchConnection],
        p4info: p4info_pb2.P4Info,
        device_config: bytes,
        *,
        clear_groups: bool = False,
    ) -> None:
        self.clear_groups = clear_groups
        self._connections: dict[str, SwitchConnection] = {}
        for conn in connections:
            if conn.name in self._connections:
                raise FabricError(f"two connections are named {conn.name!r}")
            self._connections[conn.name] = conn
        self.p4info = p4info
        self.device_config = device_config
        self.schema = Schema(p4info)
        self._desired: dict[str, dict[Key, p4runtime_pb2.Entity]] = {
            name: {} for name in self._connections
        }
        self._lock = threading.RLock()

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(self._connections)

    def connection(self, name: str) -> SwitchConnection:
        try:
            return self._connections[name]
        except KeyError:
            known = ", ".join(self._connections)
            raise FabricError(f"no switch {name!r} in the fabric; known: {known}") from None

    def connect(self, deadline: float) -> None:
        """Connect to every switch, become primary and set the pipeline (tables start empty)."""
        with self._lock:
            for name, conn in self._connections.items():
                conn.connect(deadline)
                conn.set_pipeline(self.p4info, self.device_config)
                self._desired[name].clear()

    def close(self) -> None:
        for conn in self._connections.values():
            conn.close()

    def installed(self, name: str) -> tuple[p4runtime_pb2.Entity, ...]:
        """What the fabric has installed on a switch (its desired state), in installation order."""
        self.connection(name)
        with self._lock:
            return tuple(self._desired[name].values())

    def lost(self) -> tuple[str, ...]:
        """Switches whose stream ended (stopped or restarted) and that need `reinstall`."""
        return tuple(name for name, conn in self._connections.items() if not conn.alive)

    # --- installation -----------------------------------------------------------------------

    def install(self, changes: Mapping[str, Sequence[p4runtime_pb2.Update]]) -> None:
        """Apply each switch's updates, on every switch or (after a rollback) on none."""
        with self._lock:
            for name in changes:
                self.connection(name)
            lost = [name for name in changes if changes[name] and not self._connections[name].alive]
            if lost:
                raise FabricError(
                    f"switches {lost} lost their connection (restarted?); nothing was written: "
                    "call Fabric.reinstall for each, then install again"
                )
            undo: list[tuple[str, list[p4runtime_pb2.Update]]] = []
            for name, updates in changes.items():
                if not updates:
                    continue
                conn = self._connections[name]
                previous = self._previous(conn, updates)
                try:
                    conn.write(updates)
                except P4RuntimeError as err:
                    accepted = err.succeeded if isinstance(err, WriteError) else ()
                    own = _inverses(updates, previous, accepted)
                    failures = err.failures if isinstance(err, WriteError) else ()
                    self._rollback(name, err, failures, [*undo, (name, own)])
                undo.append((name, _inverses(updates, previous, range(len(updates)))))
            for name, updates in changes.items():
                self._remember(name, updates)

    def _previous(
        self, conn: SwitchConnection, updates: Sequence[p4runtime_pb2.Update]
    ) -> list[p4runtime_pb2.Entity | None]:
        """For each MODIFY and DELETE, the entity its key holds now (None for INSERTs)."""
        previous: list[p4runtime_pb2.Entity | None] = []
        for update in updates:
            if update.type == p4runtime_pb2.Update.INSERT:
                previous.append(None)
                continue
            key = entity_key(update.entity)
            try:
                found = [e for e in conn.read([key_query(update.entity)]) if entity_key(e) == key]
            except P4RuntimeError:
                found = []
            remembered = self._desired[conn.name].get(key)
            previous.append(found[0] if found else remembered)
        return previous

    def _rollback(
        self,
        switch: str,
        cause: P4RuntimeError,
        failures: Sequence[UpdateFailure],
        undo: list[tuple[str, list[p4runtime_pb2.Update]]],
    ) -> None:
        rolled_back: list[str] = []
        unrestored: dict[str, str] = {}
        for name, inverses in reversed(undo):
            try:
                self._connections[name].write(inverses)
                rolled_back.append(name)
            except P4RuntimeError as err:
                log.error("switch %s: rollback failed: %s", name, err)
                unrestored[name] = str(err).splitlines()[0]
        log.warning("installation refused by %s, rolled back on %s", switch, rolled_back)
        raise InstallError(switch, cause, failures, rolled_back, unrestored) from cause

    def _remember(self, name: str, updates: Sequence[p4runtime_pb2.Update]) -> None:
        desired = self._desired[name]
        for update in updates:
            key = entity_key(update.entity)
            if update.type == p4runtime_pb2.Update.DELETE:
                desired.pop(key, None)
            else:
                desired[key] = update.entity

    # --- restarts ---------------------------------------------------------------------------

    def reinstall(self, name: str, deadline: float) -> None:
        """Reconnect if needed, set the pipeline again and replay every remembered entity."""
        conn = self.connection(name)
        with self._lock:
            if not conn.alive:
                conn.reconnect(deadline)
            if self.clear_groups:
                self._delete_groups(conn)
            conn.set_pipeline(self.p4info, self.device_config)
            entities = list(self._desired[name].values())
            conn.write([replay_update(e) for e in entities])
            log.info("switch %s: reinstalled %d entities", name, len(entities))

    def _delete_groups(self, conn: SwitchConnection) -> None:
        """Delete every multicast group the switch has (read with a wildcard query)."""
        query = p4runtime_pb2.Entity()
        query.packet_replication_engine_entry.multicast_group_entry.multicast_group_id = 0
        groups = conn.read([query])
        if groups:
            conn.write([delete(entity) for entity in groups])
            log.info("switch %s: deleted %d multicast groups before setting the pipeline again",
                     conn.name, len(groups))  # fmt: skip

    def heal(self, deadline: float) -> tuple[str, ...]:
        """Reinstall every switch whose connection was lost; returns their names."""
        lost = self.lost()
        for name in lost:
            self.reinstall(name, deadline)
        return lost


def _inverses(
    updates: Sequence[p4runtime_pb2.Update],
    previous: Sequence[p4runtime_pb2.Entity | None],
    applied: Iterable[int],
) -> list[p4runtime_pb2.Update]:
    """Updates undoing the applied ones, last applied first."""
    out = []
    for index in sorted(applied, reverse=True):
        undo = inverse(updates[index], previous[index])
        if undo is not None:
            out.append(undo)
    return out
