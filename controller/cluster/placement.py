"""Which node (machine) each island runs on, and which WAN links then cross machines (pure).

An island (one city's edge switch, its hosts and its leader) runs whole on one node. A WAN link
whose two cities are on different nodes is carried between the machines, where the physical
network's own delay is taken off the emulated one: the fewer links cross, the less the run
depends on that network, and a slow link crossing is better than a fast one (its delay absorbs
the machines' own, and it carries less of a round's timing-critical traffic).

A node's load is what its islands' switches and leaders process (`island_loads`: each island
at its busiest round, as controller/runner/need.py counts it, so their sum bounds any one
round's from above), in cores at the node's own measured rates, as the machine check counts them
(controller/runner/calibration.py). It must stay within `margin` times the node's free cores,
and no switch (one process) may need more than `margin` of a core, nor more than one: by
default `OVER_MARGIN`, beyond which the check says "does not fit"; `machines_needed` counts at
`TIGHT_SHARE`, within which it says "fits", as its `fitting_scale` does.

    >>> from topo.wan import City, Wan, WanLink
    >>> cities = [City(n, n[:3].upper(), "", 0, 0) for n in ("Tokyo", "Osaka", "Paris", "Lyon")]
    >>> wan = Wan("ring", tuple(cities), tuple(WanLink(a, b, ms / 1e3, 1e10, "") for a, b, ms in
    ...     [("Tokyo", "Osaka", 5), ("Paris", "Lyon", 4), ("Tokyo", "Paris", 110),
    ...      ("Osaka", "Lyon", 120)]))
    >>> loads = [IslandLoad(i, name, switch_fps=1_000, leader_fps=0)
    ...          for i, name in enumerate(wan.names)]
    >>> nodes = [Node(name, cores=1, frames_per_cpu_s=2_000) for name in ("a", "b")]
    >>> print(choose_placement(wan, loads, nodes).summary)  # two islands a node: 1.0 of 1 core
    ... # doctest: +NORMALIZE_WHITESPACE
    placement: Tokyo, Osaka on a (1.00 of 1.00 free cores: tight); Paris, Lyon on b (1.00 of 1.00
    free cores: tight); 2 WAN links cross machines: Tokyo-Paris 110 ms, Osaka-Lyon 120 ms
    >>> placement_from({"TOK": "a", "Paris": "a", "Osaka": "b", "Lyon": "b"}, wan, nodes).crossing
    ... # doctest: +ELLIPSIS
    (WanLink(a='Tokyo', b='Osaka', ...), WanLink(a='Paris', b='Lyon', ...))

Both splits cut two links; the chosen one cuts the slow ones. `choose_placement` is exact (a
branch and bound over every assignment, identical nodes taken once) while its search stays
within `SEARCH_STEPS`: nine cities on four nodes take a small part of that. Beyond, it returns
the best placement found: a greedy one (each island beside most of its placed neighbours, the
heaviest first when that packs nothing) improved by moves and swaps that lower the cut, and
the search's own when better (`Placement.optimal` says which). `machines_needed` says, per scale
factor, on how many identical machines the islands fit.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

from controller.runner.calibration import (
    DOES_NOT_FIT,
    FITS,
    LEADER_UNDER_LOAD,
    OVER_MARGIN,
    TIGHT,
    TIGHT_SHARE,
    Machine,
)
from controller.runner.emulation import Emulation
from controller.runner.exceptions import ExperimentError
from controller.runner.need import leader_rates, round_rates
from innet.exceptions import InputError
from topo.exceptions import UnknownCityError
from topo.wan import Wan, WanLink

SEARCH_STEPS = 200_000  # partial assignments the exact search may visit before it settles
_EPSILON = 1e-9  # loads within this share of a node's capacity count as fitting


class PlacementError(InputError, ValueError):
    """A placement or a cluster innet cannot use: a city unknown or placed twice or not at all,
    a node the cluster does not have; the message names it."""


class PlacementDoesNotFit(ExperimentError):
    """The islands do not fit on these nodes: the message gives what they need and what the
    nodes give."""


@dataclass(frozen=True, slots=True)
class Node:
    """One machine of the cluster and what one of its cores processes, as the machine check
    measures it (`Node.measured`)."""

    name: str
    cores: int
    frames_per_cpu_s: float  # innet.p4's frames per CPU second: a switch's pipeline
    leader_frames_per_cpu_s: float = math.inf  # a paced leader's (inf: not measured)
    cpu_share: float = 1.0  # CPU time over wall time in a busy loop
    others_cores: float = 0.0  # cores other processes keep busy

    def __post_init__(self) -> None:
        if not self.name:
            raise PlacementError("a node needs a name")
        if self.cores < 1 or not self.frames_per_cpu_s > 0 or not self.leader_frames_per_cpu_s > 0:
            raise PlacementError(
                f"node {self.name!r}: needs at least one core and positive frame rates, got "
                f"{self.cores} cores, {self.frames_per_cpu_s} and {self.leader_frames_per_cpu_s} "
                "frames per CPU second"
            )

    @classmethod
    def measured(cls, name: str, machine: Machine) -> Node:
        """The node `name` as the machine check found it."""
        return cls(
            name,
            machine.cores,
            machine.frames_per_cpu_s,
            machine.leader_frames_per_cpu_s,
            machine.cpu_share,
            machine.others_cores,
        )

    @property
    def free_cores(self) -> float:
        """The cores a run may have (`Machine.free_cores`)."""
        return min(self.cores * min(1.0, self.cpu_share), max(0.0, self.cores - self.others_cores))

    @property
    def core_fps(self) -> float:
        """Frames per second one core processes: a switch's ceiling."""
        return self.frames_per_cpu_s * min(1.0, self.cpu_share)

    def cores_for(self, load: IslandLoad) -> float:
        """The cores `load`'s switch and leader need here (`calibration.cores_needed`)."""
        return (
            load.switch_fps / self.frames_per_cpu_s
            + LEADER_UNDER_LOAD * load.leader_fps / self.leader_frames_per_cpu_s
        )

    def takes(self, load: IslandLoad, margin: float) -> bool:
        """Whether this node could run `load`'s island alone within `margin`."""
        within = margin * self.free_cores * (1 + _EPSILON)
        return self.cores_for(load) <= within and _switch_fits(self, load.switch_fps, margin)


@dataclass(frozen=True, slots=True)
class IslandLoad:
    """What one island (city index of the Wan) asks of its node at its busiest over the run:
    frames per second through its switch and through its leader, at emulation scale `scale`."""

    island: int
    name: str
    switch_fps: float
    leader_fps: float
    scale: float = 1.0  # the scale these rates hold at (every rate falls as 1 / scale)

    def at_scale(self, scale: float) -> IslandLoad:
        """The same island at scale `scale`."""
        factor = self.scale / scale
        return replace(
            self,
            switch_fps=self.switch_fps * factor,
            leader_fps=self.leader_fps * factor,
            scale=scale,
        )


@dataclass(frozen=True, slots=True)
class NodeLoad:
    """One node's islands and what they ask of it together."""

    node: Node
    islands: tuple[int, ...]  # city indices, ascending
    switch_fps: float  # its switches together (each at its busiest)
    leader_fps: float  # its leaders together
    cores_needed: float
    busiest_switch_fps: float  # its busiest switch: one process, at most one core

    @property
    def share(self) -> float:
        """Cores needed over the node's free cores."""
        return _share(self.cores_needed, self.node.free_cores)

    @property
    def verdict(self) -> str:
        """FITS, TIGHT or DOES_NOT_FIT, by the machine check's thresholds (`calibration.judge`)."""
        if not self.within(OVER_MARGIN):
            return DOES_NOT_FIT
        return FITS if self.within(TIGHT_SHARE) else TIGHT

    def within(self, margin: float) -> bool:
        """At most `margin` of the free cores, and no switch over `margin` of a core (nor over
        one core)."""
        return self.share <= margin * (1 + _EPSILON) and _switch_fits(
            self.node, self.busiest_switch_fps, margin
        )


@dataclass(frozen=True, slots=True)
class Placement:
    """Each island's node, the WAN links that cross machines, and each node's load."""

    cities: tuple[str, ...]  # the Wan's city names, by index
    nodes: tuple[str, ...]  # the node each island runs on, by city index
    crossing: tuple[WanLink, ...]  # links whose cities are on different nodes, in the Wan's order
    loads: tuple[NodeLoad, ...]  # every node of the cluster, in its order (idle ones too)
    optimal: bool = False  # chosen, and proved to cross the fewest (then slowest) links

    def node_of(self, island: int) -> str:
        return self.nodes[island]

    def islands_on(self, node: str) -> tuple[int, ...]:
        return tuple(i for i, name in enumerate(self.nodes) if name == node)

    def as_mapping(self) -> dict[str, str]:
        """City name -> node name: a scenario's `placement:`."""
        return dict(zip(self.cities, self.nodes, strict=True))

    @property
    def verdict(self) -> str:
        """The worst node's verdict."""
        verdicts = {load.verdict for load in self.loads}
        return next((v for v in (DOES_NOT_FIT, TIGHT) if v in verdicts), FITS)

    def within(self, margin: float) -> bool:
        return all(load.within(margin) for load in self.loads)

    @property
    def summary(self) -> str:
        """One line: the islands of each node, its load and verdict, the links that cross."""
        nodes = [
            f"{', '.join(self.cities[i] for i in load.islands)} on {load.node.name} "
            f"({load.cores_needed:.2f} of {load.node.free_cores:.2f} free cores: {load.verdict})"
            for load in self.loads
            if load.islands
        ]
        links = ", ".join(
            f"{link.a}-{link.b} {link.delay_s * 1e3:.3g} ms" for link in self.crossing
        )
        count = len(self.crossing)
        cross = f"{count} WAN link{'' if count == 1 else 's'} cross{'es' if count == 1 else ''}"
        return f"placement: {'; '.join(nodes)}; {cross} machines{': ' if links else ''}{links}"


@dataclass(frozen=True, slots=True)
class MachineCount:
    """How many identical machines a scale factor needs, and the placement on them."""

    scale: float
    machines: int | None  # None: one island alone does not fit on a machine
    placement: Placement | None
    why: str = ""  # when machines is None: which island, and what it needs

    @property
    def crossing(self) -> tuple[WanLink, ...]:
        return self.placement.crossing if self.placement is not None else ()

    @property
    def summary(self) -> str:
        if self.machines is None or self.placement is None:
            return f"scale {self.scale:g}: no number of machines: {self.why}"
        links = ", ".join(f"{link.a}-{link.b}" for link in self.crossing) or "none"
        plural = "" if self.machines == 1 else "s"
        return f"scale {self.scale:g}: {self.machines} machine{plural}, crossing links: {links}"


# --- the loads ------------------------------------------------------------------------------------


def island_loads(em: Emulation) -> tuple[IslandLoad, ...]:
    """Each island's busiest switch and leader rates over every round the run plays, at the
    emulation's scale (need.py's `round_rates` and `leader_rates`, per city, max over rounds)."""
    names = em.scenario.wan.names
    switch, leader = [0.0] * len(names), [0.0] * len(names)
    for point in em.played:
        wan = em.wan_of(point)
        for play in point.plays:
            for cost in play.plan.costs:
                for city, fps in round_rates(em, wan, cost).items():
                    switch[city] = max(switch[city], fps)
                for city, fps in leader_rates(em, wan, cost).items():
                    leader[city] = max(leader[city], fps)
    scale = em.scenario.scale
    return tuple(IslandLoad(i, name, switch[i], leader[i], scale) for i, name in enumerate(names))


# --- a placement given ----------------------------------------------------------------------------


def placement_from(
    mapping: Mapping[str, str],
    wan: Wan,
    nodes: Sequence[Node],
    loads: Sequence[IslandLoad] | None = None,
) -> Placement:
    """A scenario's `placement: {Tokyo: NODE, ...}` (city names or codes) on the cluster's
    `nodes`; PlacementError for an unknown city, an island placed twice or not at all, or a node
    the cluster does not have. With `loads`, each node's load (else none): a placement given is
    judged (`Placement.verdict`), not refused, for its load."""
    known = _node_names(nodes)
    given: dict[int, str] = {}
    for city, node in mapping.items():
        try:
            island = wan.index(city)
        except UnknownCityError as err:
            raise PlacementError(f"placement: {err}") from None
        if island in given:
            raise PlacementError(
                f"placement: {wan.names[island]} is placed twice ({_keys_for(mapping, wan, island)}"
                "): give each island once"
            )
        if node not in known:
            raise PlacementError(
                f"placement: {wan.names[island]} is placed on node {node!r}, which the cluster "
                f"does not have (fewer nodes than the placement names; nodes: "
                f"{', '.join(known)}): start that node or place {wan.names[island]} on another"
            )
        given[island] = node
    missing = [wan.names[i] for i in range(wan.n) if i not in given]
    if missing:
        raise PlacementError(
            f"placement: {', '.join(missing)} {'is' if len(missing) == 1 else 'are'} not placed: "
            "give every island of the WAN a node"
        )
    return _placement(wan, nodes, _checked_loads(wan, loads), [given[i] for i in range(wan.n)])


def _keys_for(mapping: Mapping[str, str], wan: Wan, island: int) -> str:
    keys = []
    for key in mapping:
        try:
            if wan.index(key) == island:
                keys.append(repr(key))
        except UnknownCityError:
            continue
    return " and ".join(keys)


# --- a placement chosen ---------------------------------------------------------------------------


def choose_placement(
    wan: Wan,
    loads: Sequence[IslandLoad],
    nodes: Sequence[Node],
    margin: float = OVER_MARGIN,
    search_steps: int = SEARCH_STEPS,
) -> Placement:
    """Islands to nodes so that every node's load stays within `margin` of its free cores (by
    default the machine check's "does not fit" bound) and no switch needs more than a core, and
    among those, the fewest WAN links cross machines, then the slowest (the shortest crossing
    delay as long as can be, then the next), then the least loaded busiest node. Deterministic;
    PlacementDoesNotFit when no placement fits (or, beyond the exact search, none was found)."""
    if not margin > 0:
        raise PlacementError(f"placement: margin must be > 0, got {margin}")
    _node_names(nodes)
    problem = _Packing(wan, _checked_loads(wan, loads), tuple(nodes), margin)
    problem.check_alone()
    start = problem.greedy() or problem.packed()
    if start is not None:
        start = problem.improve(start)
    best, complete = problem.search(start, search_steps)
    if best is None:
        raise PlacementDoesNotFit(problem.why(complete))
    names = [nodes[j].name for j in best]
    return _placement(wan, nodes, problem.loads, names, optimal=complete)


def machines_needed(
    wan: Wan,
    loads: Sequence[IslandLoad],
    node: Node,
    scales: Sequence[float],
    margin: float = TIGHT_SHARE,
) -> tuple[MachineCount, ...]:
    """For each scale factor, the fewest machines like `node` the islands fit on (`loads` at
    any scale, rescaled; within `margin` of each: by default the share the machine check calls
    fitting, as `calibration.fitting_scale` does) and the placement on them; None machines when
    one island alone does not fit on one."""
    rows = []
    for scale in scales:
        if not scale > 0:
            raise PlacementError(f"machines needed: a scale factor must be > 0, got {scale}")
        scaled = [load.at_scale(scale) for load in _checked_loads(wan, loads)]
        alone = [load for load in scaled if not node.takes(load, margin)]
        if alone:
            rows.append(MachineCount(scale, None, None, _alone(alone[0], node, margin)))
            continue
        need = sum(node.cores_for(load) for load in scaled)
        room = margin * node.free_cores  # > 0 when an island with a load fits alone
        fewest = max(1, math.ceil(need / room - _EPSILON)) if need > 0 else 1
        for count in range(fewest, wan.n + 1):
            machines = [replace(node, name=f"{node.name}-{i + 1}") for i in range(count)]
            try:
                placement = choose_placement(wan, scaled, machines, margin)
            except PlacementDoesNotFit:
                continue  # at one island a machine, the greedy placement fits: it ends there
            rows.append(MachineCount(scale, count, placement))
            break
    return tuple(rows)


# --- the search -----------------------------------------------------------------------------------


class _Packing:
    """The islands, the nodes, what each island costs on each node and the links between them,
    as indices, for the search."""

    def __init__(
        self, wan: Wan, loads: tuple[IslandLoad, ...], nodes: tuple[Node, ...], margin: float
    ) -> None:
        self.wan, self.loads, self.nodes, self.margin = wan, loads, nodes, margin
        self.n, self.k = wan.n, len(nodes)
        self.cost = [[node.cores_for(load) for node in nodes] for load in loads]
        self.capacity = [margin * node.free_cores * (1 + _EPSILON) for node in nodes]
        self.allowed = [[node.takes(load, margin) for node in nodes] for load in loads]
        self.links = [(wan.index(link.a), wan.index(link.b), link.delay_s) for link in wan.links]
        self.adjacent: list[list[tuple[int, float]]] = [[] for _ in range(self.n)]
        for u, v, delay in self.links:
            self.adjacent[u].append((v, delay))
            self.adjacent[v].append((u, delay))
        kinds: dict[tuple[float, float, float, float], int] = {}
        self.kind = [
            kinds.setdefault(
                (n.frames_per_cpu_s, n.leader_frames_per_cpu_s, n.free_cores, n.core_fps),
                len(kinds),
            )
            for n in nodes
        ]
        self.order = self._order()

    def _order(self) -> list[int]:
        """Islands in search order: the heaviest first, then each next the one with most links
        to those before it (heavier, then lower index, first): links close early, cuts show."""
        weight = [min(row) for row in self.cost]
        order = [min(range(self.n), key=lambda i: (-weight[i], -len(self.adjacent[i]), i))]
        while len(order) < self.n:
            placed = set(order)
            order.append(
                min(
                    (i for i in range(self.n) if i not in placed),
                    key=lambda i: (
                        -sum(v in placed for v, _ in self.adjacent[i]),
                        -weight[i],
                        i,
                    ),
                )
            )
        return order

    def key(self, assign: Sequence[int]) -> tuple[int, tuple[float, ...], float]:
        """What the search minimises: crossing links, their delays (shortest first, negated:
        longer is better), the busiest node's share."""
        delays = sorted(d for u, v, d in self.links if assign[u] != assign[v])
        used = [0.0] * self.k
        for i, j in enumerate(assign):
            used[j] += self.cost[i][j]
        share = max(_share(u, node.free_cores) for u, node in zip(used, self.nodes, strict=True))
        return len(delays), tuple(-d for d in delays), share

    def fits(self, assign: Sequence[int]) -> bool:
        used = [0.0] * self.k
        for i, j in enumerate(assign):
            if not self.allowed[i][j]:
                return False
            used[j] += self.cost[i][j]
        return all(u <= c for u, c in zip(used, self.capacity, strict=True))

    def check_alone(self) -> None:
        """PlacementDoesNotFit naming an island no node can take alone."""
        for load, row in zip(self.loads, self.allowed, strict=True):
            if not any(row):
                best = max(self.nodes, key=lambda n: (n.free_cores, n.core_fps))
                raise PlacementDoesNotFit(
                    "placement: the islands do not fit on these nodes: "
                    + _alone(load, best, self.margin)
                )

    def greedy(self) -> list[int] | None:
        """Each island in search order on the node holding most of its placed neighbours (then
        the one left with most room, then the first); None when one finds no room."""
        assign, used = [-1] * self.n, [0.0] * self.k
        for i in self.order:
            fitting = [
                j
                for j in range(self.k)
                if self.allowed[i][j] and used[j] + self.cost[i][j] <= self.capacity[j]
            ]
            if not fitting:
                return None
            j = min(
                fitting,
                key=lambda j: (
                    -sum(assign[v] == j for v, _ in self.adjacent[i]),
                    -(self.capacity[j] - used[j] - self.cost[i][j]) / self.capacity[j],
                    j,
                ),
            )
            assign[i], used[j] = j, used[j] + self.cost[i][j]
        return assign

    def packed(self) -> list[int] | None:
        """Best fit, the heaviest island first: each on the node it leaves least room on."""
        assign, used = [-1] * self.n, [0.0] * self.k
        for i in sorted(range(self.n), key=lambda i: (-max(self.cost[i]), i)):
            fitting = [
                j
                for j in range(self.k)
                if self.allowed[i][j] and used[j] + self.cost[i][j] <= self.capacity[j]
            ]
            if not fitting:
                return None
            j = min(fitting, key=lambda j: (self.capacity[j] - used[j] - self.cost[i][j], j))
            assign[i], used[j] = j, used[j] + self.cost[i][j]
        return assign

    def improve(self, assign: list[int]) -> list[int]:
        """Moves of one island and swaps of two that keep every node within its capacity, the
        best of each pass taken while one lowers the key."""
        best, best_key = list(assign), self.key(assign)
        while True:
            found = None
            for candidate in self._neighbours(best):
                if self.fits(candidate):
                    key = self.key(candidate)
                    if key < best_key:
                        found, best_key = candidate, key
            if found is None:
                return best
            best = found

    def _neighbours(self, assign: list[int]) -> list[list[int]]:
        moves = []
        for i in range(self.n):
            for j in range(self.k):
                if j != assign[i]:
                    moves.append([*assign[:i], j, *assign[i + 1 :]])
        for a in range(self.n):
            for b in range(a + 1, self.n):
                if assign[a] != assign[b]:
                    swapped = list(assign)
                    swapped[a], swapped[b] = assign[b], assign[a]
                    moves.append(swapped)
        return moves

    def search(self, start: list[int] | None, steps: int) -> tuple[list[int] | None, bool]:
        """Branch and bound from `start` (the best so far, or None): the best assignment and
        whether the search finished (proof that none is better) within `steps`."""
        search = _Search(self, start, steps)
        search.branch(0)
        return search.best, not search.stopped

    def why(self, complete: bool) -> str:
        need = sum(min(row) for row in self.cost)
        have = sum(self.margin * node.free_cores for node in self.nodes)
        largest = max(range(self.n), key=lambda i: (min(self.cost[i]), -i))
        found = "no split of them fits" if complete else "the search found no split that fits"
        return (
            f"placement: the islands do not fit on these nodes: they need {need:.2f} cores in "
            f"all, the {self.k} node{'s' if self.k != 1 else ''} give {have:.2f} "
            f"({self.margin:.0%} of their free cores), and {found} (the largest, "
            f"{self.loads[largest].name}, needs {min(self.cost[largest]):.2f}); add nodes or "
            "raise the scenario's scale"
        )


class _Search:
    """One branch and bound: islands in the problem's order, each on every node it fits on (of
    identical empty nodes, the first only), cut short when it crosses more links than the best,
    or as many slower ones, or when what is left cannot fit in the room left."""

    def __init__(self, problem: _Packing, start: list[int] | None, steps: int) -> None:
        self.p, self.budget = problem, steps
        self.best = start
        self.best_key = problem.key(start) if start is not None else None
        self.assign = [-1] * problem.n
        self.used = [0.0] * problem.k
        self.count = [0] * problem.k
        self.cut: list[float] = []
        self.steps, self.stopped = 0, False
        order = problem.order
        position = {island: t for t, island in enumerate(order)}
        self.before = [
            [(v, d) for v, d in problem.adjacent[i] if position[v] < position[i]] for i in order
        ]
        least = [min(problem.cost[i]) for i in order]
        self.rest = [sum(least[t:]) for t in range(problem.n + 1)]
        self.room = sum(problem.capacity)
        self.placed = [0.0] * (problem.n + 1)  # the cores the first t islands take, as placed

    def branch(self, t: int) -> None:
        p = self.p
        self.steps += 1
        if self.steps > self.budget:
            self.stopped = True
            return
        if self._pruned(t):
            return
        if t == p.n:
            key = p.key(self.assign)
            if self.best_key is None or key < self.best_key:
                self.best, self.best_key = list(self.assign), key
            return
        island = p.order[t]
        for j in self._choices(t, island):
            crossed = [d for v, d in self.before[t] if self.assign[v] != j]
            self.assign[island], self.used[j] = j, self.used[j] + p.cost[island][j]
            self.count[j] += 1
            self.cut.extend(crossed)
            self.placed[t + 1] = self.placed[t] + p.cost[island][j]
            self.branch(t + 1)
            del self.cut[len(self.cut) - len(crossed) :]
            self.count[j] -= 1
            self.assign[island], self.used[j] = -1, self.used[j] - p.cost[island][j]
            if self.stopped:
                return

    def _pruned(self, t: int) -> bool:
        if self.rest[t] > self.room - self.placed[t]:
            return True
        if self.best_key is None or len(self.cut) < self.best_key[0]:
            return False
        return len(self.cut) > self.best_key[0] or (
            tuple(-d for d in sorted(self.cut)) > self.best_key[1]
        )

    def _choices(self, t: int, island: int) -> list[int]:
        """The nodes `island` fits on now, those holding most of its placed neighbours first."""
        p, empty_kinds = self.p, set()
        choices = []
        for j in range(p.k):
            if not p.allowed[island][j] or self.used[j] + p.cost[island][j] > p.capacity[j]:
                continue
            if self.count[j] == 0:
                if p.kind[j] in empty_kinds:
                    continue  # an empty node like one tried already: the same placements
                empty_kinds.add(p.kind[j])
            choices.append(j)
        return sorted(
            choices, key=lambda j: (sum(self.assign[v] != j for v, _ in self.before[t]), j)
        )


# --- shared ---------------------------------------------------------------------------------------


def _share(cores: float, free: float) -> float:
    if free > 0:
        return cores / free
    return math.inf if cores > 0 else 0.0


def _switch_fits(node: Node, switch_fps: float, margin: float) -> bool:
    """One switch is one process: at most `margin` of a core, and never more than one."""
    return switch_fps <= min(1.0, margin) * node.core_fps * (1 + _EPSILON)


def _alone(load: IslandLoad, node: Node, margin: float) -> str:
    return (
        f"{load.name} alone needs {node.cores_for(load):.2f} cores at scale {load.scale:g} (its "
        f"switch {load.switch_fps:,.0f} frames/s, {load.switch_fps / node.core_fps:.2f} of a "
        f"core): more than {margin:.0%} of the {node.free_cores:.2f} free cores of {node.name}, "
        f"or a switch over {min(1.0, margin):.0%} of one core; only a larger scale fits it"
    )


def _node_names(nodes: Sequence[Node]) -> list[str]:
    if not nodes:
        raise PlacementError("placement: the cluster has no nodes")
    names = [node.name for node in nodes]
    twice = sorted({name for name in names if names.count(name) > 1})
    if twice:
        raise PlacementError(f"placement: two nodes are called {twice[0]!r}: name each once")
    return names


def _checked_loads(wan: Wan, loads: Sequence[IslandLoad] | None) -> tuple[IslandLoad, ...]:
    if loads is None:
        return tuple(IslandLoad(i, name, 0.0, 0.0) for i, name in enumerate(wan.names))
    if [load.island for load in loads] != list(range(wan.n)):
        raise PlacementError(
            f"placement: loads for islands {[load.island for load in loads]}, the WAN "
            f"{wan.name!r} has {wan.n} (0 to {wan.n - 1}, in order)"
        )
    return tuple(loads)


def _placement(
    wan: Wan,
    nodes: Sequence[Node],
    loads: tuple[IslandLoad, ...],
    placed: Sequence[str],
    optimal: bool = False,
) -> Placement:
    per_node = []
    for node in nodes:
        mine = [load for load, name in zip(loads, placed, strict=True) if name == node.name]
        per_node.append(
            NodeLoad(
                node,
                tuple(load.island for load in mine),
                sum(load.switch_fps for load in mine),
                sum(load.leader_fps for load in mine),
                sum(node.cores_for(load) for load in mine),
                max((load.switch_fps for load in mine), default=0.0),
            )
        )
    crossing = tuple(
        link for link in wan.links if placed[wan.index(link.a)] != placed[wan.index(link.b)]
    )
    return Placement(wan.names, tuple(placed), crossing, tuple(per_node), optimal)
