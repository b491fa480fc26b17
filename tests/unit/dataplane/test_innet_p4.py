"""innet.p4 as a controller sees it (P4Info names, SLOTS), and what it refuses or only forwards."""

from __future__ import annotations

import dataclasses

import pytest
from p4.config.v1 import p4info_pb2
from p4switch import P4CompileError, compile_file

from innet.checksum import internet_checksum
from tests.unit.dataplane.harness import (
    CONTRIBUTION,
    FRAME_BYTES,
    HOST_PORT,
    ISLANDS,
    LOCAL,
    NACK,
    NEXT_PORT,
    P4_SOURCE,
    PREV_PORT,
    RECOVER,
    RESULT,
    STATS,
    WAN,
    A,
    B,
    C,
    Innet,
    N,
    Triangle,
    compiled,
    host_ip,
    innet_frame,
    ipv4_frame,
)

JOB, ROUND, GROUP = 3, 9, 1


def msg(src: int, chunk: int, value: int = 1, flags: int = WAN | LOCAL) -> Innet:
    return Innet(CONTRIBUTION, flags, JOB, ROUND, GROUP, src, chunk, (value,) * N)


# --- the program's interface -----------------------------------------------------------------


def test_p4info_names_a_controller_uses() -> None:
    p4info = compiled(16).p4info
    tables = {t.preamble.name: [f.name for f in t.match_fields] for t in p4info.tables}
    assert tables == {
        "InnetIngress.membership": ["hdr.innet.job", "hdr.innet.round", "hdr.innet.group"],
        "InnetIngress.tree": [
            "hdr.innet.job",
            "hdr.innet.round",
            "hdr.innet.group",
            "hdr.innet.src",
        ],
        "InnetIngress.port_sources": [
            "hdr.innet.job",
            "hdr.innet.round",
            "hdr.innet.group",
            "standard_metadata.ingress_port",
        ],
        "InnetIngress.ipv4_lpm": ["hdr.ipv4.dstAddr"],
        "InnetEgress.host_port": ["standard_metadata.egress_port"],
    }
    actions = {a.preamble.name: [(p.name, p.bitwidth) for p in a.params] for a in p4info.actions}
    assert actions["InnetIngress.member"] == [
        ("expected", 32),
        ("my_bit", 32),
        ("local_grp", 16),
        ("stale_us", 32),
    ]
    assert actions["InnetIngress.relay"] == [("expected", 32), ("my_bit", 32), ("local_grp", 16)]
    assert actions["InnetIngress.transit"] == []
    assert actions["InnetIngress.unknown"] == []
    assert actions["InnetIngress.replicate"] == [("wan_grp", 16), ("wan_local_grp", 16)]
    assert actions["InnetIngress.sources"] == [("streams", 32), ("replays", 32)]
    assert actions["InnetIngress.forward"] == [("port", 9), ("dmac", 48)]
    assert actions["InnetIngress.drop"] == []
    assert actions["InnetEgress.to_host"] == [("mac", 48), ("ip", 32), ("gateway", 32)]
    registers = {
        r.preamble.name: (r.type_spec.bitstring.bit.bitwidth, r.size) for r in p4info.registers
    }
    lanes = {f"InnetIngress.lane{i:02d}": (32, 32) for i in range(N)}
    assert registers == {
        "InnetIngress.slot_chunk": (32, 32),
        "InnetIngress.slot_ctx": (40, 32),
        "InnetIngress.slot_seen": (32, 32),
        "InnetIngress.slot_expected": (32, 32),
        "InnetIngress.slot_deadline": (48, 32),
        **lanes,
    }
    (stats,) = p4info.counters
    assert stats.preamble.name == "InnetIngress.stats"
    assert stats.size == len(STATS) == 14
    assert stats.spec.unit == p4info_pb2.CounterSpec.BOTH  # packets_and_bytes


def test_slots_default_to_1024_and_must_be_a_power_of_two() -> None:
    program = compile_file(P4_SOURCE)
    assert {r.size for r in program.registers} == {2 * 1024}
    with pytest.raises(P4CompileError, match="power of two"):
        compile_file(P4_SOURCE, defines={"SLOTS": "48"})
    with pytest.raises(P4CompileError, match="LOG_SLOTS"):
        compile_file(P4_SOURCE, defines={"SLOTS": "16", "LOG_SLOTS": "3"})


# --- refused -------------------------------------------------------------------------------


def group_net() -> Triangle:
    net = Triangle(16)
    net.install_group(JOB, ROUND, GROUP, ISLANDS)
    return net


def test_malformed_innet_packets_are_dropped_and_counted_while_aggregation_goes_on() -> None:
    net = group_net()
    good = innet_frame(msg(A, 0), A)
    bad_checksum = bytearray(good)
    bad_checksum[24] ^= 0xFF
    malformed = [
        good[: FRAME_BYTES - 40],  # truncated in the values
        good[:50],  # truncated in the innet header
        innet_frame(dataclasses.replace(msg(A, 1), version=2), A),
        innet_frame(msg(40, 1), A),  # src beyond the 32 islands
        innet_frame(dataclasses.replace(msg(A, 1), type=0), A),
        innet_frame(dataclasses.replace(msg(A, 1), type=5), A),
        innet_frame(dataclasses.replace(msg(A, 1), type=RESULT), A),  # only switches send these
        bytes(bad_checksum),  # IPv4 header checksum wrong
        good[:10],  # not even Ethernet
    ]
    for chunk, frame in enumerate(malformed):
        net.send(A, frame)
        for i in ISLANDS:  # another chunk aggregates between the bad packets
            net.contribute(i, msg(i, chunk + 1, value=i + 1))
    stats = net.stats(A)
    assert stats["malformed"] == len(malformed)
    assert stats["completed"] == len(malformed)
    assert stats["contribution"] == 3 * len(malformed)
    got = net.take(A)
    assert sorted(d.msg.chunk for d in got) == list(range(1, len(malformed) + 1))
    assert all(d.msg.values == (6,) * N for d in got)
    assert net.stats(B)["malformed"] == net.stats(C)["malformed"] == 0  # nothing went on


def test_an_unknown_group_or_round_is_dropped_and_counted() -> None:
    net = group_net()
    net.contribute(A, dataclasses.replace(msg(A, 0), round=ROUND + 1))
    net.contribute(A, dataclasses.replace(msg(A, 0), group=GROUP + 1))
    net.contribute(A, Innet(NACK, WAN, JOB + 1, ROUND, GROUP, A, 0))
    assert net.stats(A)["unknown"] == 3
    assert net.stats(B) == net.stats(C) == dict.fromkeys(STATS, 0)  # nothing left A's edge
    assert not any(net.register(A, "slot_seen"))


def test_a_contributor_outside_the_group_is_refused() -> None:
    net = Triangle(16)
    net.install_group(JOB, ROUND, GROUP, (A, B))
    net.contribute(A, msg(C, 0))  # claims to be C, which is not in the group
    net.contribute(A, Innet(RECOVER, WAN, JOB, ROUND, GROUP, C, 0))
    assert net.stats(A)["not_member"] == 2
    assert not any(net.register(A, "slot_seen"))
    net.contribute(C, msg(C, 0))  # C's own edge knows nothing of the group
    assert net.stats(C)["unknown"] == 1
    for i in (A, B):
        net.contribute(i, msg(i, 0, value=5))
    assert [d.msg.bitmap for d in net.take(A)] == [0b011]


def test_a_transit_switch_forwards_along_the_tree_without_merging() -> None:
    """Group {A, C}; A's stream to C goes through B, which is not a member."""
    net = Triangle(16)
    for island in (A, C):
        net.install_member(island, JOB, ROUND, GROUP, (A, C))
    net.install_transit(B, JOB, ROUND, GROUP)
    net.install_tree(A, JOB, ROUND, GROUP, A, [NEXT_PORT])  # A -> B
    net.install_tree(B, JOB, ROUND, GROUP, A, [NEXT_PORT])  # B -> C
    net.install_tree(C, JOB, ROUND, GROUP, C, [NEXT_PORT])  # C -> A, direct
    net.install_sources(A, JOB, ROUND, GROUP, HOST_PORT, [A], [C])
    net.install_sources(A, JOB, ROUND, GROUP, PREV_PORT, [C])  # C's stream, direct
    net.install_sources(B, JOB, ROUND, GROUP, PREV_PORT, [A])  # A's stream, from its parent A
    net.install_sources(C, JOB, ROUND, GROUP, HOST_PORT, [C], [A])
    net.install_sources(C, JOB, ROUND, GROUP, PREV_PORT, [A])  # A's stream, from its parent B
    for chunk in range(3):
        net.contribute(A, msg(A, chunk, value=10))
        net.contribute(C, msg(C, chunk, value=chunk))
    for island in (A, C):
        got = net.take(island)
        assert [(d.msg.chunk, d.msg.values[0], d.msg.bitmap) for d in got] == [
            (0, 10, 0b101),
            (1, 11, 0b101),
            (2, 12, 0b101),
        ]
    assert net.take(B) == []
    assert not any(net.register(B, "slot_seen")) and not any(net.register(B, "lane00"))
    assert net.stats(B) == dict.fromkeys(STATS, 0)
    # A transit switch has nothing to do with a source whose tree does not pass it: C's stream
    # never enters B, so a copy that claims to is refused.
    assert net.edges[B].pipe.process(NEXT_PORT, innet_frame(msg(C, 4), C)) == []
    assert net.stats(B)["spoofed"] == 1
    # On the port of A's tree but without WAN: neither merged nor replicated.
    assert net.edges[B].pipe.process(PREV_PORT, innet_frame(msg(A, 4, flags=LOCAL), A)) == []
    assert net.stats(B)["dropped_other"] == 1


def test_nack_and_recover_reach_every_member_host_but_the_source() -> None:
    net = group_net()
    net.contribute(B, Innet(NACK, WAN, JOB, ROUND, GROUP, B, 5))
    assert net.take(B) == []
    for island in (A, C):
        (d,) = net.take(island)
        assert (d.msg.type, d.msg.src, d.msg.chunk) == (NACK, B, 5)
        assert d.ip_dst == host_ip(island) and d.ip_checksum_ok
    assert [net.stats(i)["nack_or_recover"] for i in ISLANDS] == [1, 1, 1]
    assert not any(net.register(A, "slot_seen"))  # never merged


def test_a_relay_group_replicates_contributions_unchanged_and_never_merges() -> None:
    """The `multicast` network: the edges replicate each member's stream to the other members'
    hosts, as they do NACKs and RECOVERs, and leave the slots alone; the hosts sum."""
    net = Triangle(16)
    net.install_group(JOB, ROUND, GROUP, ISLANDS, merge=False)
    for src in ISLANDS:
        for flags in (WAN, WAN | LOCAL):  # a merge flag changes nothing: relays never merge
            net.contribute(src, msg(src, chunk=4, value=src + 1, flags=flags))
    for island in ISLANDS:
        got = net.take(island)
        others = [s for s in ISLANDS if s != island]
        assert sorted(d.msg.src for d in got) == sorted(others * 2)
        for d in got:  # the contribution as it was sent: no RESULT, no sum
            assert (d.msg.type, d.msg.chunk) == (CONTRIBUTION, 4)
            assert d.msg.values == (d.msg.src + 1,) * N
            assert d.ip_dst == host_ip(island) and d.ip_checksum_ok
        stats = net.stats(island)
        # its own two, and the four others' copies that came in
        assert stats["replicated"] == 6
        assert stats["contribution"] == stats["completed"] == stats["dropped_other"] == 0
        assert not any(net.register(island, "slot_seen"))
    net.contribute(A, Innet(CONTRIBUTION, WAN, JOB, ROUND, GROUP, 5, 5, (1,) * N))  # not one
    assert net.stats(A)["not_member"] == 1


def test_a_wan_copy_never_goes_back_where_it_came_from() -> None:
    net = group_net()
    # A misconfigured tree at B for A's stream that includes the port toward A.
    net.install_tree(B, JOB, ROUND, GROUP, A, [PREV_PORT, NEXT_PORT])
    out = net.edges[B].pipe.process(PREV_PORT, innet_frame(msg(A, 0), A))
    assert [port for port, _ in out] == [NEXT_PORT]


# --- plain IPv4 ------------------------------------------------------------------------------


def test_ipv4_is_routed_with_ttl_decremented_and_a_valid_checksum() -> None:
    net = Triangle(16)
    gateway = bytes.fromhex("0200000001ff")
    net.install_route(A, bytes((10, 0, 1, 0)), 24, NEXT_PORT, gateway)
    icmp = bytes((8, 0, 0, 0)) + bytes(60)
    out = net.edges[A].pipe.process(HOST_PORT, ipv4_frame(host_ip(A), host_ip(B), 1, icmp))
    ((port, frame),) = out
    assert port == NEXT_PORT
    assert frame[:6] == gateway
    assert frame[22] == 63  # TTL
    assert internet_checksum(frame[14:34]) == 0
    assert frame[34:] == icmp
    # No route, TTL expiring, and non-IPv4 (ARP): dropped and counted.
    assert net.edges[A].pipe.process(HOST_PORT, ipv4_frame(host_ip(A), host_ip(C), 1, icmp)) == []
    expiring = ipv4_frame(host_ip(A), host_ip(B), 1, icmp, ttl=1)
    assert net.edges[A].pipe.process(HOST_PORT, expiring) == []
    arp = bytes(6) + bytes(6) + b"\x08\x06" + bytes(28)
    assert net.edges[A].pipe.process(HOST_PORT, arp) == []
    stats = net.stats(A)
    assert stats["ipv4_forwarded"] == 1 and stats["dropped_other"] == 3


def test_udp_to_other_ports_is_routed_not_aggregated() -> None:
    net = group_net()
    net.install_route(A, bytes((10, 0, 2, 0)), 24, PREV_PORT, bytes(6))
    frame = bytearray(innet_frame(msg(A, 0), A))
    frame[36:38] = (5001).to_bytes(2, "big")  # iperf's port, not innet's
    frame[30:34] = host_ip(C)
    frame[24:26] = b"\x00\x00"
    frame[24:26] = internet_checksum(bytes(frame[14:34])).to_bytes(2, "big")
    ((port, out),) = net.edges[A].pipe.process(HOST_PORT, bytes(frame))
    assert port == PREV_PORT and out[34:] == bytes(frame[34:])
    assert net.stats(A)["ipv4_forwarded"] == 1 and net.stats(A)["contribution"] == 0
