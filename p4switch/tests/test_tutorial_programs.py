"""Programs like the p4lang tutorial exercises, written for these tests (the P4 sources are in
`tutorials/`), compiled and run on both back ends: basic IPv4 forwarding, tunnelling, ECN
marking, a stateful firewall, a flow cache, link monitoring, ECMP load balancing, multicast,
QoS marking and source routing. The control plane is set up in process; every expected frame
is built here from the programs' specification (addresses, TTL, the IPv4 header checksum of
RFC 791, CRC-16/ARC and CRC-32 hashes worked out in Python), not taken from the switch."""

from __future__ import annotations

import functools
import struct
import zlib
from collections.abc import Iterable
from pathlib import Path

import pytest

from p4switch import runtime as rt
from p4switch.native import NativePipeline
from p4switch.program import CompiledProgram, Pipeline, compile_file

pytestmark = pytest.mark.usefixtures("backend")  # each test on both back ends

TUTORIALS = Path(__file__).parent / "tutorials"

ROUTER = 0x02000000AA00  # the MAC address hosts send to
HOST = 0x02000000BB01  # the sending host's MAC address
HOP_1, HOP_2, HOP_3 = 0x020000000101, 0x020000000202, 0x020000000303  # next hops' MACs
TCP, UDP, ICMP = 6, 17, 1
SYN, ACK = 0x02, 0x10  # TCP flag bits

Pipe = Pipeline | NativePipeline
Route = tuple[str, int, tuple[int, ...]]  # prefix, length, the action's arguments


@functools.cache
def program(name: str, threshold: int | None = None) -> CompiledProgram:
    defines = None if threshold is None else {"ECN_THRESHOLD": str(threshold)}
    return compile_file(TUTORIALS / f"{name}.p4", defines=defines)


def ip(text: str) -> int:
    a, b, c, d = (int(x) for x in text.split("."))
    return a << 24 | b << 16 | c << 8 | d


def ethernet(dst: int, src: int, ether_type: int) -> bytes:
    return dst.to_bytes(6, "big") + src.to_bytes(6, "big") + struct.pack("!H", ether_type)


def internet_checksum(data: bytes) -> int:
    """RFC 791/1071: the one's complement of the one's complement sum of 16-bit words."""
    total = sum(int.from_bytes(data[i : i + 2], "big") for i in range(0, len(data), 2))
    while total > 0xFFFF:
        total = (total & 0xFFFF) + (total >> 16)
    return ~total & 0xFFFF


def ipv4(
    src: int,
    dst: int,
    proto: int,
    payload: bytes = b"",
    *,
    ttl: int = 64,
    tos: int = 0,
    checksum: int | None = None,
) -> bytes:
    """An IPv4 header (no options, don't fragment) and its payload; the header checksum is
    computed unless given."""
    header = struct.pack(
        "!BBHHHBBHII", 0x45, tos, 20 + len(payload), 0x1234, 0x4000, ttl, proto, 0, src, dst
    )
    if checksum is None:
        checksum = internet_checksum(header)
    return header[:10] + struct.pack("!H", checksum) + header[12:] + payload


def tcp(sport: int, dport: int, flags: int = ACK) -> bytes:
    return struct.pack("!HHIIBBHHH", sport, dport, 1000, 0, 5 << 4, flags, 8192, 0, 0)


def udp(sport: int, dport: int, payload: bytes = b"") -> bytes:
    return struct.pack("!HHHH", sport, dport, 8 + len(payload), 0) + payload


def crc16(data: bytes) -> int:
    """CRC-16/ARC (v1model's crc16, as BMv2 computes it): reflected 0x8005, initial 0."""
    crc = 0
    for byte in data:
        crc ^= byte
        for _ in range(8):
            crc = (crc >> 1) ^ 0xA001 if crc & 1 else crc >> 1
    return crc


assert crc16(b"123456789") == 0xBB3D  # the catalogued check value of CRC-16/ARC


def run(pipe: Pipe, port: int, frame: bytes) -> list[tuple[int, bytes]]:
    return list(pipe.process(port, frame))


def add_routes(state: rt.SwitchState, table: str, action: str, routes: Iterable[Route]) -> None:
    for prefix, length, args in routes:
        entry = rt.TableEntry((rt.lpm(ip(prefix), length, 32),), rt.ActionCall(action, args))
        state.table(table).insert(entry)


# --- 1. basic IPv4 forwarding --------------------------------------------------------------

BASIC_ROUTES = [
    ("10.0.0.0", 8, (HOP_3, 3)),
    ("10.0.1.0", 24, (HOP_1, 1)),
    ("10.0.1.10", 32, (HOP_2, 2)),
]


def basic_pipe() -> Pipe:
    compiled = program("basic")
    state = compiled.new_state()
    add_routes(state, "BasicIngress.routes", "BasicIngress.to_next_hop", BASIC_ROUTES)
    return compiled.pipeline(state)


@pytest.mark.parametrize(
    ("dst", "next_hop", "port"),
    [("10.0.1.10", HOP_2, 2), ("10.0.1.11", HOP_1, 1), ("10.200.0.1", HOP_3, 3)],
    ids=["slash-32", "slash-24", "slash-8"],
)
def test_basic_forwards_on_the_longest_prefix(dst: str, next_hop: int, port: int) -> None:
    """The longest matching prefix picks the next hop's MAC address and the port; the
    router's MAC becomes the source, the TTL goes from 64 to 63, the checksum follows."""
    pipe = basic_pipe()
    data = udp(5000, 53, b"query")
    frame = ethernet(ROUTER, HOST, 0x0800) + ipv4(ip("192.168.0.1"), ip(dst), UDP, data)
    expected = ethernet(next_hop, ROUTER, 0x0800) + ipv4(
        ip("192.168.0.1"), ip(dst), UDP, data, ttl=63
    )
    assert run(pipe, 4, frame) == [(port, expected)]


def test_basic_computes_the_checksum_afresh() -> None:
    """update_checksum computes the header checksum from the fields: a wrong one coming in
    leaves right (the program, like the exercise, does not verify checksums)."""
    pipe = basic_pipe()
    bad = ipv4(1, ip("10.0.1.10"), ICMP, b"ping", checksum=0xDEAD)
    expected = ethernet(HOP_2, ROUTER, 0x0800) + ipv4(1, ip("10.0.1.10"), ICMP, b"ping", ttl=63)
    assert run(pipe, 4, ethernet(ROUTER, HOST, 0x0800) + bad) == [(2, expected)]
    assert internet_checksum(expected[14:34]) == 0


def test_basic_drops_what_has_no_route() -> None:
    pipe = basic_pipe()
    frame = ethernet(ROUTER, HOST, 0x0800) + ipv4(1, ip("11.0.0.1"), UDP, udp(1, 2))
    assert run(pipe, 4, frame) == []
    assert pipe.counts == {"drop.ingress": 1}


# --- 2. basic tunnelling -------------------------------------------------------------------


def tunnel_pipe() -> Pipe:
    compiled = program("basic_tunnel")
    state = compiled.new_state()
    add_routes(state, "TunnelIngress.routes", "TunnelIngress.route", [("10.0.1.0", 24, (HOP_1, 1))])
    for dst_id, port in [(2, 2), (3, 3)]:
        entry = rt.TableEntry(
            (rt.exact(dst_id, 16),), rt.ActionCall("TunnelIngress.tunnel_out", (port,))
        )
        state.table("TunnelIngress.tunnels").insert(entry)
    return compiled.pipeline(state)


def tunnelled(dst_id: int, inner: bytes) -> bytes:
    return ethernet(ROUTER, HOST, 0x1212) + struct.pack("!HH", 0x0800, dst_id) + inner


def test_tunnel_forwards_on_the_destination_id_alone() -> None:
    """A tunnelled packet goes where its dst_id says, though its IPv4 destination routes to
    port 1, and leaves as it came (addresses and TTL untouched, so the checksum is too)."""
    pipe = tunnel_pipe()
    inner = ipv4(ip("10.0.9.1"), ip("10.0.1.5"), UDP, udp(1000, 2000, b"tunnelled"))
    for dst_id, port in [(2, 2), (3, 3)]:
        frame = tunnelled(dst_id, inner)
        assert run(pipe, 4, frame) == [(port, frame)]


def test_tunnel_routes_plain_ipv4_and_drops_unknown_ids() -> None:
    pipe = tunnel_pipe()
    data = udp(1000, 2000, b"plain")
    frame = ethernet(ROUTER, HOST, 0x0800) + ipv4(ip("10.0.9.1"), ip("10.0.1.5"), UDP, data)
    expected = ethernet(HOP_1, ROUTER, 0x0800) + ipv4(
        ip("10.0.9.1"), ip("10.0.1.5"), UDP, data, ttl=63
    )
    assert run(pipe, 4, frame) == [(1, expected)]
    inner = ipv4(ip("10.0.9.1"), ip("10.0.1.5"), UDP, data)
    assert run(pipe, 4, tunnelled(7, inner)) == []  # no such tunnel: not routed on IPv4
    assert pipe.counts == {"drop.ingress": 1}


# --- 3. ECN marking ------------------------------------------------------------------------
#
# p4switch has no queue in its pipeline: standard_metadata.enq_qdepth is always 0 there. The
# threshold is therefore set at compile time (-D ECN_THRESHOLD): at 0 the empty queue is at the
# threshold and capable packets are marked; at the program's default, 10, it is below.


def ecn_pipe(threshold: int | None) -> Pipe:
    compiled = program("ecn", threshold)
    state = compiled.new_state()
    add_routes(state, "EcnIngress.routes", "EcnIngress.route", [("10.0.2.0", 24, (HOP_2, 2))])
    return compiled.pipeline(state)


@pytest.mark.parametrize(
    ("ecn_in", "ecn_at_0", "ecn_at_10"),
    [(0, 0, 0), (1, 3, 1), (2, 3, 2), (3, 3, 3)],  # Not-ECT, ECT(1), ECT(0), CE
)
def test_ecn_marks_capable_packets_at_the_threshold(
    ecn_in: int, ecn_at_0: int, ecn_at_10: int
) -> None:
    """ECT(0) and ECT(1) become CE when the queue is at the threshold, not below it; Not-ECT
    never does. The DSCP bits are kept and the checksum covers the new ECN bits."""
    dscp = 10
    data = udp(7, 7, b"ecn")
    frame = ethernet(ROUTER, HOST, 0x0800) + ipv4(
        1, ip("10.0.2.2"), UDP, data, tos=dscp << 2 | ecn_in
    )
    for threshold, ecn_out in [(0, ecn_at_0), (None, ecn_at_10)]:
        expected = ethernet(HOP_2, ROUTER, 0x0800) + ipv4(
            1, ip("10.0.2.2"), UDP, data, ttl=63, tos=dscp << 2 | ecn_out
        )
        assert run(ecn_pipe(threshold), 1, frame) == [(2, expected)], threshold


# --- 4. stateful firewall ------------------------------------------------------------------

INSIDE, OUTSIDE = ip("10.0.1.1"), ip("10.0.2.2")
FILTER_SIZE = 4096


def firewall_state() -> rt.SwitchState:
    """Port 1 is inside, port 2 outside: 1 -> 2 is outbound (0), 2 -> 1 inbound (1)."""
    state = program("firewall").new_state()
    routes = [("10.0.1.0", 24, (HOP_1, 1)), ("10.0.2.0", 24, (HOP_2, 2))]
    add_routes(state, "FwIngress.routes", "FwIngress.route", routes)
    for ingress, egress, direction in [(1, 2, 0), (2, 1, 1)]:
        match = (rt.exact(ingress, 9), rt.exact(egress, 9))
        state.table("FwIngress.sides").insert(
            rt.TableEntry(match, rt.ActionCall("FwIngress.crossing", (direction,)))
        )
    return state


def filter_slots(inside_port: int, outside_port: int) -> tuple[int, int]:
    """The bloom filter's two slots for a TCP connection, as the program hashes it: inside
    address, outside address, inside port, outside port, protocol."""
    key = struct.pack("!IIHHB", INSIDE, OUTSIDE, inside_port, outside_port, TCP)
    return crc16(key) % FILTER_SIZE, zlib.crc32(key) % FILTER_SIZE


def set_bits(state: rt.SwitchState, name: str) -> list[int]:
    return [i for i, v in enumerate(state.register(f"FwIngress.{name}").cells) if v]


def test_firewall_lets_in_only_replies_to_connections_opened_inside() -> None:
    """Inside to outside always passes, and a SYN sets the connection's two bits (at the
    slots the CRCs of its 5-tuple give); outside to inside passes only for such a connection,
    its 5-tuple hashed inside end first."""
    state = firewall_state()
    pipe = program("firewall").pipeline(state)

    def outbound(sport: int, flags: int) -> bytes:
        return ethernet(ROUTER, HOST, 0x0800) + ipv4(INSIDE, OUTSIDE, TCP, tcp(sport, 80, flags))

    def inbound(dport: int, flags: int) -> bytes:
        return ethernet(ROUTER, HOST, 0x0800) + ipv4(OUTSIDE, INSIDE, TCP, tcp(80, dport, flags))

    # nothing opened yet: a packet from outside is dropped, one from inside passes
    assert run(pipe, 2, inbound(40000, SYN)) == []
    assert [port for port, _ in run(pipe, 1, outbound(40000, ACK))] == [2]
    assert set_bits(state, "filter_a") == set_bits(state, "filter_b") == []  # not a SYN
    # a SYN from inside sets one bit in each array
    expected = ethernet(HOP_2, ROUTER, 0x0800) + ipv4(
        INSIDE, OUTSIDE, TCP, tcp(40000, 80, SYN), ttl=63
    )
    assert run(pipe, 1, outbound(40000, SYN)) == [(2, expected)]
    slot_a, slot_b = filter_slots(40000, 80)
    assert (set_bits(state, "filter_a"), set_bits(state, "filter_b")) == ([slot_a], [slot_b])
    # the reply passes, rewritten as any routed packet; another connection's does not
    expected = ethernet(HOP_1, ROUTER, 0x0800) + ipv4(
        OUTSIDE, INSIDE, TCP, tcp(80, 40000, SYN | ACK), ttl=63
    )
    assert run(pipe, 2, inbound(40000, SYN | ACK)) == [(1, expected)]
    assert run(pipe, 2, inbound(40001, SYN | ACK)) == []
    assert pipe.counts == {"drop.ingress": 2}


def test_firewall_needs_both_bits() -> None:
    """Either bit alone is not enough: the inbound check reads both arrays."""
    state = firewall_state()
    pipe = program("firewall").pipeline(state)
    slot_a, slot_b = filter_slots(40000, 443)
    reply = ethernet(ROUTER, HOST, 0x0800) + ipv4(OUTSIDE, INSIDE, TCP, tcp(443, 40000, ACK))
    state.register("FwIngress.filter_a").write(slot_a, 1)
    assert run(pipe, 2, reply) == []
    state.register("FwIngress.filter_b").write(slot_b, 1)
    assert [port for port, _ in run(pipe, 2, reply)] == [1]
    state.register("FwIngress.filter_a").write(slot_a, 0)
    assert run(pipe, 2, reply) == []


# --- 5. flow cache and per-flow counting ---------------------------------------------------

CACHE_SLOTS = 256


def flow_key(src: int, dst: int, proto: int, sport: int, dport: int) -> bytes:
    """The 5-tuple as the cache hashes it: 32 + 32 + 8 + 16 + 16 bits, 13 bytes."""
    return struct.pack("!IIBHH", src, dst, proto, sport, dport)


def cache_pipe() -> tuple[rt.SwitchState, Pipe]:
    compiled = program("flowcache")
    state = compiled.new_state()
    add_routes(state, "CacheIngress.routes", "CacheIngress.forward", [("10.0.2.0", 24, (2,))])
    return state, compiled.pipeline(state)


def cached(state: rt.SwitchState, key: bytes) -> tuple[int, int, int]:
    """(tag, packets, bytes) of the slot the flow hashes to."""
    slot = zlib.crc32(key) % CACHE_SLOTS
    tag, packets, nbytes = (
        state.register(f"CacheIngress.flow_{name}").read(slot)
        for name in ("tag", "packets", "bytes")
    )
    return tag, packets, nbytes


def test_flow_cache_counts_each_flow() -> None:
    """TCP and UDP flows, keyed by their 5-tuple (the ports read by lookahead before the
    transport header is extracted): packets and bytes per flow in the cache's registers, and
    per egress port in a counter. A routed packet leaves unchanged; an unrouted one is only
    counted as such."""
    state, pipe = cache_pipe()
    src, dst = ip("10.0.1.1"), ip("10.0.2.2")
    tcp_frames = [
        ethernet(ROUTER, HOST, 0x0800) + ipv4(src, dst, TCP, tcp(3333, 80) + bytes(n))
        for n in (0, 100, 1000)
    ]
    udp_frames = [
        ethernet(ROUTER, HOST, 0x0800) + ipv4(src, dst, UDP, udp(5353, 53, bytes(n)))
        for n in (10, 20)
    ]
    for frame in tcp_frames + udp_frames:
        assert run(pipe, 1, frame) == [(2, frame)]
    tcp_key, udp_key = flow_key(src, dst, TCP, 3333, 80), flow_key(src, dst, UDP, 5353, 53)
    assert zlib.crc32(tcp_key) % CACHE_SLOTS != zlib.crc32(udp_key) % CACHE_SLOTS
    assert cached(state, tcp_key) == (crc16(tcp_key), 3, sum(map(len, tcp_frames)))
    assert cached(state, udp_key) == (crc16(udp_key), 2, sum(map(len, udp_frames)))
    routed = state.counter("CacheIngress.routed")
    total = sum(map(len, tcp_frames + udp_frames))
    assert (routed.packets[2], routed.bytes[2]) == (5, total)
    unrouted = ethernet(ROUTER, HOST, 0x0800) + ipv4(src, ip("10.0.3.3"), TCP, tcp(3333, 80))
    assert run(pipe, 1, unrouted) == []
    assert state.counter("CacheIngress.unrouted").packets[0] == 1
    assert cached(state, flow_key(src, ip("10.0.3.3"), TCP, 3333, 80))[1] == 0  # not cached
    assert (routed.packets[2], routed.bytes[2]) == (5, total)  # nor counted as routed


def test_flow_cache_evicts_a_flow_for_another_in_its_slot() -> None:
    """A flow with another tag in the same slot takes it over, counted from one packet; the
    first flow, coming back, evicts it in turn and starts again from one."""
    state, pipe = cache_pipe()
    src, dst = ip("10.0.1.1"), ip("10.0.2.2")
    first = flow_key(src, dst, UDP, 1000, 53)
    slot, tag = zlib.crc32(first) % CACHE_SLOTS, crc16(first)
    # another UDP flow that lands in the same slot, with another tag
    sport = next(
        p
        for p in range(1001, 65536)
        if zlib.crc32(flow_key(src, dst, UDP, p, 53)) % CACHE_SLOTS == slot
        and crc16(flow_key(src, dst, UDP, p, 53)) != tag
    )
    other = flow_key(src, dst, UDP, sport, 53)

    def send(port: int) -> int:
        frame = ethernet(ROUTER, HOST, 0x0800) + ipv4(src, dst, UDP, udp(port, 53))
        assert [p for p, _ in run(pipe, 1, frame)] == [2]
        return len(frame)

    size = send(1000) + send(1000)
    assert cached(state, first) == (tag, 2, size)
    size = send(sport)
    assert cached(state, other) == (crc16(other), 1, size)
    size = send(1000)
    assert cached(state, first) == (tag, 1, size)  # evicted: counted afresh


# --- 6. link monitoring --------------------------------------------------------------------


def monitor(switch_id: int) -> tuple[rt.SwitchState, Pipe]:
    compiled = program("link_monitor")
    state = compiled.new_state()
    routes = [("10.0.2.0", 24, (HOP_2, 2)), ("10.0.3.0", 24, (HOP_3, 3))]
    add_routes(state, "MonIngress.routes", "MonIngress.route", routes)
    state.table("MonEgress.whoami").set_default(rt.ActionCall("MonEgress.identify", (switch_id,)))
    return state, compiled.pipeline(state)


def record(bos: int, switch_id: int, port: int, sent: int, previous: int, now: int) -> bytes:
    """A hop record: bos (1 bit) and switch id (7), port (8), bytes (32), two times (48)."""
    return (
        bytes([bos << 7 | switch_id, port])
        + sent.to_bytes(4, "big")
        + previous.to_bytes(6, "big")
        + now.to_bytes(6, "big")
    )


def times(frame: bytes, index: int) -> tuple[int, int]:
    """The two times of the probe's record at `index` (records of 18 bytes from byte 15)."""
    start = 15 + 18 * index + 6
    previous, now = frame[start : start + 6], frame[start + 6 : start + 12]
    return int.from_bytes(previous, "big"), int.from_bytes(now, "big")


def test_link_monitor_probes_collect_per_port_byte_counts() -> None:
    """Packets leaving a port add up in its register; a probe leaving it pushes a record of
    that count (the probe's own length included) on the front of its stack and the count
    starts again. A second switch pushes its record in front of the first one's."""
    state, pipe = monitor(5)
    sizes = {2: 0, 3: 0}
    for dst, port, n in [("10.0.2.1", 2, 10), ("10.0.3.1", 3, 200), ("10.0.2.9", 2, 30)]:
        frame = ethernet(ROUTER, HOST, 0x0800) + ipv4(1, ip(dst), UDP, udp(9, 9, bytes(n)))
        assert [p for p, _ in run(pipe, 1, frame)] == [port]
        sizes[port] += len(frame)
    port_bytes = state.register("MonEgress.port_bytes")
    assert (port_bytes.read(2), port_bytes.read(3)) == (sizes[2], sizes[3])

    # a probe with no records yet, to leave by port 2 here and by port 7 at the next switch
    eth = ethernet(0xFFFFFFFFFFFF, HOST, 0x0812)
    probe = eth + bytes([0]) + bytes([2, 7]) + b"probe payload"
    ((port, out),) = run(pipe, 1, probe)
    assert port == 2
    previous, now = times(out, 0)
    assert previous == 0 and now == state.register("MonEgress.port_probe_time").read(2)
    first = record(1, 5, 2, sizes[2] + len(probe), 0, now)
    assert out == eth + bytes([1]) + first + bytes([7]) + b"probe payload"
    assert (port_bytes.read(2), port_bytes.read(3)) == (0, sizes[3])

    # the next switch (id 6): a record of its own in front, the stack parsed in a loop
    state_2, pipe_2 = monitor(6)
    ((port, out_2),) = run(pipe_2, 1, out)
    assert port == 7
    second = record(0, 6, 7, len(out), 0, times(out_2, 0)[1])
    assert out_2 == eth + bytes([2]) + second + first + b"probe payload"
    assert state_2.register("MonEgress.port_bytes").read(7) == 0

    # the next probe by port 2 counts from the previous one, and knows when that left
    ((_, again),) = run(pipe, 1, probe)
    later = times(again, 0)[1]
    assert now <= later
    assert again == eth + bytes([1]) + record(1, 5, 2, len(probe), now, later) + out[33:]


# --- 7. load balancing (ECMP) --------------------------------------------------------------

PORT_MACS = {2: 0x02000000F002, 3: 0x02000000F003, 4: 0x02000000F004}


def ecmp_pipe(members: list[tuple[int, int]]) -> Pipe:
    """One group for 10.0.0.0/8 whose members, from index 4 on, are (next-hop MAC, port)."""
    compiled = program("load_balance")
    state = compiled.new_state()
    add_routes(
        state, "LbIngress.groups", "LbIngress.pick_member", [("10.0.0.0", 8, (4, len(members)))]
    )
    for index, (mac, port) in enumerate(members, start=4):
        state.table("LbIngress.members").insert(
            rt.TableEntry((rt.exact(index, 14),), rt.ActionCall("LbIngress.next_hop", (mac, port)))
        )
    for port, mac in PORT_MACS.items():
        state.table("LbEgress.port_macs").insert(
            rt.TableEntry((rt.exact(port, 9),), rt.ActionCall("LbEgress.own_mac", (mac,)))
        )
    return compiled.pipeline(state)


@pytest.mark.parametrize("size", [2, 3])
def test_ecmp_spreads_flows_and_keeps_each_on_one_path(size: int) -> None:
    """The member is 4 + CRC-16(src, dst, proto, sport, dport) % size: every flow leaves by
    that member's port, to its MAC address, from the port's own MAC address, with TTL 63;
    all packets of a flow take the same path and the flows use every member."""
    members = [(HOP_1, 2), (HOP_2, 3), (HOP_3, 4)][:size]
    pipe = ecmp_pipe(members)
    src, dst = ip("10.1.0.1"), ip("10.2.0.2")
    used: set[int] = set()
    for sport in range(49152, 49152 + 24):
        segment = tcp(sport, 443)
        frame = ethernet(ROUTER, HOST, 0x0800) + ipv4(src, dst, TCP, segment)
        pick = crc16(struct.pack("!IIBHH", src, dst, TCP, sport, 443)) % size
        mac, port = members[pick]
        expected = ethernet(mac, PORT_MACS[port], 0x0800) + ipv4(src, dst, TCP, segment, ttl=63)
        assert run(pipe, 1, frame) == [(port, expected)]
        assert run(pipe, 1, frame) == [(port, expected)]  # the same flow, the same path
        used.add(port)
    assert used == {port for _, port in members}


# --- 8. multicast --------------------------------------------------------------------------

FLOOD = [rt.Replica(1, 11), rt.Replica(2, 12), rt.Replica(3, 13), rt.Replica(4, 14)]


def multicast_state() -> rt.SwitchState:
    state = program("multicast").new_state()
    state.pre.insert_group(1, FLOOD)
    state.pre.insert_group(7, [rt.Replica(5, 1), rt.Replica(5, 2), rt.Replica(6, 1)])
    macs = state.table("McIngress.macs")
    macs.insert(rt.TableEntry((rt.exact(HOP_1, 48),), rt.ActionCall("McIngress.unicast", (1,))))
    macs.insert(rt.TableEntry((rt.exact(HOP_3, 48),), rt.ActionCall("McIngress.to_group", (7,))))
    return state


def with_rid(frame: bytes, rid: int) -> bytes:
    """The frame with the replica id in the low 16 bits of its source MAC address."""
    return frame[:10] + struct.pack("!H", rid) + frame[12:]


def test_multicast_floods_one_copy_per_replica_but_not_back() -> None:
    """An unknown destination goes to group 1: one copy per replica, each carrying its
    replica id; the copy for the port the frame came in by is dropped in egress."""
    state = multicast_state()
    pipe = program("multicast").pipeline(state)
    frame = ethernet(0x02000000EEEE, HOST, 0x88B5) + b"flooded"
    out = sorted(run(pipe, 2, frame))
    assert out == [(1, with_rid(frame, 11)), (3, with_rid(frame, 13)), (4, with_rid(frame, 14))]
    assert pipe.counts == {"drop.egress": 1}


def test_multicast_group_from_the_table_and_unicast() -> None:
    """A known address is sent to its port untouched (not a copy); a group with two replicas
    on one port sends two copies there, told apart by their replica ids."""
    state = multicast_state()
    pipe = program("multicast").pipeline(state)
    frame = ethernet(HOP_1, HOST, 0x88B5) + b"unicast"
    assert run(pipe, 2, frame) == [(1, frame)]
    frame = ethernet(HOP_3, HOST, 0x88B5) + b"group 7"
    out = sorted(run(pipe, 2, frame))
    assert out == [(5, with_rid(frame, 1)), (5, with_rid(frame, 2)), (6, with_rid(frame, 1))]
    state.pre.delete_group(7)
    assert run(pipe, 2, frame) == []
    assert pipe.counts == {"drop.multicast_group_empty": 1}


# --- 9. QoS --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("proto", "payload", "dscp"),
    [(UDP, udp(5004, 5004, b"voice"), 46), (TCP, tcp(1234, 80), 18), (ICMP, b"\x08\x00ping", 0)],
    ids=["udp-ef", "tcp-af21", "icmp-best-effort"],
)
def test_qos_sets_the_dscp_from_the_protocol(proto: int, payload: bytes, dscp: int) -> None:
    """The DSCP follows the protocol whatever it was; the ECN bits stay; TTL 63 and the
    checksum over the new type-of-service byte."""
    compiled = program("qos")
    state = compiled.new_state()
    add_routes(state, "QosIngress.routes", "QosIngress.route", [("10.0.2.0", 24, (HOP_2, 2))])
    pipe = compiled.pipeline(state)
    frame = ethernet(ROUTER, HOST, 0x0800) + ipv4(1, ip("10.0.2.2"), proto, payload, tos=0x29)
    expected = ethernet(HOP_2, ROUTER, 0x0800) + ipv4(
        1, ip("10.0.2.2"), proto, payload, ttl=63, tos=dscp << 2 | 0x1
    )
    assert run(pipe, 1, frame) == [(2, expected)]


# --- 10. source routing --------------------------------------------------------------------


def hop(bos: int, port: int) -> bytes:
    return struct.pack("!H", bos << 15 | port)


def test_source_routing_across_three_switches() -> None:
    """Ports 2, 3, 1 in the packet: each switch leaves by the first and pops it, the TTL goes
    down at each, the last restores IPv4. A frame without hops is dropped."""
    compiled = program("source_routing")
    switches = [compiled.pipeline(compiled.new_state()) for _ in range(3)]
    eth = ethernet(ROUTER, HOST, 0x1234)
    data = udp(1, 2, b"routed")
    packet = eth + hop(0, 2) + hop(0, 3) + hop(1, 1) + ipv4(1, 2, UDP, data)
    expected = [
        (2, eth + hop(0, 3) + hop(1, 1) + ipv4(1, 2, UDP, data, ttl=63)),
        (3, eth + hop(1, 1) + ipv4(1, 2, UDP, data, ttl=62)),
        (1, ethernet(ROUTER, HOST, 0x0800) + ipv4(1, 2, UDP, data, ttl=61)),
    ]
    for pipe, (port, want) in zip(switches, expected, strict=True):
        assert run(pipe, 9, packet) == [(port, want)]
        packet = want  # on to the next switch
    assert run(switches[0], 9, ethernet(ROUTER, HOST, 0x0800) + ipv4(1, 2, UDP, data)) == []
