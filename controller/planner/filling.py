"""Max-min fair rates by progressive filling, on arrays.

Groups of streams share directed links. All groups not yet frozen rise together until a link
saturates (its room, divided among the streams still rising on it, is reached) or a group reaches
its own cap; those groups freeze at that level; repeat. Levels within a relative 1e-12 count as
one, the first link met setting it.

The result is exactly, float for float, that of the plain loop over dictionaries (kept as the
reference in tests/unit/planner/test_filling.py): links are taken in the order they first appear
in the loads, groups in the order a set of them iterates (the same set, shrunk by the same
operations), and every group's streams come off the links in the order the loop took them. Only
the work differs: while the least cap of the rising groups is clearly below every link's share
(by 1e-6, far beyond rounding), groups freeze at their caps one level after another without the
links being looked at again, since freezing a group below a link's share only raises that share.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Sequence

import numpy as np

TIE = 1e-12  # levels within this relative distance are one level
SMALL = 300  # streams (entries of the loads) up to which the plain loop is the faster
CLEAR = 1e-6  # a cap this far below every link's share is reached before any link saturates

Load = tuple[np.ndarray, np.ndarray]  # a group's (link numbers, streams on each)


def progressive_filling(
    groups: Sequence[Hashable], loads: Sequence[Load], capacities: np.ndarray, caps: Sequence[float]
) -> tuple[list[float], list[int | None]]:
    """Each group's rate, and what froze it: the number of its tight link, or None for its cap.

    `loads[g]` and `caps[g]` are those of `groups[g]` (distinct keys, such as member tuples);
    `capacities` is indexed by link number."""
    if sum(len(ids) for ids, _ in loads) <= SMALL:
        return _plain_filling(groups, loads, capacities, caps)
    filling = _Filling(groups, loads, capacities, caps)
    while filling.left:
        if not filling.freeze_capped(filling.least_share()):
            filling.step()
    return filling.rates, filling.limits


def _plain_filling(
    groups: Sequence[Hashable], loads: Sequence[Load], capacities: np.ndarray, caps: Sequence[float]
) -> tuple[list[float], list[int | None]]:
    """The plain loop over dictionaries, for few streams (where arrays cost more than they save)."""
    lists = [(ids.tolist(), counts.tolist()) for ids, counts in loads]
    share: dict[int, float] = {}  # streams of rising groups on each link, by first appearance
    for ids, counts in lists:
        for e, count in zip(ids, counts, strict=True):
            share[e] = share.get(e, 0.0) + count
    room = {e: float(capacities[e]) for e in share}
    number = {key: g for g, key in enumerate(groups)}
    on = [set(ids) for ids, _ in lists]
    rates = [math.nan] * len(groups)
    limits: list[int | None] = [None] * len(groups)
    active = set(dict.fromkeys(groups))
    while active:
        level, tight = math.inf, []
        for e, n in share.items():
            if n:
                t = room[e] / n
                if t < level * (1 - TIE):
                    level, tight = t, [e]
                elif t <= level * (1 + TIE):
                    tight.append(e)
        live = [number[key] for key in active]
        capped = [g for g in live if caps[g] <= level * (1 + TIE)]
        if capped:
            level = min(caps[g] for g in capped)
            capped = [g for g in capped if caps[g] <= level * (1 + TIE)]
            tight = [e for e in tight if room[e] / share[e] <= level * (1 + TIE)]
        frozen: dict[int, int | None] = dict.fromkeys(capped)
        for e in tight:
            for g in live:
                if e in on[g]:
                    frozen.setdefault(g, e)
        for g, why in frozen.items():
            rates[g], limits[g] = level, why
            for e, count in zip(*lists[g], strict=True):
                room[e] -= count * level
                share[e] -= count
        active -= {groups[g]: None for g in frozen}.keys()
    return rates, limits


class _Filling:
    """The state of one filling, over all links by number and the groups by position."""

    def __init__(
        self,
        groups: Sequence[Hashable],
        loads: Sequence[Load],
        capacities: np.ndarray,
        caps: Sequence[float],
    ) -> None:
        sizes = [len(ids) for ids, _ in loads]
        self.bounds = np.cumsum([0, *sizes]).tolist()
        self.ids = np.concatenate([ids for ids, _ in loads]) if loads else np.zeros(0, np.intp)
        self.counts = np.concatenate([c for _, c in loads]) if loads else np.zeros(0)
        self.owner = np.repeat(np.arange(len(loads)), sizes)
        links = len(capacities)
        self.share = np.bincount(self.ids, weights=self.counts, minlength=links)
        self.room = np.array(capacities, dtype=float)  # capacity not taken by frozen groups
        self.first: np.ndarray | None = None  # the links in order of first appearance, if needed
        self.caps = list(caps)
        self.groups = list(groups)
        self.number = {key: g for g, key in enumerate(self.groups)}
        # built from a dict, as the plain loop's set of its loads: iterates in the same order
        self.active = set(dict.fromkeys(self.groups))
        self.alive = [True] * len(loads)
        self.left = len(loads)
        self.by_cap = sorted(range(self.left), key=lambda g: self.caps[g])
        self.next_cap = 0  # by_cap[:next_cap] are frozen
        self.rates = [math.nan] * len(loads)
        self.limits: list[int | None] = [None] * len(loads)

    def least_share(self) -> float:
        """The least share any link has left per stream still rising on it."""
        rising = self.share > 0
        return float((self.room[rising] / self.share[rising]).min()) if rising.any() else math.inf

    def in_turn(self) -> list[int]:
        """The rising groups, in the order the set of them iterates."""
        return [self.number[key] for key in self.active]

    def freeze(self, members: list[int], level: float, why: list[int | None]) -> None:
        """Freeze these groups at `level`, taking their streams off the links in this order."""
        for g, reason in zip(members, why, strict=True):
            self.rates[g], self.limits[g], self.alive[g] = level, reason, False
        self.left -= len(members)
        self.active -= {self.groups[g]: None for g in members}.keys()  # as the loop shrinks it
        parts = [slice(self.bounds[g], self.bounds[g + 1]) for g in members]
        ids = np.concatenate([self.ids[part] for part in parts])
        counts = np.concatenate([self.counts[part] for part in parts])
        np.subtract.at(self.room, ids, counts * level)  # in order, as the loop subtracts
        np.subtract.at(self.share, ids, counts)

    def freeze_capped(self, least: float) -> int:
        """Freeze groups at their caps, level by level, while the least cap is clearly below
        `least` (every link's share); how many froze."""
        frozen = 0
        while self.next_cap < len(self.by_cap):
            if not self.alive[self.by_cap[self.next_cap]]:
                self.next_cap += 1
                continue
            level = self.caps[self.by_cap[self.next_cap]]
            if not level * (1 + CLEAR) < least:
                break
            batch = [g for g in self.in_turn() if self.caps[g] <= level * (1 + TIE)]
            self.freeze(batch, level, [None] * len(batch))
            frozen += len(batch)
        return frozen

    def step(self) -> None:
        """One level as the plain loop reaches it: the tightest links, the groups capped there,
        then every rising group on a tight link, frozen at that level."""
        level, tight = self._tightest()
        live = self.in_turn()
        capped = [g for g in live if self.caps[g] <= level * (1 + TIE)]
        if capped:
            level = min(self.caps[g] for g in capped)
            capped = [g for g in capped if self.caps[g] <= level * (1 + TIE)]
            tight = [e for e in tight if self.room[e] / self.share[e] <= level * (1 + TIE)]
        frozen: dict[int, int | None] = dict.fromkeys(capped)
        for e in tight:
            on = set(self.owner[self.ids == e].tolist())
            for g in live:
                if g in on:
                    frozen.setdefault(g, e)
        self.freeze(list(frozen), level, list(frozen.values()))

    def _tightest(self) -> tuple[float, list[int]]:
        """The level the links allow and the links at it, scanning them in order of first
        appearance as the plain loop does (a link above 1 + 3e-12 times the least before it
        can change nothing)."""
        if self.first is None:
            seen = np.full(len(self.share), len(self.ids))
            np.minimum.at(seen, self.ids, np.arange(len(self.ids)))
            self.first = np.argsort(seen)[: np.count_nonzero(seen < len(self.ids))]
        links = self.first[self.share[self.first] > 0]
        shares = self.room[links] / self.share[links]
        if len(shares) and shares.min() > 0:
            before = np.minimum.accumulate(np.concatenate([[math.inf], shares[:-1]]))
            near = shares <= before * (1 + 3 * TIE)
            links, shares = links[near], shares[near]
        level, tight = math.inf, []
        for e, t in zip(links.tolist(), shares.tolist(), strict=True):
            if t < level * (1 - TIE):
                level, tight = t, [e]
            elif t <= level * (1 + TIE):
                tight.append(e)
        return level, tight
