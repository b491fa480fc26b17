"""Fit link delays so that shortest-path round trips reproduce a measured RTT matrix.

Measured RTT matrices are not metrics: a pair's direct RTT can exceed the sum through a third
city (routing policy, region placement). So half the measured RTT is not a usable link delay, and
no delay assignment can match every pair. This module finds delays that minimise the largest
relative error of the model's shortest-path RTTs, with each link's delay at least its fibre
lower bound (great-circle distance x 4.9 us/km, the speed of light in glass).

Method (an iterated linear programme, solved with HiGHS through scipy):

1. Fix, for every measured pair p, its current shortest path P_p (from the current delays).
2. Give each pair an error bound u_p and require len(P_p) <= (1 + u_p) * target_p, len(Q) >=
   (1 - u_p) * target_p for every path Q between the pair, and delay >= fibre bound. The "every
   path" constraints are added lazily: solve, find the shortest path under the solution, add it
   if it is too short, solve again.
3. Minimise the largest u_p; fix the pairs that cannot do better (each checked by an LP of its
   own); minimise the largest u_p of the rest; repeat until every pair is fixed (a
   lexicographic minimax: the worst pair first, then the next worst, and so on).
4. Recompute shortest paths under the new delays and start again from 1, until the paths no
   longer change; keep the best round.

The true shortest-path error of a pair is at most its u_p: the shortest path is no longer than
P_p and, like every path, no shorter than (1 - u_p) * target_p. Delays are then rounded to a
resolution (0.1 ms by default), never below the fibre bound.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field, replace

import numpy as np
from scipy.optimize import linprog

from topo.exceptions import FitError
from topo.wan import FIBRE_S_PER_KM, City, Wan, great_circle_km


@dataclass(frozen=True)
class MetricFloor:
    """The largest triangle violation in a matrix: no metric fits it with a smaller error.

    For cities i, j, k with m_ik > m_ij + m_jk, any model with d_ik <= d_ij + d_jk has a
    relative error of at least (m_ik - m_ij - m_jk) / (m_ik + m_ij + m_jk) on one of the pairs.
    """

    rel_error: float
    far: tuple[str, str]  # the pair whose RTT exceeds the detour
    via: str


@dataclass(frozen=True)
class DelayFit:
    """The WAN with fitted delays, the optimum before rounding and the rounds it took."""

    wan: Wan
    lp_worst: float  # the largest relative error before rounding the delays
    rounds: int
    floor: MetricFloor | None


def fibre_delay_s(a: City, b: City) -> float:
    """One-way delay of a fibre laid along the great circle between two cities."""
    return great_circle_km(a, b) * FIBRE_S_PER_KM


def metric_floor(wan: Wan) -> MetricFloor | None:
    """The largest triangle violation among the measured pairs of `wan` (None if there is none)."""
    m = wan.measured_rtt_s
    best: MetricFloor | None = None
    for x, y, z in itertools.permutations(range(wan.n), 3):
        i, j, k = wan.names[x], wan.names[y], wan.names[z]
        ik, ij, jk = frozenset((i, k)), frozenset((i, j)), frozenset((j, k))
        if ik in m and ij in m and jk in m and x < z:
            excess = (m[ik] - m[ij] - m[jk]) / (m[ik] + m[ij] + m[jk])
            if excess > (1e-9 if best is None else best.rel_error):
                best = MetricFloor(excess, (i, k), j)
    return best


def fit_delays(wan: Wan, *, resolution_s: float = 1e-4, max_rounds: int = 50) -> DelayFit:
    """Fit every link delay of `wan` to its measured RTTs (see the module docstring)."""
    if not wan.measured_rtt_s:
        raise FitError(f"WAN {wan.name!r} has no measured RTTs to fit")
    if max_rounds < 1 or resolution_s <= 0:
        raise ValueError("fit_delays needs max_rounds >= 1 and a positive resolution_s")
    problem = _Problem.of(wan)
    seen: set[tuple[tuple[int, ...], ...]] = set()
    best: tuple[list[float], np.ndarray] | None = None
    paths = problem.paths(problem.start())
    while paths not in seen and len(seen) < max_rounds:
        seen.add(paths)
        errors, delays = problem.solve(paths)
        ranked = sorted(errors, reverse=True)
        if best is None or ranked < best[0]:
            best = (ranked, delays)
        paths = problem.paths(delays)
    if best is None:
        raise FitError(f"delay fit of WAN {wan.name!r} ran no round")
    rounded = [
        max(round(d / resolution_s), math.ceil(lb / resolution_s - 1e-9)) * resolution_s
        for d, lb in zip(best[1], problem.lower, strict=True)
    ]
    return DelayFit(problem.with_delays(rounded), best[0][0], len(seen), metric_floor(wan))


@dataclass(frozen=True)
class _Problem:
    """The fit's data: links as variables (in ms), measured pairs with one-way targets."""

    wan: Wan
    ends: tuple[tuple[int, int], ...]  # link -> city indices
    lower: tuple[float, ...]  # link -> fibre bound, s
    pairs: tuple[tuple[int, int], ...]
    target_ms: tuple[float, ...]  # pair -> half the measured RTT, ms

    @classmethod
    def of(cls, wan: Wan) -> _Problem:
        ends = tuple((wan.index(link.a), wan.index(link.b)) for link in wan.links)
        lower = tuple(fibre_delay_s(wan.cities[u], wan.cities[v]) for u, v in ends)
        measured = sorted(
            (tuple(sorted(wan.index(c) for c in pair)), rtt)
            for pair, rtt in wan.measured_rtt_s.items()
        )
        pairs = tuple((i, j) for (i, j), _ in measured)
        target_ms = tuple(rtt / 2 * 1e3 for _, rtt in measured)
        return cls(wan, ends, lower, pairs, target_ms)

    def start(self) -> np.ndarray:
        """Initial delays: half the direct RTT where measured, else 1.5 x the fibre bound."""
        start = []
        for link, lb in zip(self.wan.links, self.lower, strict=True):
            rtt = self.wan.measured_rtt_s.get(frozenset((link.a, link.b)))
            start.append(max(lb, rtt / 2) if rtt is not None else 1.5 * lb)
        return np.array(start)

    def with_delays(self, delays_s: list[float] | np.ndarray) -> Wan:
        links = tuple(
            replace(link, delay_s=float(d))
            for link, d in zip(self.wan.links, delays_s, strict=True)
        )
        return replace(self.wan, links=links)

    def link_sets(self, wan: Wan) -> tuple[tuple[int, ...], ...]:
        """For every pair, the link numbers on its shortest path in `wan`."""
        number = {}
        for k, (u, v) in enumerate(self.ends):
            number[(u, v)] = number[(v, u)] = k
        sets = []
        for i, j in self.pairs:
            nodes = wan.path(i, j)
            sets.append(tuple(sorted(number[edge] for edge in itertools.pairwise(nodes))))
        return tuple(sets)

    def paths(self, delays_s: np.ndarray) -> tuple[tuple[int, ...], ...]:
        return self.link_sets(self.with_delays(delays_s))

    def solve(self, paths: tuple[tuple[int, ...], ...]) -> tuple[np.ndarray, np.ndarray]:
        """Lexicographic minimax on fixed paths: per-pair error bounds and link delays (s).

        Minimise the largest error z; then fix the pairs that cannot go below z (checked one
        by one) and minimise the largest error of the others, until every pair is fixed.
        """
        lp = _Lp(self, paths)
        caps: dict[int, float] = {}
        x = lp.solve(caps, objective=None)
        while len(caps) < len(self.pairs):
            z = float(x[lp.z])
            tight = [p for p in range(len(self.pairs)) if p not in caps and x[lp.u + p] > z - 1e-7]
            blocking: list[int] = []
            reducible: set[int] = set()
            for p in tight:
                if p in reducible:
                    continue
                trial = lp.solve(caps, objective=p, z_cap=z)
                reducible.update(q for q in tight if trial[lp.u + q] < z - 1e-6)
                if p not in reducible:
                    blocking.append(p)
            for p in blocking or tight:
                caps[p] = z + 1e-9
            x = lp.solve(caps, objective=None)
        u = np.array([caps[p] for p in range(len(self.pairs))])
        return u, x[: len(self.ends)] / 1e3


@dataclass
class _Lp:
    """The linear programme on fixed paths, with the path cuts it has collected so far.

    Variables (delays in ms): link delays, then one relative error bound u_p per pair, then z.
    """

    problem: _Problem
    paths: tuple[tuple[int, ...], ...]
    cuts: list[tuple[int, tuple[int, ...]]] = field(default_factory=list)

    @property
    def u(self) -> int:
        return len(self.problem.ends)

    @property
    def z(self) -> int:
        return self.u + len(self.problem.pairs)

    def solve(
        self, caps: dict[int, float], objective: int | None, z_cap: float = math.inf
    ) -> np.ndarray:
        """Minimise z (objective None) or one pair's u; add too-short paths until none is left."""
        problem = self.problem
        while True:
            x = self._linprog(caps, objective, z_cap)
            model = problem.with_delays(x[: self.u] / 1e3)
            new = [
                (p, links)
                for p, links in enumerate(problem.link_sets(model))
                if model.delay[problem.pairs[p]] * 1e3
                < (1 - x[self.u + p]) * problem.target_ms[p] - 1e-6
                and (p, links) not in self.cuts
            ]
            if not new:
                return x
            self.cuts.extend(new)

    def _linprog(self, caps: dict[int, float], objective: int | None, z_cap: float) -> np.ndarray:
        problem = self.problem
        n_pairs = len(problem.pairs)
        size = self.z + 1
        rows: list[np.ndarray] = []
        rhs: list[float] = []

        def row(p: int, links: tuple[int, ...], sign: float) -> None:
            """sign = +1: len <= (1 + u_p) t_p; sign = -1: len >= (1 - u_p) t_p."""
            r = np.zeros(size)
            r[list(links)] = sign
            r[self.u + p] = -problem.target_ms[p]
            rows.append(r)
            rhs.append(sign * problem.target_ms[p])

        for p, links in enumerate(self.paths):
            row(p, links, 1.0)
            row(p, links, -1.0)
        for p, links in self.cuts:
            row(p, links, -1.0)
        for p in range(n_pairs):
            if p not in caps:  # u_p <= z
                r = np.zeros(size)
                r[self.u + p], r[self.z] = 1.0, -1.0
                rows.append(r)
                rhs.append(0.0)
        cost = np.zeros(size)
        cost[self.z if objective is None else self.u + objective] = 1.0
        bounds: list[tuple[float, float | None]] = [(lb * 1e3, None) for lb in problem.lower]
        bounds += [(0.0, caps.get(p)) for p in range(n_pairs)]
        bounds.append((0.0, None if math.isinf(z_cap) else z_cap))
        result = linprog(cost, A_ub=np.array(rows), b_ub=np.array(rhs), bounds=bounds)
        if result.status != 0:
            raise FitError(
                f"delay fit of WAN {problem.wan.name!r}: the solver says {result.message}"
            )
        return np.asarray(result.x)
