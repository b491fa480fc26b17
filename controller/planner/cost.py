"""Cost model of one synchronisation round (derivation: docs/cost-model.md).

Every member of a group streams its update (D bytes) once, at the group's rate R, into a multicast
tree along shortest paths toward the other members; each member's edge aggregator merges the
remote streams chunk by chunk. A round's time is that of its slowest group:

    T_g = D / R_g + span_g

where span_g is the latest arrival at any member counted from the first send, and R_g is the
largest rate that fits three limits at once:
  * links: the streams that share a directed WAN link split its capacity (max-min fair between
    groups, by progressive filling);
  * access: an island sends one stream and receives one merged stream (multicast and in-line
    aggregation), so R_g <= the access bandwidth;
  * memory: a slot is held from the first to the last arrival of its chunk, so an aggregator
    holds R x skew bytes of partial sums: R_g <= (M - one slot) / skew_g.

With jitter on the WAN (`Wan.jitter`) a chunk's arrivals are counted from the earliest they can
be to the latest: the skew and span grow by the paths' jitter (`offsets`), and so do the memory
and the rate bound; `GroupCost.headroom_s` says how much more timing noise the pool absorbs.

That is the `inna` network (multicast and in-line aggregation). With `network="multicast"` or
`"plain"` the hosts sum and a group's exchange is one of `collectives`' (multicast streams
summed on the host, ring all-reduce or direct exchange over unicast): the same max-min fair
sharing of the links, an access share of k - 1 streams where the host receives (or sends)
them all, and no aggregator memory.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, field

import numpy as np

from controller.planner.collectives import CollectiveCost, direct, multicast, ring
from controller.planner.filling import progressive_filling
from controller.planner.offsets import Alignment, aligned, unaligned
from controller.planner.params import CostParams as CostParams  # re-exported: its home for callers
from controller.planner.schedule import Group, Round, Schedule
from innet.vocabulary import Collective, NetworkMode, Pacing
from topo.wan import Wan

Edge = tuple[int, int]


@dataclass(frozen=True)
class GroupCost:
    members: Group
    rate_bps: float
    offsets: tuple[float, ...]  # per member, seconds after the round starts
    skew_s: float
    span_s: float
    time_s: float
    memory_bytes: float  # aggregator memory this group needs at its busiest member
    limit: str  # what bounds the rate: "memory", "access", "link A->B", or "local"
    collective: Collective = Collective.INNA  # how it exchanges: inna, multicast, ring, direct
    order: tuple[int, ...] = ()  # the ring's order of the members (else empty)
    wan_bytes: float = 0.0  # bytes the group's exchange puts on WAN links, summed over links
    sent_bytes: float = 0.0  # bytes each member sends into its edge (its access link, up)
    received_bytes: float = 0.0  # bytes each member's edge delivers to it (access link, down)
    # inna under rate pacing: the extra arrival misalignment (timing noise, seconds) the slot
    # pool absorbs at this rate beyond the planned skew before a contribution finds it full,
    # (M - S) * 8 / R - skew; inf where memory plays no part (docs/cost-model.md, "Jitter")
    headroom_s: float = math.inf


@dataclass(frozen=True)
class RoundCost:
    round: Round
    groups: tuple[GroupCost, ...]

    @property
    def headroom_s(self) -> float:
        """The least timing noise any group's slot pool absorbs (GroupCost.headroom_s)."""
        return min((g.headroom_s for g in self.groups), default=math.inf)

    @property
    def time_s(self) -> float:
        return max((g.time_s for g in self.groups), default=0.0)

    @property
    def memory_bytes(self) -> float:
        return max((g.memory_bytes for g in self.groups), default=0.0)

    @property
    def wan_bytes(self) -> float:
        """Bytes the round puts on the WAN, summed over its links (a stream crossing three
        links counts three times)."""
        return sum(g.wan_bytes for g in self.groups)


@dataclass
class Geometry:
    """What a group costs that does not depend on sizes: trees, link loads, alignments (cached)."""

    wan: Wan
    _loads: dict[Group, Counter[Edge]] = field(default_factory=dict)
    _zero: dict[Group, Alignment] = field(default_factory=dict)
    _least: dict[Group, Alignment] = field(default_factory=dict)
    _unicast: dict[Group, tuple[CollectiveCost, CollectiveCost]] = field(default_factory=dict)
    # every directed link numbered (both ways of each WAN link), with its capacity
    _edges: list[Edge] = field(default_factory=list, repr=False, compare=False)
    _edge_ids: dict[Edge, int] = field(default_factory=dict, repr=False, compare=False)
    _capacities: np.ndarray = field(default_factory=lambda: np.zeros(0), repr=False, compare=False)
    # a load's (link numbers, stream counts), by the identity of the load it holds on to
    _arrays: dict[int, tuple[Counter[Edge], np.ndarray, np.ndarray]] = field(
        default_factory=dict, repr=False, compare=False
    )
    _parents: dict[int, list[int]] = field(default_factory=dict, repr=False, compare=False)

    def __post_init__(self) -> None:
        for link in self.wan.links:
            u, v = self.wan.index(link.a), self.wan.index(link.b)
            for edge in ((u, v), (v, u)):
                self._edge_ids[edge] = len(self._edges)
                self._edges.append(edge)
        self._capacities = np.array([self.wan.capacity(*e) for e in self._edges])

    @property
    def capacities(self) -> np.ndarray:
        """Capacity of each directed link, by link number (`edge_arrays`)."""
        return self._capacities

    def edge_arrays(self, load: Counter[Edge]) -> tuple[np.ndarray, np.ndarray]:
        """(link numbers, stream counts) of a load, in its order; cached for loads the caller
        keeps (each group's, held in this geometry or in its collectives)."""
        known = self._arrays.get(id(load))
        if known is None or known[0] is not load:
            number = self._edge_ids
            ids = np.array([number[e] for e in load], dtype=np.intp)
            counts = np.array(list(load.values()), dtype=float)
            known = (load, ids, counts)
            self._arrays[id(load)] = known
        return known[1], known[2]

    def alone_rate(self, collective: CollectiveCost, access_bps: float) -> float:
        """collectives.alone_rate, on the numbered links: its access share or its busiest link."""
        ids, counts = self.edge_arrays(collective.loads)
        rate = access_bps / collective.access_share
        return min(rate, float((self._capacities[ids] / counts).min())) if len(ids) else rate

    def link_name(self, edge_id: int) -> str:
        u, v = self._edges[edge_id]
        return f"link {self.wan.cities[u].code}->{self.wan.cities[v].code}"

    def link_loads(self, members: Group) -> Counter[Edge]:
        """How many of the group's streams cross each directed link."""
        loads = self._loads.get(members)
        if loads is None:
            loads = Counter()
            for src in members:
                loads.update(self._tree(src, [d for d in members if d != src]))
            self._loads[members] = loads
        return loads

    def _tree(self, src: int, dests: list[int]) -> frozenset[Edge]:
        """wan.tree(src, dests), edge for edge and in the same order, walked up src's whole
        shortest-path tree (cached) rather than the WAN's arrays."""
        parent = self._parents.get(src)
        if parent is None:
            parent = [src] * self.wan.n
            for u, v in self.wan.tree(src, range(self.wan.n)):
                parent[v] = u
            self._parents[src] = parent
        edges: set[Edge] = set()
        add = edges.add
        for v in dests:
            while v != src:
                edge = (parent[v], v)
                if edge in edges:
                    break
                add(edge)
                v = edge[0]
        return frozenset(edges)

    def unicast(self, members: Group) -> tuple[CollectiveCost, CollectiveCost]:
        """(ring all-reduce, direct exchange) for the group over a plain WAN."""
        pair = self._unicast.get(members)
        if pair is None:
            pair = (ring(self.wan, members), direct(self.wan, members))
            self._unicast[members] = pair
        return pair

    def alignments(self, members: Group) -> tuple[Alignment, Alignment]:
        """(zero offsets, least-skew offsets) for the group."""
        return self.zero_offsets(members), self.least_skew(members)

    @property
    def jitter(self) -> np.ndarray | None:
        """The WAN's path jitter, or None when no link has any (the jitter-free arithmetic)."""
        return self.wan.jitter if self.wan.has_jitter else None

    def zero_offsets(self, members: Group) -> Alignment:
        if members not in self._zero:
            self._zero[members] = unaligned(self.wan.delay, members, self.jitter)
        return self._zero[members]

    def least_skew(self, members: Group) -> Alignment:
        if members not in self._least:
            self._least[members] = aligned(self.wan.delay, members, self.jitter)
        return self._least[members]


class CostModel:
    def __init__(self, wan: Wan, params: CostParams, geometry: Geometry | None = None) -> None:
        self.wan = wan
        self.params = params
        self.geometry = geometry if geometry is not None else Geometry(wan)
        self._alignment: dict[Group, tuple[Alignment, float]] = {}  # _choose_alignment's
        self._exchange: dict[Group, CollectiveCost] = {}  # _collective's
        self._alone: dict[Group, float] = {}  # _alone_time's
        self._times: dict[Round, float] = {}  # round_time's

    def with_params(self, params: CostParams) -> CostModel:
        """The same WAN with other sizes, sharing the size-independent cache."""
        return CostModel(self.wan, params, self.geometry)

    def _chosen_alignment(self, members: Group) -> tuple[Alignment, float]:
        if members not in self._alignment:
            self._alignment[members] = self._choose_alignment(members)
        return self._alignment[members]

    def _chosen_collective(self, members: Group) -> CollectiveCost:
        if members not in self._exchange:
            self._exchange[members] = self._collective(members)
        return self._exchange[members]

    def _choose_alignment(self, members: Group) -> tuple[Alignment, float]:
        """The offsets (none, or least-skew) that make the group alone fastest, and its rate cap."""
        p = self.params
        bits = p.update_bytes * 8.0
        zero = self.geometry.zero_offsets(members)
        best = zero
        if p.pacing == Pacing.WINDOW:  # each leader waits for its own results: offsets do not help
            return zero, min(p.access_bps, p.window_rate_cap(zero.span))
        best_cap = min(p.access_bps, p.memory_rate_cap(zero.skew))
        # offsets are never negative, so they never shorten the span: at the access rate
        # already, least skew cannot be faster
        if p.align and best_cap < p.access_bps:
            least = self.geometry.least_skew(members)
            cap = min(p.access_bps, p.memory_rate_cap(least.skew))
            if bits / cap + least.span < bits / best_cap + best.span:
                best, best_cap = least, cap
        return best, best_cap

    def _collective(self, members: Group) -> CollectiveCost:
        """The exchange the hosts run without in-line aggregation: multicast streams, or the
        faster of ring and direct exchange for the group alone."""
        p = self.params
        if p.network == NetworkMode.MULTICAST:
            return multicast(self.wan, members, self.geometry.link_loads(members))
        bits = p.update_bytes * 8.0
        return min(  # a tie (a pair) goes to direct exchange: one transfer, not two halves
            self.geometry.unicast(members),
            key=lambda c: (
                c.time_s(bits, self.geometry.alone_rate(c, p.access_bps)),
                c.name == Collective.RING,
            ),
        )

    def _host_round_cost(self, rnd: Round) -> RoundCost:
        p = self.params
        bits = p.update_bytes * 8.0
        chosen = {g: self._chosen_collective(g) for g in rnd.groups if len(g) > 1}
        caps = {g: p.access_bps / c.access_share for g, c in chosen.items()}
        rates, limits = _fill(self.geometry, {g: c.loads for g, c in chosen.items()}, caps)
        costs = []
        for g in rnd.groups:
            zeros = tuple(0.0 for _ in g)
            if g not in chosen:
                costs.append(
                    GroupCost(g, math.inf, zeros, 0.0, 0.0, 0.0, 0.0, "local", Collective.LOCAL)
                )
                continue
            c, rate = chosen[g], rates[g]
            limit = "access" if limits[g] == "cap" else limits[g]
            time_s = c.time_s(bits, rate)
            order = c.order if c.name == Collective.RING else ()
            per_stream = p.update_bytes * c.steps / c.pieces
            sent = per_stream * (len(g) - 1 if c.name == Collective.DIRECT else 1)
            received = per_stream * (1 if c.name == Collective.RING else len(g) - 1)
            costs.append(
                GroupCost(
                    g,
                    rate,
                    zeros,
                    0.0,
                    c.latency_s,
                    time_s,
                    0.0,
                    limit,
                    c.name,
                    order,
                    per_stream * sum(c.loads.values()),
                    sent,
                    received,
                )
            )
        return RoundCost(rnd, tuple(costs))

    def round_cost(self, rnd: Round) -> RoundCost:
        p = self.params
        if p.network != NetworkMode.INNA:
            return self._host_round_cost(rnd)
        bits = p.update_bytes * 8.0
        active: dict[Group, tuple[Alignment, float]] = {}
        for g in rnd.groups:
            if len(g) > 1:
                active[g] = self._chosen_alignment(g)
        loads = {g: self.geometry.link_loads(g) for g in active}
        rates, limits = _fill(self.geometry, loads, {g: cap for g, (_, cap) in active.items()})
        costs = []
        for g in rnd.groups:
            if g not in active:
                costs.append(GroupCost(g, math.inf, (0.0,), 0.0, 0.0, 0.0, 0.0, "local"))
                continue
            al, cap = active[g]
            rate = rates[g]
            limit = limits[g]
            if limit == "cap":
                limit = "memory" if cap < p.access_bps else "access"
            headroom = math.inf
            if p.pacing == Pacing.WINDOW:  # two banks of the window a leader keeps in flight
                memory = 2 * rate / 8.0 * al.span + p.slot_bytes
            else:
                memory = rate / 8.0 * al.skew + p.slot_bytes
                headroom = p.headroom(rate, al.skew)
            wan_bytes = p.update_bytes * sum(loads[g].values())
            costs.append(
                GroupCost(
                    g,
                    rate,
                    al.offsets,
                    al.skew,
                    al.span,
                    bits / rate + al.span,
                    memory,
                    limit,
                    wan_bytes=wan_bytes,
                    sent_bytes=p.update_bytes,
                    received_bytes=p.update_bytes,
                    headroom_s=headroom,
                )
            )
        return RoundCost(rnd, tuple(costs))

    def schedule_costs(self, schedule: Schedule) -> tuple[RoundCost, ...]:
        return tuple(self.round_cost(r) for r in schedule.rounds)

    def round_time(self, rnd: Round) -> float:
        """round_cost(rnd).time_s, remembered (for searches that meet a round more than once,
        such as every partition of nine islands for cliques-3 and cliques-4)."""
        if rnd not in self._times:
            self._times[rnd] = self.round_cost(rnd).time_s
        return self._times[rnd]

    def time_bound(self, rnd: Round) -> float:
        """At most round_cost(rnd).time_s: the slowest group's time at its own cap, as if the
        links were its alone (sharing them only lowers rates; a time never falls as its rate
        does)."""
        known, worst = self._alone, 0.0
        for g in rnd.groups:
            t = known.get(g)
            if t is None:
                t = known[g] = self._alone_time(g)
            worst = max(worst, t)
        return worst

    def _alone_time(self, members: Group) -> float:
        bits = self.params.update_bytes * 8.0
        if len(members) < 2:
            return 0.0
        if self.params.network != NetworkMode.INNA:
            c = self._chosen_collective(members)
            return c.time_s(bits, self.params.access_bps / c.access_share)
        al, cap = self._chosen_alignment(members)
        return bits / cap + al.span


def _fill(
    geometry: Geometry, loads: dict[Group, Counter[Edge]], caps: dict[Group, float]
) -> tuple[dict[Group, float], dict[Group, str]]:
    """Max-min fair rates by progressive filling: all unfrozen groups rise together until a link
    saturates or a group reaches its own cap; those groups freeze; repeat (`filling`)."""
    groups = list(loads)
    rates, limits = progressive_filling(
        groups,
        [geometry.edge_arrays(loads[g]) for g in groups],
        geometry.capacities,
        [caps[g] for g in groups],
    )
    names = ["cap" if why is None else geometry.link_name(why) for why in limits]
    return dict(zip(groups, rates, strict=True)), dict(zip(groups, names, strict=True))
