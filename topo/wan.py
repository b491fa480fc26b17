"""The WAN model: cities, physical links, shortest paths and multicast trees.

A `Wan` is an undirected graph of cities joined by `WanLink`s, each with a one-way delay and a
capacity. Traffic between two cities follows the shortest-delay path; a multicast from one city
follows the shortest-path tree rooted at it, so the copies to different destinations share the
links they have in common.

Shortest paths are computed on delays rounded to whole nanoseconds, so that equal-delay paths are
recognised as equal and tie-breaking is exact: among equal-delay paths the one with fewer hops
wins, then the one whose last hop comes from the lower city index.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from functools import cached_property
from types import MappingProxyType

import numpy as np

from topo.exceptions import NotAdjacentError, UnknownCityError, WanError

EARTH_RADIUS_KM = 6371.0
FIBRE_S_PER_KM = 4.9e-6  # one-way delay of light in glass (refractive index ~1.47)
BUILDING_DELAY_S = 10e-6  # one-way, island to island through one data centre's fabric
BUILDING_SOURCE = "one-building"
BUILDING_WHY = (
    "Model value, not a measurement: the islands in one data centre, each pair one hop of "
    "about 10 us through its fabric (a few switch hops and tens of metres of fibre), and the "
    "fabric non-blocking, so only the islands' access links limit an exchange."
)


@dataclass(frozen=True)
class City:
    """A city hosting one island; `code` is a short unique tag such as "TYO"."""

    name: str
    code: str
    continent: str
    lat: float
    lon: float
    source: str = ""  # id of the citation for the coordinates


@dataclass(frozen=True)
class WanLink:
    """An undirected physical link between the cities named `a` and `b`.

    `source` is the id of the citation for `delay_s`; `capacity_source` is that of
    `capacity_bps` (empty means the same as `source`). `Wan.sources` maps ids to citations.
    `jitter_s` is the link's delay variation each way: a frame crossing it is delayed by
    `delay_s` plus a draw uniform in [-jitter_s, +jitter_s] (docs/wan-model.md).
    """

    a: str
    b: str
    delay_s: float
    capacity_bps: float
    source: str
    capacity_source: str = ""
    jitter_s: float = 0.0


@dataclass(frozen=True)
class RttFitRow:
    """One measured pair: `rel_error` is (model - measured) / measured, so negative is too fast."""

    a: str
    b: str
    measured_s: float
    model_s: float
    rel_error: float


@dataclass(frozen=True)
class RttFit:
    """How the model's shortest-path round-trip times compare with the measured ones."""

    rows: tuple[RttFitRow, ...]

    @property
    def worst(self) -> RttFitRow:
        """The pair with the largest |rel_error|."""
        if not self.rows:
            raise ValueError("no measured round-trip times to compare with")
        return max(self.rows, key=lambda row: abs(row.rel_error))

    def ranked(self) -> tuple[RttFitRow, ...]:
        """All rows, largest |rel_error| first."""
        return tuple(sorted(self.rows, key=lambda row: -abs(row.rel_error)))


def great_circle_km(a: City, b: City) -> float:
    """Great-circle distance between two cities on a spherical Earth (haversine)."""
    lat1, lon1, lat2, lon2 = map(math.radians, (a.lat, a.lon, b.lat, b.lon))
    h = math.sin((lat2 - lat1) / 2) ** 2
    h += math.cos(lat1) * math.cos(lat2) * math.sin((lon2 - lon1) / 2) ** 2
    return 2 * EARTH_RADIUS_KM * math.asin(min(1.0, math.sqrt(h)))


@dataclass(frozen=True)
class _Paths:
    """Shortest-path trees from every source: `pred[s, v]` is v's parent in s's tree."""

    delay_ns: np.ndarray
    hops: np.ndarray
    pred: np.ndarray


@dataclass(frozen=True)
class Wan:
    """Cities, links and (optionally) measured round-trip times with their sources.

    Cities are addressed by index (their position in `cities`) in every method; `index` turns a
    name or code into one. `sources` maps the source ids used by cities, links and
    `measured_source` to full citations.
    """

    name: str
    cities: tuple[City, ...]
    links: tuple[WanLink, ...]
    measured_rtt_s: Mapping[frozenset[str], float] = field(default_factory=dict)
    measured_source: str = ""
    sources: Mapping[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        object.__setattr__(self, "measured_rtt_s", MappingProxyType(dict(self.measured_rtt_s)))
        object.__setattr__(self, "sources", MappingProxyType(dict(self.sources)))
        if len(self.cities) < 2:
            raise WanError(f"WAN {self.name!r} needs at least 2 cities, has {len(self.cities)}")
        owner: dict[str, int] = {}
        for i, city in enumerate(self.cities):
            for key in (city.name, city.code):
                if owner.setdefault(key, i) != i:
                    raise WanError(f"WAN {self.name!r}: two cities are called {key!r}")
        pairs: set[frozenset[int]] = set()
        for link in self.links:
            u, v = self.index(link.a), self.index(link.b)
            if frozenset((u, v)) in pairs:
                raise WanError(f"WAN {self.name!r}: link {link.a}-{link.b} is given twice")
            pairs.add(frozenset((u, v)))
            if u == v:
                raise WanError(f"WAN {self.name!r}: link {link.a}-{link.b} joins a city to itself")
            if not (link.delay_s > 0 and link.capacity_bps > 0):
                raise WanError(f"WAN {self.name!r}: link {link.a}-{link.b} needs positive figures")
            if not (math.isfinite(link.jitter_s) and link.jitter_s >= 0):
                raise WanError(
                    f"WAN {self.name!r}: link {link.a}-{link.b}: jitter must be a finite "
                    f"number of seconds >= 0, got {link.jitter_s!r}"
                )
        for pair, rtt in self.measured_rtt_s.items():
            if len(pair) != 2 or not rtt > 0:
                raise WanError(f"WAN {self.name!r}: bad measured RTT {sorted(pair)}: {rtt}")
            for name in pair:
                self.index(name)
        unreachable = [self.names[v] for v in np.flatnonzero(self._paths.hops[0] < 0)]
        if unreachable:
            raise WanError(
                f"WAN {self.name!r} is disconnected: {', '.join(unreachable)} "
                f"unreachable from {self.names[0]}"
            )

    def __hash__(self) -> int:
        return hash(
            (
                self.name,
                self.cities,
                self.links,
                frozenset(self.measured_rtt_s.items()),
                self.measured_source,
                frozenset(self.sources.items()),
            )
        )

    @property
    def n(self) -> int:
        """Number of cities."""
        return len(self.cities)

    @cached_property
    def names(self) -> tuple[str, ...]:
        """City names in index order."""
        return tuple(city.name for city in self.cities)

    @cached_property
    def _lookup(self) -> Mapping[str, int]:
        table = {city.code: i for i, city in enumerate(self.cities)}
        table.update({city.name: i for i, city in enumerate(self.cities)})
        return MappingProxyType(table)

    def index(self, name_or_code: str) -> int:
        """Index of the city with this name or code (exact match)."""
        try:
            return self._lookup[name_or_code]
        except KeyError:
            known = ", ".join(f"{c.name} ({c.code})" for c in self.cities)
            raise UnknownCityError(
                f"no city {name_or_code!r} in WAN {self.name!r}; known: {known}"
            ) from None

    def _check(self, *indices: int) -> None:
        for i in indices:
            if not 0 <= i < self.n:
                raise UnknownCityError(f"no city index {i} in WAN {self.name!r} (n={self.n})")

    @cached_property
    def _adjacent(self) -> Mapping[tuple[int, int], WanLink]:
        table: dict[tuple[int, int], WanLink] = {}
        for link in self.links:
            u, v = self.index(link.a), self.index(link.b)
            table[(u, v)] = table[(v, u)] = link
        return MappingProxyType(table)

    def link(self, u: int, v: int) -> WanLink:
        """The link joining adjacent cities u and v."""
        self._check(u, v)
        try:
            return self._adjacent[(u, v)]
        except KeyError:
            raise NotAdjacentError(
                f"no link between {self.names[u]} and {self.names[v]} in WAN {self.name!r}"
            ) from None

    def capacity(self, u: int, v: int) -> float:
        """Bits per second of the link joining adjacent cities u and v."""
        return self.link(u, v).capacity_bps

    def neighbours(self, u: int) -> tuple[int, ...]:
        """Indices of the cities one link away from u, ascending."""
        return tuple(sorted(v for (w, v) in self._adjacent if w == u))

    @cached_property
    def _paths(self) -> _Paths:
        n = self.n
        adjacency: list[list[tuple[int, int]]] = [[] for _ in range(n)]
        for (u, v), link in self._adjacent.items():
            adjacency[u].append((v, round(link.delay_s * 1e9)))
        delay = np.full((n, n), -1, dtype=np.int64)
        hops = np.full((n, n), -1, dtype=np.int64)
        pred = np.full((n, n), -1, dtype=np.int64)
        for s in range(n):
            label = _dijkstra(adjacency, s)
            for v, (d, h) in label.items():
                delay[s, v], hops[s, v] = d, h
            for v in label:
                parents = [
                    u
                    for u, w in adjacency[v]
                    if u in label and (label[u][0] + w, label[u][1] + 1) == label[v]
                ]
                pred[s, v] = min(parents, default=-1)
        for array in (delay, hops, pred):
            array.setflags(write=False)
        return _Paths(delay_ns=delay, hops=hops, pred=pred)

    @cached_property
    def delay(self) -> np.ndarray:
        """n x n shortest-path one-way delay in seconds (symmetric, zero diagonal, read-only)."""
        seconds = self._paths.delay_ns / 1e9
        seconds.setflags(write=False)
        return seconds

    @cached_property
    def jitter(self) -> np.ndarray:
        """n x n jitter of the shortest path in seconds: the sum of its links' `jitter_s`, the
        most a frame's delay can stray from `delay` either way (symmetric, zero diagonal,
        read-only)."""
        out = np.zeros((self.n, self.n))
        for s in range(self.n):
            for v in range(self.n):
                u, w = int(self._paths.pred[s, v]), v
                while w != s and u >= 0:
                    out[s, v] += self._adjacent[(u, w)].jitter_s
                    u, w = int(self._paths.pred[s, u]), u
        out.setflags(write=False)
        return out

    @property
    def has_jitter(self) -> bool:
        """True when any link has jitter."""
        return any(link.jitter_s > 0 for link in self.links)

    @cached_property
    def hops(self) -> np.ndarray:
        """n x n number of links on the shortest path (read-only)."""
        return self._paths.hops

    def path(self, src: int, dst: int) -> tuple[int, ...]:
        """Cities on the shortest path from src to dst, both included."""
        self._check(src, dst)
        nodes = [dst]
        while nodes[-1] != src:
            nodes.append(int(self._paths.pred[src, nodes[-1]]))
        return tuple(reversed(nodes))

    def tree(self, src: int, dests: Iterable[int]) -> frozenset[tuple[int, int]]:
        """Directed edges (u, v) of the multicast tree from src reaching every city in dests.

        The tree is the union of the shortest paths from src, all taken from src's one
        shortest-path tree, so paths to different destinations share their common prefix.
        """
        edges: set[tuple[int, int]] = set()
        self._check(src)
        for dst in dests:
            self._check(dst)
            v = dst
            while v != src and (int(self._paths.pred[src, v]), v) not in edges:
                u = int(self._paths.pred[src, v])
                edges.add((u, v))
                v = u
        return frozenset(edges)

    def with_capacity(self, bps: float) -> Wan:
        """A copy with every link's capacity set to `bps` (capacity sources kept as they are)."""
        return replace(self, links=tuple(replace(link, capacity_bps=bps) for link in self.links))

    def with_jitter(self, seconds: float) -> Wan:
        """A copy with every link's jitter set to `seconds`."""
        return replace(self, links=tuple(replace(link, jitter_s=seconds) for link in self.links))

    def in_one_building(self, capacity_bps: float, delay_s: float = BUILDING_DELAY_S) -> Wan:
        """The same islands in one data centre: every pair joined by one link of `delay_s`
        (about 10 us through a building's fabric) and `capacity_bps`, without jitter; what
        limits an exchange is then the islands' access links, when `capacity_bps` is at least
        their sum (a non-blocking fabric). No measured RTTs: there is no WAN to fit."""
        links = tuple(
            WanLink(a.name, b.name, delay_s, capacity_bps, BUILDING_SOURCE)
            for i, a in enumerate(self.cities)
            for b in self.cities[i + 1 :]
        )
        sources = {BUILDING_SOURCE: BUILDING_WHY}
        return Wan(f"{self.name}-one-dc", self.cities, links, sources=sources)

    def rtt_fit(self) -> RttFit:
        """Shortest-path round-trip times against every measured pair, in city-index order."""
        rows = []
        for pair, measured in self.measured_rtt_s.items():
            i, j = sorted(self.index(city) for city in pair)
            model = 2 * float(self.delay[i, j])
            rows.append(
                RttFitRow(self.names[i], self.names[j], measured, model, model / measured - 1)
            )
        rows.sort(key=lambda row: (self.index(row.a), self.index(row.b)))
        return RttFit(rows=tuple(rows))

    def citation(self, source_id: str) -> str:
        """The full citation for a source id (the id itself when no citation is recorded)."""
        return self.sources.get(source_id, source_id)


def _dijkstra(adjacency: list[list[tuple[int, int]]], src: int) -> dict[int, tuple[int, int]]:
    """Lexicographic (delay_ns, hops) labels of every city reachable from src."""
    best: dict[int, tuple[int, int]] = {src: (0, 0)}
    done: set[int] = set()
    heap = [(0, 0, src)]
    while heap:
        d, h, u = heapq.heappop(heap)
        if u in done:
            continue
        done.add(u)
        for v, w in adjacency[u]:
            candidate = (d + w, h + 1)
            if v not in best or candidate < best[v]:
                best[v] = candidate
                heapq.heappush(heap, (*candidate, v))
    return best
