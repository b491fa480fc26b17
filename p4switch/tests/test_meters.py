"""Meters and direct meters (v1model, as BMv2 runs them: two-rate three-color markers, RFC
2698 color-blind): colors against a clock the test controls, in process and over P4Runtime
(MeterEntry, DirectMeterEntry, TableEntry.meter_config: written, read back, used). The python
back end runs them; the native one refuses them by name (the switch then runs python)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest
from p4.config.v1 import p4info_pb2
from p4.v1 import p4runtime_pb2

from p4switch import runtime as rt
from p4switch.exceptions import NativeUnsupported, P4CompileError
from p4switch.program import CompiledProgram, compile_file
from tests.eth_program import eth_program
from tests.p4rt.fixtures.p4rt_client import (
    Client,
    code_names,
    serving,
    write_errors,
)

PROGRAM = eth_program(
    """\
    meter(8, MeterType.packets) per_port;
    meter(2, MeterType.bytes) by_bytes;
    direct_meter<bit<2>>(MeterType.packets) per_flow;
    bit<2> flow_color = 3;
    action mark() { per_flow.read(flow_color); }
    table flows {
        key = { h.eth.dst: exact; }
        actions = { mark; NoAction; }
        meters = per_flow;
        default_action = NoAction();
    }
    apply {
        s.egress_spec = 1;
        bit<8> color;
        per_port.execute_meter((bit<32>) s.ingress_port, color);
        bit<2> byte_color;
        by_bytes.execute_meter(32w1, byte_color);
        flows.apply();
        h.eth.src[7:0] = color;
        h.eth.src[15:8] = 6w0 ++ byte_color;
        h.eth.src[23:16] = 6w0 ++ flow_color;
    }
"""
)
SECOND = 1_000_000_000


class Clock:
    def __init__(self) -> None:
        self.ns = 0

    def __call__(self) -> int:
        return self.ns


def compiled(tmp_path: Path, text: str = PROGRAM) -> CompiledProgram:
    path = tmp_path / "meters.p4"
    path.write_text(text)
    return compile_file(path)


def pipeline(program: CompiledProgram):
    state = program.new_state()
    clock = state.clock = Clock()
    return state, program.pipeline(state), clock


def colors(pipe, port: int, dst_low: int = 0, size: int = 0) -> tuple[int, int, int]:
    frame = bytes(5) + bytes([dst_low]) + bytes(8) + bytes(size)
    ((_, out),) = list(pipe.process(port, frame))
    return out[11], out[10], out[9]


def test_an_unconfigured_meter_is_green(tmp_path: Path) -> None:
    _, pipe, _ = pipeline(compiled(tmp_path))
    assert [colors(pipe, 3)[0] for _ in range(5)] == [rt.GREEN] * 5


def test_a_burst_goes_green_yellow_red_and_the_buckets_refill(tmp_path: Path) -> None:
    """CIR 1/s, CBS 2; PIR 2/s, PBS 3: five back-to-back packets are G G Y R R (peak 3 - 3
    paid, committed 2 - 2); one second later the peak bucket has 2 again, the committed 1."""
    state, pipe, clock = pipeline(compiled(tmp_path))
    state.meter("I.per_port").set(3, rt.MeterConfig(cir=1, cburst=2, pir=2, pburst=3))
    burst = [colors(pipe, 3)[0] for _ in range(5)]
    assert burst == [rt.GREEN, rt.GREEN, rt.YELLOW, rt.RED, rt.RED]
    assert colors(pipe, 4)[0] == rt.GREEN  # another index, unconfigured
    clock.ns += SECOND
    assert [colors(pipe, 3)[0] for _ in range(3)] == [rt.GREEN, rt.YELLOW, rt.RED]


def test_a_bytes_meter_counts_bytes(tmp_path: Path) -> None:
    state, pipe, _ = pipeline(compiled(tmp_path))
    state.meter("I.by_bytes").set(1, rt.MeterConfig(cir=0, cburst=100, pir=0, pburst=150))
    assert colors(pipe, 0, size=86)[1] == rt.GREEN  # 100-byte frame: both buckets pay
    assert colors(pipe, 0, size=26)[1] == rt.YELLOW  # 40 bytes: committed 0 left, peak 50
    assert colors(pipe, 0, size=26)[1] == rt.RED  # 40 > the peak's 10 left


def test_a_direct_meter_meters_the_hit_entry(tmp_path: Path) -> None:
    state, pipe, _ = pipeline(compiled(tmp_path))
    entry = rt.TableEntry((rt.exact(7, 48),), rt.ActionCall("I.mark", ()))
    state.table("I.flows").insert(entry)
    assert colors(pipe, 0, dst_low=9)[2] == 3  # a miss: the action that reads it does not run
    assert colors(pipe, 0, dst_low=7)[2] == rt.GREEN  # unconfigured
    entry.meter = rt.MeterCell(rt.MeterConfig(cir=0, cburst=1, pir=0, pburst=2))
    assert [colors(pipe, 0, dst_low=7)[2] for _ in range(3)] == [rt.GREEN, rt.YELLOW, rt.RED]


def test_p4info_lists_the_meters(tmp_path: Path) -> None:
    info = compiled(tmp_path).p4info
    assert [(m.preamble.name, m.size, m.spec.unit) for m in info.meters] == [
        ("I.per_port", 8, p4info_pb2.MeterSpec.PACKETS),
        ("I.by_bytes", 2, p4info_pb2.MeterSpec.BYTES),
    ]
    (direct,) = info.direct_meters
    (table,) = info.tables
    assert direct.preamble.name == "I.per_flow" and direct.direct_table_id == table.preamble.id
    assert direct.preamble.id in table.direct_resource_ids
    assert direct.preamble.id >> 24 == p4info_pb2.P4Ids.DIRECT_METER


def test_the_native_back_end_refuses_meters_by_name(tmp_path: Path) -> None:
    program = compiled(tmp_path)
    with pytest.raises(NativeUnsupported) as err:
        program.pipeline(program.new_state(), backend="native")
    assert "meter I.per_port" in str(err.value)


BAD = [
    ("meters = per_flow;", "meters = per_port;", "must name a direct_meter"),
    ("bit<8> color;", "bit<1> color;", "bit<N>, N >= 2"),
    (
        "meter(8, MeterType.packets) per_port;",
        "meter(8, CounterType.packets) per_port;",
        "expected MeterType.packets",
    ),
    ("        meters = per_flow;\n", "", "not attached to a table"),
]


@pytest.mark.parametrize(("old", "new", "words"), BAD)
def test_what_meters_refuse(tmp_path: Path, old: str, new: str, words: str) -> None:
    assert old in PROGRAM
    with pytest.raises(P4CompileError) as err:
        compiled(tmp_path, PROGRAM.replace(old, new, 1))
    assert words in err.value.what and err.value.line > 0, err.value


# --- over P4Runtime ----------------------------------------------------------------------------


@pytest.fixture
def switch(tmp_path: Path) -> Iterator[tuple[Client, CompiledProgram, object, Clock]]:
    program = compiled(tmp_path)
    state, pipe, clock = pipeline(program)
    with serving(program, PROGRAM, state) as client:
        yield client, program, pipe, clock


def ids(program: CompiledProgram) -> dict[str, int]:
    info = program.p4info
    objects = [*info.meters, *info.direct_meters, *info.tables, *info.actions]
    return {o.preamble.name: o.preamble.id for o in objects}


def config(cir: int, cburst: int, pir: int, pburst: int) -> p4runtime_pb2.MeterConfig:
    return p4runtime_pb2.MeterConfig(cir=cir, cburst=cburst, pir=pir, pburst=pburst)


def meter_update(program, index: int | None, cfg, utype=p4runtime_pb2.Update.MODIFY):
    update = p4runtime_pb2.Update(type=utype)
    entry = update.entity.meter_entry
    entry.meter_id = ids(program)["I.per_port"]
    if index is not None:
        entry.index.index = index
    if cfg is not None:
        entry.config.CopyFrom(cfg)
    return update


def flow_entry(program, dst: int) -> p4runtime_pb2.TableEntry:
    te = p4runtime_pb2.TableEntry(table_id=ids(program)["I.flows"])
    te.match.add(field_id=1).exact.value = dst.to_bytes(6, "big")
    return te


def test_meter_entries_over_p4runtime(switch) -> None:
    client, program, pipe, _ = switch
    client.write(meter_update(program, 3, config(1, 2, 2, 3)))
    assert [colors(pipe, 3)[0] for _ in range(4)] == [rt.GREEN, rt.GREEN, rt.YELLOW, rt.RED]
    read = p4runtime_pb2.Entity()
    read.meter_entry.meter_id = ids(program)["I.per_port"]
    entries = {e.meter_entry.index.index: e.meter_entry for e in client.read(read)}
    assert len(entries) == 8 and entries[3].config == config(1, 2, 2, 3)
    assert not entries[2].HasField("config")  # unconfigured
    client.write(meter_update(program, 3, None))  # no config: back to GREEN
    assert [colors(pipe, 3)[0] for _ in range(4)] == [rt.GREEN] * 4


def test_direct_meters_over_p4runtime(switch) -> None:
    client, program, pipe, _ = switch
    insert = p4runtime_pb2.Update(type=p4runtime_pb2.Update.INSERT)
    te = insert.entity.table_entry
    te.CopyFrom(flow_entry(program, 7))
    te.action.action.action_id = ids(program)["I.mark"]
    te.meter_config.CopyFrom(config(0, 1, 0, 1))  # with the entry: one green, then red
    client.write(insert)
    assert [colors(pipe, 0, dst_low=7)[2] for _ in range(2)] == [rt.GREEN, rt.RED]
    modify = p4runtime_pb2.Update(type=p4runtime_pb2.Update.MODIFY)
    dm = modify.entity.direct_meter_entry
    dm.table_entry.CopyFrom(flow_entry(program, 7))
    dm.config.CopyFrom(config(0, 1, 0, 2))
    client.write(modify)
    assert [colors(pipe, 0, dst_low=7)[2] for _ in range(3)] == [rt.GREEN, rt.YELLOW, rt.RED]
    read = p4runtime_pb2.Entity()
    read.direct_meter_entry.table_entry.table_id = ids(program)["I.flows"]
    (back,) = client.read(read)
    assert back.direct_meter_entry.config == config(0, 1, 0, 2)


@pytest.mark.parametrize(
    ("update", "code", "words"),
    [
        (
            lambda p: meter_update(p, 3, config(1, 1, 1, 1), p4runtime_pb2.Update.INSERT),
            "INVALID_ARGUMENT",
            "can only be modified",
        ),
        (
            lambda p: meter_update(p, 3, config(5, 1, 2, 1)),
            "INVALID_ARGUMENT",
            "committed rate exceeds the peak rate",
        ),
        (lambda p: meter_update(p, 8, config(1, 1, 1, 1)), "OUT_OF_RANGE", "outside 0..7"),
    ],
)
def test_what_meter_writes_refuse(switch, update, code: str, words: str) -> None:
    client, program, _, _ = switch
    with pytest.raises(grpc.RpcError) as caught:
        client.write(update(program))
    errors = write_errors(caught.value)
    assert code_names(errors) == [code] and words in errors[0].message
