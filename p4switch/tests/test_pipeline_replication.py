"""Packet replication: multicast groups and clone sessions."""

from __future__ import annotations

import struct
from pathlib import Path

import pytest

from p4switch import runtime as rt
from p4switch.program import CompiledProgram, compile_file

pytestmark = pytest.mark.usefixtures("backend")  # each test on both back ends


PROGRAMS = Path(__file__).parent / "programs"


def frame(ether_type: int, body: bytes = b"") -> bytes:
    return bytes.fromhex("0000000000aa0000000000bb") + struct.pack("!H", ether_type) + body


@pytest.fixture(scope="module")
def multicast() -> CompiledProgram:
    return compile_file(PROGRAMS / "multicast.p4")


@pytest.fixture(scope="module")
def clone() -> CompiledProgram:
    return compile_file(PROGRAMS / "clone.p4")


def multicast_state(program: CompiledProgram) -> rt.SwitchState:
    state = program.new_state()
    state.pre.insert_group(7, [rt.Replica(1, 10), rt.Replica(2, 20), rt.Replica(3, 30)])
    for port in (1, 2, 3):
        match = (rt.exact(port, 9),)
        state.table("Ig.groups").insert(rt.TableEntry(match, rt.ActionCall("Ig.set_group", (7,))))
    return state


def test_multicast_copies_carry_egress_port_and_rid(multicast: CompiledProgram) -> None:
    pipe = multicast.pipeline(multicast_state(multicast))
    tag = struct.pack("!HHB", 0, 0, 0)
    out = pipe.process(3, frame(0x88B5, tag + b"data"))
    got = [(port, struct.unpack("!HHB", data[14:19]), data[19:]) for port, data in out]
    assert got == [(1, (10, 1, 5), b"data"), (2, (20, 2, 5), b"data")]  # 3 is the sender
    assert pipe.counts == {"drop.egress": 1}


def test_copies_do_not_share_state(multicast: CompiledProgram) -> None:
    pipe = multicast.pipeline(multicast_state(multicast))
    out = pipe.process(1, frame(0x88B5, bytes(5)))
    assert len({data for _, data in out}) == len(out) == 2


def test_group_changes_apply_to_the_next_packet(multicast: CompiledProgram) -> None:
    state = multicast_state(multicast)
    pipe = multicast.pipeline(state)
    state.pre.modify_group(7, [rt.Replica(4, 1), rt.Replica(4, 2)])
    assert [port for port, _ in pipe.process(1, frame(0x0800))] == [4, 4]
    state.pre.delete_group(7)
    assert pipe.process(1, frame(0x0800)) == []
    assert pipe.counts == {"drop.multicast_group_empty": 1}


def test_no_group_no_copies(multicast: CompiledProgram) -> None:
    pipe = multicast.pipeline(multicast.new_state())
    # No entry: NoAction, mcast_grp 0, egress_spec 0: unicast to port 0.
    assert [port for port, _ in pipe.process(1, frame(0x0800))] == [0]


def clone_state(program: CompiledProgram, truncate: int = 0) -> rt.SwitchState:
    state = program.new_state()
    session = rt.CloneSession(5, (rt.Replica(9, 1),), packet_length_bytes=truncate)
    state.pre.insert_session(session)
    return state


def test_i2e_clone_is_the_packet_as_it_entered(clone: CompiledProgram) -> None:
    pipe = clone.pipeline(clone_state(clone))
    original = frame(0x0800, b"payload")
    out = dict(pipe.process(1, original))
    assert set(out) == {2, 9}
    assert out[2][12:14] == b"\xaa\xaa"  # the original, as ingress left it
    clone_bytes = out[9]
    assert clone_bytes[12:] == original[12:]  # the clone: ingress changes not applied
    # In egress the clone saw instance_type 1 and reset metadata (no field list).
    assert clone_bytes[6:12] == bytes(6)


def test_clone_preserving_field_list_keeps_those_fields(clone: CompiledProgram) -> None:
    pipe = clone.pipeline(clone_state(clone))
    broadcast = b"\xff" * 6 + bytes.fromhex("0000000000bb") + b"\x08\x00"
    out = dict(pipe.process(1, broadcast))
    assert out[9][6:12] == (0xBEEF << 16).to_bytes(6, "big")  # mark kept, other reset to 0


def test_clone_session_truncates(clone: CompiledProgram) -> None:
    pipe = clone.pipeline(clone_state(clone, truncate=20))
    out = dict(pipe.process(1, frame(0x0800, bytes(100))))
    assert len(out[9]) == 20 and len(out[2]) == 114


def test_clone_without_a_session_is_counted(clone: CompiledProgram) -> None:
    pipe = clone.pipeline(clone.new_state())
    assert [port for port, _ in pipe.process(1, frame(0x0800))] == [2]
    assert pipe.counts == {"drop.clone_session_missing": 1}


def test_clone_to_several_ports(clone: CompiledProgram) -> None:
    state = clone.new_state()
    state.pre.insert_session(rt.CloneSession(5, (rt.Replica(8, 1), rt.Replica(9, 2))))
    pipe = clone.pipeline(state)
    assert sorted(port for port, _ in pipe.process(1, frame(0x0800))) == [2, 8, 9]


def test_e2e_clone_is_the_packet_as_egress_left_it(clone: CompiledProgram) -> None:
    state = clone.new_state()
    state.pre.insert_session(rt.CloneSession(6, (rt.Replica(12, 3),)))
    pipe = clone.pipeline(state)
    packet = bytes.fromhex("000000000e2e0000000000bb0800") + b"body"
    out = dict(pipe.process(1, packet))
    assert set(out) == {2, 12}
    assert out[2][12:14] == b"\xe2\xe0" and out[12][12:14] == b"\xe2\xe0"
    assert out[12][6:12] == (12).to_bytes(6, "big")  # egress ran again, instance_type 2
    assert out[12][14:] == b"body"
    assert pipe.counts == {"drop.clone_session_missing": 1}  # the I2E clone had no session


def test_packet_out_and_packet_in() -> None:
    program = compile_file(PROGRAMS / "p4info_full.p4")
    state = program.new_state()
    punt = rt.ActionCall("MyIngress.punt")
    entry = rt.TableEntry((rt.exact(0xAA, 48), rt.FieldMatch(0x0800, 0xFFFF)), punt, priority=1)
    state.table("MyIngress.l2").insert(entry)
    pipe = program.pipeline(state, cpu_port=255)
    # From the controller: a packet_out header (egress_port 3) in front of the frame.
    packet_out = struct.pack("!HH", 3 << 7, 0)
    out = pipe.process(255, packet_out + frame(0x0800, b"x"))
    assert out == [(3, frame(0x0800, b"x"))]
    # To the controller: the punt action prepends a packet_in header with the ingress port.
    [(port, data)] = pipe.process(6, frame(0x0800, b"y"))
    assert port == 255
    assert struct.unpack("!H", data[:2])[0] >> 7 == 6
    assert data[2:] == frame(0x0800, b"y")
