"""The site plan: the slot pool from memory and scale (both banks), addresses and ports."""

from __future__ import annotations

import pytest

from innet.packetformat import PacketFormat
from topo.exceptions import SiteError, SlotPoolError
from topo.loader import default_wan
from topo.siteplan import (
    BANKS,
    MAX_SLOTS,
    SlotPool,
    device_id,
    gateway_ip,
    gateway_mac,
    grpc_address,
    host_ip,
    host_mac,
    host_ports,
    island_prefix,
    smallest_memory,
    wan_port,
    wan_ports,
)

PACKET_FORMAT = PacketFormat()  # 32 lanes: slots of 128 B
SLOT_BYTES = PACKET_FORMAT.slot_bytes


@pytest.mark.parametrize(
    ("memory", "scale", "slots"),
    [
        (256, 1, 1),
        (511, 1, 1),
        (512, 1, 2),
        (25_600_000, 100_000, 1),
        (51_199_999, 100_000, 1),
        (51_200_000, 100_000, 2),
        (76_800_000, 100_000, 2),
        (1_600_000_000, 100_000, 32),
        (1_638_400_000, 100_000, 64),
        (640, 2.5, 1),
        (64_000_000, 1000, 128),  # not 256: both banks count
    ],
)
def test_the_pool_is_the_largest_power_of_two_whose_two_banks_fit(
    memory: int, scale: float, slots: int
) -> None:
    pool = SlotPool.for_memory(memory, scale, PACKET_FORMAT)
    assert pool.slots_per_bank == slots
    assert pool.emulated_bytes == BANKS * slots * SLOT_BYTES <= memory / scale
    assert pool.memory_bytes <= memory < 2 * pool.memory_bytes


def test_the_pool_says_what_full_scale_memory_its_slots_stand_for() -> None:
    pool = SlotPool.for_memory(1_600_000_000, 100_000, PACKET_FORMAT)
    assert pool.memory_bytes == 819_200_000
    assert pool.slot_bytes == SLOT_BYTES * 100_000
    assert str(pool) == "819 MB (32 slots/bank)"
    assert str(SlotPool(1, 100_000, PACKET_FORMAT)) == "25.6 MB (1 slot/bank)"


def test_memory_below_one_slot_per_bank_is_refused_with_the_smallest() -> None:
    assert smallest_memory(100_000, PACKET_FORMAT) == 25_600_000
    assert smallest_memory(2.5, PACKET_FORMAT) == 640
    with pytest.raises(SlotPoolError, match=r"smallest memory at this scale is 25\.6 MB"):
        SlotPool.for_memory(25_599_999, 100_000, PACKET_FORMAT)


def test_memory_above_the_largest_pool_asks_for_a_larger_scale() -> None:
    memory = 2 * BANKS * MAX_SLOTS * SLOT_BYTES  # two of the largest pools at scale 1
    with pytest.raises(SlotPoolError, match="raise scale to at least 2"):
        SlotPool.for_memory(memory, 1, PACKET_FORMAT)
    assert SlotPool.for_memory(memory, 2, PACKET_FORMAT).slots_per_bank == MAX_SLOTS


@pytest.mark.parametrize("slots", [0, 3, 96, 2 * MAX_SLOTS])
def test_a_pool_needs_a_power_of_two_innet_p4_compiles(slots: int) -> None:
    with pytest.raises(SlotPoolError, match="power of two"):
        SlotPool(slots, 1000, PACKET_FORMAT)


def test_addresses_of_a_site() -> None:
    assert host_ip(7, 2) == "10.0.7.2"
    assert host_mac(17, 2) == "02:00:0a:00:11:02"
    assert (gateway_ip(17), gateway_mac(17)) == ("10.0.17.254", "02:00:0a:00:11:fe")
    assert island_prefix(17) == ("10.0.17.0", 24)
    assert (device_id(3), grpc_address(3, 50100)) == (4, "127.0.0.1:50103")
    for bad in ((256, 1), (0, 0), (0, 254)):
        with pytest.raises(SiteError):
            host_ip(*bad)


def test_ports_hosts_first_then_neighbours_in_order() -> None:
    wan = default_wan()
    for u in range(wan.n):
        ports = wan_ports(wan, u, 3)
        assert list(ports) == list(wan.neighbours(u))
        assert sorted(ports.values()) == list(range(4, 4 + len(ports)))
        assert not set(ports.values()) & set(host_ports(3))
        assert all(wan_port(wan, u, v, 3) == p for v, p in ports.items())
    far = next(v for v in range(wan.n) if v != 0 and v not in wan.neighbours(0))
    with pytest.raises(SiteError, match="not a neighbour"):
        wan_port(wan, 0, far, 1)


def test_a_frame_is_the_innet_packet_behind_ethernet_ipv4_and_udp() -> None:
    assert PACKET_FORMAT.payload_bytes == 16 + PACKET_FORMAT.lanes * 4
    assert PACKET_FORMAT.frame_bytes == 14 + 20 + 8 + PACKET_FORMAT.payload_bytes == 186


def test_a_wider_format_s_pool_holds_fewer_slots_of_the_same_memory() -> None:
    wide = PacketFormat(256)  # 1 kB slots
    pool = SlotPool.for_memory(64_000_000, 1000, wide)
    assert (pool.slots_per_bank, pool.emulated_bytes) == (16, 32_768)
    assert smallest_memory(1000, wide) == 2_048_000
    with pytest.raises(SlotPoolError, match=r"2 x 1024 B"):
        SlotPool.for_memory(2_047_999, 1000, wide)
