"""Small WANs built in code for the planner's tests."""

from topo.wan import City, Wan, WanLink


def line_wan(delays_ms: list[float], capacity_bps: float = 10e9) -> Wan:
    """Cities A, B, C ... on a line, consecutive ones joined with these one-way delays."""
    names = [chr(ord("A") + i) for i in range(len(delays_ms) + 1)]
    cities = tuple(City(n, n, "X", 0.0, float(i)) for i, n in enumerate(names))
    links = tuple(
        WanLink(names[i], names[i + 1], d / 1000, capacity_bps, "test")
        for i, d in enumerate(delays_ms)
    )
    return Wan("line", cities, links)
