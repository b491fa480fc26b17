"""The pure round computation: what every edge holds for a round, and how it is retired."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import pytest

from controller.exceptions import RoundEntriesError
from controller.planner.schedule import Round, cliques, ring_pairs
from controller.rounds import (
    HOST_RID,
    LOCAL_GRP,
    MEMBERSHIP,
    SOURCES,
    STALE_FLOOR_S,
    TREE,
    WAN_RID,
    Addressing,
    Change,
    GroupWrite,
    SwitchEntries,
    TableWrite,
    base_entries,
    group_entry,
    install_changes,
    retire_changes,
    round_entries,
    stale_bound_us,
)
from tests.unit.controller.conftest import triangle
from topo.loader import default_wan
from topo.siteplan import wan_port
from topo.wan import Wan

W = 2  # hosts per island

WANS = {"nine-cities": default_wan(), "triangle": triangle()}


def rounds_of(wan: Wan) -> list[Round]:
    if wan.n == 9:
        return [*cliques(9, 3).rounds, *ring_pairs(9).rounds, Round.of([range(9)])]
    return [Round.of([[0, 1, 2]]), Round.of([[0, 2], [1]]), Round.of([[0], [1], [2]])]


def params(entry: TableWrite) -> dict[str, object]:
    return dict(entry.params)


def find(entries: SwitchEntries, table: str, **key: int) -> list[TableWrite]:
    want = {f"hdr.innet.{k}": v for k, v in key.items()}
    return [e for e in entries.tables if e.table == table and dict(e.match).items() >= want.items()]


def group(entries: SwitchEntries, gid: int) -> GroupWrite:
    (found,) = [g for g in entries.groups if g.group_id == gid]
    return found


@pytest.mark.parametrize("wan_name", sorted(WANS))
def test_every_member_has_its_membership_and_every_tree_edge_is_covered(wan_name: str) -> None:
    wan = WANS[wan_name]
    for number, rnd in enumerate(rounds_of(wan)):
        plan = round_entries(wan, rnd, job=3, number=number, hosts_per_island=W)
        for g, members in enumerate(rnd.groups):
            expected = sum(1 << m for m in members)
            for u in members:
                (entry,) = find(plan[u], MEMBERSHIP, job=3, round=number, group=g)
                assert entry.action == "InnetIngress.member"
                assert params(entry) == {
                    "expected": expected,
                    "my_bit": 1 << u,
                    "local_grp": 1,
                    "stale_us": stale_bound_us(wan, members),
                }
            on_tree = set()
            for src in members:
                edges = wan.tree(src, [m for m in members if m != src])
                parents = {u for u, _ in edges}
                on_tree |= {x for e in edges for x in e}
                for u in range(wan.n):
                    found = find(plan.get(u, SwitchEntries()), TREE, round=number, group=g, src=src)
                    if u not in parents:
                        assert found == [], f"{wan.names[u]} is a leaf of {src}'s tree"
                        continue
                    (entry,) = found
                    children = {v for p, v in edges if p == u}
                    child_ports = {(wan_port(wan, u, v, W), WAN_RID) for v in children}
                    wan_grp = group(plan[u], int(params(entry)["wan_grp"]))
                    assert set(wan_grp.replicas) == child_ports
                    local = group(plan[u], int(params(entry)["wan_local_grp"]))
                    hosts = {(p, HOST_RID) for p in range(1, W + 1)} if u in members else set()
                    assert set(local.replicas) == child_ports | hosts
            for u in sorted(on_tree - set(members)):
                (entry,) = find(plan[u], MEMBERSHIP, round=number, group=g)
                assert entry.action == "InnetIngress.transit"
            for u in set(range(wan.n)) - on_tree - set(members):
                assert find(plan.get(u, SwitchEntries()), MEMBERSHIP, round=number, group=g) == []


def test_a_slow_direct_link_makes_the_middle_city_a_transit() -> None:
    wan = triangle()
    plan = round_entries(wan, Round.of([[0, 2], [1]]), job=1, number=5, hosts_per_island=1)
    (transit,) = find(plan[1], MEMBERSHIP, group=0)
    assert transit.action == "InnetIngress.transit"
    # B forwards A's stream to C and C's to A, never to its own hosts
    for src, dst in ((0, 2), (2, 0)):
        (entry,) = find(plan[1], TREE, group=0, src=src)
        assert params(entry)["wan_grp"] == params(entry)["wan_local_grp"]
        assert group(plan[1], int(params(entry)["wan_grp"])).replicas == (
            (wan_port(wan, 1, dst, 1), WAN_RID),
        )


def test_ports_follow_the_convention_and_group_ids_encode_the_port_set() -> None:
    wan = default_wan()
    u = 6  # New York: neighbours 3, 4, 5, 7, 8
    assert [wan_port(wan, u, v, 4) for v in wan.neighbours(u)] == [5, 6, 7, 8, 9]
    assert group_entry(wan, u, LOCAL_GRP, 2).replicas == ((1, HOST_RID), (2, HOST_RID))
    assert group_entry(wan, u, 2 * 0b10010 + 1, 1).replicas == ((3, 0), (6, 0), (1, 1))


def apply(state: dict[int, set[object]], changes: Mapping[int, Sequence[Change]]) -> None:
    """A model switch: inserting what exists or deleting what does not is an error."""
    for u, items in changes.items():
        have = state.setdefault(u, set())
        for c in items:
            if c.op == "insert":
                assert c.item not in have, f"insert of an existing {c.item}"
                have.add(c.item)
            else:
                assert c.item in have, f"delete of a missing {c.item}"
                have.remove(c.item)


def contents(*plans: Mapping[int, SwitchEntries]) -> dict[int, set[object]]:
    out: dict[int, set[object]] = {}
    for plan in plans:
        for u, e in plan.items():
            out.setdefault(u, set()).update(e.tables, e.groups)
    return out


@pytest.mark.parametrize("wan_name", sorted(WANS))
def test_overlapping_rounds_install_and_retire_exactly(wan_name: str) -> None:
    wan = WANS[wan_name]
    base = base_entries(wan, Addressing.default(wan.n, W))
    rounds = rounds_of(wan)
    plans = [
        round_entries(wan, r, job=1, number=n, hosts_per_island=W) for n, r in enumerate(rounds)
    ]
    state: dict[int, set[object]] = {}
    apply(state, install_changes(base))
    assert state == contents(base)
    apply(state, install_changes(plans[0], [base]))
    for n in range(1, len(plans)):
        apply(state, install_changes(plans[n], [base, plans[n - 1]]))
        assert state == contents(base, plans[n - 1], plans[n])
        apply(state, retire_changes(plans[n - 1], [base, plans[n]]))
        assert state == contents(base, plans[n])  # groups round n still uses are kept
    apply(state, retire_changes(plans[-1], [base]))
    assert state == contents(base)


@pytest.mark.parametrize("wan_name", sorted(WANS))
def test_retire_is_the_exact_inverse_of_install(wan_name: str) -> None:
    wan = WANS[wan_name]
    base = base_entries(wan, Addressing.default(wan.n, W))
    for n, rnd in enumerate(rounds_of(wan)):
        plan = round_entries(wan, rnd, job=1, number=n, hosts_per_island=W)
        installed = install_changes(plan, [base])
        retired = retire_changes(plan, [base])
        assert installed.keys() == retired.keys()
        for u in installed:
            undone = [Change("delete", c.item) for c in reversed(installed[u])]
            assert list(retired[u]) == undone


def test_base_routes_lead_every_prefix_to_its_island() -> None:
    wan = default_wan()
    addressing = Addressing.default(wan.n, W)
    base = base_entries(wan, addressing)
    for u in range(wan.n):
        routes = {
            dict(t.match)["hdr.ipv4.dstAddr"].value: dict(t.params)
            for t in base[u].tables
            if t.table == "InnetIngress.ipv4_lpm"
        }
        assert len(routes) == W + wan.n - 1
        for v in range(wan.n):
            if v == u:
                continue
            hop = wan.path(u, v)[1]
            route = routes[f"10.0.{v}.0"]
            assert route == {"port": wan_port(wan, u, hop, W), "dmac": f"02:00:0a:00:{hop:02x}:fe"}
        for k, host in enumerate(addressing.hosts[u], start=1):
            assert routes[host.ip] == {"port": k, "dmac": host.mac}
        hosts = [t for t in base[u].tables if t.table == "InnetEgress.host_port"]
        assert [dict(t.params)["gateway"] for t in hosts] == [f"10.0.{u}.254"] * W
        assert base[u].groups == (group_entry(wan, u, LOCAL_GRP, W),)


def test_bad_rounds_are_refused_with_a_reason() -> None:
    wan = triangle()
    with pytest.raises(RoundEntriesError, match="16 bits"):
        round_entries(wan, Round.of([[0, 1, 2]]), job=1, number=1 << 16, hosts_per_island=1)
    with pytest.raises(ValueError, match="in no group"):
        round_entries(wan, Round.of([[0, 1]]), job=1, number=1, hosts_per_island=1)


def test_each_network_mode_installs_what_its_edges_do() -> None:
    """`multicast` installs the same trees with `relay` where `inna` has `member`; `plain`
    installs nothing per round (its hosts use the base routes)."""
    wan = default_wan()
    rnd = cliques(9, 3).rounds[1]
    inna = round_entries(wan, rnd, job=1, number=3, hosts_per_island=W)
    relay = round_entries(wan, rnd, job=1, number=3, hosts_per_island=W, network="multicast")
    # where merging, a member's hosts may replay the other members' contributions
    replays = {u: sum(1 << m for m in members if m != u) for members in rnd.groups for u in members}
    assert round_entries(wan, rnd, job=1, number=3, hosts_per_island=W, network="plain") == {}
    assert inna.keys() == relay.keys()
    for u in inna:
        assert inna[u].groups == relay[u].groups
        merging = [
            TableWrite(
                e.table,
                e.match,
                "InnetIngress.member",
                (*e.params, ("stale_us", stale_bound_us(wan, rnd.groups[g]))),
            )
            if e.action == "InnetIngress.relay"
            else TableWrite(e.table, e.match, e.action, (*e.params[:1], ("replays", replays[u])))
            if e.table == SOURCES and dict(e.match)["standard_metadata.ingress_port"] <= W
            else e
            for e in relay[u].tables
            for g in [int(dict(e.match)["hdr.innet.group"])]
        ]
        assert tuple(merging) == inna[u].tables
    assert sum(e.action == "InnetIngress.relay" for u in relay for e in relay[u].tables) == 9
    for u in inna:  # a relay never merges: its hosts replay nothing
        for e in relay[u].tables:
            if e.table == SOURCES:
                assert params(e)["replays"] == 0
    with pytest.raises(RoundEntriesError, match="unknown network 'gloo'"):
        round_entries(wan, rnd, job=1, number=3, hosts_per_island=W, network="gloo")


def expected_sources(
    wan: Wan, members: Sequence[int], w: int
) -> dict[tuple[int, int], tuple[int, int]]:
    """(switch, ingress port) -> (streams, replays), from the trees, one edge at a time."""
    out: dict[tuple[int, int], tuple[int, int]] = {}
    for src in members:
        others = sum(1 << m for m in members if m != src)
        for port in range(1, w + 1):  # the source's own hosts
            streams, replays = out.get((src, port), (0, 0))
            out[src, port] = (streams | 1 << src, replays | others)
        for parent, child in wan.tree(src, [m for m in members if m != src]):
            port = wan_port(wan, child, parent, w)  # the copy comes from the tree parent
            streams, replays = out.get((child, port), (0, 0))
            out[child, port] = (streams | 1 << src, replays)
    return out


@pytest.mark.parametrize("wan_name", sorted(WANS))
def test_port_sources_admit_each_stream_where_its_tree_brings_it_and_nowhere_else(
    wan_name: str,
) -> None:
    wan = WANS[wan_name]
    for number, rnd in enumerate(rounds_of(wan)):
        plan = round_entries(wan, rnd, job=3, number=number, hosts_per_island=W)
        for g, members in enumerate(rnd.groups):
            got = {
                (u, int(dict(e.match)["standard_metadata.ingress_port"])): (
                    int(params(e)["streams"]),
                    int(params(e)["replays"]),
                )
                for u, entries in plan.items()
                for e in find(entries, SOURCES, job=3, round=number, group=g)
            }
            assert got == expected_sources(wan, members, W)
            for (u, port), (streams, _) in got.items():  # a host port speaks for its island only
                assert port > W or streams == 1 << u


def test_a_transit_switch_admits_each_stream_from_its_parent_only() -> None:
    wan = triangle()  # the direct link 0-2 is slow: 0 and 2 reach each other through 1
    plan = round_entries(wan, Round.of([[0, 2], [1]]), job=1, number=5, hosts_per_island=1)
    got = {
        int(dict(e.match)["standard_metadata.ingress_port"]): params(e)
        for e in find(plan[1], SOURCES, group=0)
    }
    assert got == {
        wan_port(wan, 1, 0, 1): {"streams": 1 << 0, "replays": 0},
        wan_port(wan, 1, 2, 1): {"streams": 1 << 2, "replays": 0},
    }  # and nothing from B's own hosts


def test_the_stale_bound_is_several_group_spans_with_a_floor() -> None:
    wan = default_wan()
    far = [0, 3, 8]  # Tokyo, London, Los Angeles
    span = max(float(wan.delay[i, j]) for i in far for j in far)
    assert stale_bound_us(wan, far) == round(1e6 * max(STALE_FLOOR_S, 8 * span))
    assert stale_bound_us(wan, far, spans=40) == round(1e6 * 40 * span)
    assert stale_bound_us(wan, [0], floor_s=0.25) == 250_000  # alone: no span, the floor
    plan = round_entries(
        wan,
        Round.of([far, [1, 2, 4, 5, 6, 7]]),
        job=1,
        number=0,
        hosts_per_island=1,
        stale_spans=40,
        stale_floor_s=0.5,
    )
    (entry,) = find(plan[0], MEMBERSHIP, group=0)
    assert params(entry)["stale_us"] == round(1e6 * 40 * span)
    for spans, floor, what in (
        (math.nan, 1.0, "stale_spans"),
        (0.5, 1.0, "stale_spans"),
        (8.0, 0.0, "stale_floor_s"),
        (8.0, math.inf, "stale_floor_s"),
        (8.0, 5000.0, "32-bit"),
    ):
        with pytest.raises(RoundEntriesError, match=what):
            stale_bound_us(wan, far, spans, floor)
