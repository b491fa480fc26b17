"""The delay fit and the rewriting of delays in a WAN file."""

from pathlib import Path

import pytest

from scripts.fit_wan import main, rewrite_delays
from topo.exceptions import FitError
from topo.fit import fibre_delay_s, fit_delays, metric_floor
from topo.loader import default_wan, load_wan
from topo.wan import City, Wan, WanLink


def triangle(rtt_ms: dict[tuple[int, int], float], links: list[tuple[int, int]]) -> Wan:
    """Three cities ~100 km apart (fibre bound ~0.5 ms) with the given links and RTTs."""
    cities = tuple(City(f"C{i}", f"K{i}", "X", 0.0, 0.9 * i, "geo") for i in range(3))
    return Wan(
        "triangle",
        cities,
        tuple(WanLink(f"C{u}", f"C{v}", 1e-3, 10e9, "fit") for u, v in links),
        {frozenset((f"C{u}", f"C{v}")): ms / 1e3 for (u, v), ms in rtt_ms.items()},
        "m",
    )


def test_a_metric_matrix_is_fitted_exactly() -> None:
    wan = triangle({(0, 1): 20, (1, 2): 30, (0, 2): 50}, [(0, 1), (1, 2)])
    fit = fit_delays(wan)
    assert fit.lp_worst == pytest.approx(0, abs=1e-9)
    assert [link.delay_s for link in fit.wan.links] == pytest.approx([10e-3, 15e-3])
    assert metric_floor(wan) is None


def test_a_triangle_violation_sets_the_floor_and_the_fit_reaches_it() -> None:
    wan = triangle({(0, 1): 10, (1, 2): 10, (0, 2): 30}, [(0, 1), (1, 2), (0, 2)])
    floor = metric_floor(wan)
    assert floor is not None
    assert floor.rel_error == pytest.approx(10 / 50)
    assert (set(floor.far), floor.via) == ({"C0", "C2"}, "C1")
    fit = fit_delays(wan)
    assert fit.lp_worst == pytest.approx(0.2, abs=1e-6)
    assert abs(fit.wan.rtt_fit().worst.rel_error) == pytest.approx(0.2, abs=1e-3)


def test_delays_never_go_below_the_fibre_bound() -> None:
    wan = triangle({(0, 1): 0.2, (1, 2): 0.2, (0, 2): 0.4}, [(0, 1), (1, 2)])
    fit = fit_delays(wan, resolution_s=1e-5)
    for link in fit.wan.links:
        a, b = (fit.wan.cities[fit.wan.index(c)] for c in (link.a, link.b))
        assert link.delay_s >= fibre_delay_s(a, b)
        assert link.delay_s > 0.2e-3 / 2  # the bound, not the matrix, decides here


def test_fit_needs_a_measured_matrix() -> None:
    wan = triangle({}, [(0, 1), (1, 2)])
    with pytest.raises(FitError, match="no measured RTTs"):
        fit_delays(wan)


def test_nine_cities_fit_reaches_the_triangle_floor() -> None:
    wan = default_wan()
    fit = fit_delays(wan)
    assert fit.floor is not None
    assert {*fit.floor.far, fit.floor.via} == {"Hong Kong", "Amsterdam", "Singapore"}
    assert fit.lp_worst == pytest.approx(fit.floor.rel_error, abs=1e-6)
    # the committed file carries this fit
    assert [link.delay_s for link in fit.wan.links] == pytest.approx(
        [link.delay_s for link in wan.links], abs=1.5e-4
    )


def test_rewrite_replaces_only_delays(tmp_path: Path) -> None:
    text = """\
name: two  # a comment that must survive
sources: {s: "a source"}
cities:
  - {name: Alpha, code: AAA, continent: X, lat: 0.0, lon: 0.0, source: s}
  - {name: Beta, code: BBB, continent: X, lat: 0.0, lon: 1.0, source: s}
links:
  - a: AAA   # block style
    b: Beta
    delay: "3 ms"
    capacity: 10Gbps
    source: s
"""
    path = tmp_path / "two.yaml"
    path.write_text(text, encoding="utf-8")
    wan = load_wan(path)
    new = rewrite_delays(text, wan, {frozenset(("Alpha", "Beta")): 12.345})
    assert new == text.replace('delay: "3 ms"', "delay: 12.3ms")
    path.write_text(new, encoding="utf-8")
    assert load_wan(path).links[0].delay_s == pytest.approx(12.3e-3)


def test_script_writes_the_fitted_delays(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    text = """\
name: line
sources: {s: "a source"}
cities:
  - {name: Alpha, code: AAA, continent: X, lat: 0.0, lon: 0.0, source: s}
  - {name: Beta, code: BBB, continent: X, lat: 0.0, lon: 0.9, source: s}
  - {name: Gamma, code: CCC, continent: X, lat: 0.0, lon: 1.8, source: s}
links:
  - {a: AAA, b: BBB, delay: 1ms, capacity: 10Gbps, source: s}
  - {a: BBB, b: CCC, delay: 1ms, capacity: 10Gbps, source: s}
measured_rtt:
  source: s
  ms:
    AAA: {BBB: 20, CCC: 50}
    BBB: {CCC: 30}
"""
    path = tmp_path / "line.yaml"
    path.write_text(text, encoding="utf-8")
    assert main([str(path), "--write"]) == 0
    assert "worst relative RTT error after the fit" in capsys.readouterr().out
    assert [link.delay_s for link in load_wan(path).links] == pytest.approx([10e-3, 15e-3])
    assert main([str(tmp_path / "missing.yaml")]) == 2
