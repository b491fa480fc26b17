"""innet.p4 on p4switch against frames nobody should send: random bytes, scapy's `fuzz()`, and
crafted innet frames with every header value and every way to cut or mislabel one.

Each example is a fresh triangle (tests/unit/dataplane/harness.py) with a round installed: a
merging group of A, B and C, a relay group, a group of A and C through B as transit, and an IPv4
route from A to B's hosts. Its frames enter at any port of any edge, and every copy a switch
sends on is carried on. At every edge a frame reaches:

- the switch does not fail (p4switch counts its own failures in `Pipeline.counts`);
- the frame is accounted for: it counts in one cell of `stats` at most among the outcome cells
  below (a merge that completes a slot adds `completed`, a resend `result_resent`, a NACK no
  tree takes `dropped_other`), and when in none it is forwarded; each cell it counts in counts
  its packet once and its bytes;
- what docs/protocol.md calls malformed (an innet frame not of innet's one size, or whose
  lengths say otherwise, included) counts `malformed` alone and leaves no trace: no copy, no
  slot touched; nothing else counts `malformed`;
- a slot changes only with a counted contribution, which sets the source's bit in the slot of
  its chunk; a completed slot sends its result to the island's hosts.

After the frames, once the stale bound has passed (a fake clock), the next round is installed
and every island contributes every chunk of a whole pool: each island's hosts get the exact sum
of every chunk, once, whatever slots the frames left busy (a stray costs a wait, never a
permanent conflict). Then IPv4 is still routed.

CI runs a bounded number of derandomized examples; `make fuzz` (INNET_FUZZ=long) runs twenty
times as many, new ones each time.
"""

from __future__ import annotations

import random
import struct
from collections import deque

import pytest
from hypothesis import given
from hypothesis import strategies as st
from scapy.layers.inet import IP, UDP
from scapy.layers.l2 import Ether
from scapy.packet import Packet, fuzz

from controller.rounds import STATS, STATS_COUNTER
from innet.checksum import internet_checksum
from innet.scapy_layer import Innet as InnetLayer
from tests.unit.dataplane.harness import (
    CONTRIBUTION,
    HOST_PORT,
    ISLANDS,
    LOCAL,
    NEXT_PORT,
    PREV_PORT,
    RESULT,
    STALE_US,
    WAN,
    A,
    B,
    C,
    Edge,
    FakeClock,
    Innet,
    N,
    Triangle,
    host_ip,
    host_mac,
    innet_frame,
    ipv4_frame,
    parse_delivered,
    peer,
)
from tests.unit.fuzz_profile import fuzz_settings

SLOTS = 4  # a small pool: fuzzed chunks collide with each other and with the round
JOB, ROUND, GROUP, RELAY_GROUP, TRANSIT_GROUP = 3, 9, 1, 2, 3
NEXT_ROUND = ROUND + 1  # installed after the fuzz: no fuzzed frame can name it
INSTALLED = [(JOB, ROUND, g) for g in (GROUP, RELAY_GROUP, TRANSIT_GROUP)]
B_PREFIX = bytes((10, 0, B, 0))
PORTS = (HOST_PORT, NEXT_PORT, PREV_PORT)
MAX_HOPS = 64  # the trees and routes installed carry a frame over four edges at most
INNET_PORT, PLAIN_PORT = 0x4E49, 20043

# Cells of `stats` of which a frame counts in one at most (any others are counted beside one).
OUTCOMES = {
    "malformed",
    "unknown",
    "not_member",
    "ipv4_forwarded",
    "contribution",
    "duplicate",
    "slot_conflict",
    "nack_or_recover",
    "replicated",
    "spoofed",
} & set(STATS)
SLOT_REGISTERS = tuple(
    f"InnetIngress.{name}"
    for name in (
        "slot_ctx",
        "slot_chunk",
        "slot_seen",
        "slot_expected",
        *map("lane{:02d}".format, range(N)),
    )
)

U8, U16, U32 = (st.integers(0, 2**bits - 1) for bits in (8, 16, 32))
INT32 = st.integers(-(2**31), 2**31 - 1)


# --- the network ------------------------------------------------------------------------------


def network() -> Triangle:
    net = Triangle(SLOTS)
    net.install_group(JOB, ROUND, GROUP, ISLANDS)
    net.install_group(JOB, ROUND, RELAY_GROUP, (A, B), merge=False)
    for island in (A, C):
        net.install_member(island, JOB, ROUND, TRANSIT_GROUP, (A, C))
    net.install_transit(B, JOB, ROUND, TRANSIT_GROUP)
    net.install_tree(A, JOB, ROUND, TRANSIT_GROUP, A, [NEXT_PORT])  # A -> B -> C
    net.install_tree(B, JOB, ROUND, TRANSIT_GROUP, A, [NEXT_PORT])
    net.install_tree(C, JOB, ROUND, TRANSIT_GROUP, C, [NEXT_PORT])  # C -> A
    for island, port, streams in [
        (A, HOST_PORT, A),
        (A, PREV_PORT, C),
        (B, PREV_PORT, A),
        (C, HOST_PORT, C),
        (C, PREV_PORT, A),
    ]:
        net.install_sources(island, JOB, ROUND, TRANSIT_GROUP, port, [streams])
    net.install_route(A, B_PREFIX, 24, NEXT_PORT, host_mac(B))
    net.install_route(B, B_PREFIX, 24, HOST_PORT, host_mac(B))
    return net


def cell(chunk: int) -> int:
    """The slot of a chunk (docs/protocol.md, "Slots")."""
    return chunk % (2 * SLOTS)


def slot_state(edge: Edge) -> list[list[int]]:
    return [edge.switch.register(name) for name in SLOT_REGISTERS]


def must_be_malformed(frame: bytes) -> bool:
    """Whether innet.p4 must count `frame` malformed (docs/protocol.md, "Ingress", 1)."""
    if len(frame) < 14:
        return True
    if frame[12:14] != b"\x08\x00":
        return False  # not IPv4
    if len(frame) < 34:
        return True
    ip = frame[14:34]
    version, ihl = ip[0] >> 4, ip[0] & 15
    if (ihl == 5 and internet_checksum(ip) != 0) or version != 4:
        return True
    if ihl != 5 or struct.unpack_from("!H", ip, 6)[0] & 0x1FFF or ip[9] != 17:
        return False  # options, a fragment or not UDP: not innet
    if len(frame) < 42:
        return True
    if struct.unpack_from("!H", frame, 36)[0] != INNET_PORT:
        return False
    if len(frame) != 186 or struct.unpack_from("!H", ip, 2)[0] != 172:
        return True  # innet has one size
    vt, src = frame[42], frame[49]
    udp_len = struct.unpack_from("!H", frame, 38)[0]
    return udp_len != 152 or vt >> 4 != 1 or vt & 15 not in (1, 3, 4) or src >= 32


def checked(edge: Edge, port: int, frame: bytes) -> list[tuple[int, bytes]]:
    """Run one frame through one edge and check how it was accounted for."""
    packets, nbytes = edge.counter(STATS_COUNTER)
    before = slot_state(edge)
    out = edge.pipe.process(port, frame)
    assert "drop.internal_error" not in edge.switch.counts()
    packets_after, nbytes_after = edge.counter(STATS_COUNTER)
    counted = set()
    for i, name in enumerate(STATS):
        added = packets_after[i] - packets[i]
        assert added in (0, 1), (name, added)
        assert nbytes_after[i] - nbytes[i] == added * len(frame), name
        if added:
            counted.add(name)
    assert len(counted & OUTCOMES) <= 1, counted
    assert counted or out, "a frame neither counted nor forwarded"
    assert not ("dropped_other" in counted and out), counted
    assert "completed" not in counted or "contribution" in counted
    assert "result_resent" not in counted or "duplicate" in counted
    assert "stale" not in counted or "contribution" in counted  # a stale slot claimed over
    assert ("malformed" in counted) == must_be_malformed(frame), counted
    if "malformed" in counted:
        assert counted == {"malformed"} and out == []
    after = slot_state(edge)
    if after != before:
        assert "contribution" in counted, counted
    if "contribution" in counted:
        chunk, src = struct.unpack_from("!I", frame, 50)[0], frame[49]
        assert frame[42] == 0x10 | CONTRIBUTION and src < 32
        assert after[SLOT_REGISTERS.index("InnetIngress.slot_seen")][cell(chunk)] & (1 << src)
    if "completed" in counted:
        results = [parse_delivered(f).msg for p, f in out if p == HOST_PORT]
        assert [m.type for m in results] == [RESULT]
    return out


def carry(net: Triangle, island: int, port: int, frame: bytes) -> None:
    """Inject `frame` at `island`'s `port` and carry every copy, as Triangle.send does."""
    queue = deque([(island, port, frame)])
    hops = 0
    while queue:
        at, in_port, data = queue.popleft()
        hops += 1
        assert hops <= MAX_HOPS, "copies beyond what the trees and routes can make"
        for out_port, out in checked(net.edges[at], in_port, data):
            if out_port == HOST_PORT:
                net.hosts[at].append(out)
            else:
                queue.append((*peer(at, out_port), out))


# --- frames -----------------------------------------------------------------------------------


def dotted(address: bytes) -> str:
    return ".".join(map(str, address))


def envelope(island: int) -> tuple[dict[str, object], dict[str, object], dict[str, object]]:
    """Ethernet, IPv4 and UDP fields of a frame from island's host (addresses given: scapy
    would otherwise resolve them on this machine)."""
    eth: dict[str, object] = {"src": host_mac(island).hex(":"), "dst": "02:00:00:00:00:fe"}
    ip: dict[str, object] = {"src": dotted(host_ip(island)), "dst": "10.0.255.254"}
    return eth, ip, {"chksum": 0}


CHUNKS = st.one_of(
    st.sampled_from(
        [0, 1, SLOTS - 1, SLOTS, 2 * SLOTS - 1, 2 * SLOTS, 2**31 - 1, 2**31, 2**32 - 2, 2**32 - 1]
    ),
    U32,
)


@st.composite
def headers(draw: st.DrawFn, island: int) -> Packet:
    """An innet header from island's host to an installed group or any other, valid or with
    one field anything."""
    ctx = draw(st.sampled_from([*INSTALLED, *INSTALLED, None]))
    job, rnd, group = ctx or draw(st.tuples(U16, U16, U8))
    fields = {
        "version": 1,
        "type": draw(st.sampled_from([CONTRIBUTION, CONTRIBUTION, 3, 4])),
        "flags": draw(st.one_of(st.sampled_from([WAN | LOCAL, WAN, LOCAL, WAN | 8, 6]), U8)),
        "src": draw(st.sampled_from([island, island, *ISLANDS])),
    }
    wrong = draw(st.sampled_from(["none"] * 4 + list(fields)))
    if wrong != "none":
        fields[wrong] = draw(st.integers(0, 15 if wrong in ("version", "type") else 255))
    return InnetLayer(
        **fields,
        job=job,
        round=rnd,
        group=group,
        chunk=draw(CHUNKS),
        bitmap=draw(st.one_of(st.just(0), U32)),
        values=draw(st.one_of(st.just([1] * N), st.lists(INT32, min_size=N, max_size=N))),
    )


# One thing made wrong in a frame: (layer, field, values), or a cut or a tail added.
MUTATIONS: dict[str, tuple[str, str, st.SearchStrategy[int]] | None] = {
    "none": None,
    "truncate": None,
    "extend": None,
    "ip_len": ("ip", "len", U16),
    "udp_len": ("udp", "len", U16),
    "ip_checksum": ("ip", "chksum", U16),
    "ip_version": ("ip", "version", st.integers(0, 15)),
    "ihl": ("ip", "ihl", st.integers(0, 15)),
    "fragment": ("ip", "frag", st.integers(1, 8191)),
    "protocol": ("ip", "proto", U8),
    "port": ("udp", "dport", st.sampled_from([PLAIN_PORT, 0])),
    "ethertype": ("eth", "type", st.sampled_from([0x0806, 0x86DD, 0x8100, 0])),
    "ttl": ("ip", "ttl", st.sampled_from([0, 1, 255])),
}


@st.composite
def crafted(draw: st.DrawFn, island: int = A) -> bytes:
    """An innet frame from island's host, its header anything, then at most one thing made
    wrong."""
    eth, ip, udp = envelope(island)
    mutation = draw(st.sampled_from(["none"] * 12 + list(MUTATIONS)))
    field = MUTATIONS[mutation]
    if field is not None:
        layer, name, values = field
        {"eth": eth, "ip": ip, "udp": udp}[layer][name] = draw(values)
    frame = bytes(Ether(**eth) / IP(**ip) / UDP(**udp) / draw(headers(island)))
    if mutation == "truncate":
        frame = frame[: draw(st.integers(0, len(frame) - 1))]
    if mutation == "extend":
        frame += draw(st.binary(min_size=1, max_size=64))
    return frame


def _scapy_shapes() -> list[Packet]:
    eth, ip, _ = envelope(A)
    fuzzed_ip = fuzz(IP(src=ip["src"], version=4, ihl=5, frag=0))
    installed = fuzz(InnetLayer(job=JOB, round=ROUND, group=GROUP))
    return [
        fuzz(Ether(**eth) / IP(src=ip["src"]) / UDP() / InnetLayer()),
        Ether(**eth) / IP(**ip) / UDP() / fuzz(InnetLayer()),
        Ether(**eth) / IP(**ip) / UDP() / fuzz(InnetLayer(version=1, job=JOB, round=ROUND)),
        Ether(**eth) / fuzzed_ip / fuzz(UDP(dport=INNET_PORT)) / installed,
    ]


SCAPY_SHAPES = _scapy_shapes()


@st.composite
def scapy_fuzzed(draw: st.DrawFn) -> bytes:
    """A frame scapy's fuzz() draws (every field it may randomise), from a seed Hypothesis draws."""
    shape = draw(st.sampled_from(SCAPY_SHAPES))
    seed = draw(U32)
    saved = random.getstate()
    random.seed(seed)
    try:
        return bytes(shape)
    finally:
        random.setstate(saved)


@st.composite
def arrivals(draw: st.DrawFn) -> tuple[int, int, bytes]:
    """(island, port, frame): a frame arriving at any port of any edge, or a host's genuine
    contribution to the installed round."""
    if draw(st.integers(0, 4)) == 0:
        island = draw(st.sampled_from(ISLANDS))
        msg = Innet(CONTRIBUTION, WAN | LOCAL, JOB, ROUND, GROUP, island, draw(CHUNKS), (7,) * N)
        return island, HOST_PORT, innet_frame(msg, island)
    island, port = draw(st.sampled_from(ISLANDS)), draw(st.sampled_from([HOST_PORT, *PORTS]))
    kinds = [st.binary(max_size=256), scapy_fuzzed(), crafted(island), crafted(island)]
    frame = draw(st.sampled_from(kinds).flatmap(lambda kind: kind))
    return island, port, frame


# --- the tests --------------------------------------------------------------------------------


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> FakeClock:
    """The switches' clock, moved on by hand (installed before any network is built)."""
    return FakeClock().install(monkeypatch)


def lanes(island: int, chunk: int) -> tuple[int, ...]:
    return tuple((island + 1) * (lane + 1) + chunk for lane in range(N))


def summed(chunk: int) -> tuple[int, ...]:
    return tuple(map(sum, zip(*(lanes(i, chunk) for i in ISLANDS), strict=True)))


def the_next_round_completes(net: Triangle, clock: FakeClock) -> None:
    """Past the stale bound, every island contributes every chunk of a pool to a round
    installed now: each island's hosts get each chunk's exact sum, once."""
    clock.advance(STALE_US / 1e6 * 1.01)  # a slot the frames left incomplete may be claimed
    net.install_group(JOB, NEXT_ROUND, GROUP, ISLANDS)
    for island in ISLANDS:
        net.take(island)
    chunks = range(2 * SLOTS)
    for chunk in chunks:
        for island in ISLANDS:
            msg = Innet(
                CONTRIBUTION,
                WAN | LOCAL,
                JOB,
                NEXT_ROUND,
                GROUP,
                island,
                chunk,
                lanes(island, chunk),
            )
            carry(net, island, HOST_PORT, innet_frame(msg, island))
    for island in ISLANDS:
        got = [d.msg for d in net.take(island)]
        assert all(m.round == NEXT_ROUND and m.type == RESULT and m.bitmap == 0b111 for m in got)
        for m in got:
            assert m.values == tuple(
                sum(v) for v in zip(*(lanes(i, m.chunk) for i in ISLANDS), strict=True)
            )
        assert sorted(m.chunk for m in got) == list(chunks), island


def ipv4_is_routed(net: Triangle) -> None:
    net.hosts[B].clear()
    payload = struct.pack("!HHHH", 5000, 5001, 8, 0)
    carry(net, A, HOST_PORT, ipv4_frame(host_ip(A), bytes((10, 0, B, 1)), 17, payload))
    (frame,) = net.hosts[B][-1:]
    assert frame[30:34] == bytes((10, 0, B, 1)) and frame[42:] == b""


@fuzz_settings(150)
@given(frames=st.lists(arrivals(), min_size=1, max_size=10))
def test_fuzzed_frames_are_accounted_for_and_the_next_round_completes(
    frames: list[tuple[int, int, bytes]], clock: FakeClock
) -> None:
    net = network()
    for island, port, frame in frames:
        carry(net, island, port, frame)
    the_next_round_completes(net, clock)
    ipv4_is_routed(net)


@fuzz_settings(50)
@given(frame=crafted())
def test_a_crafted_frame_is_accounted_for_at_every_port(frame: bytes) -> None:
    for island in ISLANDS:
        for port in PORTS:
            net = network()
            carry(net, island, port, frame)


def test_every_header_value_of_an_installed_group_is_accounted_for(clock: FakeClock) -> None:
    """Every version and type with a few flags, and every flags value with each type a host
    may send, sources up to 33: on A's host port, one switch keeping its slots throughout."""
    net = network()
    eth, ip, udp = envelope(A)
    header = InnetLayer(job=JOB, round=ROUND, group=GROUP)
    base = bytearray(bytes(Ether(**eth) / IP(**ip) / UDP(**udp) / header))
    cases = [(vt, flags) for vt in range(256) for flags in (0, WAN, LOCAL, WAN | LOCAL)]
    cases += [(0x10 | kind, flags) for kind in (CONTRIBUTION, 3, 4) for flags in range(256)]
    valid = 0
    for n, (vt, flags) in enumerate(cases):
        src = n % 34
        base[42], base[43], base[49] = vt, flags, src
        base[50:54] = struct.pack("!I", n)
        carry(net, A, HOST_PORT, bytes(base))
        valid += vt in (0x11, 0x13, 0x14) and src < 32
    assert net.stats(A)["malformed"] == len(cases) - valid
    the_next_round_completes(net, clock)
