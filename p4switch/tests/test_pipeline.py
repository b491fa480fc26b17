"""The compiled pipeline on small programs: forwarding, routing, registers, bad packets."""

from __future__ import annotations

import struct
from pathlib import Path

import pytest

from p4switch import EXAMPLES
from p4switch import runtime as rt
from p4switch.program import CompiledProgram, compile_file

pytestmark = pytest.mark.usefixtures("backend")  # each test on both back ends


PROGRAMS = Path(__file__).parent / "programs"
MAC_A, MAC_B, MAC_C = 0x0000000000AA, 0x0000000000BB, 0x02000000CC01


def ethernet(dst: int, src: int, ether_type: int) -> bytes:
    return dst.to_bytes(6, "big") + src.to_bytes(6, "big") + struct.pack("!H", ether_type)


def internet_checksum(data: bytes) -> int:
    total = sum(int.from_bytes(data[i : i + 2], "big") for i in range(0, len(data), 2))
    while total > 0xFFFF:
        total = (total & 0xFFFF) + (total >> 16)
    return ~total & 0xFFFF


def ipv4(src: int, dst: int, ttl: int = 64, payload: bytes = b"", ihl: int = 5) -> bytes:
    header = struct.pack(
        "!BBHHHBBHII", 4 << 4 | ihl, 0, 20 + len(payload), 0x1234, 0x4000, ttl, 17, 0, src, dst
    )
    checksum = internet_checksum(header)
    return header[:10] + struct.pack("!H", checksum) + header[12:] + payload


def compiled(name: str) -> CompiledProgram:
    return compile_file(PROGRAMS / name)


@pytest.fixture(scope="module")
def l2() -> CompiledProgram:
    return compile_file(EXAMPLES / "l2.p4")


# --- L2 ------------------------------------------------------------------------------------


def test_l2_forwards_on_exact_match(l2: CompiledProgram) -> None:
    state = l2.new_state()
    forward = rt.ActionCall("L2Ingress.forward", (3,))
    state.table("L2Ingress.dmac").insert(rt.TableEntry((rt.exact(MAC_A, 48),), forward))
    pipe = l2.pipeline(state)
    frame = ethernet(MAC_A, MAC_B, 0x0800) + b"payload bytes"
    assert pipe.process(1, frame) == [(3, frame)]


def test_l2_miss_runs_the_default_action(l2: CompiledProgram) -> None:
    state = l2.new_state()
    pipe = l2.pipeline(state)
    assert pipe.process(1, ethernet(MAC_C, MAC_B, 0x0800)) == []
    assert pipe.counts == {"drop.ingress": 1}
    state.table("L2Ingress.dmac").set_default(rt.ActionCall("L2Ingress.forward", (9,)))
    assert [port for port, _ in pipe.process(1, ethernet(MAC_C, MAC_B, 0x0800))] == [9]


def test_a_pipeline_sees_table_changes_at_once(l2: CompiledProgram) -> None:
    state = l2.new_state()
    pipe = l2.pipeline(state)
    frame = ethernet(MAC_A, MAC_B, 0x0800)
    assert pipe.process(1, frame) == []
    match = (rt.exact(MAC_A, 48),)
    state.table("L2Ingress.dmac").insert(
        rt.TableEntry(match, rt.ActionCall("L2Ingress.forward", (4,)))
    )
    assert pipe.process(1, frame)[0][0] == 4
    state.table("L2Ingress.dmac").delete(match, 0)
    assert pipe.process(1, frame) == []


# --- IPv4 ----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def router() -> CompiledProgram:
    return compiled("ipv4_lpm.p4")


def routed_state(router: CompiledProgram) -> rt.SwitchState:
    state = router.new_state()
    table = state.table("MyIngress.ipv4_lpm")
    for prefix, length, mac, port in [
        (0x0A000000, 8, MAC_B, 1),
        (0x0A000200, 24, MAC_C, 2),
    ]:
        action = rt.ActionCall("MyIngress.ipv4_forward", (mac, port))
        table.insert(rt.TableEntry((rt.lpm(prefix, length, 32),), action))
    return state


def test_ipv4_longest_prefix_ttl_and_checksum(router: CompiledProgram) -> None:
    pipe = router.pipeline(routed_state(router))
    packet = ethernet(MAC_A, MAC_B, 0x0800) + ipv4(0xC0A80001, 0x0A000205, ttl=64, payload=b"hi")
    [(port, out)] = pipe.process(7, packet)
    assert port == 2
    assert out[0:6] == MAC_C.to_bytes(6, "big") and out[6:12] == MAC_A.to_bytes(6, "big")
    header = out[14:34]
    assert header[8] == 63
    assert internet_checksum(header) == 0  # a valid IPv4 header checksum
    assert header[10:12] != packet[24:26]  # it was recomputed
    assert out[34:] == b"hi"
    [(port, _)] = pipe.process(7, ethernet(MAC_A, MAC_B, 0x0800) + ipv4(1, 0x0A010101))
    assert port == 1


def test_ipv4_drops_bad_checksum_expired_ttl_and_no_route(router: CompiledProgram) -> None:
    pipe = router.pipeline(routed_state(router))
    good = ethernet(MAC_A, MAC_B, 0x0800) + ipv4(1, 0x0A000205)
    corrupt = good[:24] + bytes([good[24] ^ 0xFF]) + good[25:]
    assert pipe.process(1, corrupt) == []
    assert pipe.process(1, ethernet(MAC_A, MAC_B, 0x0800) + ipv4(1, 0x0A000205, ttl=1)) == []
    assert pipe.process(1, ethernet(MAC_A, MAC_B, 0x0800) + ipv4(1, 0x0B000001)) == []
    assert pipe.process(1, ethernet(MAC_A, MAC_B, 0x86DD) + bytes(40)) == []
    assert pipe.counts == {"drop.ingress": 4}
    assert pipe.process(1, good) != []


# --- malformed packets -----------------------------------------------------------------------


def test_truncated_packets_are_rejected_counted_and_the_next_one_passes(
    router: CompiledProgram,
) -> None:
    pipe = router.pipeline(routed_state(router), parser_reject="drop")
    good = ethernet(MAC_A, MAC_B, 0x0800) + ipv4(1, 0x0A000205)
    for bad in (b"", b"\x00" * 5, good[: 14 + 19]):
        assert pipe.process(1, bad) == []
    assert pipe.counts == {"parser_error.PacketTooShort": 3}
    assert pipe.process(1, good)[0][0] == 2


def test_verify_in_the_parser_rejects_with_its_error(router: CompiledProgram) -> None:
    pipe = router.pipeline(routed_state(router), parser_reject="drop")
    short_ihl = ethernet(MAC_A, MAC_B, 0x0800) + ipv4(1, 0x0A000205, ihl=4)
    assert pipe.process(1, short_ihl) == []
    assert pipe.counts == {"parser_error.HeaderTooShort": 1}


def test_rejected_packets_go_on_to_ingress_by_default_like_bmv2(l2: CompiledProgram) -> None:
    state = l2.new_state()
    state.table("L2Ingress.dmac").set_default(rt.ActionCall("L2Ingress.forward", (5,)))
    pipe = l2.pipeline(state)
    # The header is not extracted: nothing is emitted, the bytes follow as payload.
    assert pipe.process(1, b"\x01\x02\x03") == [(5, b"\x01\x02\x03")]
    assert pipe.counts == {"parser_error.PacketTooShort": 1}


def test_process_never_raises(l2: CompiledProgram) -> None:
    pipe = l2.pipeline(l2.new_state())
    for junk in (b"", b"\xff", bytes(range(256)) * 40):
        assert pipe.process(0, junk) == []
    assert pipe.process(510, bytes(14)) == []


def test_pipeline_arguments_are_checked(l2: CompiledProgram) -> None:
    with pytest.raises(ValueError, match="parser_reject"):
        l2.pipeline(l2.new_state(), parser_reject="ignore")
    with pytest.raises(ValueError, match="cpu_port"):
        l2.pipeline(l2.new_state(), cpu_port=511)


# --- registers and counters ------------------------------------------------------------------


def test_register_counts_packets_per_port_and_reads_back() -> None:
    program = compiled("register_counter.p4")
    state = program.new_state()
    pipe = program.pipeline(state)
    frame = ethernet(MAC_A, MAC_B, 0x0800) + bytes(10)
    seen = [pipe.process(port, frame) for port in (4, 4, 5, 4)]
    assert [out[0][0] for out in seen] == [7, 7, 7, 7]
    assert [int.from_bytes(out[0][1][6:12], "big") for out in seen] == [1, 2, 1, 3]
    register = state.register("Ig.packets_per_port")
    assert (register.read(4), register.read(5), register.read(6)) == (3, 1, 0)
    counter = state.counter("Ig.port_counter")
    assert (counter.packets[4], counter.bytes[4]) == (3, 3 * len(frame))


def test_direct_counter_counts_hits_and_misses() -> None:
    program = compiled("register_counter.p4")
    state = program.new_state()
    table = state.table("Ig.fwd")
    entry = rt.TableEntry((rt.exact(0x0800, 16),), rt.ActionCall("Ig.forward", (2,)))
    table.insert(entry)
    pipe = program.pipeline(state)
    ipv4_frame, other = ethernet(MAC_A, MAC_B, 0x0800), ethernet(MAC_A, MAC_B, 0x0806) + b"x"
    for frame in (ipv4_frame, ipv4_frame, other):
        pipe.process(1, frame)
    hit = table.get(entry.match, 0)
    assert hit is not None and (hit.packets, hit.bytes) == (2, 2 * len(ipv4_frame))
    assert (table.default_packets, table.default_bytes) == (1, len(other))


# --- aggregation -----------------------------------------------------------------------------


def agg_frame(slot: int, values: list[int]) -> bytes:
    agg = struct.pack("!HH32i", slot, 0, *values)
    udp = struct.pack("!HHHH", 5000, 0x4000, 8 + len(agg), 0)
    return ethernet(MAC_A, MAC_B, 0x0800) + ipv4(0x0A000001, 0x0A000002, payload=udp + agg)


def test_aggregation_adds_32_int32_into_registers() -> None:
    program = compiled("agg32.p4")
    state = program.new_state()
    route = rt.TableEntry((rt.exact(0x0A000002, 32),), rt.ActionCall("AggIngress.forward", (3,)))
    state.table("AggIngress.route").insert(route)
    pipe = program.pipeline(state)
    first = [i - 16 for i in range(32)]
    second = [1000 * i for i in range(32)]
    second[0] = -(2**31)  # wraps: -16 + -2**31 overflows int32
    pipe.process(1, agg_frame(7, first))
    [(port, out)] = pipe.process(2, agg_frame(7, second))
    assert port == 3
    slot, contributions, *sums = struct.unpack("!HH32i", out[42:])
    expected = [((a + b + 2**31) % 2**32) - 2**31 for a, b in zip(first, second, strict=True)]
    assert (slot, contributions, sums) == (7, 2, expected)
    assert state.register("AggIngress.lane05").read(7) == expected[5] % 2**32
    assert state.register("AggIngress.lane05").read(8) == 0
    assert state.counter("AggIngress.aggregated").packets[0] == 2


def test_aggregation_drops_out_of_range_slots_and_unrouted_packets() -> None:
    program = compiled("agg32.p4")
    state = program.new_state()
    pipe = program.pipeline(state)
    assert pipe.process(1, agg_frame(7, [1] * 32)) == []  # no route
    route = rt.TableEntry((rt.exact(0x0A000002, 32),), rt.ActionCall("AggIngress.forward", (3,)))
    state.table("AggIngress.route").insert(route)
    assert pipe.process(1, agg_frame(5000, [1] * 32)) == []  # slot outside the registers
    assert pipe.counts == {"drop.ingress": 2}
    assert state.register("AggIngress.lane00").read(7) == 1
