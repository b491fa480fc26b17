"""Send-time offsets that align a group's arrivals at every member's aggregator.

Member j's aggregator merges the streams of the other members i, which arrive at s_i + d[i, j]
(s_i: i's send offset, d: one-way delay). Its skew is the spread of those arrival times; the
group's skew is the largest over its members. Minimising it over s is a system of difference
constraints: for every receiver j and senders i != i2 (both != j),

    s_i2 - s_i <= z - (d[i2, j] - d[i, j]),

feasible iff no cycle of the constraint graph is negative, so the least skew z* is the maximum
mean cycle of the complete digraph with weights w[i, i2] = max_j (d[i2, j] - d[i, j]) (Karp's
algorithm, O(k^3)), and a set of offsets attaining it is given by shortest paths at z*.
The island's own contribution is not among the streams: its leader holds it in host memory and
hands it to the slot when the first remote contribution of that chunk arrives.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

NO_EDGE = -math.inf


@dataclass(frozen=True)
class Alignment:
    """Offsets for a group (seconds, smallest 0), with the skew and span they give."""

    offsets: tuple[float, ...]
    skew: float  # largest spread of remote arrival times at any member
    span: float  # from the first send to the last arrival at any member


def arrival_skew(delay: np.ndarray, members: Sequence[int], offsets: Sequence[float]) -> float:
    """The largest spread of remote arrival times over the members' aggregators."""
    worst = 0.0
    for j in members:
        times = [s + delay[i, j] for i, s in zip(members, offsets, strict=True) if i != j]
        if len(times) > 1:
            worst = max(worst, max(times) - min(times))
    return worst


def arrival_span(delay: np.ndarray, members: Sequence[int], offsets: Sequence[float]) -> float:
    """Time from the earliest send to the latest remote arrival at any member."""
    last = max(
        (s + delay[i, j] for i, s in zip(members, offsets, strict=True) for j in members if i != j),
        default=0.0,
    )
    return last - min(offsets, default=0.0)


def unaligned(delay: np.ndarray, members: Sequence[int]) -> Alignment:
    zeros = (0.0,) * len(members)
    return Alignment(
        zeros, arrival_skew(delay, members, zeros), arrival_span(delay, members, zeros)
    )


def _max_mean_cycle(w: list[list[float]]) -> float:
    """Karp's maximum mean cycle; 0 when the graph has no cycle."""
    k = len(w)
    best = NO_EDGE
    dist = [[NO_EDGE] * k for _ in range(k + 1)]
    dist[0] = [0.0] * k
    for t in range(1, k + 1):
        prev, row = dist[t - 1], dist[t]
        for v in range(k):
            row[v] = max(
                (prev[u] + w[u][v] for u in range(k) if w[u][v] != NO_EDGE and prev[u] != NO_EDGE),
                default=NO_EDGE,
            )
    for v in range(k):
        if dist[k][v] == NO_EDGE:
            continue
        worst = min((dist[k][v] - dist[t][v]) / (k - t) for t in range(k) if dist[t][v] != NO_EDGE)
        best = max(best, worst)
    return max(best, 0.0)


def aligned(delay: np.ndarray, members: Sequence[int]) -> Alignment:
    """Offsets of least skew (ties: the shortest-path solution, shifted to start at 0)."""
    k = len(members)
    w = [[NO_EDGE] * k for _ in range(k)]
    for a, i in enumerate(members):
        for b, i2 in enumerate(members):
            if a != b:
                gaps = [delay[i2, j] - delay[i, j] for j in members if j not in (i, i2)]
                if gaps:
                    w[a][b] = max(gaps)
    z = _max_mean_cycle(w)
    slack = 1e-12 * (1.0 + abs(z))
    s = [0.0] * k
    for _ in range(k):  # Bellman-Ford from a virtual source joined to every member at 0
        changed = False
        for a in range(k):
            for b in range(k):
                if w[a][b] != NO_EDGE and s[a] + (z + slack - w[a][b]) < s[b]:
                    s[b] = s[a] + (z + slack - w[a][b])
                    changed = True
        if not changed:
            break
    low = min(s)
    offsets = tuple(x - low for x in s)
    return Alignment(
        offsets, arrival_skew(delay, members, offsets), arrival_span(delay, members, offsets)
    )
