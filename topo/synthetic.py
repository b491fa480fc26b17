"""Synthetic WANs of any size, for benchmarks beyond the nine measured cities.

Islands are scattered around a few region centres spread in longitude over the globe. Each
island links to its 3 nearest neighbours; each pair of regions is joined by one long-haul link
between its closest islands; if the graph is still in pieces, the closest pair of islands in
different pieces is joined until it is connected. Delays are fibre along the great circle with a
route factor; there is no measured matrix.
"""

from __future__ import annotations

import itertools

import numpy as np

from topo.wan import FIBRE_S_PER_KM, City, Wan, WanLink, great_circle_km

ROUTE_FACTOR = 1.3  # cable routes are longer than the great circle
MIN_DELAY_S = 10e-6  # floor for islands at (nearly) the same place: ~2 km of fibre
CAPACITY_BPS = 100e9
NEIGHBOURS = 3
SOURCES = {
    "synthetic": (
        "Synthetic: random island positions (numpy default_rng with the given seed); delay = "
        "great-circle km x 4.9 us/km x 1.3 route factor; capacity 100 Gb/s (estimate, as the "
        "nine-city backbone)."
    )
}


def synthetic_wan(n: int, seed: int = 0, regions: int = 4) -> Wan:
    """A connected WAN of n islands named I00, I01, ... in `regions` regions (deterministic)."""
    if n < 2 or regions < 1:
        raise ValueError(f"synthetic_wan needs n >= 2 and regions >= 1, got n={n}, {regions=}")
    cities = _islands(n, seed, min(regions, n))
    km = np.array([[great_circle_km(a, b) for b in cities] for a in cities])
    region = [i % min(regions, n) for i in range(n)]
    pairs: set[tuple[int, int]] = set()
    for i in range(n):
        nearest = sorted((j for j in range(n) if j != i), key=lambda j: (km[i, j], j))
        pairs.update(_pair(i, j) for j in nearest[:NEIGHBOURS])
    for r, s in itertools.combinations(sorted(set(region)), 2):
        pairs.add(_closest(km, [i for i in range(n) if region[i] == r], region, s))
    _connect(km, pairs)
    links = tuple(
        WanLink(
            cities[i].name,
            cities[j].name,
            max(float(km[i, j]) * FIBRE_S_PER_KM * ROUTE_FACTOR, MIN_DELAY_S),
            CAPACITY_BPS,
            "synthetic",
        )
        for i, j in sorted(pairs)
    )
    return Wan(f"synthetic-{n}-seed{seed}", cities, links, sources=SOURCES)


def _islands(n: int, seed: int, regions: int) -> tuple[City, ...]:
    """Island i lies in region i % regions, scattered ~700 km around the region's centre."""
    rng = np.random.default_rng(seed)
    centres = [
        (rng.uniform(-35.0, 55.0), -180.0 + 360.0 * (r + rng.uniform(0.2, 0.8)) / regions)
        for r in range(regions)
    ]
    width = max(2, len(str(n - 1)))
    cities = []
    for i in range(n):
        lat0, lon0 = centres[i % regions]
        lat = float(np.clip(lat0 + rng.normal(0.0, 6.0), -80.0, 80.0))
        lon = float((lon0 + rng.normal(0.0, 8.0) + 180.0) % 360.0 - 180.0)
        name = f"I{i:0{width}d}"
        cities.append(
            City(name, name, f"region {i % regions}", round(lat, 2), round(lon, 2), "synthetic")
        )
    return tuple(cities)


def _pair(i: int, j: int) -> tuple[int, int]:
    return (i, j) if i < j else (j, i)


def _closest(km: np.ndarray, members: list[int], region: list[int], other: int) -> tuple[int, int]:
    """The closest pair between `members` and the islands of region `other`."""
    outside = [j for j in range(len(region)) if region[j] == other]
    return min((_pair(i, j) for i in members for j in outside), key=lambda p: (km[p], p))


def _connect(km: np.ndarray, pairs: set[tuple[int, int]]) -> None:
    """Add the shortest link between two pieces of the graph until it is in one piece."""
    n = len(km)
    while len(set(piece := _pieces(n, pairs))) > 1:
        across = ((i, j) for i in range(n) for j in range(i + 1, n) if piece[i] != piece[j])
        pairs.add(min(across, key=lambda p: (km[p], p)))


def _pieces(n: int, pairs: set[tuple[int, int]]) -> list[int]:
    """For each island, a label shared exactly by the islands of its connected piece."""
    parent = list(range(n))

    def root(i: int) -> int:
        while parent[i] != i:
            i = parent[i]
        return i

    for i, j in pairs:
        parent[root(i)] = root(j)
    return [root(i) for i in range(n)]
