"""What a group's exchange costs in each network mode (derivation: docs/cost-model.md, "Network
modes").

- `inna`: the edges replicate each member's stream along its multicast tree and merge the
  streams in line: a member sends one stream and receives one (the model in `cost.py`).
- `multicast`: the edges replicate but do not merge: a member sends one stream and receives the
  k - 1 others, and its host sums them, so its access link carries (k - 1) streams in.
- `plain`: the edges only route. Hosts run a collective over unicast, whichever is faster for
  the group alone:
  - `ring`: ring all-reduce, as NCCL and gloo run it: reduce-scatter then all-gather, 2(k - 1)
    steps in each of which every member sends D / k to its successor. The worker library
    pipelines it chunk by chunk (a chunk goes on to the next step as soon as it is in), so a
    member's link is busy for 2(k - 1) segments and the round ends a hop after that, unless the
    delays around the ring are the longer chain: one segment plus 2(k - 1) consecutive hops.
    A member sends one stream and receives one;
  - `direct`: every member unicasts its update to every other member and sums locally: its
    access link carries (k - 1) streams out and (k - 1) in.

With jitter on the WAN every delay here is the latest a frame can take (`Wan.delay` plus
`Wan.jitter`): the hosts wait for the last frame. The ring's order is the planner's choice: the
order with the smallest slowest hop, then the smallest total delay (every order for up to
`EXACT_RING_LIMIT` members, else nearest neighbour improved by 2-opt).
"""

from __future__ import annotations

import itertools
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from innet.vocabulary import Collective
from topo.wan import Wan

EXACT_RING_LIMIT = 7  # members up to which every ring order is tried (6! = 720 orders)
RING_ON_LISTS = 32  # members up to which the order is found on lists, beyond on arrays

Edge = tuple[int, int]


@dataclass(frozen=True)
class CollectiveCost:
    """One way for a group to exchange its updates: its link loads, access share and timing."""

    name: Collective  # ring, direct, multicast or inna
    loads: Counter[Edge]  # streams on each directed WAN link
    access_share: int  # streams on a member's busiest access direction: R <= B / access_share
    steps: int  # transfers of the update's 1 / pieces each, back to back on a member's link
    pieces: int  # a transfer carries D / pieces
    latency_s: float  # delay after the last transfer (ring: the slowest hop; else the span)
    order: tuple[int, ...]  # the ring's order (the members, for the others)
    chain_s: float = 0.0  # ring: the longest run of 2 (k - 1) consecutive hops' delays

    def time_s(self, bits: float, rate_bps: float) -> float:
        """The group's time at this per-stream rate: the member's link busy for every transfer,
        or one transfer and then the chain of hops, whichever is longer (pipelined chunks)."""
        piece = bits / self.pieces / rate_bps
        return max(self.steps * piece + self.latency_s, piece + self.chain_s)


def latest_delay(wan: Wan) -> np.ndarray:
    """The latest a frame from i reaches j: the path's delay plus its jitter (the delays
    themselves, the same array, on a WAN without jitter)."""
    return wan.delay + wan.jitter if wan.has_jitter else wan.delay


def _path_edges(wan: Wan, src: int, dst: int) -> list[Edge]:
    nodes = wan.path(src, dst)
    return list(itertools.pairwise(nodes))


def ring_order(delay: np.ndarray, members: Sequence[int]) -> tuple[int, ...]:
    """The ring through `members` with the smallest slowest hop, then the smallest total."""
    if len(members) <= RING_ON_LISTS:
        return _small_ring_order(delay, members)
    order = _nearest_neighbour(delay, members[0], list(members[1:]))
    sub = delay[np.ix_(order, order)]
    symmetric = bool(np.array_equal(sub, sub.T))
    improved = True
    while improved:  # 2-opt while it helps: every reversal of order[i..j], in turn
        improved = False
        for i in range(1, len(order) - 1):
            j = _first_gain(delay, order, i, i + 1, symmetric)
            while j is not None:
                order = order[:i] + order[i : j + 1][::-1] + order[j + 1 :]
                improved = True
                j = _first_gain(delay, order, i, j + 1, symmetric)
    return tuple(order)


def _small_ring_order(delay: np.ndarray, members: Sequence[int]) -> tuple[int, ...]:
    """ring_order on Python lists, members by position: every order for up to
    EXACT_RING_LIMIT members, else nearest neighbour then 2-opt over every candidate."""
    k = len(members)
    d = delay[np.ix_(members, members)].tolist()

    def key(order: Sequence[int]) -> tuple[float, float]:
        hops = [d[a][b] for a, b in zip(order, [*order[1:], order[0]], strict=True)]
        return max(hops), sum(hops)

    if k <= EXACT_RING_LIMIT:
        best = min(((0, *p) for p in itertools.permutations(range(1, k))), key=key)
        return tuple(members[a] for a in best)
    order, left = [0], set(range(1, k))
    while left:  # nearest neighbour (ties: the lowest island), then 2-opt while it helps
        here = order[-1]
        order.append(min(left, key=lambda j: (d[here][j], members[j])))
        left.remove(order[-1])
    improved = True
    while improved:
        improved = False
        for i, j in itertools.combinations(range(1, k), 2):
            candidate = order[:i] + order[i : j + 1][::-1] + order[j + 1 :]
            if key(candidate) < key(order):
                order, improved = candidate, True
    return tuple(members[a] for a in order)


def _ring_key(delay: np.ndarray, order: Sequence[int]) -> tuple[float, float]:
    """(slowest hop, total delay) of the ring through `order`, back to its start."""
    hops = [float(delay[a, b]) for a, b in zip(order, [*order[1:], order[0]], strict=True)]
    return max(hops), sum(hops)


def _nearest_neighbour(delay: np.ndarray, first: int, rest: Sequence[int]) -> list[int]:
    """From `first`, on to the nearest member not yet visited (ties: the lowest index)."""
    left = np.array(sorted(rest), dtype=np.intp)
    alive = np.ones(len(left), dtype=bool)
    order = [first]
    for _ in range(len(left)):
        row = np.where(alive, delay[order[-1], left], np.inf)
        nearest = int(np.flatnonzero(row == row.min())[0])
        alive[nearest] = False
        order.append(int(left[nearest]))
    return order


def _first_gain(
    delay: np.ndarray, order: list[int], i: int, start: int, symmetric: bool
) -> int | None:
    """The first j >= start whose reversal of order[i..j] lowers the ring's key, or None.

    A reversal trades the hops into position i and out of position j for two new ones; with
    symmetric delays the hops between keep their values, so a candidate's slowest hop follows
    exactly from the ring's three slowest, and its total from a difference. Where that
    difference is too small to outweigh the rounding of the totals, or the delays are not
    symmetric, the candidate's key is computed in full: the choices are those of comparing
    every candidate's key in turn."""
    k = len(order)
    if start > k - 1:
        return None
    ring = np.asarray(order, dtype=np.intp)
    after = np.roll(ring, -1)
    hops = delay[ring, after]
    listed = hops.tolist()  # the hops _ring_key adds up, in its order
    old = (max(listed), sum(listed))
    js = np.arange(start, k)
    into, out = delay[ring[i - 1], ring[js]], delay[ring[i], after[js]]
    delta = (into + out) - (hops[i - 1] + hops[js])
    top = np.argsort(-hops, kind="stable")[:3]
    others = np.full(len(js), hops[top[2]])
    for p in top[1::-1]:  # the slowest hop but those at i - 1 and j
        others = np.where((p != i - 1) & (p != js), hops[p], others)
    slowest = np.maximum(others, np.maximum(into, out))
    tol = 1e-9 * old[1]
    tie = slowest == old[0]
    better = (slowest < old[0]) | (tie & (delta < -tol))
    unsure = tie & (np.abs(delta) <= tol) if symmetric else np.ones(len(js), dtype=bool)
    if not symmetric:
        better[:] = False
    for at in np.flatnonzero(better | unsure):
        j = int(js[at])
        if better[at]:
            return j
        if symmetric:  # the candidate's hops, in its order, as _ring_key would list them
            swapped = [*listed[: i - 1], float(into[at]), *listed[i:j][::-1], float(out[at])]
            swapped += listed[j + 1 :]
            if (max(swapped), sum(swapped)) < old:
                return j
        elif _ring_key(delay, order[:i] + order[i : j + 1][::-1] + order[j + 1 :]) < old:
            return j
    return None


def ring(wan: Wan, members: Sequence[int]) -> CollectiveCost:
    late = latest_delay(wan)
    order = ring_order(late, members)
    k = len(order)
    loads: Counter[Edge] = Counter()
    hops = list(zip(order, [*order[1:], order[0]], strict=True))
    for a, b in hops:
        loads.update(_path_edges(wan, a, b))
    delays = [float(late[a, b]) for a, b in hops]
    # 2 (k - 1) consecutive hops go twice round the ring but for the two before the start
    pairs = min(delays[i - 2] + delays[i - 1] for i in range(k)) if k > 2 else 0.0
    chain = 2 * sum(delays) - pairs
    return CollectiveCost(Collective.RING, loads, 1, 2 * (k - 1), k, max(delays), order, chain)


def _every_stream_in(
    name: Collective, wan: Wan, members: Sequence[int], loads: Counter[Edge]
) -> CollectiveCost:
    """Each member receives the k - 1 others' whole updates, at once, and sums them."""
    late = latest_delay(wan)
    span = max(float(late[i, j]) for i in members for j in members if i != j)
    return CollectiveCost(name, loads, len(members) - 1, 1, 1, span, tuple(members))


def direct(wan: Wan, members: Sequence[int]) -> CollectiveCost:
    loads: Counter[Edge] = Counter()
    for i, j in itertools.permutations(members, 2):
        loads.update(_path_edges(wan, i, j))
    return _every_stream_in(Collective.DIRECT, wan, members, loads)


def multicast(wan: Wan, members: Sequence[int], tree_loads: Counter[Edge]) -> CollectiveCost:
    return _every_stream_in(Collective.MULTICAST, wan, members, tree_loads)


def alone_rate(wan: Wan, collective: CollectiveCost, access_bps: float) -> float:
    """The collective's rate with the WAN to itself: access share or its busiest link."""
    rate = access_bps / collective.access_share
    for edge, count in collective.loads.items():
        rate = min(rate, wan.capacity(*edge) / count)
    return rate
