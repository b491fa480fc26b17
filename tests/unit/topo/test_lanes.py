"""Lanes per packet: one value (innet.packetformat.PacketFormat) for innet.p4 (-D LANES), the
hosts' codec, the slot pool and the planner, passed where it is used; one process holds two."""

from __future__ import annotations

import pytest
from p4switch import P4CompileError, compile_file

from controller.planner.params import CostParams
from controller.runner import calibration
from controller.runner.emulation import resolve
from controller.runner.scenario import parse_scenario
from innet.packetformat import LANE_CHOICES, PacketFormat, PacketFormatError
from innet.paths import INNET_P4
from topo.siteplan import SlotPool, program_defines
from workers.packets import Flag, InnetPacket, PacketType

HEADERS = 14 + 20 + 8 + 16  # Ethernet, IPv4, UDP, innet


@pytest.mark.parametrize("lanes", LANE_CHOICES)
def test_every_size_follows_the_lanes(lanes: int) -> None:
    wire = PacketFormat(lanes)
    assert (wire.slot_bytes, wire.payload_bytes) == (4 * lanes, 16 + 4 * lanes)
    assert (wire.udp_length, wire.ipv4_length) == (24 + 4 * lanes, 44 + 4 * lanes)
    assert wire.frame_bytes == HEADERS + 4 * lanes and wire.frame_bits == 8 * wire.frame_bytes
    assert wire.values.size == wire.slot_bytes
    assert program_defines(wire, 8) == {"LANES": str(lanes), "SLOTS": "8"}


@pytest.mark.parametrize("lanes", [48, 0, -32, 512, True, 32.0, "32"])
def test_a_lane_count_innet_p4_is_not_built_with_is_refused(lanes: object) -> None:
    with pytest.raises(PacketFormatError, match=r"innet\.p4 takes 32, 64, 128 or 256"):
        PacketFormat(lanes)  # type: ignore[arg-type]


@pytest.mark.parametrize("text", ["48", "many", "", "1e2", "-32"])
def test_a_lane_count_written_as_text_is_read_or_refused(text: str) -> None:
    assert PacketFormat.parse(" 64 ") == PacketFormat(64)
    with pytest.raises(PacketFormatError, match=r"lanes per packet"):
        PacketFormat.parse(text)


@pytest.mark.parametrize("lanes", LANE_CHOICES)
def test_innet_p4_compiles_with_every_lane_count(lanes: int) -> None:
    program = compile_file(INNET_P4, defines=program_defines(PacketFormat(lanes), 4))
    names = {r.name for r in program.registers}
    assert {f"InnetIngress.lane{i:02d}" for i in range(lanes)} <= names
    assert f"InnetIngress.lane{lanes:02d}" not in names


def test_innet_p4_refuses_a_lane_count_it_has_no_expansion_for() -> None:
    with pytest.raises(P4CompileError, match="LANES must be 32, 64, 128 or 256"):
        compile_file(INNET_P4, defines={"LANES": "48"})


def test_one_process_holds_two_formats_side_by_side() -> None:
    narrow, wide = PacketFormat(32), PacketFormat(256)
    values = tuple(range(-128, 128))
    kind, flags = PacketType.CONTRIBUTION, Flag.WAN
    packets = {
        wire: InnetPacket.of(kind, flags, 1, 2, 3, 4, 5, 6, values[: wire.lanes], wire)
        for wire in (narrow, wide)
    }
    for wire, packet in packets.items():
        data = packet.encode()
        assert len(data) == wire.payload_bytes and InnetPacket.decode(data, wire) == packet
        assert packet.packet_format == wire
    pools = {wire: SlotPool.for_memory(64_000_000, 1000, wire) for wire in (narrow, wide)}
    assert pools[narrow].slots_per_bank == 8 * pools[wide].slots_per_bank  # 8x the slot size
    assert {
        wire: CostParams.for_pool(pool, 10**9, 1e10).slot_bytes for wire, pool in pools.items()
    } == {narrow: 128_000, wide: 1_024_000}


def test_a_scenario_s_lanes_reach_its_islands_and_its_switches() -> None:
    em = resolve(parse_scenario("name: t\nlanes: 128\nscale: 100000\nmemory: [1.6GB]\n"))
    assert em.packet_format == em.island.packet_format == PacketFormat(128)
    assert em.points[0].pool.packet_format == PacketFormat(128)
    assert em.update_floats % 128 == 0 and em.chunks == em.update_floats // 128


@pytest.mark.parametrize("lanes", [256, 32])
def test_innet_p4_sums_every_lane_on_the_run_s_entries(lanes: int) -> None:
    """A member edge as the controller programs it, built with the scenario's lanes: the
    nine islands' contributions to one chunk come out as one RESULT to the hosts, each lane
    the exact sum. Both lane counts run in this one process."""
    text = f"name: t\nlanes: {lanes}\nscale: 100000\nmemory: [1.6GB]\nhosts: 2\n"
    em = resolve(parse_scenario(text))
    switch = calibration.member_switch(em)
    out: list[tuple[int, bytes]] = []
    for port, frame in calibration.chunk_frames(em, 5):
        out = switch.process(port, frame)
    frame = out[0][1]
    result = InnetPacket.decode(frame[14 + 20 + 8 :], em.packet_format)
    assert sorted(p for p, _ in out) == [1, 2] and len(frame) == HEADERS + 4 * lanes
    values = range(5, 5 + lanes)  # what calibration.chunk_frames sends for chunk 5
    assert list(result.values) == [em.scenario.wan.n * v for v in values]
