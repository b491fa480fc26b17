"""Writes of meters, direct meters and parser value sets (MODIFY only: they always exist).

A meter cell or a table entry's direct meter takes a config or, without one, goes back to
unconfigured (every packet green); a value set's members are replaced as a whole.
"""

from __future__ import annotations

from google.rpc import code_pb2
from p4.v1 import p4runtime_pb2

from p4switch.exceptions import P4RTError, StateError
from p4switch.p4rt.codec import (
    InstalledPipeline,
    Undo,
    check_priority,
    decode_match,
    index_cells,
    invalid,
    table_of,
)
from p4switch.runtime import MeterCell, MeterConfig

MODIFY = p4runtime_pb2.Update.MODIFY


def meter_config_of(msg: p4runtime_pb2.MeterConfig, what: str) -> MeterConfig:
    config = MeterConfig(msg.cir, msg.cburst, msg.pir, msg.pburst)
    try:
        config.check(what)
    except StateError as err:
        raise invalid(str(err)) from None
    return config


def meter_cell(msg: p4runtime_pb2.MeterConfig, what: str) -> MeterCell:
    return MeterCell(meter_config_of(msg, what))


def meter_entry(pipeline: InstalledPipeline, utype: int, msg: p4runtime_pb2.MeterEntry) -> Undo:
    """Configure a meter's cells (one index, or all): a config, or none (back to GREEN)."""
    if utype != MODIFY:
        raise invalid("meter entries can only be modified")
    if msg.meter_id == 0:
        raise invalid("meter id 0 is not valid in a write")
    info = pipeline.schema.meters.get(msg.meter_id)
    if info is None:
        raise P4RTError(code_pb2.NOT_FOUND, f"no meter with id {msg.meter_id:#x}")
    if msg.HasField("counter_data"):
        raise P4RTError(code_pb2.UNIMPLEMENTED, "p4switch keeps no meter counters")
    meter = pipeline.state.meter(info.name)
    cells = index_cells(msg, info.size, info.name)
    config = meter_config_of(msg.config, info.name) if msg.HasField("config") else None
    saved = [(i, meter.cells[i]) for i in cells]
    for i in cells:
        meter.set(i, config)

    def undo() -> None:
        for i, cell in saved:
            meter.cells[i] = cell

    return undo


def value_set_entry(
    pipeline: InstalledPipeline, utype: int, msg: p4runtime_pb2.ValueSetEntry
) -> Undo:
    """Replace a parser value set's members (each matches the set's fields, as P4Info lists
    them: one exact field for a bit<N> set; a field left out of a member is a wildcard, but
    for an exact one)."""
    if utype != MODIFY:
        raise invalid("value set entries can only be modified (a write replaces every member)")
    info = pipeline.schema.value_sets.get(msg.value_set_id)
    if info is None:
        raise P4RTError(code_pb2.NOT_FOUND, f"no value set with id {msg.value_set_id:#x}")
    members = [decode_match(info, member.match) for member in msg.members]
    value_set = pipeline.state.value_set(info.name)
    saved = list(value_set.members)
    value_set.set(members)
    return lambda: value_set.set(saved)


def direct_meter_entry(
    pipeline: InstalledPipeline, utype: int, msg: p4runtime_pb2.DirectMeterEntry
) -> Undo:
    """Configure the direct meter of one table entry (no config: back to GREEN)."""
    if utype != MODIFY:
        raise invalid("direct meter entries can only be modified")
    info, table = table_of(pipeline, msg.table_entry.table_id)
    if not info.direct_meter_id:
        raise invalid(f"{info.name} has no direct meter")
    if msg.HasField("counter_data"):
        raise P4RTError(code_pb2.UNIMPLEMENTED, "p4switch keeps no meter counters")
    if msg.table_entry.is_default_action:
        raise invalid(f"{info.name}: the default entry has no direct meter (it runs on hits)")
    match = decode_match(info, msg.table_entry.match)
    check_priority(info, table, msg.table_entry.priority)
    entry = table.get(match, msg.table_entry.priority)
    if entry is None:
        raise P4RTError(code_pb2.NOT_FOUND, f"{info.name}: no entry with this key")
    saved = entry.meter
    entry.meter = meter_cell(msg.config, info.name) if msg.HasField("config") else None

    def undo() -> None:
        entry.meter = saved

    return undo
