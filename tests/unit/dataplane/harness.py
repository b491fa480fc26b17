"""Three innet edge switches in one process: p4switch pipelines of p4src/innet.p4 on a triangle.

Islands A, B, C have ids 0, 1, 2. Every edge numbers its ports the same way:

    port 1  the island's host
    port 2  WAN link to the next island, (i + 1) % 3, where it arrives on port 3
    port 3  WAN link to the previous island, (i + 2) % 3, where it arrives on port 2

so A:2-B:3, B:2-C:3 and C:2-A:3. `Triangle` installs what the controller would (membership,
trees, host addresses, multicast groups), injects a host's frame at its edge and runs the network
to quiescence with a FIFO event queue: WAN ports feed the peer edge's ingress, host ports are
collected per island. A `lose` predicate drops chosen WAN frames in flight.

Each edge is a `p4switch.InProcessSwitch`, programmed with P4Runtime updates. `Pipelines` says
which back end and clock the Triangles built from now on run on: `FakeClock` stands in for the
clock p4switch stamps `ingress_global_timestamp` from, so that tests move time on by hand
(install it before building the Triangle).
"""

from __future__ import annotations

import functools
import struct
from collections import deque
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar

import pytest
from p4switch import CompiledProgram, InProcessSwitch, PacketProcessor, compile_file

from controller.p4rt.schema import Lpm, Match, Schema, insert
from controller.rounds import STATS, STATS_COUNTER
from innet.checksum import internet_checksum
from innet.packetformat import PacketFormat

P4_SOURCE = Path(__file__).resolve().parents[3] / "p4src" / "innet.p4"

A, B, C = 0, 1, 2
ISLANDS = (A, B, C)
HOST_PORT, NEXT_PORT, PREV_PORT = 1, 2, 3
HOST_RID, WAN_RID = 1, 0
LOCAL_GRP = 1  # every edge: the island's host ports, replica id 1
STALE_US = 60_000_000  # a member's slots are claimed over after 60 s incomplete, by default

PACKET_FORMAT = PacketFormat()  # innet.p4's default, which `compiled` builds: 32 lanes
UDP_PORT = PacketFormat.UDP_PORT
N = PACKET_FORMAT.lanes
CONTRIBUTION, RESULT, NACK, RECOVER, BOUNCE = 1, 2, 3, 4, 5
WAN, LOCAL, RETRANSMIT, REMOTE = 0x01, 0x02, 0x04, 0x08


_ETH = struct.Struct("!6s6sH")
_IPV4 = struct.Struct("!BBHHHBBH4s4s")
_UDP = struct.Struct("!HHHH")
_INNET = PacketFormat.HEADER
_VALUES = PACKET_FORMAT.values
FRAME_BYTES = PACKET_FORMAT.frame_bytes  # 186


@functools.cache
def compiled(slots: int) -> CompiledProgram:
    """innet.p4 compiled with SLOTS = `slots` and PACKET_FORMAT's defines (once per value in a
    test session)."""
    return compile_file(P4_SOURCE, defines={**PACKET_FORMAT.defines(), "SLOTS": str(slots)})


class Pipelines:
    """How the Triangles built from now on run innet.p4: on which back end, and on which clock
    (nanoseconds; None: the real one). Tests change them with monkeypatch, so they come back."""

    backend: ClassVar[str] = "python"
    clock: ClassVar[Callable[[], int] | None] = None

    @staticmethod
    def run_on(monkeypatch: pytest.MonkeyPatch, clock: Callable[[], int]) -> None:
        monkeypatch.setattr(Pipelines, "clock", clock)


class FakeClock:
    """The clock of p4switch's pipelines while installed: it moves only when told."""

    def __init__(self) -> None:
        self.ns = 1_000_000_000

    def monotonic_ns(self) -> int:
        return self.ns

    def advance(self, seconds: float) -> None:
        self.ns += round(seconds * 1e9)

    def install(self, monkeypatch: pytest.MonkeyPatch) -> FakeClock:
        """Make pipelines built from now on stamp packets with this clock."""
        Pipelines.run_on(monkeypatch, self.monotonic_ns)
        return self


def host_mac(island: int) -> bytes:
    return bytes((2, 0, 0, 0, island, 1))


def host_ip(island: int) -> bytes:
    return bytes((10, 0, island, 1))


def gateway_ip(island: int) -> bytes:
    return bytes((10, 0, island, 254))


def peer(island: int, port: int) -> tuple[int, int]:
    """The (island, ingress port) at the far end of a WAN port."""
    if port == NEXT_PORT:
        return (island + 1) % 3, PREV_PORT
    if port == PREV_PORT:
        return (island + 2) % 3, NEXT_PORT
    raise ValueError(f"port {port} of island {island} is not a WAN port")


def port_toward(island: int, other: int) -> int:
    return NEXT_PORT if other == (island + 1) % 3 else PREV_PORT


# --- frames ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Innet:
    """An innet message: the 16-byte header and its 32 values (Python ints, int32 range)."""

    type: int
    flags: int
    job: int
    round: int
    group: int
    src: int
    chunk: int
    values: tuple[int, ...] = (0,) * N
    bitmap: int = 0
    version: int = 1


def ipv4_frame(
    src: bytes, dst: bytes, protocol: int, payload: bytes, *, ttl: int = 64, dmac: bytes = b""
) -> bytes:
    header = _IPV4.pack(0x45, 0, 20 + len(payload), 1, 0, ttl, protocol, 0, src, dst)
    header = header[:10] + struct.pack("!H", internet_checksum(header)) + header[12:]
    eth = _ETH.pack(dmac or bytes(6), host_mac(src[2]), 0x0800)
    return eth + header + payload


def innet_frame(msg: Innet, island: int) -> bytes:
    """The frame island's host sends to its edge (UDP checksum 0, as IPv4 allows)."""
    body = _INNET.pack(
        msg.version << 4 | msg.type,
        msg.flags,
        msg.job,
        msg.round,
        msg.group,
        msg.src,
        msg.chunk,
        msg.bitmap,
    ) + _VALUES.pack(*msg.values)
    udp = _UDP.pack(UDP_PORT, UDP_PORT, _UDP.size + len(body), 0)
    return ipv4_frame(host_ip(island), bytes((10, 0, 255, 254)), 17, udp + body)


@dataclass(frozen=True)
class Delivered:
    """A frame as a host receives it: the addressing the egress rewrote, and the message."""

    eth_dst: bytes
    ip_src: bytes
    ip_dst: bytes
    ip_checksum_ok: bool
    udp_checksum: int
    msg: Innet


def parse_delivered(frame: bytes) -> Delivered:
    eth_dst = frame[:6]
    ip = frame[14:34]
    udp_checksum = _UDP.unpack_from(frame, 34)[3]
    vt, flags, job, rnd, grp, src, chunk, bitmap = _INNET.unpack_from(frame, 42)
    values = _VALUES.unpack_from(frame, 58)
    msg = Innet(vt & 15, flags, job, rnd, grp, src, chunk, values, bitmap, vt >> 4)
    return Delivered(eth_dst, ip[12:16], ip[16:20], internet_checksum(ip) == 0, udp_checksum, msg)


# --- the network -----------------------------------------------------------------------------


@dataclass(frozen=True)
class Hop:
    """A frame on a WAN link, as the `lose` predicate sees it."""

    island: int  # where it leaves
    port: int
    frame: bytes

    @property
    def to(self) -> int:
        return peer(self.island, self.port)[0]

    @property
    def msg(self) -> Innet:
        return parse_delivered(self.frame).msg


Replica = tuple[int, int]  # (egress port, replica id)


@dataclass
class Edge:
    """One island's edge: innet.p4 on an in-process p4switch, programmed over P4Runtime."""

    island: int
    switch: InProcessSwitch
    schema: Schema
    groups: dict[tuple[Replica, ...], int] = field(default_factory=dict)

    @property
    def pipe(self) -> PacketProcessor:
        return self.switch.pipeline

    def insert(
        self, table: str, key: Sequence[Match], action: str, args: Sequence[int] = ()
    ) -> None:
        """A table entry: `key` in the table's key order, `args` in the action's order."""
        fields = [m.name for m in self.schema.table(table).match_fields]
        params = [p.name for p in self.schema.action(action).params]
        entry = self.schema.table_entry(
            table,
            dict(zip(fields, key, strict=True)),
            action,
            dict(zip(params, args, strict=True)),
        )
        self.switch.write([insert(entry)])

    def multicast_group(self, replicas: Iterable[Replica]) -> int:
        """The id of a group with these replicas, created on first use (ids from 16 up)."""
        key = tuple(sorted(replicas))
        if key not in self.groups:
            self.groups[key] = 16 + len(self.groups)
            self.switch.write([insert(self.schema.multicast_group(self.groups[key], key))])
        return self.groups[key]

    def counter(self, name: str) -> tuple[list[int], list[int]]:
        """The packet and byte counts of counter `name`, index by index."""
        entities = self.switch.read([self.schema.counter_entry(name)])
        cells = sorted((e.counter_entry.index.index, e.counter_entry.data) for e in entities)
        return [d.packet_count for _, d in cells], [d.byte_count for _, d in cells]


class Triangle:
    """Three edges A, B, C; installs a round as a controller would, and carries frames."""

    def __init__(self, slots: int) -> None:
        program = compiled(slots)
        schema = Schema(program.p4info)
        self.slots = slots
        self.edges: list[Edge] = []
        self.hosts: dict[int, list[bytes]] = {i: [] for i in ISLANDS}
        self.lost: list[Hop] = []
        for island in ISLANDS:
            switch = InProcessSwitch(program, Pipelines.backend, clock=Pipelines.clock)
            edge = Edge(island, switch, schema)
            switch.write([insert(schema.multicast_group(LOCAL_GRP, [(HOST_PORT, HOST_RID)]))])
            to_host = (
                int.from_bytes(host_mac(island), "big"),
                int.from_bytes(host_ip(island), "big"),
                int.from_bytes(gateway_ip(island), "big"),
            )
            edge.insert("InnetEgress.host_port", (HOST_PORT,), "InnetEgress.to_host", to_host)
            self.edges.append(edge)

    # --- control plane

    def install_member(
        self,
        island: int,
        job: int,
        rnd: int,
        group: int,
        members: Sequence[int],
        merge: bool = True,
        stale_us: int = STALE_US,
    ) -> None:
        """`merge=False`: the `multicast` network's `relay` (replicate, never merge)."""
        expected = sum(1 << m for m in members)
        params = (expected, 1 << island, LOCAL_GRP)
        if merge:
            self._membership(island, job, rnd, group, "InnetIngress.member", (*params, stale_us))
        else:
            self._membership(island, job, rnd, group, "InnetIngress.relay", params)

    def install_sources(
        self,
        island: int,
        job: int,
        rnd: int,
        group: int,
        port: int,
        streams: Iterable[int],
        replays: Iterable[int] = (),
    ) -> None:
        """At `island`, the streams of `streams` may enter on `port`, and replays of `replays`."""
        bits = (sum(1 << i for i in streams), sum(1 << i for i in replays))
        self.edges[island].insert(
            "InnetIngress.port_sources", (job, rnd, group, port), "InnetIngress.sources", bits
        )

    def install_transit(self, island: int, job: int, rnd: int, group: int) -> None:
        self._membership(island, job, rnd, group, "InnetIngress.transit")

    def _membership(
        self, island: int, job: int, rnd: int, group: int, action: str, args: Sequence[int] = ()
    ) -> None:
        self.edges[island].insert("InnetIngress.membership", (job, rnd, group), action, args)

    def install_tree(
        self, island: int, job: int, rnd: int, group: int, src: int, wan_ports: Sequence[int]
    ) -> None:
        """At `island`, src's stream goes on out of `wan_ports` (replica id 0)."""
        edge = self.edges[island]
        wan = [(p, WAN_RID) for p in wan_ports]
        wan_grp = edge.multicast_group(wan)
        wan_local_grp = edge.multicast_group([*wan, (HOST_PORT, HOST_RID)])
        groups = (wan_grp, wan_local_grp)
        edge.insert("InnetIngress.tree", (job, rnd, group, src), "InnetIngress.replicate", groups)

    def install_group(
        self,
        job: int,
        rnd: int,
        group: int,
        members: Sequence[int],
        merge: bool = True,
        stale_us: int = STALE_US,
    ) -> None:
        """A group on the triangle: every member's tree is its direct links to the others, so
        each other member's stream enters on the port toward it; the own stream and (merging)
        the leader's replays enter on the host port."""
        for m in members:
            self.install_member(m, job, rnd, group, members, merge, stale_us)
            others = [o for o in members if o != m]
            self.install_tree(m, job, rnd, group, m, [port_toward(m, o) for o in others])
            self.install_sources(m, job, rnd, group, HOST_PORT, [m], others if merge else ())
            for o in others:
                self.install_sources(m, job, rnd, group, port_toward(m, o), [o])

    def install_route(
        self, island: int, prefix: bytes, length: int, port: int, dmac: bytes
    ) -> None:
        key = (Lpm(int.from_bytes(prefix, "big"), length),)
        args = (port, int.from_bytes(dmac, "big"))
        self.edges[island].insert("InnetIngress.ipv4_lpm", key, "InnetIngress.forward", args)

    # --- data plane

    def send(self, island: int, frame: bytes, lose: Callable[[Hop], bool] | None = None) -> None:
        """Inject `frame` from island's host and run the network until nothing moves."""
        queue: deque[tuple[int, int, bytes]] = deque([(island, HOST_PORT, frame)])
        while queue:
            at, port, data = queue.popleft()
            for out_port, out in self.edges[at].pipe.process(port, data):
                if out_port == HOST_PORT:
                    self.hosts[at].append(out)
                    continue
                hop = Hop(at, out_port, out)
                if lose is not None and lose(hop):
                    self.lost.append(hop)
                    continue
                queue.append((*peer(at, out_port), out))

    def contribute(
        self, island: int, msg: Innet, lose: Callable[[Hop], bool] | None = None
    ) -> None:
        self.send(island, innet_frame(msg, island), lose)

    def take(self, island: int) -> list[Delivered]:
        """The frames island's host received since the last call, parsed."""
        frames, self.hosts[island] = self.hosts[island], []
        return [parse_delivered(f) for f in frames]

    def stats(self, island: int) -> dict[str, int]:
        packets = self.edges[island].switch.counter(STATS_COUNTER)
        return {name: packets[i] for i, name in enumerate(STATS)}

    def register(self, island: int, name: str) -> list[int]:
        return self.edges[island].switch.register(f"InnetIngress.{name}")
