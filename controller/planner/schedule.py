"""Synchronisation schedules: a round partitions the islands into groups; a schedule cycles rounds.

Islands are numbered 0..n-1 (their index in the WAN model). Every constructor returns rounds in a
canonical form (members sorted, groups ordered by their smallest member), so equal partitions
compare equal and hash alike.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass

from controller.planner.exceptions import ScheduleError

Group = tuple[int, ...]


@dataclass(frozen=True)
class Round:
    """One synchronisation round: a partition of the islands into groups."""

    groups: tuple[Group, ...]

    @classmethod
    def of(cls, groups: Iterable[Iterable[int]]) -> Round:
        canonical = sorted((tuple(sorted(g)) for g in groups), key=lambda g: g[0] if g else -1)
        return cls(tuple(canonical))

    @property
    def islands(self) -> tuple[int, ...]:
        return tuple(sorted(i for g in self.groups for i in g))

    def check(self, n: int) -> None:
        """Raise ScheduleError unless the groups partition 0..n-1."""
        if any(len(g) == 0 for g in self.groups):
            raise ScheduleError("a round has an empty group")
        seen = [i for g in self.groups for i in g]
        if len(seen) != len(set(seen)):
            twice = sorted({i for i in seen if seen.count(i) > 1})
            raise ScheduleError(f"islands {twice} appear in more than one group of a round")
        missing = sorted(set(range(n)) - set(seen))
        if missing:
            raise ScheduleError(f"islands {missing} are in no group of a round")
        extra = sorted(set(seen) - set(range(n)))
        if extra:
            raise ScheduleError(f"islands {extra} are not among the {n} islands")


@dataclass(frozen=True)
class Schedule:
    """A cyclic sequence of rounds over n islands, with the family that produced it."""

    family: str
    n: int
    rounds: tuple[Round, ...]

    def __post_init__(self) -> None:
        if self.n < 1:
            raise ScheduleError("a schedule needs at least one island")
        if not self.rounds:
            raise ScheduleError("a schedule needs at least one round")
        for r in self.rounds:
            r.check(self.n)

    def round_at(self, t: int) -> Round:
        """The round played at step t (0-based) of the cycle."""
        return self.rounds[t % len(self.rounds)]


def all_to_all(n: int) -> Schedule:
    """Every island averages with every other island, every round."""
    return Schedule("all-to-all", n, (Round.of([range(n)]),))


def grid_dims(n: int, k: int) -> tuple[int, ...] | None:
    """Side lengths of a grid with n cells whose sides are at most k, largest sides first.

    Lines along each dimension are the groups of one round, so a grid with m sides gives the exact
    average in m rounds. None when n has a prime factor above k (no such grid exists).
    """
    if k < 2 or n < 2:
        return None
    dims: list[int] = []
    rest = n
    while rest > 1:
        side = next((f for f in range(min(k, rest), 1, -1) if rest % f == 0), None)
        if side is None:
            return None
        dims.append(side)
        rest //= side
    return tuple(dims)


def _is_prime(p: int) -> bool:
    return p >= 2 and all(p % q for q in range(2, int(p**0.5) + 1))


def grid_rounds(cells: Sequence[int], dims: Sequence[int]) -> tuple[Round, ...]:
    """Rounds of a grid: cells[c] is the island at row-major cell c of a grid with these sides.

    Round d groups the islands whose coordinates agree everywhere except in dimension d. For a
    square two-dimensional grid of prime side k, the rounds continue with the k-1 classes of
    parallel diagonals, completing the affine plane of order k: any two consecutive rounds of the
    cycle then give the exact average.
    """
    coords = list(itertools.product(*(range(s) for s in dims)))
    if len(cells) != len(coords):
        raise ScheduleError(f"a {'x'.join(map(str, dims))} grid needs {len(coords)} islands")
    rounds = []
    for d in range(len(dims)):
        lines: dict[tuple[int, ...], list[int]] = {}
        for c, xy in enumerate(coords):
            lines.setdefault(xy[:d] + xy[d + 1 :], []).append(cells[c])
        rounds.append(Round.of(lines.values()))
    if len(dims) == 2 and dims[0] == dims[1] and _is_prime(dims[0]):
        k = dims[0]
        for slope in range(1, k):
            diagonals: dict[int, list[int]] = {}
            for c, (x, y) in enumerate(coords):
                diagonals.setdefault((y - slope * x) % k, []).append(cells[c])
            rounds.append(Round.of(diagonals.values()))
    return tuple(rounds)


def cliques(n: int, k: int, cells: Sequence[int] | None = None) -> Schedule:
    """Rotating cliques of size at most k.

    Where n factors into sides of at most k, the islands fill a grid (cells[c] at row-major cell c,
    identity by default) and each round is one dimension's lines: exact in as many rounds as the
    grid has sides. Otherwise consecutive blocks of k along the island order, shifted by one each
    round: only approximate consensus.
    """
    order = list(range(n)) if cells is None else list(cells)
    if sorted(order) != list(range(n)):
        raise ScheduleError("cells must list every island once")
    dims = grid_dims(n, k)
    if dims is not None:
        return Schedule(f"cliques-{k}", n, grid_rounds(order, dims))
    rounds = []
    for shift in range(k):
        rotated = order[shift:] + order[:shift]
        rounds.append(Round.of(rotated[i : i + k] for i in range(0, n, k)))
    return Schedule(f"cliques-{k}", n, tuple(dict.fromkeys(rounds)))


def ring_pairs(n: int, order: Sequence[int] | None = None) -> Schedule:
    """Neighbours on a ring pair up, alternating the even and the odd edges of the ring."""
    ring = list(range(n)) if order is None else list(order)
    rounds = []
    for start in (0, 1):
        pairs: list[list[int]] = []
        used: set[int] = set()
        for i in range(start, start + n - 1, 2):
            a, b = ring[i % n], ring[(i + 1) % n]
            if a not in used and b not in used and a != b:
                pairs.append([a, b])
                used.update((a, b))
        pairs.extend([i] for i in ring if i not in used)
        rounds.append(Round.of(pairs))
    return Schedule("ring-pairs", n, tuple(dict.fromkeys(rounds)))


def exponential_pairs(n: int, order: Sequence[int] | None = None) -> Schedule:
    """One-peer exponential pairs: in round t, position p pairs with position p XOR 2**t.

    Exact after log2(n) rounds when n is a power of two; otherwise islands whose partner position
    does not exist sit the round out and consensus is only approximate.
    """
    labels = list(range(n)) if order is None else list(order)
    rounds = []
    for t in range(max(1, (n - 1).bit_length())):
        groups: list[list[int]] = []
        for p in range(n):
            q = p ^ (1 << t)
            if q >= n:
                groups.append([labels[p]])
            elif p < q:
                groups.append([labels[p], labels[q]])
        rounds.append(Round.of(groups))
    return Schedule("exponential-pairs", n, tuple(rounds))


def partitions(items: Sequence[int], k: int) -> Iterator[Round]:
    """Every partition of items into groups of exactly k, each once (canonical order)."""
    if len(items) % k:
        raise ScheduleError(f"{len(items)} islands do not split into groups of {k}")

    def rec(rest: tuple[int, ...]) -> Iterator[list[Group]]:
        if not rest:
            yield []
            return
        first, others = rest[0], rest[1:]
        for mates in itertools.combinations(others, k - 1):
            left = tuple(i for i in others if i not in mates)
            for tail in rec(left):
                yield [(first, *mates), *tail]

    for groups in rec(tuple(sorted(items))):
        yield Round.of(groups)


def orthogonal(a: Round, b: Round) -> bool:
    """True when every group of a meets every group of b in exactly one island (a grid)."""
    return all(len(set(g) & set(h)) == 1 for g in a.groups for h in b.groups)
