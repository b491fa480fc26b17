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

With jitter J (J[i, j]: how far a frame from i to j strays from d[i, j], either way) a stream's
chunk reaches j anywhere in [s_i + d[i, j] - J[i, j], s_i + d[i, j] + J[i, j]], so the skew is
counted from the earliest possible arrival to the latest: the weights become
w[i, i2] = max_j (d[i2, j] + J[i2, j] - d[i, j] + J[i, j]), and one stream alone already spreads
its chunk over 2 J[i, j] (a constant floor under the skew that no offset moves). With J = 0 every
figure is the jitter-free one, bit for bit.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

NO_EDGE = -math.inf


@dataclass(frozen=True)
class Alignment:
    """Offsets for a group (seconds, smallest 0), with the skew and span they give (both counted
    with the paths' jitter: from the earliest possible arrival, to the latest)."""

    offsets: tuple[float, ...]
    skew: float  # largest spread of remote arrival times at any member
    span: float  # from the first send to the last arrival at any member


SMALL = 24  # members up to which the offsets are found on Python lists, beyond on arrays

Local = tuple[list[list[float]], list[list[float]]]  # (earliest, latest) arrival after sending


def _local(delay: np.ndarray, members: Sequence[int], jitter: np.ndarray | None = None) -> Local:
    """(early, late): delay[members[a], members[b]] less and plus its jitter, as Python floats
    (both the delays themselves, the same list, without jitter)."""
    idx = np.asarray(members, dtype=np.intp)
    d = delay[np.ix_(idx, idx)]
    if jitter is None:
        same: list[list[float]] = d.tolist()
        return same, same
    j = jitter[np.ix_(idx, idx)]
    early: list[list[float]] = (d - j).tolist()
    late: list[list[float]] = (d + j).tolist()
    return early, late


def arrival_skew(
    delay: np.ndarray,
    members: Sequence[int],
    offsets: Sequence[float],
    jitter: np.ndarray | None = None,
) -> float:
    """The largest spread of remote arrival times over the members' aggregators."""
    return _skew(_local(delay, members, jitter), offsets)


def arrival_span(
    delay: np.ndarray,
    members: Sequence[int],
    offsets: Sequence[float],
    jitter: np.ndarray | None = None,
) -> float:
    """Time from the earliest send to the latest remote arrival at any member."""
    return _span(_local(delay, members, jitter)[1], offsets)


def _skew(local: Local, offsets: Sequence[float]) -> float:
    early, late = local
    worst = 0.0
    for j in range(len(late)):
        senders = [i for i in range(len(late)) if i != j]
        if early is late and len(senders) < 2:  # one stream, no jitter: no spread
            continue
        if senders:
            last = max(offsets[i] + late[i][j] for i in senders)
            first = min(offsets[i] + early[i][j] for i in senders)
            worst = max(worst, last - first)
    return worst


def _span(late: list[list[float]], offsets: Sequence[float]) -> float:
    k = len(late)
    last = max((offsets[i] + late[i][j] for i in range(k) for j in range(k) if i != j), default=0.0)
    return last - min(offsets, default=0.0)


def unaligned(
    delay: np.ndarray, members: Sequence[int], jitter: np.ndarray | None = None
) -> Alignment:
    zeros = (0.0,) * len(members)
    local = _local(delay, members, jitter)
    return Alignment(zeros, _skew(local, zeros), _span(local[1], zeros))


def aligned(
    delay: np.ndarray, members: Sequence[int], jitter: np.ndarray | None = None
) -> Alignment:
    """Offsets of least skew (ties: the shortest-path solution, shifted to start at 0)."""
    local = _local(delay, members, jitter)
    if len(members) <= SMALL:
        s = _least_skew(*local)
    else:
        s = _least_skew_arrays(np.array(local[0]), np.array(local[1]))
    low = min(s, default=0.0)
    offsets = tuple(x - low for x in s)
    return Alignment(offsets, _skew(local, offsets), _span(local[1], offsets))


def _least_skew(early: list[list[float]], late: list[list[float]] | None = None) -> list[float]:
    """Offsets (not yet shifted) of least skew: Karp's cycle mean, then Bellman-Ford (`late`
    None: no jitter, the same as `early`). A stream's own spread (late - early at one
    receiver) is a loop no offset moves: it bounds the skew from below but leaves the offsets
    to the other constraints."""
    late = early if late is None else late
    k = len(late)
    w = [[NO_EDGE] * k for _ in range(k)]
    for a in range(k):
        for b in range(k):
            if a != b and k > 2:
                w[a][b] = max([late[b][j] - early[a][j] for j in range(k) if j != a and j != b])
    z = _max_mean_cycle(w)
    slack = 1e-12 * (1.0 + abs(z))
    out = [[(b, z + slack - w[a][b]) for b in range(k) if w[a][b] != NO_EDGE] for a in range(k)]
    s = [0.0] * k
    for _ in range(k):  # Bellman-Ford from a virtual source joined to every member at 0
        changed = False
        for a in range(k):
            here = s[a]  # a has no edge to itself: fixed while its edges are relaxed
            for b, length in out[a]:
                if here + length < s[b]:
                    s[b] = here + length
                    changed = True
        if not changed:
            break
    return s


def _max_mean_cycle(w: list[list[float]]) -> float:
    """Karp's maximum mean cycle; 0 when the graph has no cycle."""
    k = len(w)
    into = [[(u, w[u][v]) for u in range(k) if w[u][v] != NO_EDGE] for v in range(k)]
    dist = [[0.0] * k]
    for _ in range(k):  # dist[t][v]: the heaviest walk of t edges ending at v
        prev = dist[-1]
        dist.append(
            [
                max([prev[u] + x for u, x in edges if prev[u] != NO_EDGE], default=NO_EDGE)
                for edges in into
            ]
        )
    best = NO_EDGE
    for v in range(k):
        if dist[k][v] == NO_EDGE:
            continue
        worst = min((dist[k][v] - dist[t][v]) / (k - t) for t in range(k) if dist[t][v] != NO_EDGE)
        best = max(best, worst)
    return max(best, 0.0)


def _least_skew_arrays(early: np.ndarray, late: np.ndarray | None = None) -> list[float]:
    """_least_skew for many members, on arrays, with the same arithmetic in the same order."""
    late = early if late is None else late
    k = len(late)
    w = np.full((k, k), NO_EDGE)
    for a in range(k):  # w[a, b] = max over j other than a, b of late[b, j] - early[a, j]
        gaps = late - early[a]
        gaps[:, a] = NO_EDGE
        np.fill_diagonal(gaps, NO_EDGE)
        w[a] = gaps.max(axis=1)
        w[a, a] = NO_EDGE
    dist = np.full((k + 1, k), NO_EDGE)  # Karp: dist[t, v], heaviest walk of t edges to v
    dist[0] = 0.0
    for t in range(1, k + 1):
        dist[t] = (dist[t - 1][:, None] + w).max(axis=0)
    with np.errstate(invalid="ignore"):  # -inf - -inf where no walk: masked below
        means = (dist[k][None, :] - dist[:k]) / (k - np.arange(k))[:, None]
    means[dist[:k] == NO_EDGE] = math.inf
    z = max(float(means.min(axis=0)[dist[k] != NO_EDGE].max(initial=NO_EDGE)), 0.0)
    slack = 1e-12 * (1.0 + abs(z))
    step = z + slack - w  # the length of edge a -> b (inf: no edge)
    s = np.zeros(k)
    for _ in range(k):  # Bellman-Ford: one source's edges at a time, relaxed in place
        changed = False
        for a in range(k):
            reach = s[a] + step[a]
            better = reach < s
            if better.any():
                s = np.where(better, reach, s)
                changed = True
        if not changed:
            break
    listed: list[float] = s.tolist()
    return listed
