"""Translating P4Runtime messages to and from the switch's run-time state.

Integers travel as big-endian binary strings. Values sent by a client may carry leading zero
bytes but must fit the P4Info bitwidth; values sent back are canonical (shortest form). Match
fields the client leaves out are wildcards for lpm, ternary, range and optional keys (an exact
key cannot be left out). Every refusal is a `P4RTError` carrying the canonical code the
specification names.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from google.rpc import code_pb2
from p4.v1 import p4runtime_pb2

from p4switch.exceptions import P4RTError, StateError
from p4switch.p4rt.schema import FieldInfo, P4InfoIndex, TableInfo, ValueSetInfo
from p4switch.runtime import (
    ActionCall,
    FieldMatch,
    MeterConfig,
    ProfileRef,
    Replica,
    SwitchState,
    TableEntry,
    TableState,
    prefix_len,
)

SDN_PORT_CPU = 0xFFFFFFFD  # the P4Runtime name of "the CPU port" in replicas
_SDN_RESERVED = 0xFFFFFFF0  # SDN ports from here up are reserved


def invalid(message: str) -> P4RTError:
    return P4RTError(code_pb2.INVALID_ARGUMENT, message)


def untranslated(what: str, translated: str) -> P4RTError:
    """A value of a type with `@p4runtime_translation`: the controller's, which p4switch does
    not translate to the program's (UNIMPLEMENTED, rather than read as the program's)."""
    return P4RTError(
        code_pb2.UNIMPLEMENTED,
        f"{what} is of type {translated}, with @p4runtime_translation: p4switch does not"
        " translate the controller's values to the program's",
    )


def refused_by_state(err: StateError) -> P4RTError:
    """A change the run-time state refused, reported with the code the state names."""
    return P4RTError(code_pb2.Code.Value(err.code), str(err))


@dataclass(frozen=True)
class PreRecord:
    """A replication entry as a client wrote it, kept so reads return it the same way."""

    message: p4runtime_pb2.PacketReplicationEngineEntry
    replicas: tuple[Replica, ...]  # what it decoded to


@dataclass
class InstalledPipeline:
    """A program as the P4Runtime server programs it: its state, the P4Info bound to it, and what
    clients wrote that the state does not keep (multicast metadata, how replica ports were sent).
    """

    schema: P4InfoIndex
    state: SwitchState
    cpu_port: int | None = None
    pre_records: dict[tuple[str, int], PreRecord] = field(default_factory=dict)


# --- binary strings ------------------------------------------------------------------------


def decode_uint(value: bytes, bitwidth: int, what: str) -> int:
    """The unsigned integer in a binary string that must fit `bitwidth` bits."""
    if not value:
        raise invalid(f"{what}: empty binary string (a value is required)")
    number = int.from_bytes(value, "big")
    if number >> bitwidth:
        raise invalid(f"{what} is bit<{bitwidth}>: 0x{value.hex()} does not fit")
    return number


def encode_uint(number: int) -> bytes:
    """The canonical (shortest, at least one byte) binary string of a non-negative integer."""
    return number.to_bytes(max(1, (number.bit_length() + 7) // 8), "big")


# --- table entries -------------------------------------------------------------------------


def decode_match(
    table: TableInfo | ValueSetInfo, fields: Sequence[p4runtime_pb2.FieldMatch]
) -> tuple[FieldMatch, ...]:
    """A P4Runtime match (wildcards omitted) as the run-time key, in key order (of a table,
    or a member of a parser value set)."""
    decoded: list[FieldMatch | None] = [None] * len(table.fields)
    for fm in fields:
        info = table.field(fm.field_id)
        if info is None:
            raise invalid(f"{table.name}: no match field with id {fm.field_id}")
        if decoded[info.index] is not None:
            raise invalid(f"{table.name}: match field {info.name} given twice")
        if info.translated:
            raise untranslated(f"{table.name}: match field {info.name}", info.translated)
        kind = fm.WhichOneof("field_match_type")
        if kind != info.kind:
            raise invalid(f"{table.name}: {info.name} is an {info.kind} field, got {kind} match")
        decoded[info.index] = _decode_field(fm, info, f"{table.name}: {info.name}")
    for info in table.fields:
        if decoded[info.index] is None:
            if info.kind == "exact":
                raise invalid(f"{table.name}: exact match field {info.name} is missing")
            everything = (1 << info.bitwidth) - 1 if info.kind == "range" else None
            decoded[info.index] = FieldMatch(0, 0, everything)
    return tuple(m for m in decoded if m is not None)


def _decode_field(fm: p4runtime_pb2.FieldMatch, info: FieldInfo, what: str) -> FieldMatch:
    full = (1 << info.bitwidth) - 1
    if info.kind == "exact":
        return FieldMatch(_key_value(fm.exact.value, info, what), full)
    if info.kind == "lpm":
        plen = fm.lpm.prefix_len
        if not 0 < plen <= info.bitwidth:
            raise invalid(
                f"{what}: prefix length {plen} outside 1..{info.bitwidth} "
                "(leave a don't-care lpm field out)"
            )
        value = decode_uint(fm.lpm.value, info.bitwidth, what)
        mask = full ^ ((1 << (info.bitwidth - plen)) - 1)
        if value & ~mask:
            raise invalid(f"{what}: bits beyond the /{plen} prefix are set")
        return FieldMatch(value, mask)
    if info.kind == "range":
        low = decode_uint(fm.range.low, info.bitwidth, f"{what} low")
        high = decode_uint(fm.range.high, info.bitwidth, f"{what} high")
        if low > high:
            raise invalid(f"{what}: range {low}..{high} is empty")
        if (low, high) == (0, full):
            raise invalid(f"{what}: the whole range (leave a don't-care range field out)")
        return FieldMatch(low, 0, high)
    if info.kind == "optional":
        return FieldMatch(_key_value(fm.optional.value, info, what), full)
    value = decode_uint(fm.ternary.value, info.bitwidth, what)
    mask = decode_uint(fm.ternary.mask, info.bitwidth, f"{what} mask")
    if mask == 0:
        raise invalid(f"{what}: mask is zero (leave a don't-care ternary field out)")
    if value & ~mask:
        raise invalid(f"{what}: value has bits set outside the mask")
    return FieldMatch(value, mask)


def _key_value(raw: bytes, info: FieldInfo, what: str) -> int:
    """An exact or optional key's value: a number, or an error's or enum's member by name
    (P4Runtime 1.3, 8.5.5: such values travel as their names)."""
    if not info.symbols:
        return decode_uint(raw, info.bitwidth, what)
    name = raw.decode("utf-8", errors="replace")
    if name not in info.symbols:
        raise invalid(f"{what}: {name!r} is not one of its values ({', '.join(info.symbols)})")
    return info.symbols.index(name)


def _key_bytes(info: FieldInfo, value: int) -> bytes:
    return info.symbols[value].encode() if info.symbols else encode_uint(value)


def encode_match(
    table: TableInfo | ValueSetInfo, match: Sequence[FieldMatch]
) -> list[p4runtime_pb2.FieldMatch]:
    """The run-time key as a P4Runtime match, wildcards left out, fields in P4Info order."""
    out = []
    for info in table.fields:
        m = match[info.index]
        fm = p4runtime_pb2.FieldMatch(field_id=info.id)
        if info.kind == "exact":
            fm.exact.value = _key_bytes(info, m.value)
        elif info.kind == "lpm":
            if m.mask == 0:
                continue
            fm.lpm.value = encode_uint(m.value)
            fm.lpm.prefix_len = prefix_len(m)
        elif info.kind == "range":
            assert m.high is not None
            if (m.value, m.high) == (0, (1 << info.bitwidth) - 1):
                continue
            fm.range.low = encode_uint(m.value)
            fm.range.high = encode_uint(m.high)
        elif info.kind == "optional":
            if m.mask == 0:
                continue
            fm.optional.value = _key_bytes(info, m.value)
        else:
            if m.mask == 0:
                continue
            fm.ternary.value = encode_uint(m.value)
            fm.ternary.mask = encode_uint(m.mask)
        out.append(fm)
    return out


def decode_action(
    schema: P4InfoIndex, table: TableInfo, action: p4runtime_pb2.Action
) -> ActionCall:
    """A P4Runtime action of `table` as an ActionCall (scope checks are the state's)."""
    info = schema.actions.get(action.action_id)
    if info is None or action.action_id not in table.action_ids:
        raise invalid(f"{table.name}: action id {action.action_id:#x} is not one of the table's")
    args: list[int | None] = [None] * len(info.params)
    for p in action.params:
        param = info.param(p.param_id)
        if param is None:
            raise invalid(f"action {info.name} has no parameter with id {p.param_id}")
        if args[param.index] is not None:
            raise invalid(f"action {info.name}: parameter {param.name} given twice")
        if param.translated:
            raise untranslated(f"action {info.name}: parameter {param.name}", param.translated)
        args[param.index] = decode_uint(p.value, param.bitwidth, f"{info.name}: {param.name}")
    missing = [p.name for p in info.params if args[p.index] is None]
    if missing:
        raise invalid(f"action {info.name}: parameters {missing} are missing")
    return ActionCall(info.name, tuple(a for a in args if a is not None))


def encode_action(schema: P4InfoIndex, call: ActionCall) -> p4runtime_pb2.Action:
    info = schema.actions[schema.action_ids[call.name]]
    action = p4runtime_pb2.Action(action_id=info.id)
    for p in info.params:
        action.params.add(param_id=p.id, value=encode_uint(call.args[p.index]))
    return action


def counter_data(packets: int, nbytes: int, unit: str) -> p4runtime_pb2.CounterData:
    """Counts as CounterData, keeping only what the counter's unit counts."""
    data = p4runtime_pb2.CounterData()
    if unit != "bytes":
        data.packet_count = packets
    if unit != "packets":
        data.byte_count = nbytes
    return data


def entry_to_proto(
    schema: P4InfoIndex,
    table: TableInfo,
    entry: TableEntry,
    *,
    counters: bool,
    now: int | None = None,
) -> p4runtime_pb2.TableEntry:
    """The entry as P4Runtime says it; with `now` (the state's clock, nanoseconds), its
    time_since_last_hit too (an entry of a table with support_timeout)."""
    msg = p4runtime_pb2.TableEntry(
        table_id=table.id,
        priority=entry.priority,
        metadata=entry.metadata,
        controller_metadata=entry.controller_metadata,
        is_const=table.is_const,
        idle_timeout_ns=entry.idle_timeout_ns,
    )
    if now is not None and entry.last_hit is not None:
        msg.time_since_last_hit.elapsed_ns = max(0, now - entry.last_hit)
    msg.match.extend(encode_match(table, entry.match))
    if isinstance(entry.action, ProfileRef):  # a table with an action profile
        field = "action_profile_group_id" if entry.action.group else "action_profile_member_id"
        setattr(msg.action, field, entry.action.id)
    else:
        msg.action.action.CopyFrom(encode_action(schema, entry.action))
    if counters and table.direct_counter_id:
        unit = schema.direct_counters[table.direct_counter_id].unit
        msg.counter_data.CopyFrom(counter_data(entry.packets, entry.bytes, unit))
    if entry.meter is not None:
        msg.meter_config.CopyFrom(meter_config(entry.meter.config))
    return msg


def meter_config(config: MeterConfig) -> p4runtime_pb2.MeterConfig:
    return p4runtime_pb2.MeterConfig(
        cir=config.cir, cburst=config.cburst, pir=config.pir, pburst=config.pburst
    )


def default_entry_to_proto(
    schema: P4InfoIndex, table: TableInfo, state_table: TableState, *, counters: bool
) -> p4runtime_pb2.TableEntry:
    msg = p4runtime_pb2.TableEntry(
        table_id=table.id, is_default_action=True, is_const=state_table.spec.const_default
    )
    msg.action.action.CopyFrom(encode_action(schema, state_table.default))
    if counters and table.direct_counter_id:
        unit = schema.direct_counters[table.direct_counter_id].unit
        data = counter_data(state_table.default_packets, state_table.default_bytes, unit)
        msg.counter_data.CopyFrom(data)
    return msg


# --- packet replication --------------------------------------------------------------------


def decode_replicas(
    replicas: Sequence[p4runtime_pb2.Replica], cpu_port: int | None, what: str
) -> tuple[Replica, ...]:
    """Replicas as (data-plane port, instance); SDN_PORT_CPU means the switch's CPU port."""
    out = []
    for r in replicas:
        kind = r.WhichOneof("port_kind")
        if kind is None:
            raise invalid(f"{what}: a replica has no port")
        port = r.egress_port if kind == "egress_port" else decode_uint(r.port, 32, f"{what}: port")
        if port == SDN_PORT_CPU:
            if cpu_port is None:
                raise invalid(f"{what}: replica to the CPU port, but the switch has no CPU port")
            port = cpu_port
        elif port >= _SDN_RESERVED:
            raise invalid(f"{what}: port {port:#x} is a reserved SDN port p4switch does not map")
        out.append(Replica(port, r.instance))
    return tuple(out)


def encode_replicas(replicas: Sequence[Replica]) -> list[p4runtime_pb2.Replica]:
    return [p4runtime_pb2.Replica(egress_port=r.egress_port, instance=r.instance) for r in replicas]


def pre_to_proto(
    kind: str,
    key: int,
    replicas: tuple[Replica, ...],
    pipeline: InstalledPipeline,
    session_extra: tuple[int, int] = (0, 0),
) -> p4runtime_pb2.PacketReplicationEngineEntry:
    """A multicast group ("group") or clone session ("session") as read back by a client."""
    record = pipeline.pre_records.get((kind, key))
    if record is not None and record.replicas == replicas:
        msg = p4runtime_pb2.PacketReplicationEngineEntry()
        msg.CopyFrom(record.message)
        if kind == "session":  # class of service and truncation come from the state
            msg.clone_session_entry.class_of_service = session_extra[0]
            msg.clone_session_entry.packet_length_bytes = session_extra[1]
        return msg
    msg = p4runtime_pb2.PacketReplicationEngineEntry()
    if kind == "group":
        msg.multicast_group_entry.multicast_group_id = key
        msg.multicast_group_entry.replicas.extend(encode_replicas(replicas))
        if record is not None:
            msg.multicast_group_entry.metadata = record.message.multicast_group_entry.metadata
    else:
        entry = msg.clone_session_entry
        entry.session_id = key
        entry.replicas.extend(encode_replicas(replicas))
        entry.class_of_service, entry.packet_length_bytes = session_extra
    return msg


# --- what writes and reads of indexed and table objects share -----------------------------

Undo = Callable[[], None]  # how a write is taken back


def check_priority(info: TableInfo, table: TableState, priority: int) -> None:
    if table.spec.needs_priority and priority <= 0:
        raise invalid(
            f"{info.name}: entries of a table with ternary, range or optional keys need a"
            " priority > 0"
        )
    if not table.spec.needs_priority and priority != 0:
        raise invalid(f"{info.name}: entries of this table take no priority (got {priority})")


def table_of(pipeline: InstalledPipeline, table_id: int) -> tuple[TableInfo, TableState]:
    if table_id == 0:
        raise invalid("table id 0 is not valid here")
    info = pipeline.schema.tables.get(table_id)
    if info is None:
        raise P4RTError(code_pb2.NOT_FOUND, f"no table with id {table_id:#x}")
    return info, pipeline.state.table(info.name)


def check_index(index: int, size: int, what: str) -> int:
    if index < 0:
        raise invalid(f"{what}: negative index {index}")
    if index >= size:
        raise P4RTError(code_pb2.OUT_OF_RANGE, f"{what}: index {index} outside 0..{size - 1}")
    return index


def index_cells(
    msg: p4runtime_pb2.CounterEntry | p4runtime_pb2.RegisterEntry | p4runtime_pb2.MeterEntry,
    size: int,
    what: str,
) -> Sequence[int]:
    """The one index a counter, register or meter entry names, else every index (a wildcard)."""
    return [check_index(msg.index.index, size, what)] if msg.HasField("index") else range(size)
