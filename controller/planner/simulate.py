"""Chunk-level discrete-event simulation of one round, to check the cost model.

Each member streams its update as chunks, paced at its group's rate from its send offset. A chunk
crosses its source's access link, then the multicast tree: every directed link is a FIFO server
(serialisation at its capacity, then propagation), and a node forwards a copy on each tree edge
out of it. At each receiving member a pool of slots (aggregator memory / chunk size) merges the
remote contributions of a chunk: a slot is taken by the first contribution, freed by the last.
A contribution that finds no free slot is dropped and counted (slot exhaustion); the receiver
tells its source, which resends it along the shortest path when the notice arrives. The sources'
access links are FIFO servers too, so a rate above the access bandwidth queues there.
"""

from __future__ import annotations

import heapq
import itertools
import math
from collections import defaultdict
from dataclasses import dataclass

from controller.planner.cost import CostParams, RoundCost
from topo.wan import Wan


@dataclass(frozen=True)
class SimResult:
    time_s: float  # until every member holds the merged sum of every chunk
    peak_memory_bytes: float  # largest slot occupancy at any aggregator, in bytes
    exhausted: int  # contributions dropped for want of a free slot
    resent: int
    chunk_bytes: int
    slots: int  # slots per aggregator


def simulate_round(
    wan: Wan, cost: RoundCost, params: CostParams, chunk_bytes: int, rate_factor: float = 1.0
) -> SimResult:
    """Play one round with the rates and offsets the model chose (times rate_factor)."""
    if chunk_bytes <= 0 or chunk_bytes > params.update_bytes:
        raise ValueError(f"chunk size must be in 1..{params.update_bytes} bytes")
    if rate_factor <= 0:
        raise ValueError("rate factor must be positive")
    chunks = math.ceil(params.update_bytes / chunk_bytes)
    bits = chunk_bytes * 8.0
    slots = params.memory_bytes // chunk_bytes
    delay = wan.delay

    events: list[tuple[float, int, str, tuple]] = []
    seq = itertools.count()

    def push(t: float, kind: str, data: tuple) -> None:
        heapq.heappush(events, (t, next(seq), kind, data))

    children: dict[tuple[int, int], dict[int, list[int]]] = {}  # (group id, src) -> node -> next
    expected: dict[int, int] = {}  # receiver -> remote contributions per chunk
    for gid, g in enumerate(cost.groups):
        if len(g.members) < 2:
            continue
        rate = g.rate_bps * rate_factor
        for src, offset in zip(g.members, g.offsets, strict=True):
            tree: dict[int, list[int]] = defaultdict(list)
            for u, v in sorted(wan.tree(src, [d for d in g.members if d != src])):
                tree[u].append(v)
            children[(gid, src)] = tree
            for c in range(chunks):  # paced at the group's rate, then the access link
                push(offset + c * bits / rate, "send", (gid, src, c, src))
        for j in g.members:
            expected[j] = len(g.members) - 1
    members = {j: gid for gid, g in enumerate(cost.groups) for j in g.members}

    link_free: dict[tuple[int, int], float] = defaultdict(float)
    uplink: dict[int, float] = defaultdict(float)
    held: dict[int, dict[int, set[int]]] = defaultdict(dict)  # receiver -> chunk -> contributors
    done: dict[int, int] = defaultdict(int)
    peak = exhausted = resent = 0
    finish = 0.0

    def send_on(t: float, u: int, v: int, data: tuple) -> None:
        start = max(t, link_free[(u, v)])
        link_free[(u, v)] = start + bits / wan.capacity(u, v)
        push(link_free[(u, v)] + wan.link(u, v).delay_s, "at", (*data[:3], v, *data[4:]))

    while events:
        t, _, kind, data = heapq.heappop(events)
        if kind == "at":  # a chunk copy fully arrived at node `here`
            gid, src, c, here, *unicast = data
            if unicast:  # a resent contribution on its shortest path to one receiver
                dest = unicast[0]
                if here != dest:
                    send_on(t, here, wan.path(here, dest)[1], data)
                    continue
            else:
                for nxt in children[(gid, src)].get(here, ()):
                    send_on(t, here, nxt, data)
                if here == src or members.get(here) != gid:
                    continue
            pool = held[here]
            if c not in pool:
                if len(pool) >= slots:
                    exhausted += 1
                    push(t + delay[here, src], "resend", (gid, src, c, src, here))
                    continue
                pool[c] = set()
                peak = max(peak, len(pool))
            pool[c].add(src)
            if len(pool[c]) == expected[here]:
                del pool[c]
                done[here] += 1
                finish = max(finish, t)
        elif kind == "send":  # leaves the source island over its access link (FIFO)
            src = data[1]
            uplink[src] = max(t, uplink[src]) + bits / params.access_bps
            push(uplink[src], "at", data)
        elif kind == "resend":
            resent += 1
            push(t, "send", data)

    incomplete = [j for j, k in expected.items() if done[j] != chunks]
    if incomplete:
        raise RuntimeError(f"simulation ended with islands {incomplete} missing chunks")
    return SimResult(finish, peak * chunk_bytes, exhausted, resent, chunk_bytes, int(slots))
