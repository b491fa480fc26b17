"""Chunk-level discrete-event simulation of one round, to check the cost model.

Each member streams its update as chunks, paced at its group's rate from its send offset. A chunk
crosses its source's access link, then the multicast tree: every directed link is a FIFO server
(serialisation at its capacity, then propagation), and a node forwards a copy on each tree edge
out of it. At each receiving member a pool of slots (aggregator memory / chunk size) merges the
remote contributions of a chunk: a slot is taken by the first contribution, freed by the last.
A contribution that finds no free slot is dropped and counted (slot exhaustion); the receiver
tells its source, which resends it along the shortest path when the notice arrives. The sources'
access links are FIFO servers too, so a rate above the access bandwidth queues there.

A WAN link with jitter (`WanLink.jitter_s`) delays each frame by its delay plus a draw uniform in
[-jitter, +jitter] (seeded), in order: a frame never overtakes the one ahead of it on the same
link, so it leaves the link no earlier than that one did.
"""

from __future__ import annotations

import heapq
import itertools
import math
import random
from collections import defaultdict
from dataclasses import dataclass

from controller.planner.cost import CostParams, RoundCost
from controller.planner.exceptions import PlanError
from topo.wan import Wan

# Sending faster than the pool drains makes resends feed on themselves: at 2x the planned rate
# the nine cities' all-to-all round already resends each contribution ~28 times. Past 100x every
# source is limited by its access link anyway; below 1/1000 the round's times lose precision.
MIN_RATE_FACTOR = 1e-3
MAX_RATE_FACTOR = 100.0
RATE_FACTOR_WHY = "faster only overruns the slot pool: each resend is simulated"
# per round: the nine cities' round at the most chunks (20,000) takes 1.8 million; an overrun
# pool resending without end is stopped here, in seconds rather than minutes
MAX_EVENTS = 2_000_000

Packet = tuple[int, ...]  # (group id, source, chunk, node it is at[, the member to resend to])


@dataclass(frozen=True)
class SimResult:
    time_s: float  # until every member holds the merged sum of every chunk
    peak_memory_bytes: float  # largest slot occupancy at any aggregator, in bytes
    exhausted: int  # contributions dropped for want of a free slot
    resent: int
    chunk_bytes: int
    slots: int  # slots per aggregator
    events: int = 0  # events the simulation processed


def simulate_round(
    wan: Wan,
    cost: RoundCost,
    params: CostParams,
    chunk_bytes: int,
    rate_factor: float = 1.0,
    max_events: int = MAX_EVENTS,
    seed: int = 0,
) -> SimResult:
    """Play one round with the rates and offsets the model chose (times rate_factor), jitter
    drawn from `seed`; PlanError if it takes more than `max_events` events (a pool overrun
    resending without end)."""
    if chunk_bytes <= 0 or chunk_bytes > params.update_bytes:
        raise PlanError(f"chunk size must be in 1..{params.update_bytes} bytes")
    if not MIN_RATE_FACTOR <= rate_factor <= MAX_RATE_FACTOR:  # also NaN
        raise PlanError(
            f"rate factor must be in [{MIN_RATE_FACTOR:g}, {MAX_RATE_FACTOR:g}], got {rate_factor}"
        )
    return _Simulation(wan, cost, params, chunk_bytes, rate_factor, seed).run(max_events)


class _Simulation:
    """The event queue of one round and the state of its links, uplinks and slot pools."""

    def __init__(
        self,
        wan: Wan,
        cost: RoundCost,
        params: CostParams,
        chunk_bytes: int,
        rate_factor: float,
        seed: int = 0,
    ) -> None:
        self.wan, self.params, self.chunk_bytes = wan, params, chunk_bytes
        self.rng = random.Random(seed)
        self.link_due: dict[tuple[int, int], float] = defaultdict(float)  # last frame out
        self.chunks = math.ceil(params.update_bytes / chunk_bytes)
        self.bits = chunk_bytes * 8.0
        self.slots = params.memory_bytes // chunk_bytes
        self.events: list[tuple[float, int, str, Packet]] = []
        self.seq = itertools.count()
        self.children: dict[tuple[int, int], dict[int, list[int]]] = {}  # (gid, src) -> tree
        self.expected: dict[int, int] = {}  # receiver -> remote contributions per chunk
        for gid, g in enumerate(cost.groups):
            if len(g.members) > 1:
                self._stream(gid, g.members, g.offsets, g.rate_bps * rate_factor)
        self.members = {j: gid for gid, g in enumerate(cost.groups) for j in g.members}
        self.link_free: dict[tuple[int, int], float] = defaultdict(float)
        self.uplink: dict[int, float] = defaultdict(float)
        self.held: dict[int, dict[int, set[int]]] = defaultdict(dict)  # receiver -> chunk -> srcs
        self.done: dict[int, int] = defaultdict(int)
        self.peak = self.exhausted = self.resent = 0
        self.finish = 0.0

    def _stream(
        self, gid: int, members: tuple[int, ...], offsets: tuple[float, ...], rate: float
    ) -> None:
        """Every member's chunks, paced at the group's rate, then the access link."""
        for src, offset in zip(members, offsets, strict=True):
            tree: dict[int, list[int]] = defaultdict(list)
            for u, v in sorted(self.wan.tree(src, [d for d in members if d != src])):
                tree[u].append(v)
            self.children[(gid, src)] = tree
            for c in range(self.chunks):
                self.push(offset + c * self.bits / rate, "send", (gid, src, c, src))
        for j in members:
            self.expected[j] = len(members) - 1

    def push(self, t: float, kind: str, data: Packet) -> None:
        heapq.heappush(self.events, (t, next(self.seq), kind, data))

    def send_on(self, t: float, u: int, v: int, data: Packet) -> None:
        start = max(t, self.link_free[(u, v)])
        self.link_free[(u, v)] = start + self.bits / self.wan.capacity(u, v)
        link = self.wan.link(u, v)
        if link.jitter_s > 0:  # a draw each way, then no overtaking on the link
            delay = max(0.0, link.delay_s + self.rng.uniform(-link.jitter_s, link.jitter_s))
            due = max(self.link_free[(u, v)] + delay, self.link_due[(u, v)])
            self.link_due[(u, v)] = due
        else:
            due = self.link_free[(u, v)] + link.delay_s
        self.push(due, "at", (*data[:3], v, *data[4:]))

    def run(self, max_events: int) -> SimResult:
        handled = 0
        while self.events:
            handled += 1
            if handled > max_events:
                raise PlanError(
                    f"the simulation stopped after {max_events:,} events, its budget: "
                    f"{self.resent:,} contributions found no free slot and were resent "
                    "(sending faster than the slots drain); lower --rate-factor or --chunks"
                )
            t, _, kind, data = heapq.heappop(self.events)
            if kind == "at":
                self.arrive(t, data)
            elif kind == "send":  # leaves the source island over its access link (FIFO)
                src = data[1]
                self.uplink[src] = max(t, self.uplink[src]) + self.bits / self.params.access_bps
                self.push(self.uplink[src], "at", data)
            elif kind == "resend":
                self.resent += 1
                self.push(t, "send", data)
        incomplete = [j for j, k in self.expected.items() if self.done[j] != self.chunks]
        if incomplete:
            raise RuntimeError(f"simulation ended with islands {incomplete} missing chunks")
        return SimResult(
            self.finish,
            self.peak * self.chunk_bytes,
            self.exhausted,
            self.resent,
            self.chunk_bytes,
            int(self.slots),
            handled,
        )

    def arrive(self, t: float, data: Packet) -> None:
        """A chunk copy fully arrived at node `here`: forward it, merge it if `here` is a
        receiving member."""
        gid, src, c, here, *unicast = data
        if unicast:  # a resent contribution on its shortest path to one receiver
            dest = unicast[0]
            if here != dest:
                self.send_on(t, here, self.wan.path(here, dest)[1], data)
                return
        else:
            for nxt in self.children[(gid, src)].get(here, ()):
                self.send_on(t, here, nxt, data)
            if here == src or self.members.get(here) != gid:
                return
        self.merge(t, here, src, c, gid)

    def merge(self, t: float, here: int, src: int, c: int, gid: int) -> None:
        """A remote contribution in `here`'s slot pool; without a free slot it is dropped and
        its source told (it resends when the notice arrives)."""
        pool = self.held[here]
        if c not in pool:
            if len(pool) >= self.slots:
                self.exhausted += 1
                self.push(t + self.wan.delay[here, src], "resend", (gid, src, c, src, here))
                return
            pool[c] = set()
            self.peak = max(self.peak, len(pool))
        pool[c].add(src)
        if len(pool[c]) == self.expected[here]:
            del pool[c]
            self.done[here] += 1
            self.finish = max(self.finish, t)
