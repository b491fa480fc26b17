"""Choose the schedule: family, assignment of islands to groups, and send offsets.

Each family's candidate is scored by its time to consensus: the sum of its round times (cost
model) over the rounds its mixing needs to bring the consensus error to epsilon. For rotating
cliques the islands fill a grid whose lines are the groups; its rounds reach the exact average
together, whatever the assignment, so the best assignment minimises the sum of the grid's round
times. For a square grid with few enough partitions that sum is minimised exactly (branch and
bound over partitions); otherwise by local search over swaps of two islands on a common line.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from controller.planner.consensus import rounds_and_exactness
from controller.planner.cost import CostModel, CostParams, Geometry, RoundCost
from controller.planner.exceptions import PlanError
from controller.planner.schedule import (
    Group,
    Round,
    Schedule,
    all_to_all,
    cliques,
    exponential_pairs,
    grid_dims,
    grid_rounds,
    orthogonal,
    partitions,
    ring_pairs,
)
from topo.wan import Wan

EXACT_SEARCH_LIMIT = 20_000  # partitions of a square grid's rows beyond which search is local
DEFAULT_EPSILON = 1e-3


@dataclass(frozen=True)
class FamilyPlan:
    family: str
    schedule: Schedule
    costs: tuple[RoundCost, ...]  # one per round of the cycle
    rounds: int | None  # rounds to consensus, None if never within the limit
    exact: bool  # the average reached is exact, not approximate

    @property
    def time_s(self) -> float:
        if self.rounds is None:
            return math.inf
        return sum(self.costs[t % len(self.costs)].time_s for t in range(self.rounds))

    @property
    def memory_bytes(self) -> float:
        used = range(len(self.costs) if self.rounds is None else min(self.rounds, len(self.costs)))
        return max((self.costs[t].memory_bytes for t in used), default=0.0)


@dataclass(frozen=True)
class Plan:
    params: CostParams
    epsilon: float
    families: tuple[FamilyPlan, ...]

    @property
    def best(self) -> FamilyPlan:
        return min(self.families, key=lambda f: f.time_s)

    def family(self, name: str) -> FamilyPlan:
        for f in self.families:
            if f.family == name:
                return f
        raise KeyError(name)


@dataclass
class Planner:
    """Plans on one WAN; caches what does not depend on sizes across calls (e.g. a sweep)."""

    wan: Wan
    geometry: Geometry = field(init=False)
    _mixing: dict[tuple[Schedule, float], tuple[int | None, bool]] = field(default_factory=dict)
    _tour: list[int] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.geometry = Geometry(self.wan)

    def model(self, params: CostParams) -> CostModel:
        return CostModel(self.wan, params, self.geometry)

    def default_families(self) -> list[str]:
        n = self.wan.n
        sizes = [k for k in range(3, min(8, n - 1) + 1) if k in (grid_dims(n, k) or ())]
        if n > 3 and not sizes:
            sizes = [3]  # no grid: rotating blocks of three, approximate consensus
        return ["all-to-all", *(f"cliques-{k}" for k in sizes), "ring-pairs", "exponential-pairs"]

    def evaluate(self, model: CostModel, schedule: Schedule, epsilon: float) -> FamilyPlan:
        key = (schedule, epsilon)
        if key not in self._mixing:  # mixing.rounds_to_consensus, and exact by then
            self._mixing[key] = rounds_and_exactness(schedule, epsilon)
        rounds, exact = self._mixing[key]
        return FamilyPlan(schedule.family, schedule, model.schedule_costs(schedule), rounds, exact)

    def check_family(self, family: str) -> None:
        """Raise PlanError unless `family` names a schedule family for this WAN."""
        if family in ("all-to-all", "ring-pairs", "exponential-pairs"):
            return
        size = family.removeprefix("cliques-")
        if size != family and size.isdigit() and 2 <= int(size) <= self.wan.n:
            return
        raise PlanError(
            f"unknown schedule family {family!r}; known: all-to-all, cliques-K "
            f"(2 <= K <= {self.wan.n}), ring-pairs, exponential-pairs"
        )

    def schedule_for(self, family: str, model: CostModel) -> Schedule:
        self.check_family(family)
        n = self.wan.n
        if family == "all-to-all":
            return all_to_all(n)
        if family == "ring-pairs":
            return ring_pairs(n, self.tour())
        if family == "exponential-pairs":
            return exponential_pairs(n, self.tour())
        return best_grid(model, int(family.removeprefix("cliques-")), self.tour())

    def plan(
        self,
        params: CostParams,
        epsilon: float = DEFAULT_EPSILON,
        families: Sequence[str] | None = None,
    ) -> Plan:
        model = self.model(params)
        names = list(families) if families else self.default_families()
        for name in names:
            self.check_family(name)
        plans = tuple(self.evaluate(model, self.schedule_for(f, model), epsilon) for f in names)
        return Plan(params, epsilon, plans)

    def tour(self) -> list[int]:
        """Islands in nearest-neighbour order from island 0 (a ring that keeps neighbours close;
        ties go to the lowest index)."""
        if not self._tour:
            delay = self.wan.delay
            seen = np.zeros(self.wan.n, dtype=bool)
            order = [0]
            for _ in range(self.wan.n - 1):
                seen[order[-1]] = True
                row = np.where(seen, np.inf, delay[order[-1]])
                order.append(int(np.flatnonzero(row == row.min())[0]))
            self._tour = order
        return list(self._tour)


# two rounds' time, the first's time, then their groups: the order grids are preferred in
PairKey = tuple[float, float, tuple[Group, ...], tuple[Group, ...]]


def _pair_key(p: Round, q: Round, tp: float, tq: float) -> PairKey:
    return (tp + tq, tp, p.groups, q.groups)


def _two_round_grid(n: int, k: int, first: Round, second: Round) -> Schedule:
    """The k x k grid whose first round is `first` (lines along dimension 0) then `second`."""
    cells = [next(iter(set(a) & set(b))) for b in second.groups for a in first.groups]
    return cliques(n, k, cells)


def exhaustive_grid(model: CostModel, k: int) -> Schedule:
    """Reference search: every ordered pair of orthogonal partitions into groups of k (a k x k
    grid's rows and columns), each pair's two rounds costed afresh. Slow; for checking."""
    n = model.wan.n
    if n != k * k:
        raise ValueError(f"exhaustive search needs n = k^2 islands, got n={n}, k={k}")
    every = list(partitions(range(n), k))
    best: PairKey | None = None
    for p in every:
        for q in every:
            if orthogonal(p, q):
                key = _pair_key(p, q, model.round_cost(p).time_s, model.round_cost(q).time_s)
                if best is None or key < best:
                    best = key
    assert best is not None
    return _two_round_grid(n, k, Round(best[2]), Round(best[3]))


def best_grid(model: CostModel, k: int, start: Sequence[int] | None = None) -> Schedule:
    """The cheapest rotating-cliques schedule of group size k (see the module docstring)."""
    n = model.wan.n
    dims = grid_dims(n, k)
    if dims is None:
        return cliques(n, k, start)  # no grid: approximate blocks along the given order
    side = dims[0]  # groups are grid lines: of size at most k (9 islands, k = 4: lines of 3)
    if len(dims) == 2 and side == dims[1] and _partition_count(n, side) <= EXACT_SEARCH_LIMIT:
        square = _branch_and_bound(model, side)
        return Schedule(f"cliques-{k}", n, square.rounds)
    return _local_search(model, k, dims, list(start) if start else list(range(n)))


def _partition_count(n: int, k: int) -> int:
    ways: int = math.factorial(n) // (math.factorial(k) ** (n // k) * math.factorial(n // k))
    return ways


def _branch_and_bound(model: CostModel, k: int) -> Schedule:
    """Exact: cost each partition once, then pair them cheapest first, stopping when no pair
    left can beat the best found. Same order of preference as exhaustive_grid."""
    n = model.wan.n
    ranked = sorted(
        ((model.round_time(p), p) for p in partitions(range(n), k)),
        key=lambda tp: (tp[0], tp[1].groups),
    )
    cheapest = ranked[0][0]
    best: PairKey | None = None
    for tp, p in ranked:
        if best is not None and tp + cheapest > best[0]:
            break
        for tq, q in ranked:
            if best is not None and tp + tq > best[0]:
                break
            if orthogonal(p, q):
                key = _pair_key(p, q, tp, tq)
                if best is None or key < best:
                    best = key
    assert best is not None
    return _two_round_grid(n, k, Round(best[2]), Round(best[3]))


def _local_search(
    model: CostModel, k: int, dims: tuple[int, ...], start: list[int], max_evals: int = 6000
) -> Schedule:
    """Swap two islands on a common line while it lowers the sum of the grid's round times.

    A swap along dimension d leaves that dimension's round as it is and changes two lines of
    every other. Those rounds are costed one by one while the bounds of the rest (each group at
    its own cap, `CostModel.time_bound`) still leave room to lower the sum; a swap turned down
    on bounds still counts as costed, so the search takes the steps it would take costing
    every round of every swap."""
    n = model.wan.n
    grid = _Grid(start, dims)
    times = [model.round_cost(grid.round(e)).time_s for e in range(len(dims))]
    evals, improved = 0, True
    while improved and evals < max_evals:
        improved = False
        for a, b, d in grid.moves:
            grid.swap(a, b)
            others = {e: grid.round(e) for e in range(len(dims)) if e != d}
            evals += len(dims) - 1
            trial = [times[e] if e == d else model.time_bound(others[e]) for e in range(len(dims))]
            costed = True
            for e in others:  # cost the rounds while the others' bounds still allow a gain
                costed = sum(trial) < sum(times) * (1 - 1e-9)
                if not costed:
                    break
                trial[e] = model.round_cost(others[e]).time_s
            if costed and sum(trial) < sum(times) * (1 - 1e-9):
                times, improved = trial, True
            else:
                grid.swap(a, b)
            if evals >= max_evals:
                break
    rounds = grid_rounds(grid.cells, dims)[: len(dims)]
    order = sorted(range(len(dims)), key=lambda e: (times[e], e))
    if len(dims) == 2 and dims[0] == dims[1]:
        return _two_round_grid(n, k, rounds[order[0]], rounds[order[1]])
    return Schedule(f"cliques-{k}", n, tuple(rounds[e] for e in order))


class _Grid:
    """Islands on a grid (cells[c] at row-major cell c) with each dimension's lines kept as the
    groups `grid_rounds` makes of them, so that a swap updates only the lines it touches."""

    def __init__(self, cells: Sequence[int], dims: tuple[int, ...]) -> None:
        self.cells = list(cells)
        coords = list(itertools.product(*(range(side) for side in dims)))
        strides = [math.prod(dims[d + 1 :]) for d in range(len(dims))]
        self.line_of: list[list[int]] = []  # per dimension, each cell's line
        self.lines: list[list[list[int]]] = []  # per dimension, each line's cells
        for d in range(len(dims)):
            ids: dict[tuple[int, ...], int] = {}
            of = [ids.setdefault(xy[:d] + xy[d + 1 :], len(ids)) for xy in coords]
            lines: list[list[int]] = [[] for _ in ids]
            for c, line in enumerate(of):
                lines[line].append(c)
            self.line_of.append(of)
            self.lines.append(lines)
        self.groups = [
            [self._group(d, line) for line in range(len(ls))] for d, ls in enumerate(self.lines)
        ]
        # swaps of two cells on a common line, as (a, b, the dimension they differ in), a < b
        self.moves = [
            (a, b, d)
            for a, xy in enumerate(coords)
            for b, d in sorted(
                (a + (v - xy[d]) * strides[d], d)
                for d in range(len(dims))
                for v in range(xy[d] + 1, dims[d])
            )
        ]

    def _group(self, d: int, line: int) -> Group:
        return tuple(sorted(self.cells[c] for c in self.lines[d][line]))

    def swap(self, a: int, b: int) -> None:
        self.cells[a], self.cells[b] = self.cells[b], self.cells[a]
        for d, of in enumerate(self.line_of):
            if of[a] != of[b]:
                self.groups[d][of[a]] = self._group(d, of[a])
                self.groups[d][of[b]] = self._group(d, of[b])

    def round(self, d: int) -> Round:
        """grid_rounds(cells, dims)[d]: the lines along dimension d, in canonical order."""
        return Round(tuple(sorted(self.groups[d], key=lambda g: g[0])))
