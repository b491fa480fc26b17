"""The P4Runtime write path against batches Hypothesis draws: updates that are right, nearly
right (wrong ids, widths, match kinds, prefix lengths, masks, priorities, indices, replicas),
repeated, of every kind p4switch does or does not program, and mutated bytes; any atomicity.

Against the test program p4info_full.p4 (exact, ternary and lpm keys, a direct counter,
registers, counters) and the simple.p4 fixture (ternary keys, priorities, direct counters, clone
sessions), each example on a fresh server:

- every Write is answered: a list of one result per update (None or a P4RTError with a code
  and a message), or a P4RTError for the whole request; never INTERNAL, never another exception;
- a failed update changes nothing: the state read back after the batch is the state its
  successful updates alone make on a fresh server (so a batch that all fails, or an atomic
  batch that fails, leaves the state as it was), and those updates succeed again there;
- the server then takes a good write.

Over gRPC the answers keep their shape: OK, or UNKNOWN with per-update details (a prefix of
the batch when it is large), or one status with a message; batches of up to 600 failing updates
included; bytes that are no WriteRequest at all are answered INVALID_ARGUMENT, never INTERNAL
(grpc-python's own answer, which p4switch.p4rt.handlers replaces). CI runs a bounded number of
derandomized examples; P4SWITCH_FUZZ=long (`make fuzz`) twenty times as many, new ones each
run.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import grpc
import pytest
from google.protobuf.message import DecodeError
from google.rpc import code_pb2, status_pb2
from hypothesis import given
from hypothesis import strategies as st
from p4.config.v1 import p4info_pb2
from p4.v1 import p4runtime_pb2

from p4switch.exceptions import P4RTError
from p4switch.p4rt import LoadedProgram, P4RuntimeServer
from p4switch.program import compile_file
from p4switch.runtime import SwitchState
from tests.fuzz_profile import fuzz_settings
from tests.p4rt.fixtures.fake_program import (
    P4_SOURCE_PATH,
    load_p4info,
    state_from_p4info,
)
from tests.p4rt.fixtures.p4rt_client import WAIT, Client

Update, WriteRequest = p4runtime_pb2.Update, p4runtime_pb2.WriteRequest
ATOMIC = (WriteRequest.ROLLBACK_ON_ERROR, WriteRequest.DATAPLANE_ATOMIC)
KINDS = ("exact", "lpm", "ternary", "range", "optional")  # what a FieldMatch can be
DEVICE_ID = 1
FULL = Path(__file__).resolve().parents[1] / "programs" / "p4info_full.p4"


# --- the programs -----------------------------------------------------------------------------


@dataclass(frozen=True)
class Program:
    """A program a server runs, and how to make a fresh state for it."""

    p4info: p4info_pb2.P4Info
    source: bytes
    new_state: Callable[[], SwitchState]

    def server(self) -> P4RuntimeServer:
        """A server already running the program on a fresh state (not listening)."""
        initial = LoadedProgram(self.p4info, self.source, self.new_state(), lambda: None)
        return P4RuntimeServer(
            device_id=DEVICE_ID, loader=_refuse, send_packet_out=lambda frame: None, initial=initial
        )


def _refuse(p4info: p4info_pb2.P4Info, config: bytes) -> LoadedProgram:
    raise ValueError("this test server keeps the program it started with")


@functools.cache
def full() -> Program:
    compiled = compile_file(FULL)
    return Program(compiled.p4info, FULL.read_bytes(), compiled.new_state)


@functools.cache
def simple() -> Program:
    p4info = load_p4info()
    return Program(p4info, P4_SOURCE_PATH.read_bytes(), lambda: state_from_p4info(p4info))


PROGRAMS = {"full": full, "simple": simple}


# --- updates ----------------------------------------------------------------------------------
# An entity is drawn right, or with one thing wrong (`flaw`): the write path's every check meets
# inputs that pass all the others.

TABLE_FLAWS = (
    "table_id",
    "field_id",
    "kind",
    "value",
    "prefix",
    "mask",
    "missing",
    "extra",
    "priority",
    "action_id",
    "param_id",
    "param_value",
    "no_action",
    "default",
    "counter_data",
    "const",
)


def flaws(names: tuple[str, ...]) -> st.SearchStrategy[str | None]:
    """None (a right entity) about as often as one of the flaws."""
    return st.sampled_from([None] * len(names) + list(names))


def some_id(real: int) -> st.SearchStrategy[int]:
    return st.sampled_from([0, real + 1, real ^ 0x1000000, 2**32 - 1])


def fitting(bitwidth: int) -> st.SearchStrategy[int]:
    """A value of a bit<bitwidth> from a few (keys repeat), or any."""
    few = st.sampled_from([0, 1, 2, (1 << bitwidth) - 1])
    return st.one_of(few, few, st.integers(0, (1 << bitwidth) - 1))


def encoded(value: int, bitwidth: int, padded: bool) -> bytes:
    width = (bitwidth + 7) // 8 if padded else max(1, (value.bit_length() + 7) // 8)
    return value.to_bytes(width, "big")


def wrong_bytes(bitwidth: int) -> st.SearchStrategy[bytes]:
    too_big = (1 << bitwidth).to_bytes((bitwidth + 8) // 8, "big")
    return st.sampled_from([b"", too_big, b"\xff" * ((bitwidth + 7) // 8 + 1), bytes(20)])


@st.composite
def field_match(
    draw: st.DrawFn, f: p4info_pb2.MatchField, flaw: str | None
) -> p4runtime_pb2.FieldMatch:
    kinds = {p4info_pb2.MatchField.LPM: "lpm", p4info_pb2.MatchField.TERNARY: "ternary"}
    width, kind = f.bitwidth, kinds.get(f.match_type, "exact")
    value = draw(fitting(width))
    padded = draw(st.booleans())
    raw = draw(wrong_bytes(width)) if flaw == "value" else encoded(value, width, padded)
    match = p4runtime_pb2.FieldMatch(field_id=draw(some_id(f.id)) if flaw == "field_id" else f.id)
    if flaw == "kind":
        kind = draw(st.sampled_from([k for k in KINDS if k != kind]))
    if kind == "lpm":
        plen = draw(st.sampled_from([width, width, max(1, width // 2)]))
        if flaw == "prefix":
            plen = draw(st.sampled_from([0, -1, width + 1, 255]))
        elif 0 < plen <= width and flaw != "value":
            masked = value & ~((1 << (width - plen)) - 1)
            raw = encoded(masked, width, False)
        match.lpm.value, match.lpm.prefix_len = raw, plen
    elif kind == "ternary":
        mask = (1 << width) - 1
        if flaw == "mask":
            mask = draw(st.sampled_from([0, value ^ mask or 1]))
        match.ternary.value, match.ternary.mask = raw, encoded(mask, width, True)
    elif kind == "exact":
        match.exact.value = raw
    elif kind == "range":
        match.range.low, match.range.high = raw, raw
    else:
        match.optional.value = raw
    return match


@st.composite
def action_of(
    draw: st.DrawFn,
    p4info: p4info_pb2.P4Info,
    table: p4info_pb2.Table,
    default: bool,
    flaw: str | None,
) -> p4runtime_pb2.Action:
    refused = p4info_pb2.ActionRef.TABLE_ONLY if default else p4info_pb2.ActionRef.DEFAULT_ONLY
    refs = [r.id for r in table.action_refs if r.scope != refused] or [table.action_refs[0].id]
    action_id = draw(st.sampled_from(refs))
    spec = next(a for a in p4info.actions if a.preamble.id == action_id)
    action = p4runtime_pb2.Action(action_id=action_id)
    if flaw == "action_id":
        action.action_id = draw(some_id(action_id))
    for p in spec.params:
        value = encoded(draw(fitting(p.bitwidth)), p.bitwidth, draw(st.booleans()))
        action.params.add(param_id=p.id, value=value)
    if action.params and flaw in ("param_id", "param_value"):
        bad = draw(st.integers(0, len(action.params) - 1))
        if flaw == "param_id":
            action.params[bad].param_id = draw(some_id(spec.params[bad].id))
        else:
            action.params[bad].value = draw(wrong_bytes(spec.params[bad].bitwidth))
    return action


@st.composite
def table_entries(draw: st.DrawFn, p4info: p4info_pb2.P4Info) -> p4runtime_pb2.Entity:
    table = draw(st.sampled_from(list(p4info.tables)))
    flaw = draw(flaws(TABLE_FLAWS))
    entry = p4runtime_pb2.TableEntry(table_id=table.preamble.id)
    if flaw == "table_id":
        entry.table_id = draw(some_id(table.preamble.id))
    fields = list(table.match_fields)
    spoilt = draw(st.integers(0, len(fields) - 1)) if fields else -1
    for n, f in enumerate(fields):
        if not (flaw == "missing" and n == spoilt):
            entry.match.append(draw(field_match(f, flaw if n == spoilt else None)))
    if flaw == "extra" and fields:
        entry.match.append(draw(field_match(fields[spoilt], None)))
    if any(f.match_type == p4info_pb2.MatchField.TERNARY for f in fields):
        entry.priority = draw(st.sampled_from([1, 10]))
    if flaw == "priority":
        entry.priority = draw(st.sampled_from([0, -1, 7]))
    if flaw == "default":
        entry.ClearField("match")
        entry.priority, entry.is_default_action = 0, True
    if flaw != "no_action":
        entry.action.action.CopyFrom(draw(action_of(p4info, table, entry.is_default_action, flaw)))
    if flaw == "counter_data":
        entry.counter_data.packet_count = draw(st.sampled_from([0, 5, -1]))
    if flaw == "const":
        entry.is_const = True
    return p4runtime_pb2.Entity(table_entry=entry)


PRE_FLAWS = ("id", "port", "instance", "twice", "empty", "session_length")
PORTS = (1, 2, 3)


@st.composite
def pre_entries(draw: st.DrawFn) -> p4runtime_pb2.Entity:
    pre = p4runtime_pb2.PacketReplicationEngineEntry()
    flaw = draw(flaws(PRE_FLAWS))
    replica = st.tuples(st.sampled_from(PORTS), st.sampled_from([0, 1]))
    replicas = draw(st.lists(replica, max_size=4, unique=True))
    if flaw == "port":
        replicas.append((draw(st.sampled_from([0, 512, 0xFFFFFFFD, 2**32 - 1])), 0))
    if flaw == "instance":
        replicas.append((1, draw(st.sampled_from([0xFFFF, 0x10000, 2**32 - 1]))))
    if flaw == "twice" and replicas:
        replicas.append(replicas[0])
    ident = draw(st.sampled_from([0, 2**32 - 1])) if flaw == "id" else draw(st.integers(1, 3))
    if flaw == "empty":  # neither a group nor a session
        return p4runtime_pb2.Entity(packet_replication_engine_entry=pre)
    if draw(st.integers(0, 3)):
        body = pre.multicast_group_entry
        body.multicast_group_id = ident
    else:
        body = pre.clone_session_entry
        body.session_id = ident
        body.packet_length_bytes = -1 if flaw == "session_length" else 0
    for port, instance in replicas:
        body.replicas.add(egress_port=port, instance=instance)
    return p4runtime_pb2.Entity(packet_replication_engine_entry=pre)


INDEXED_FLAWS = ("id", "index", "data", "kind")


@st.composite
def indexed_entries(draw: st.DrawFn, p4info: p4info_pb2.P4Info) -> p4runtime_pb2.Entity:
    """A counter, register or direct counter entry, or one of a kind p4switch does not program."""
    flaw = draw(flaws(INDEXED_FLAWS))
    entity = p4runtime_pb2.Entity()
    if flaw == "kind":
        entity.meter_entry.meter_id = draw(st.integers(0, 2**32 - 1))
        return entity
    direct = [t for t in p4info.tables if t.direct_resource_ids]
    if direct and draw(st.integers(0, 3)) == 0:
        key = draw(table_entries(p4info)).table_entry
        entity.direct_counter_entry.table_entry.CopyFrom(key)
        count = -1 if flaw == "data" else draw(st.integers(0, 9))
        entity.direct_counter_entry.data.packet_count = count
        return entity
    infos = [(c.preamble.id, c.size, 0) for c in p4info.counters]
    infos += [(r.preamble.id, r.size, r.type_spec.bitstring.bit.bitwidth) for r in p4info.registers]
    ident, size, width = draw(st.sampled_from(infos))
    msg = entity.register_entry if width else entity.counter_entry
    if width:
        msg.register_id = draw(some_id(ident)) if flaw == "id" else ident
        value = encoded(draw(fitting(width)), width, False)
        msg.data.bitstring = draw(wrong_bytes(width)) if flaw == "data" else value
    else:
        msg.counter_id = draw(some_id(ident)) if flaw == "id" else ident
        msg.data.packet_count = -1 if flaw == "data" else draw(st.integers(0, 2**40))
    index = draw(st.sampled_from([None, 0, size - 1]))
    if flaw == "index":
        index = draw(st.sampled_from([size, 1 << 40, -1, -(2**63)]))
    if index is not None:
        msg.index.index = index
    return entity


KIND_FOR = {"table_entry": Update.INSERT, "packet_replication_engine_entry": Update.INSERT}


@st.composite
def updates(draw: st.DrawFn, p4info: p4info_pb2.P4Info) -> Update:
    kinds = [table_entries(p4info)] * 5 + [pre_entries()] * 2 + [indexed_entries(p4info)] * 2
    entity = draw(st.sampled_from([*kinds, st.just(p4runtime_pb2.Entity())]).flatmap(lambda s: s))
    usual = KIND_FOR.get(entity.WhichOneof("entity") or "", Update.MODIFY)
    kinds = [usual] * 12 + [Update.INSERT, Update.MODIFY, Update.DELETE, Update.DELETE]
    update = Update(type=draw(st.sampled_from([*kinds, 0, 7])), entity=entity)
    if draw(st.integers(0, 9)) == 0:  # bytes changed on the wire, where they still parse
        wire = bytearray(update.SerializeToString())
        for _ in range(draw(st.integers(1, 4))):
            wire[draw(st.integers(0, len(wire) - 1))] = draw(st.integers(0, 255))
        try:
            return Update.FromString(bytes(wire))
        except (DecodeError, UnicodeDecodeError):  # not a message, or a string not UTF-8
            return update
    return update


@st.composite
def batches(draw: st.DrawFn, p4info: p4info_pb2.P4Info, max_size: int = 24) -> WriteRequest:
    """A WriteRequest: its updates drawn from a small pool, so that keys repeat."""
    pool = draw(st.lists(updates(p4info), min_size=1, max_size=8))
    chosen = draw(st.lists(st.sampled_from(pool), max_size=max_size))
    atomicity = draw(
        st.sampled_from([WriteRequest.CONTINUE_ON_ERROR] * 6 + [*ATOMIC] * 2 + [3, -1])
    )
    return WriteRequest(device_id=DEVICE_ID, updates=chosen, atomicity=atomicity)


# --- what holds -------------------------------------------------------------------------------


def snapshot(server: P4RuntimeServer, p4info: p4info_pb2.P4Info, registers: bool) -> list[bytes]:
    """Everything a client can read back (the registers if asked: the slow part), in a
    canonical order."""
    counts = p4runtime_pb2.CounterData()
    queries = [
        p4runtime_pb2.Entity(table_entry=p4runtime_pb2.TableEntry(counter_data=counts)),
        p4runtime_pb2.Entity(counter_entry=p4runtime_pb2.CounterEntry()),
    ]
    if registers:
        queries.append(p4runtime_pb2.Entity(register_entry=p4runtime_pb2.RegisterEntry()))
    queries += [
        p4runtime_pb2.Entity(
            table_entry=p4runtime_pb2.TableEntry(
                table_id=t.preamble.id, is_default_action=True, counter_data=counts
            )
        )
        for t in p4info.tables
    ]
    for which in ("multicast_group_entry", "clone_session_entry"):
        pre = p4runtime_pb2.PacketReplicationEngineEntry()
        getattr(pre, which).SetInParent()
        queries.append(p4runtime_pb2.Entity(packet_replication_engine_entry=pre))
    entities, errors = server.read(p4runtime_pb2.ReadRequest(device_id=DEVICE_ID, entities=queries))
    assert errors == [None] * len(queries), [e.message for e in errors if e]
    return sorted(e.SerializeToString(deterministic=True) for e in entities)


def answered(server: P4RuntimeServer, request: WriteRequest) -> list[P4RTError | None] | P4RTError:
    """The server's answer to a Write, checked for its shape."""
    try:
        results = server.write(request)
    except P4RTError as err:
        assert err.code not in (code_pb2.OK, code_pb2.INTERNAL, code_pb2.UNKNOWN), err.message
        assert err.message
        return err
    assert len(results) == len(request.updates)
    for err in results:
        if err is not None:
            assert err.code not in (code_pb2.OK, code_pb2.INTERNAL), err.message
            assert err.message
    return results


def good_updates(program: Program) -> list[Update]:
    """An insert that cannot clash with anything the fuzz writes, then its delete."""
    table = max(program.p4info.tables, key=lambda t: sum(f.bitwidth for f in t.match_fields))
    entry = p4runtime_pb2.TableEntry(table_id=table.preamble.id)
    for f in table.match_fields:
        value = ((1 << f.bitwidth) - 3).to_bytes((f.bitwidth + 7) // 8, "big")
        match = entry.match.add(field_id=f.id)
        if f.match_type == p4info_pb2.MatchField.LPM:
            match.lpm.value, match.lpm.prefix_len = value, f.bitwidth
        elif f.match_type == p4info_pb2.MatchField.TERNARY:
            match.ternary.value, match.ternary.mask = value, b"\xff" * len(value)
            entry.priority = 1
        else:
            match.exact.value = value
    ref = next(r for r in table.action_refs if r.scope != p4info_pb2.ActionRef.DEFAULT_ONLY)
    action = next(a for a in program.p4info.actions if a.preamble.id == ref.id)
    entry.action.action.action_id = action.preamble.id
    for p in action.params:
        entry.action.action.params.add(param_id=p.id, value=b"\x01")
    entity = p4runtime_pb2.Entity(table_entry=entry)
    return [Update(type=kind, entity=entity) for kind in (Update.INSERT, Update.DELETE)]


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_a_failed_update_changes_nothing_and_the_server_goes_on(name: str) -> None:
    program = PROGRAMS[name]()

    @fuzz_settings(150)
    @given(request=batches(program.p4info))
    def check(request: WriteRequest) -> None:
        server = program.server()
        registers = any(u.entity.HasField("register_entry") for u in request.updates)
        before = snapshot(server, program.p4info, registers)
        answer = answered(server, request)
        after = snapshot(server, program.p4info, registers)
        if isinstance(answer, P4RTError):
            assert after == before
        else:
            if request.atomicity in ATOMIC and any(answer):
                assert all(answer) and after == before  # rolled back, every update reported
            applied = [u for u, err in zip(request.updates, answer, strict=True) if err is None]
            replay = program.server()
            again = replay.write(WriteRequest(device_id=DEVICE_ID, updates=applied))
            assert again == [None] * len(applied)
            assert snapshot(replay, program.p4info, registers) == after
        for update in good_updates(program):
            assert server.write(WriteRequest(device_id=DEVICE_ID, updates=[update])) == [None]

    check()


# --- over gRPC --------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def served() -> Iterator[tuple[P4RuntimeServer, Client]]:
    server = full().server()
    port = server.start("127.0.0.1:0")
    client = Client(port, election_id=10)
    try:
        assert client.arbitrate().status.code == code_pb2.OK
        yield server, client
    finally:
        client.close()
        server.stop(grace=0.5)


def grpc_answer(client: Client, request: WriteRequest) -> None:
    """Send `request` as the primary and check the shape of what comes back."""
    request.election_id.high, request.election_id.low = 0, 10
    try:
        client.stub.Write(request, timeout=30)
    except grpc.RpcError as err:
        code = err.code()
        assert code != grpc.StatusCode.INTERNAL, err.details()
        assert err.details()
        trailer = dict(err.trailing_metadata() or ())
        if code == grpc.StatusCode.RESOURCE_EXHAUSTED:  # too large to report: refused whole
            assert "the batch is refused whole" in (err.details() or "")
            assert "grpc-status-details-bin" not in trailer
            return
        if code != grpc.StatusCode.UNKNOWN:
            return
        status = status_pb2.Status.FromString(trailer["grpc-status-details-bin"])
        assert len(status.details) == len(request.updates)  # one per update
        left_out = "messages left out" in status.message
        for detail in status.details:
            error = p4runtime_pb2.Error()
            assert detail.Unpack(error)
            assert error.canonical_code != code_pb2.INTERNAL
            assert error.canonical_code == code_pb2.OK or error.message or left_out


@fuzz_settings(60)
@given(request=batches(full().p4info))
def test_grpc_answers_keep_their_shape(
    served: tuple[P4RuntimeServer, Client], request: WriteRequest
) -> None:
    grpc_answer(served[1], request)
    for update in good_updates(full()):
        served[1].write(update)


@fuzz_settings(10)
@given(request=batches(full().p4info), size=st.integers(150, 600))
def test_large_failing_batches_are_reported_or_refused_whole(
    served: tuple[P4RuntimeServer, Client], request: WriteRequest, size: int
) -> None:
    updates = list(request.updates) or [Update(type=Update.INSERT)]
    request.ClearField("updates")
    request.updates.extend((updates * size)[:size])
    grpc_answer(served[1], request)
    for update in good_updates(full()):
        served[1].write(update)


NOT_A_WRITE = [
    b"\xff\xff\xff\xff not a WriteRequest",
    p4runtime_pb2.WriteRequest(device_id=DEVICE_ID, role="ab")
    .SerializeToString()
    .replace(b"ab", b"\xe8\x01"),  # a string field that is not UTF-8
]


@pytest.mark.parametrize("body", NOT_A_WRITE, ids=["garbage", "not-utf8"])
def test_bytes_that_are_not_a_write_request_are_invalid_argument(
    served: tuple[P4RuntimeServer, Client], body: bytes
) -> None:
    raw = served[1].channel.unary_unary("/p4.v1.P4Runtime/Write")
    with pytest.raises(grpc.RpcError) as caught:
        raw(body, timeout=WAIT)
    assert caught.value.code() == grpc.StatusCode.INVALID_ARGUMENT, caught.value.details()
