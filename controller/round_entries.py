"""What innet.p4 holds for one round, per edge switch, by P4Info names (docs/protocol.md).

For every group of the round: `membership` at each member (`member`, or `relay` for the
`multicast` network) and at every other switch on one of the group's trees (`transit`); `tree`
at every switch of a member's tree that has children; and `port_sources`, the port -> island
map that lets an edge refuse a contribution claiming another island's `src`:

    >>> from controller.planner.schedule import Round
    >>> from topo.loader import default_wan
    >>> wan = default_wan()
    >>> r7 = round_entries(wan, Round.of([[0, 1, 2], [3, 4, 5], [6, 7, 8]]), job=1, number=7,
    ...                    hosts_per_island=2)
    >>> sources = {dict(t.match)["standard_metadata.ingress_port"]: dict(t.params)
    ...            for t in r7[0].tables if t.table == SOURCES}  # Tokyo's edge, by port
    >>> [(port, p["streams"], p["replays"]) for port, p in sources.items()]  # hosts, then WAN
    [(1, 1, 6), (2, 1, 6), (3, 2, 0), (4, 4, 0)]

(Tokyo's hosts speak for Tokyo and replay Singapore's and Hong Kong's contributions; port 3
brings Singapore's stream, port 4 Hong Kong's.)

A member's slots are claimed over once they stay incomplete past `stale_bound_us`: `stale_spans`
times the group's span (the largest one-way delay between two members), and at least
`stale_floor_s` seconds. Multicast group ids encode their port set: id = 2 * mask + h, where bit
k of mask is the link to the k-th neighbour and h = 1 adds every host port (replica id 1; WAN
replicas have id 0), so the island's local group is id 1.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from controller.exceptions import RoundEntriesError
from controller.p4rt.schema import Match
from controller.planner.schedule import Round
from innet.vocabulary import NetworkMode
from topo.siteplan import MAX_ISLANDS, host_ports, wan_port
from topo.wan import Wan

HOST_RID, WAN_RID = 1, 0
LOCAL_GRP = 1
MAX_NEIGHBOURS = 15  # 2 * (2**15 - 1) + 1 is the largest group id below 2**16

MEMBERSHIP, TREE = "InnetIngress.membership", "InnetIngress.tree"
SOURCES = "InnetIngress.port_sources"
# what a member's edge is told per network mode (None: nothing per round)
NETWORK_ACTIONS = {
    NetworkMode.INNA: "InnetIngress.member",
    NetworkMode.MULTICAST: "InnetIngress.relay",
    NetworkMode.PLAIN: None,
}

# An incomplete slot is claimed over after this many group spans, and never sooner than the
# floor: long enough for a leader's resends, NACK and healing (docs/protocol.md, "Stale slots").
STALE_SPANS = 8.0
STALE_FLOOR_S = 2.0
MAX_STALE_US = (1 << 32) - 1  # `member`'s stale_us is 32 bits wide (71 minutes)


@dataclass(frozen=True)
class TableWrite:
    """One table entry, by P4Info names."""

    table: str
    match: tuple[tuple[str, Match], ...]
    action: str
    params: tuple[tuple[str, int | str], ...] = ()


@dataclass(frozen=True)
class GroupWrite:
    """One multicast group: (egress port, replica id) pairs."""

    group_id: int
    replicas: tuple[tuple[int, int], ...]


@dataclass(frozen=True)
class SwitchEntries:
    tables: tuple[TableWrite, ...] = ()
    groups: tuple[GroupWrite, ...] = ()


Entries = Mapping[int, SwitchEntries]  # city index -> what its edge holds


def group_id(wan: Wan, u: int, children: Iterable[int], with_hosts: bool) -> int:
    """The multicast group of u's edge replicating to these neighbours (and its hosts)."""
    neighbours = wan.neighbours(u)
    if len(neighbours) > MAX_NEIGHBOURS:
        raise RoundEntriesError(
            f"{wan.names[u]} has {len(neighbours)} links; group ids encode at most {MAX_NEIGHBOURS}"
        )
    mask = sum(1 << neighbours.index(v) for v in set(children))
    return 2 * mask + int(with_hosts)


def group_entry(wan: Wan, u: int, gid: int, hosts_per_island: int) -> GroupWrite:
    """The replicas a group id stands for at u's edge (WAN ports first, ascending)."""
    neighbours = wan.neighbours(u)
    mask, with_hosts = gid >> 1, gid & 1
    wan_ports = [
        (wan_port(wan, u, v, hosts_per_island), WAN_RID)
        for k, v in enumerate(neighbours)
        if mask >> k & 1
    ]
    hosts = [(p, HOST_RID) for p in host_ports(hosts_per_island)] if with_hosts else []
    return GroupWrite(gid, tuple(wan_ports + hosts))


def stale_bound_us(
    wan: Wan,
    members: Sequence[int],
    spans: float = STALE_SPANS,
    floor_s: float = STALE_FLOOR_S,
) -> int:
    """How long (microseconds) a slot the group claims may stay incomplete before another chunk
    may claim it: `spans` times the group's span, at least `floor_s`."""
    if not (math.isfinite(spans) and spans >= 1.0):
        raise RoundEntriesError(f"stale_spans must be a finite number >= 1, got {spans!r}")
    if not (math.isfinite(floor_s) and floor_s > 0.0):
        raise RoundEntriesError(f"stale_floor_s must be a finite number > 0, got {floor_s!r}")
    span = max((float(wan.delay[i, j]) for i in members for j in members), default=0.0)
    bound = round(1e6 * max(floor_s, spans * span))
    if bound > MAX_STALE_US:
        raise RoundEntriesError(
            f"a stale bound of {bound / 1e6:g} s does not fit member's 32-bit stale_us "
            f"(at most {MAX_STALE_US / 1e6:g} s): lower stale_spans or stale_floor_s"
        )
    return bound


def _check(wan: Wan, rnd: Round, job: int, number: int) -> None:
    if wan.n > MAX_ISLANDS:
        raise RoundEntriesError(f"innet carries at most {MAX_ISLANDS} islands, the WAN has {wan.n}")
    if not 0 <= job < 1 << 16 or not 0 <= number < 1 << 16:
        raise RoundEntriesError(f"job {job} and round {number} must fit in 16 bits")
    if len(rnd.groups) > 256:
        raise RoundEntriesError(f"a round has at most 256 groups, this one {len(rnd.groups)}")
    rnd.check(wan.n)


class _Plan:
    """The tables and groups of one round, gathered per edge."""

    def __init__(self, wan: Wan, hosts_per_island: int) -> None:
        self.wan, self.w = wan, hosts_per_island
        self.tables: dict[int, list[TableWrite]] = {}
        self.groups: dict[int, dict[int, GroupWrite]] = {}

    def table(self, u: int, entry: TableWrite) -> None:
        self.tables.setdefault(u, []).append(entry)

    def group(self, u: int, gid: int) -> None:
        self.groups.setdefault(u, {})[gid] = group_entry(self.wan, u, gid, self.w)

    def entries(self) -> dict[int, SwitchEntries]:
        return {
            u: SwitchEntries(
                tuple(self.tables[u]),
                tuple(sorted(self.groups.get(u, {}).values(), key=lambda e: e.group_id)),
            )
            for u in sorted(self.tables)
        }


def _sources(
    wan: Wan,
    members: Sequence[int],
    trees: Sequence[tuple[int, frozenset[tuple[int, int]]]],
    w: int,
    merging: bool,
) -> dict[int, dict[int, tuple[int, int]]]:
    """Per switch and ingress port: (streams, replays) bitmaps. A member's stream enters at its
    own edge from its host ports and at every other switch of its tree from the tree parent; at
    a merging member's host ports the leader may also replay the other members' contributions."""
    expected = sum(1 << m for m in members)
    out: dict[int, dict[int, tuple[int, int]]] = {}

    def allow(u: int, port: int, streams: int, replays: int) -> None:
        s, r = out.setdefault(u, {}).get(port, (0, 0))
        out[u][port] = (s | streams, r | replays)

    for src, edges in trees:
        for port in host_ports(w):
            allow(src, port, 1 << src, expected & ~(1 << src) if merging else 0)
        for parent, child in edges:
            allow(child, wan_port(wan, child, parent, w), 1 << src, 0)
    return out


def round_entries(
    wan: Wan,
    rnd: Round,
    *,
    job: int,
    number: int,
    hosts_per_island: int,
    network: NetworkMode = NetworkMode.INNA,
    stale_spans: float = STALE_SPANS,
    stale_floor_s: float = STALE_FLOOR_S,
) -> dict[int, SwitchEntries]:
    """Membership, transit, tree and port-source entries of one round, with the groups they use,
    per edge.

    `network` says what the edges do (docs/protocol.md): `inna` merges at the members' edges
    (`member`), `multicast` only replicates (`relay`, the same trees), and `plain` installs
    nothing: its hosts send to each other over routed IPv4. `stale_spans` and `stale_floor_s`
    set `member`'s stale_us (`stale_bound_us`)."""
    if network not in NETWORK_ACTIONS:
        raise RoundEntriesError(f"unknown network {network!r}; known: {', '.join(NETWORK_ACTIONS)}")
    action = NETWORK_ACTIONS[network]
    if action is None:
        return {}
    _check(wan, rnd, job, number)
    merging = network == NetworkMode.INNA
    plan = _Plan(wan, hosts_per_island)
    for g, members in enumerate(rnd.groups):
        key = (("hdr.innet.job", job), ("hdr.innet.round", number), ("hdr.innet.group", g))
        expected = sum(1 << m for m in members)
        on_tree: set[int] = set()
        trees = []
        for src in members:
            edges = wan.tree(src, [m for m in members if m != src])
            on_tree.update(x for edge in edges for x in edge)
            trees.append((src, edges))
        stale = stale_bound_us(wan, members, stale_spans, stale_floor_s)
        for u in members:
            params: tuple[tuple[str, int | str], ...] = (
                ("expected", expected),
                ("my_bit", 1 << u),
                ("local_grp", LOCAL_GRP),
                *((("stale_us", stale),) if merging else ()),
            )
            plan.table(u, TableWrite(MEMBERSHIP, key, action, params))
            plan.group(u, LOCAL_GRP)
        for u in sorted(on_tree - set(members)):
            plan.table(u, TableWrite(MEMBERSHIP, key, "InnetIngress.transit"))
        for u, ports in sorted(_sources(wan, members, trees, hosts_per_island, merging).items()):
            for port, (streams, replays) in sorted(ports.items()):
                match = (*key, ("standard_metadata.ingress_port", port))
                bits = (("streams", streams), ("replays", replays))
                plan.table(u, TableWrite(SOURCES, match, "InnetIngress.sources", bits))
        for src, edges in trees:
            children: dict[int, list[int]] = {}
            for parent, child in edges:
                children.setdefault(parent, []).append(child)
            for u in sorted(children):
                wan_grp = group_id(wan, u, children[u], with_hosts=False)
                local = group_id(wan, u, children[u], with_hosts=True) if u in members else wan_grp
                for gid in {wan_grp, local}:
                    plan.group(u, gid)
                replicate = (("wan_grp", wan_grp), ("wan_local_grp", local))
                plan.table(
                    u,
                    TableWrite(
                        TREE, (*key, ("hdr.innet.src", src)), "InnetIngress.replicate", replicate
                    ),
                )
    return plan.entries()
