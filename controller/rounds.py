"""What the controller installs for innet.p4, and the driver that installs a schedule's rounds.

The pure part turns (WAN, round, job, round number, hosts) into entries per edge switch, by
name, following docs/protocol.md and docs/controller.md (the per-round entries are built in
controller/round_entries.py and re-exported here):

    >>> from topo.loader import default_wan
    >>> wan = default_wan()
    >>> base = base_entries(wan, Addressing.default(wan.n, hosts_per_island=2))  # once per switch
    >>> base[0].groups  # Tokyo's local group: its two host ports, replica id 1
    (GroupWrite(group_id=1, replicas=((1, 1), (2, 1))),)
    >>> r7 = round_entries(wan, Round.of([[0, 1, 2], [3, 4, 5], [6, 7, 8]]), job=1, number=7,
    ...                    hosts_per_island=2)
    >>> r7[0].tables[0].action  # Tokyo is in {Tokyo, Singapore, Hong Kong}
    'InnetIngress.member'
    >>> dict(r7[0].tables[0].params)  # slots stay ours at most 2 s incomplete (the floor)
    {'expected': 7, 'my_bit': 1, 'local_grp': 1, 'stale_us': 2000000}
    >>> changes = install_changes(r7, present=[base])  # {city: (Change, ...)}
    >>> [change.op for change in changes[0]]  # new multicast groups first, then 6 table entries
    ['insert', 'insert', 'insert', 'insert', 'insert', 'insert', 'insert', 'insert']

`to_updates(schema, changes[0])` makes them P4Runtime updates for city 0's edge.

Ports and addresses are the site plan's (topo/siteplan.py): the edge of city u has ports 1..W
for its W hosts, then port W+1+k for the link to its k-th neighbour in `wan.neighbours(u)`
(ascending city index). The island id in innet packets is the city index.

Multicast group ids encode their port set (`group_id`), so the island's local group is id 1
and two rounds that replicate to the same ports share a group. `RoundDriver` (the impure part)
installs and retires rounds on a Fabric; when a round is done is the experiment's business (the
leaders report it), not the switches'.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from p4.v1 import p4runtime_pb2

from controller.exceptions import RoundEntriesError
from controller.p4rt.fabric import Fabric
from controller.p4rt.schema import Lpm, Schema, delete, insert
from controller.planner.schedule import Round, Schedule
from controller.round_entries import HOST_RID as HOST_RID
from controller.round_entries import LOCAL_GRP as LOCAL_GRP
from controller.round_entries import MEMBERSHIP as MEMBERSHIP
from controller.round_entries import NETWORK_ACTIONS as NETWORK_ACTIONS
from controller.round_entries import SOURCES as SOURCES
from controller.round_entries import STALE_FLOOR_S as STALE_FLOOR_S
from controller.round_entries import STALE_SPANS as STALE_SPANS
from controller.round_entries import TREE as TREE
from controller.round_entries import WAN_RID as WAN_RID
from controller.round_entries import Entries as Entries
from controller.round_entries import GroupWrite as GroupWrite
from controller.round_entries import SwitchEntries as SwitchEntries
from controller.round_entries import TableWrite as TableWrite
from controller.round_entries import group_entry as group_entry
from controller.round_entries import group_id as group_id
from controller.round_entries import round_entries as round_entries
from controller.round_entries import stale_bound_us as stale_bound_us
from innet.vocabulary import NetworkMode
from topo.siteplan import (
    MAX_HOSTS_PER_ISLAND,
    MAX_SITES,
    gateway_ip,
    gateway_mac,
    host_ip,
    host_mac,
    host_ports,
    island_prefix,
    wan_port,
)
from topo.wan import Wan

# innet.p4's indexed statistics counter and the meaning of its indices (docs/protocol.md)
STATS_COUNTER = "InnetIngress.stats"
STATS = (
    "contribution",
    "completed",
    "duplicate",
    "slot_conflict",
    "malformed",
    "unknown",
    "not_member",
    "result_resent",
    "nack_or_recover",
    "ipv4_forwarded",
    "dropped_other",
    "replicated",
    "stale",
    "spoofed",
)

log = logging.getLogger(__name__)

HOST_PORT, IPV4_LPM = "InnetEgress.host_port", "InnetIngress.ipv4_lpm"


# --- entries by name ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Change:
    op: Literal["insert", "delete"]
    item: TableWrite | GroupWrite


# --- addresses and ports -----------------------------------------------------------------------


@dataclass(frozen=True)
class HostAddress:
    mac: str
    ip: str


@dataclass(frozen=True)
class Addressing:
    """Hosts of every island in port order, each edge's own address and MAC, island prefixes."""

    hosts: tuple[tuple[HostAddress, ...], ...]
    gateways: tuple[str, ...]  # the edge's address on its island's subnet
    edge_macs: tuple[str, ...]  # what a neighbouring edge puts as destination MAC
    prefixes: tuple[tuple[str, int], ...]  # each island's host prefix

    @classmethod
    def default(cls, n: int, hosts_per_island: int) -> Addressing:
        """The site plan's addresses (topo/siteplan.py) for n islands of `hosts_per_island`."""
        if not 1 <= hosts_per_island <= MAX_HOSTS_PER_ISLAND or not 1 <= n <= MAX_SITES:
            raise RoundEntriesError(f"no default addressing for {n} islands of {hosts_per_island}")
        hosts = tuple(
            tuple(
                HostAddress(host_mac(i, k), host_ip(i, k)) for k in range(1, hosts_per_island + 1)
            )
            for i in range(n)
        )
        return cls(
            hosts=hosts,
            gateways=tuple(gateway_ip(i) for i in range(n)),
            edge_macs=tuple(gateway_mac(i) for i in range(n)),
            prefixes=tuple(island_prefix(i) for i in range(n)),
        )

    @property
    def hosts_per_island(self) -> int:
        sizes = {len(h) for h in self.hosts}
        if len(sizes) != 1:
            raise RoundEntriesError(f"islands have different numbers of hosts: {sorted(sizes)}")
        return sizes.pop()


# --- plans -------------------------------------------------------------------------------------


def base_entries(wan: Wan, addressing: Addressing) -> dict[int, SwitchEntries]:
    """Once per edge: host_port per host, the local group, IPv4 routes to every island."""
    if len(addressing.hosts) != wan.n:
        raise RoundEntriesError(
            f"addressing covers {len(addressing.hosts)} islands, WAN has {wan.n}"
        )
    w = addressing.hosts_per_island
    entries = {}
    for u in range(wan.n):
        tables = [
            TableWrite(
                HOST_PORT,
                (("standard_metadata.egress_port", port),),
                "InnetEgress.to_host",
                (("mac", h.mac), ("ip", h.ip), ("gateway", addressing.gateways[u])),
            )
            for port, h in zip(host_ports(w), addressing.hosts[u], strict=True)
        ]
        for port, h in zip(host_ports(w), addressing.hosts[u], strict=True):
            tables.append(_route(Lpm(h.ip, 32), port, h.mac))
        for v in range(wan.n):
            if v != u:
                hop = wan.path(u, v)[1]
                prefix, length = addressing.prefixes[v]
                tables.append(
                    _route(Lpm(prefix, length), wan_port(wan, u, hop, w), addressing.edge_macs[hop])
                )
        entries[u] = SwitchEntries(tuple(tables), (group_entry(wan, u, LOCAL_GRP, w),))
    return entries


def _route(prefix: Lpm, port: int, dmac: str) -> TableWrite:
    return TableWrite(
        IPV4_LPM,
        (("hdr.ipv4.dstAddr", prefix),),
        "InnetIngress.forward",
        (("port", port), ("dmac", dmac)),
    )


def _groups_of(tables: Iterable[Entries], u: int) -> set[int]:
    return {e.group_id for entries in tables if u in entries for e in entries[u].groups}


Changes = dict[int, tuple[Change, ...]]  # city index -> changes of its edge, in order


def install_changes(entries: Entries, present: Iterable[Entries] = ()) -> Changes:
    """Inserts putting `entries` on top of the installed ones: new groups first, then tables."""
    present = list(present)
    out = {}
    for u, edge in entries.items():
        have = _groups_of(present, u)
        new_groups = [Change("insert", g) for g in edge.groups if g.group_id not in have]
        out[u] = (*new_groups, *(Change("insert", t) for t in edge.tables))
    return out


def retire_changes(entries: Entries, remaining: Iterable[Entries] = ()) -> Changes:
    """Deletes removing `entries`: its tables first, then the groups no remaining round uses."""
    remaining = list(remaining)
    out = {}
    for u, edge in entries.items():
        keep = _groups_of(remaining, u)
        old_groups = [Change("delete", g) for g in reversed(edge.groups) if g.group_id not in keep]
        out[u] = (*(Change("delete", t) for t in reversed(edge.tables)), *old_groups)
    return out


def to_updates(schema: Schema, changes: Iterable[Change]) -> list[p4runtime_pb2.Update]:
    """P4Runtime updates for changes, with ids and widths from the P4Info."""
    updates = []
    for change in changes:
        item = change.item
        if isinstance(item, GroupWrite):
            entity = schema.multicast_group(item.group_id, item.replicas)
        elif change.op == "insert":
            entity = schema.table_entry(
                item.table, dict(item.match), item.action, dict(item.params)
            )
        else:
            entity = schema.table_entry(item.table, dict(item.match))
        updates.append(insert(entity) if change.op == "insert" else delete(entity))
    return updates


# --- the driver --------------------------------------------------------------------------------


class RoundDriver:
    """Installs a schedule's rounds on a Fabric and retires them.

    Round `number` plays `schedule.round_at(number)`; innet packets carry `number % 2**16`.
    `switches[u]` is the fabric's name for city u's edge (default: the fabric's order).
    A member's slots are claimed over after `stale_spans` group spans incomplete, at least
    `stale_floor_s` (`round_entries`; docs/protocol.md, "Stale slots").
    """

    def __init__(
        self,
        fabric: Fabric,
        wan: Wan,
        schedule: Schedule,
        *,
        job: int,
        addressing: Addressing,
        switches: Sequence[str] | None = None,
        network: NetworkMode = NetworkMode.INNA,
        stale_spans: float = STALE_SPANS,
        stale_floor_s: float = STALE_FLOOR_S,
    ) -> None:
        stale_bound_us(wan, (), stale_spans, stale_floor_s)  # refuses bad bounds now
        if schedule.n != wan.n:
            raise RoundEntriesError(f"the schedule has {schedule.n} islands, the WAN {wan.n}")
        self.fabric, self.wan, self.schedule, self.job = fabric, wan, schedule, job
        self.addressing = addressing
        self.network = network  # what the edges do in the rounds installed from now on
        self.stale_spans, self.stale_floor_s = stale_spans, stale_floor_s
        self.switches = tuple(switches) if switches is not None else fabric.names
        if len(self.switches) != wan.n:
            raise RoundEntriesError(f"{len(self.switches)} switch names for {wan.n} cities")
        self._base: dict[int, SwitchEntries] | None = None
        self._installed: dict[int, dict[int, SwitchEntries]] = {}

    @property
    def installed(self) -> tuple[int, ...]:
        return tuple(self._installed)

    def _apply(self, changes: Mapping[int, Sequence[Change]]) -> None:
        schema = self.fabric.schema
        self.fabric.install(
            {self.switches[u]: to_updates(schema, c) for u, c in sorted(changes.items()) if c}
        )

    def setup(self) -> None:
        """Install the once-per-switch entries (host ports, local group, routes)."""
        if self._base is not None:
            return
        base = base_entries(self.wan, self.addressing)
        self._apply(install_changes(base))
        self._base = base

    def install(self, number: int, rnd: Round | None = None) -> Round:
        """Install round `number` (others may stay installed): the schedule's round at that
        number, or `rnd`; returns the round played."""
        self.setup()
        assert self._base is not None
        wire = number % (1 << 16)
        clash = [n for n in self._installed if n % (1 << 16) == wire]
        if clash:
            raise RoundEntriesError(
                f"round {number} would reuse the keys of installed round {clash}"
            )
        if rnd is None:
            rnd = self.schedule.round_at(number)
        entries = round_entries(
            self.wan,
            rnd,
            job=self.job,
            number=wire,
            hosts_per_island=self.addressing.hosts_per_island,
            network=self.network,
            stale_spans=self.stale_spans,
            stale_floor_s=self.stale_floor_s,
        )
        self._apply(install_changes(entries, [self._base, *self._installed.values()]))
        self._installed[number] = entries
        log.info("round %d installed: groups %s", number, rnd.groups)
        return rnd

    def retire(self, number: int) -> None:
        """Delete round `number`'s entries and the groups no other installed round uses."""
        if number not in self._installed:
            raise RoundEntriesError(
                f"round {number} is not installed (installed: {self.installed})"
            )
        entries = self._installed[number]
        others = [p for n, p in self._installed.items() if n != number]
        assert self._base is not None
        self._apply(retire_changes(entries, [self._base, *others]))
        del self._installed[number]
        log.info("round %d retired", number)
