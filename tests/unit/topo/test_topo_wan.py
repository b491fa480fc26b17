"""Shortest paths, multicast trees and the other queries of the WAN model."""

import dataclasses
import itertools

import numpy as np
import pytest

from topo.exceptions import NotAdjacentError, UnknownCityError, WanError
from topo.fit import fibre_delay_s
from topo.loader import default_wan
from topo.wan import City, Wan, WanLink, great_circle_km


def city(i: int) -> City:
    return City(f"C{i}", f"K{i}", "X", 0.0, float(i))


def wan(links: list[tuple[int, int, float]], n: int, **kwargs: object) -> Wan:
    """A WAN of n cities C0.. with links (u, v, delay in ms), 10 Gb/s each."""
    return Wan(
        "test",
        tuple(city(i) for i in range(n)),
        tuple(WanLink(f"C{u}", f"C{v}", ms / 1e3, 10e9, "test") for u, v, ms in links),
        **kwargs,  # type: ignore[arg-type]
    )


# A square 0-1-3 / 0-2-3 of equal delays, a tail 3-5, and 4 hanging off 5 by a slow link.
SQUARE = [(0, 1, 1.0), (1, 3, 1.0), (0, 2, 1.0), (2, 3, 1.0), (3, 5, 1.0), (5, 4, 9.0)]
# 0-4 direct (0.3 ms) equals 0-1-4 (0.1 + 0.2 ms, which floats do not sum to 0.3 exactly).
TIES = [(0, 1, 0.1), (1, 4, 0.2), (0, 4, 0.3)]


def test_equal_delay_paths_prefer_the_lower_predecessor() -> None:
    model = wan(SQUARE, 6)
    assert model.path(0, 3) == (0, 1, 3)
    assert model.path(3, 0) == (3, 1, 0)
    assert model.path(2, 1) == (2, 0, 1)  # 2-0-1 and 2-3-1 tie; 0 < 3


def test_equal_delay_paths_prefer_fewer_hops_despite_float_rounding() -> None:
    model = wan([*TIES, (4, 2, 5.0), (2, 3, 5.0)], 5)
    assert 0.1e-3 + 0.2e-3 != 0.3e-3
    assert model.path(0, 4) == (0, 4)
    assert model.hops[0, 4] == 1
    assert model.delay[0, 4] == pytest.approx(0.3e-3)


def test_tree_shares_prefixes_of_one_shortest_path_tree() -> None:
    model = wan(SQUARE, 6)
    tree = model.tree(0, [3, 5])
    assert tree == frozenset({(0, 1), (1, 3), (3, 5)})
    assert model.tree(0, [5, 3, 1]) == tree  # order and repeats do not matter


def test_tree_from_a_leaf_and_trivial_trees() -> None:
    model = wan(SQUARE, 6)
    assert model.tree(5, [0, 2]) == frozenset({(5, 3), (3, 1), (1, 0), (3, 2)})
    assert model.tree(2, []) == frozenset()
    assert model.tree(2, [2]) == frozenset()
    with pytest.raises(UnknownCityError, match="no city index 6"):
        model.tree(0, [6])
    with pytest.raises(UnknownCityError, match="no city index -1"):
        model.path(-1, 2)


def test_delay_matrix_is_symmetric_with_zero_diagonal_and_read_only() -> None:
    model = default_wan()
    delay = model.delay
    assert delay.shape == (9, 9)
    assert np.array_equal(delay, delay.T)
    assert np.all(np.diag(delay) == 0)
    assert np.all(delay[~np.eye(9, dtype=bool)] > 0)
    with pytest.raises(ValueError):
        delay[0, 1] = 1.0
    assert model.delay is delay  # computed once


def test_delay_is_the_sum_of_link_delays_along_the_path() -> None:
    model = default_wan()
    for src in range(model.n):
        for dst in range(model.n):
            nodes = model.path(src, dst)
            total = sum(model.link(u, v).delay_s for u, v in itertools.pairwise(nodes))
            assert model.delay[src, dst] == pytest.approx(total)


def test_index_by_name_or_code() -> None:
    model = default_wan()
    assert model.index("Tokyo") == model.index("TYO") == 0
    assert model.names[model.index("LAX")] == "Los Angeles"
    with pytest.raises(UnknownCityError, match=r"'Paris'.*Tokyo \(TYO\)"):
        model.index("Paris")


def test_capacity_of_adjacent_cities_only() -> None:
    model = default_wan()
    tyo, lax, chi = (model.index(c) for c in ("TYO", "LAX", "CHI"))
    assert model.capacity(tyo, lax) == model.capacity(lax, tyo) == 100e9
    with pytest.raises(NotAdjacentError, match="Tokyo and Chicago"):
        model.capacity(tyo, chi)
    assert lax in model.neighbours(tyo) and chi not in model.neighbours(tyo)


def test_with_capacity_replaces_every_capacity_and_keeps_the_rest() -> None:
    model = default_wan()
    other = model.with_capacity(40e9)
    assert {link.capacity_bps for link in other.links} == {40e9}
    assert {link.capacity_bps for link in model.links} == {100e9}
    assert np.array_equal(other.delay, model.delay)
    assert other != model and hash(other) != hash(model)


def test_rtt_fit_compares_shortest_path_round_trips() -> None:
    measured = {frozenset(("C0", "C3")): 5e-3, frozenset(("C1", "C0")): 1e-3}
    model = wan(SQUARE, 6, measured_rtt_s=measured, measured_source="m")
    fit = model.rtt_fit()
    assert [(row.a, row.b) for row in fit.rows] == [("C0", "C1"), ("C0", "C3")]
    assert fit.rows[0].model_s == pytest.approx(2e-3)
    assert fit.rows[0].rel_error == pytest.approx(1.0)
    assert fit.rows[1].rel_error == pytest.approx(-0.2)
    assert fit.worst == fit.rows[0]
    assert fit.ranked()[0] == fit.rows[0]


def test_default_wan_fits_the_measured_matrix_within_15_percent() -> None:
    worst = default_wan().rtt_fit().worst
    assert abs(worst.rel_error) <= 0.15, worst


def test_default_wan_delays_respect_the_fibre_bound() -> None:
    model = default_wan()
    for link in model.links:
        a, b = (model.cities[model.index(c)] for c in (link.a, link.b))
        assert link.delay_s >= fibre_delay_s(a, b) - 1e-12, link


def test_default_wan_has_no_tokyo_chicago_cable() -> None:
    model = default_wan()
    pairs = {frozenset((link.a, link.b)) for link in model.links}
    assert frozenset(("Tokyo", "Chicago")) not in pairs
    assert len(pairs) < 36  # not a full mesh: some pairs route through others


def test_great_circle_distance() -> None:
    london = City("London", "LON", "Europe", 51.51, -0.13)
    new_york = City("New York", "NYC", "North America", 40.71, -74.01)
    assert great_circle_km(london, new_york) == pytest.approx(5570, rel=0.01)
    assert great_circle_km(new_york, london) == pytest.approx(great_circle_km(london, new_york))
    assert great_circle_km(london, london) == 0.0


@pytest.mark.parametrize(
    ("links", "n", "reason"),
    [
        ([(0, 1, 1.0)], 3, "C2 unreachable from C0"),
        ([(0, 1, 1.0), (1, 0, 2.0)], 2, "given twice"),
        ([(0, 0, 1.0), (0, 1, 1.0)], 2, "joins a city to itself"),
        ([(0, 1, 0.0)], 2, "positive"),
        ([], 1, "at least 2 cities"),
    ],
)
def test_invalid_wans_are_rejected(
    links: list[tuple[int, int, float]], n: int, reason: str
) -> None:
    with pytest.raises(WanError, match=reason):
        wan(links, n)


def test_links_must_name_known_cities() -> None:
    model = wan([(0, 1, 1.0)], 2)
    bad = dataclasses.replace(model.links[0], b="Nowhere")
    with pytest.raises(UnknownCityError, match="Nowhere"):
        dataclasses.replace(model, links=(bad,))
