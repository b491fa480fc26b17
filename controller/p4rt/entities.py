"""What identifies a P4Runtime entity on a switch, what it holds, and the updates that put it
back or undo a change: the vocabulary of `Fabric` and of `controller.p4rt.reconcile`.

Values are compared in canonical form (leading zero bytes dropped, replicas in order), so an
entity read back from a switch equals the one written even if the switch encodes it otherwise.
"""

from __future__ import annotations

from p4.v1 import p4runtime_pb2

from controller.p4rt.schema import delete, insert, modify

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


def entity_value(entity: p4runtime_pb2.Entity) -> tuple[object, ...]:
    """What an entity holds beyond its key, in canonical form: equal values, same behaviour."""
    kind = entity.WhichOneof("entity")
    if kind == "table_entry":
        action = entity.table_entry.action
        if action.WhichOneof("type") == "action":
            params = sorted((p.param_id, p.value.lstrip(b"\0")) for p in action.action.params)
            return ("action", action.action.action_id, tuple(params))
        return ("other", action.SerializeToString(deterministic=True))
    if kind == "packet_replication_engine_entry":
        pre = entity.packet_replication_engine_entry
        if pre.HasField("multicast_group_entry"):
            return ("mcast", _replicas(pre.multicast_group_entry.replicas))
        session = pre.clone_session_entry
        return (
            "clone",
            _replicas(session.replicas),
            session.class_of_service,
            session.packet_length_bytes,
        )
    return (kind, entity.SerializeToString(deterministic=True))


def _replicas(replicas: object) -> tuple[tuple[int, bytes, int], ...]:
    return tuple(
        sorted((r.egress_port, r.port.lstrip(b"\0"), r.instance) for r in replicas)  # type: ignore[attr-defined]
    )


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
