"""Random P4Runtime batches for innet.p4 at one edge, as a generated case writes them
(`p4diff.generate`): batches a target must apply, and batches it must refuse (docs/p4diff.md,
"Batches").

The batches keep off the entries the rounds install (`membership`, `tree`, `port_sources`)
except to be refused, and never delete a round's multicast group, so that `install_round` and
`retire_round` always apply and the slots go as `p4diff.slotmodel` says. What they change: IPv4
routes (the controller's and their own: forwarded elsewhere, dropped, deleted), the default
route, where host copies are addressed (`host_port`'s entries and default), the replicas of
every multicast group and groups of their own, with ids the controller never gives this edge
(`OWN_GROUPS`), and the defaults of `tree` and `membership` that leave the slots alone. A
refused batch is a duplicate insert, a delete or modify of something missing, an entry with a
default-only action, or a multicast group v1model cannot name or listing a replica twice; mixed
with updates that succeed, and sent either atomically (ROLLBACK_ON_ERROR: nothing may stay) or
not (the others stay, and `EdgeTables` remembers them).

    >>> import random
    >>> from topo.loader import default_wan
    >>> from p4diff.innetround import InnetEdge
    >>> tables = EdgeTables.of(InnetEdge(default_wan(), island=0, hosts=2, job=1))
    >>> len(tables.routes), sorted(tables.groups)  # the controller's base entries
    (10, [1])
    >>> op, batch, note = tables.refused(random.Random(1), installed=[(1, 7, 0)])
    >>> batch["expect"], op in ("write", "modify", "delete")
    ('refused', True)
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from controller.p4rt.schema import Lpm
from controller.round_entries import MEMBERSHIP, SOURCES, TREE
from controller.rounds import HOST_PORT, IPV4_LPM
from p4diff.innetround import InnetEdge
from topo.siteplan import host_ip, host_mac

FORWARD, DROP = "InnetIngress.forward", "InnetIngress.drop"
TO_HOST = "InnetEgress.to_host"
DST, EGRESS = "hdr.ipv4.dstAddr", "standard_metadata.egress_port"
INGRESS = "standard_metadata.ingress_port"
OWN_GROUPS = range(1000, 1100)  # a group id is 2 x mask + hosts: these masks name no link here
ABSENT_GROUPS = range(2000, 2100)  # never created
BEYOND_GROUPS = (65536, 70000, 2**31, 2**32 - 1)  # more than v1model's bit<16> mcast_grp names
# Ids from 32768 to 65535 are left out: BMv2's P4Runtime server keeps them for clone sessions
# and refuses them, p4switch takes them (docs/p4diff.md, "Generated families").
Update = dict[str, Any]


def random_mac(rng: random.Random) -> str:
    return "02:" + ":".join(f"{rng.randrange(256):02x}" for _ in range(5))


def _route(prefix: str, port: int | None = None, dmac: str | None = None) -> Update:
    entry: Update = {"table": IPV4_LPM, "match": {DST: {"lpm": prefix}}}
    if port is not None:
        entry |= {"action": FORWARD, "params": {"port": port, "dmac": dmac}}
    return entry


def _group(group_id: int, replicas: Sequence[tuple[int, int]] = ()) -> Update:
    return {"multicast_group": group_id, "replicas": [list(r) for r in replicas]}


@dataclass
class EdgeTables:
    """The routes and multicast groups a case's writes have left at the edge, so that the next
    batch knows what exists (and what does not)."""

    edge: InnetEdge
    routes: dict[str, tuple[int, str]] = field(default_factory=dict)  # prefix: port, dmac
    groups: dict[int, tuple[tuple[int, int], ...]] = field(default_factory=dict)
    rounds: dict[int, frozenset[int]] = field(default_factory=dict)  # the rounds' group ids
    base: frozenset[str] = frozenset()  # the controller's routes (deleted only if the case's)
    membership_miss: tuple[str, int] = ("unknown", 0)  # membership's default: action, expected
    host_ports: set[int] = field(default_factory=set)  # the ports host_port has an entry for

    @classmethod
    def of(cls, edge: InnetEdge) -> EdgeTables:
        """The controller's base entries (`InnetEdge.base`)."""
        tables = cls(edge)
        for entry in edge.base().tables:
            if entry.table == IPV4_LPM:
                lpm, params = dict(entry.match)[DST], dict(entry.params)
                assert isinstance(lpm, Lpm) and isinstance(lpm.value, str)
                prefix = f"{lpm.value}/{lpm.prefix_len}"
                tables.routes[prefix] = (int(params["port"]), str(params["dmac"]))
        tables.groups = {g.group_id: g.replicas for g in edge.base().groups}
        tables.base = frozenset(tables.routes)
        tables.host_ports = set(range(1, edge.hosts + 1))
        return tables

    @property
    def ports(self) -> tuple[int, ...]:
        return self.edge.ports

    # --- pieces ---------------------------------------------------------------------------

    def new_prefix(self, rng: random.Random) -> str:
        """A prefix no route has yet: elsewhere in 10/8, a remote host, or outside 10/8."""
        while True:
            island = rng.randrange(self.edge.wan.n)
            prefix = rng.choice(
                [
                    f"10.{rng.randint(9, 250)}.{rng.randrange(256)}.0/24",
                    f"10.{rng.randint(9, 250)}.0.0/16",
                    f"{host_ip(island, rng.randint(1, 3))}/32",
                    f"10.0.{island}.128/25",
                    f"172.{rng.randint(16, 31)}.0.0/16",
                ]
            )
            if prefix not in self.routes:
                return prefix

    def _next_hop(self, rng: random.Random) -> tuple[int, str]:
        port = rng.choice(self.ports)
        hosts = range(1, self.edge.hosts + 1)
        dmac = host_mac(self.edge.island, port) if port in hosts else random_mac(rng)
        return port, dmac

    def _replicas(self, rng: random.Random) -> tuple[tuple[int, int], ...]:
        """Up to 4 replicas, each on a port of its own: WAN copies (id 0), host copies (1)
        or other ids. (A port twice, with two ids, gets its copies in an order P4Runtime leaves
        open: BMv2 orders them by its own hash of the ids, docs/p4diff.md.)"""
        ports = rng.sample(self.ports, min(len(self.ports), rng.randint(0, 4)))
        return tuple(sorted((p, rng.choices([0, 1, 2, 3], [4, 4, 1, 1])[0]) for p in ports))

    def existing_groups(self) -> list[int]:
        """Every multicast group at the edge: the base's, the installed rounds', the case's."""
        return sorted(set(self.groups).union(*self.rounds.values()))

    def installed(self, number: int, group_ids: Sequence[int]) -> None:
        """A round's groups are there (`retired` takes them off, unless another holds them)."""
        self.rounds[number] = frozenset(group_ids)

    def retired(self, number: int) -> None:
        del self.rounds[number]

    def _own_groups(self) -> list[int]:
        return sorted(g for g in self.groups if g in OWN_GROUPS)

    # --- batches a target must apply ------------------------------------------------------

    def valid(self, rng: random.Random) -> tuple[str, list[Update], str]:
        """(op, updates, a note) of a batch that must apply; the tables updated."""
        makers: list[Callable[[random.Random], tuple[str, list[Update], str]]] = [
            self._insert_routes,
            self._modify_route,
            self._modify_default,
            self._host_port,
            self._insert_group,
            self._modify_group,
            self._modify_innet_default,
        ]
        if any(prefix not in self.base for prefix in self.routes):
            makers.append(self._delete_routes)
        if self._own_groups():
            makers.append(self._delete_group)
        return rng.choice(makers)(rng)

    def _insert_routes(self, rng: random.Random) -> tuple[str, list[Update], str]:
        updates = []
        for _ in range(rng.randint(1, 3)):
            prefix, (port, dmac) = self.new_prefix(rng), self._next_hop(rng)
            self.routes[prefix] = (port, dmac)
            updates.append(_route(prefix, port, dmac))
        return "write", updates, f"{len(updates)} new route(s)"

    def _modify_route(self, rng: random.Random) -> tuple[str, list[Update], str]:
        prefix = rng.choice(sorted(self.routes))
        if rng.random() < 0.2:
            self.routes[prefix] = (0, "")
            entry = {**_route(prefix), "action": DROP}
            return "modify", [entry], f"the route to {prefix} now drops"
        port, dmac = self._next_hop(rng)
        self.routes[prefix] = (port, dmac)
        return "modify", [_route(prefix, port, dmac)], f"the route to {prefix} now to port {port}"

    def _delete_routes(self, rng: random.Random) -> tuple[str, list[Update], str]:
        own = sorted(set(self.routes) - self.base)
        gone = rng.sample(own, rng.randint(1, min(2, len(own))))
        for prefix in gone:
            del self.routes[prefix]
        return "delete", [_route(p) for p in gone], f"route(s) {', '.join(gone)} deleted"

    def _modify_default(self, rng: random.Random) -> tuple[str, list[Update], str]:
        entry: Update = {"table": IPV4_LPM, "default": True}
        if rng.random() < 0.5:
            port, dmac = self._next_hop(rng)
            entry |= {"action": FORWARD, "params": {"port": port, "dmac": dmac}}
            return "modify", [entry], f"the default route: forward to port {port}"
        return "modify", [entry | {"action": DROP}], "the default route: drop"

    def _host_port(self, rng: random.Random) -> tuple[str, list[Update], str]:
        """A host copy's addresses on a port: changed, deleted (its copies dropped), or put
        on a port that has none (a WAN port, or one deleted before); or the table's default."""
        island, port = self.edge.island, rng.choice(self.ports)
        host = rng.choice([port, rng.randint(1, 253)])
        mac = host_mac(island, host) if rng.random() < 0.5 else random_mac(rng)
        gateway = f"10.0.{island}.{rng.choice([254, 1])}"
        params = {"mac": mac, "ip": host_ip(island, host), "gateway": gateway}
        entry: Update = {"table": HOST_PORT, "match": {EGRESS: port}}
        if rng.random() < 0.15:
            entry = {"table": HOST_PORT, "default": True, "action": TO_HOST, "params": params}
            return "modify", [entry], "host_port's default: every port's copies addressed"
        if port not in self.host_ports:
            self.host_ports.add(port)
            entry |= {"action": TO_HOST, "params": params}
            return "write", [entry], f"host copies on port {port} addressed"
        if rng.random() < 0.3:
            self.host_ports.discard(port)
            return "delete", [entry], f"host copies on port {port} no longer addressed"
        entry |= {"action": TO_HOST, "params": params}
        return "modify", [entry], f"host copies on port {port} addressed anew"

    def _insert_group(self, rng: random.Random) -> tuple[str, list[Update], str]:
        group_id = rng.choice([g for g in OWN_GROUPS if g not in self.groups])
        self.groups[group_id] = self._replicas(rng)
        return "write", [_group(group_id, self.groups[group_id])], f"multicast group {group_id}"

    def _modify_group(self, rng: random.Random) -> tuple[str, list[Update], str]:
        group_id = rng.choice(self.existing_groups())
        replicas = self._replicas(rng)
        if group_id in self.groups:
            self.groups[group_id] = replicas
        note = f"multicast group {group_id} now {len(replicas)} replica(s)"
        return "modify", [_group(group_id, replicas)], note

    def _modify_innet_default(self, rng: random.Random) -> tuple[str, list[Update], str]:
        """Defaults that leave the slots alone: what a miss in `tree` replicates to (a group
        that may not exist), and what a miss in `membership` makes of the edge (transit, a
        relay, or back to unknown; never a merging member)."""
        if rng.random() < 0.5:
            entry: Update = {"table": TREE, "default": True, "action": "NoAction"}
            if rng.random() < 0.7:
                groups = [*self.existing_groups(), rng.choice(ABSENT_GROUPS)]
                params = {"wan_grp": rng.choice(groups), "wan_local_grp": rng.choice(groups)}
                entry |= {"action": "InnetIngress.replicate", "params": params}
            return "modify", [entry], f"tree's default: {entry['action']} {entry.get('params', '')}"
        entry = {"table": MEMBERSHIP, "default": True}
        action, expected = rng.choice(["transit", "relay", "unknown"]), 0
        entry["action"] = f"InnetIngress.{action}"
        if action == "relay":
            expected = rng.randrange(1, 2**self.edge.wan.n)
            entry["params"] = {
                "expected": expected,
                "my_bit": 1 << self.edge.island,
                "local_grp": 1,
            }
        self.membership_miss = (action, expected)
        return "modify", [entry], f"membership's default: {action}"

    def _delete_group(self, rng: random.Random) -> tuple[str, list[Update], str]:
        group_id = rng.choice(self._own_groups())
        del self.groups[group_id]
        return "delete", [_group(group_id)], f"multicast group {group_id} deleted"

    # --- batches a target must refuse -----------------------------------------------------

    def refused(
        self, rng: random.Random, installed: Sequence[tuple[int, int, int]]
    ) -> tuple[str, dict[str, Any], str]:
        """(op, batch, a note) of a batch with an update that must fail. Atomic or not at
        random; when not, the updates that succeed are remembered as applied."""
        atomic = rng.random() < 0.5
        op, bad, why = self._failing(rng, installed)
        good: list[Update] = []
        if rng.random() < 0.6:
            good = self._succeeding(rng, op, apply=not atomic)
        updates = [*good, *bad] if rng.random() < 0.5 else [*bad, *good]
        body = {"updates": updates, "expect": "refused", "atomic": atomic}
        mode = "atomic, nothing stays" if atomic else "not atomic, the rest applies"
        return op, body, f"refused: {why} ({len(updates)} update(s), {mode})"

    def _failing(
        self, rng: random.Random, installed: Sequence[tuple[int, int, int]]
    ) -> tuple[str, list[Update], str]:
        prefix = rng.choice(sorted(self.routes))
        missing, absent = self.new_prefix(rng), rng.choice(ABSENT_GROUPS)
        job, number, group = rng.choice(installed) if installed else (1, 0, 0)
        key = {"hdr.innet.job": job, "hdr.innet.round": number, "hdr.innet.group": group}
        unused = {**key, "hdr.innet.round": (number + 1 + rng.randrange(100)) % 2**16}
        choices: list[tuple[str, list[Update], str]] = [
            ("write", [_route(prefix, *self._next_hop(rng))], f"the route {prefix} exists"),
            ("write", [_group(rng.choice(self.existing_groups()))], "the multicast group exists"),
            ("delete", [_route(missing)], f"no route {missing} to delete"),
            ("delete", [_group(absent)], f"no multicast group {absent} to delete"),
            ("modify", [_route(missing, *self._next_hop(rng))], f"no route {missing} to modify"),
            ("modify", [_group(absent, self._replicas(rng))], f"no multicast group {absent}"),
            (
                "write",
                [_group(rng.choice(BEYOND_GROUPS), self._replicas(rng))],
                "a multicast group id above 16 bits",
            ),
            (
                "write",
                [_group(absent, [(self.ports[0], 1), (self.ports[0], 1)])],
                "a multicast group with a replica twice",
            ),
            (
                "write",
                [{"table": MEMBERSHIP, "match": unused, "action": "InnetIngress.unknown"}],
                "membership's unknown is a default-only action",
            ),
            (
                "write",
                [{"table": SOURCES, "match": {**unused, INGRESS: 1}, "action": "NoAction"}],
                "port_sources' NoAction is a default-only action",
            ),
        ]
        if installed:
            entry = {"table": MEMBERSHIP, "match": key, "action": "InnetIngress.transit"}
            choices.append(("write", [entry], f"round {number} group {group} is installed"))
        return rng.choice(choices)

    def _succeeding(self, rng: random.Random, op: str, apply: bool) -> list[Update]:
        """An update of the same op that succeeds on its own (remembered only if `apply`)."""
        if op == "write":
            prefix, (port, dmac) = self.new_prefix(rng), self._next_hop(rng)
            if apply:
                self.routes[prefix] = (port, dmac)
            return [_route(prefix, port, dmac)]
        if op == "modify":
            prefix, (port, dmac) = rng.choice(sorted(self.routes)), self._next_hop(rng)
            if apply:
                self.routes[prefix] = (port, dmac)
            return [_route(prefix, port, dmac)]
        own = sorted(set(self.routes) - self.base)
        if not own:
            return []
        prefix = rng.choice(own)
        if apply:
            del self.routes[prefix]
        return [_route(prefix)]
