"""Loading WAN YAML files: a good file, and each mistake reported at its line."""

from pathlib import Path

import pytest

from topo.exceptions import TopologyError
from topo.loader import default_wan, load_wan

GOOD = """\
name: tiny
sources:
  s: "a source"
cities:
  - {name: Alpha, code: AAA, continent: X, lat: 0.0, lon: 0.0, source: s}
  - {name: Beta, code: BBB, continent: X, lat: 0.0, lon: 10.0, source: s}
  - {name: Gamma, code: CCC, continent: Y, lat: 10.0, lon: 10.0, source: s}
links:
  - {a: Alpha, b: Beta, delay: 10ms, capacity: 10Gbps, source: s}
  - {a: Beta, b: CCC, delay: 5ms, capacity: 1Gbit/s, source: s}
measured_rtt:
  source: s
  ms:
    AAA: {BBB: 21, CCC: 31}
"""


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "wan.yaml"
    path.write_text(text, encoding="utf-8")
    return path


def edited(old: str, new: str) -> str:
    assert GOOD.count(old) == 1, f"{old!r} must occur once in GOOD"
    return GOOD.replace(old, new)


def test_good_file_loads(tmp_path: Path) -> None:
    wan = load_wan(write(tmp_path, GOOD))
    assert wan.name == "tiny"
    assert wan.names == ("Alpha", "Beta", "Gamma")
    second = wan.links[1]
    assert (second.a, second.b) == ("Beta", "Gamma")  # codes resolved to names
    assert second.delay_s == pytest.approx(0.005)
    assert second.capacity_bps == pytest.approx(1e9)
    assert second.source == "s"
    assert wan.measured_rtt_s[frozenset(("Alpha", "Gamma"))] == pytest.approx(0.031)
    assert wan.measured_source == "s"
    assert wan.citation("s") == "a source"


CASES = [
    pytest.param(
        "measured_rtt:\n  source: s\n",
        "measured_rtt:\n  source: s: t\n",
        12,
        "malformed YAML",
        id="malformed",
    ),
    pytest.param(
        "name: tiny\n",
        "name: tiny\nname: other\n",
        2,
        "key 'name' given twice in the WAN file (first at line 1)",
        id="yaml-duplicate-key",
    ),
    pytest.param(
        "code: AAA, continent: X, ",
        "code: AAA, ",
        5,
        "a city is missing continent (keys: name, code, continent",
        id="missing-key",
    ),
    pytest.param(
        "lon: 0.0, source: s}",
        "lon: 0.0, source: s, colour: red}",
        5,
        "unknown key 'colour' in a city (allowed: name, code, continent, lat, lon, source)",
        id="unknown-key",
    ),
    pytest.param(
        "    AAA: {BBB: 21, CCC: 31}\n",
        "    AAA: {BBB: 21, CCC: 31}\nextra: 1\n",
        15,
        "unknown key 'extra' in the WAN file",
        id="unknown-top-key",
    ),
    pytest.param(
        "- {name: Gamma,",
        "- {name: Beta,",
        7,
        "duplicate city name 'Beta' (first at line 6)",
        id="duplicate-name",
    ),
    pytest.param(
        "code: CCC",
        "code: AAA",
        7,
        "duplicate city code 'AAA' (first at line 5)",
        id="duplicate-code",
    ),
    pytest.param(
        "lat: 10.0, lon: 10.0",
        "lat: 100.0, lon: 10.0",
        7,
        "lat must be in [-90, 90]",
        id="latitude",
    ),
    pytest.param(
        "lat: 10.0, lon: 10.0", "lat: .inf, lon: 10.0", 7, "lat must be finite", id="infinite"
    ),
    pytest.param(
        "b: CCC",
        "b: Delta",
        10,
        "unknown city 'Delta' (cities: Alpha, Beta, Gamma)",
        id="unknown-city-in-link",
    ),
    pytest.param("b: CCC", "b: BBB", 10, "link from Beta to itself", id="self-link"),
    pytest.param(
        "delay: 5ms", "delay: 0ms", 10, "delay: '0ms': a duration must be positive", id="zero-delay"
    ),
    pytest.param(
        "capacity: 1Gbit/s",
        "capacity: -1Gbit/s",
        10,
        "a rate must be positive",
        id="negative-capacity",
    ),
    pytest.param(
        "capacity: 10Gbps",
        "capacity: 10 Gbs",
        9,
        "capacity: '10 Gbs': unknown rate unit 'Gbs' (accepted: bps, Kbps, Mbps, Gbps",
        id="bad-unit",
    ),
    pytest.param("delay: 10ms", "delay: 10", 9, "delay: '10': duration has no unit", id="no-unit"),
    pytest.param(
        "capacity: 1Gbit/s, source: s}\n",
        "capacity: 1Gbit/s, source: s}\n"
        "  - {a: BBB, b: Alpha, delay: 3ms, capacity: 10Gbps, source: s}\n",
        11,
        "duplicate link Beta-Alpha (first at line 9)",
        id="duplicate-link",
    ),
    pytest.param(
        "  - {a: Beta, b: CCC, delay: 5ms, capacity: 1Gbit/s, source: s}\n",
        "",
        8,
        "the links leave Gamma unreachable from Alpha",
        id="disconnected",
    ),
    pytest.param(
        "lon: 0.0, source: s}",
        "lon: 0.0, source: t}",
        5,
        "unknown source 't' (sources: s)",
        id="unknown-source",
    ),
    pytest.param(
        "measured_rtt:\n  source: s\n",
        "measured_rtt:\n  source: azure\n",
        12,
        "unknown source 'azure'",
        id="unknown-measured-source",
    ),
    pytest.param("CCC: 31}", "DDD: 31}", 14, "unknown city 'DDD'", id="measured-unknown-city"),
    pytest.param(
        "CCC: 31}", "CCC: 0}", 14, "RTT Alpha-Gamma must be positive, got 0 ms", id="measured-zero"
    ),
    pytest.param(
        "CCC: 31}", "CCC: fast}", 14, "RTT Alpha-Gamma must be a number", id="measured-not-a-number"
    ),
    pytest.param(
        "{BBB: 21,", "{AAA: 21,", 14, "measured RTT from Alpha to itself", id="measured-self"
    ),
    pytest.param(
        "CCC: 31}\n",
        "CCC: 31}\n    BBB: {AAA: 20}\n",
        15,
        "RTT Beta-Alpha given twice (first at line 14)",
        id="measured-twice",
    ),
    pytest.param(
        "measured_rtt:\n  source: s\n",
        "measured_rtt:\n",
        11,
        "measured_rtt is missing source",
        id="measured-missing-source",
    ),
    pytest.param(
        "measured_rtt:\n  source: s\n  ms:\n    AAA: {BBB: 21, CCC: 31}\n",
        "measured_rtt: [21, 31]\n",
        11,
        "measured_rtt must be a mapping with keys source, ms",
        id="measured-not-a-mapping",
    ),
    pytest.param(
        "  - {a: Alpha, b: Beta, delay: 10ms, capacity: 10Gbps, source: s}\n"
        "  - {a: Beta, b: CCC, delay: 5ms, capacity: 1Gbit/s, source: s}\n",
        "    a: Alpha\n",
        9,
        "links must be a list",
        id="links-not-a-list",
    ),
]


@pytest.mark.parametrize(("old", "new", "line", "what"), CASES)
def test_mistakes_are_reported_with_their_line(
    tmp_path: Path, old: str, new: str, line: int, what: str
) -> None:
    path = write(tmp_path, edited(old, new))
    with pytest.raises(TopologyError) as caught:
        load_wan(path)
    error = caught.value
    assert (error.path, error.line) == (path, line), str(error)
    assert what in error.what
    assert str(error) == f"{path}:{line}: {error.what}"


def test_fewer_than_two_cities(tmp_path: Path) -> None:
    text = """\
name: lonely
sources: {s: "a source"}
cities:
  - {name: Alpha, code: AAA, continent: X, lat: 0.0, lon: 0.0, source: s}
links: []
"""
    with pytest.raises(TopologyError, match=r"wan.yaml:3: a WAN needs at least 2 cities, got 1"):
        load_wan(write(tmp_path, text))


def test_empty_file(tmp_path: Path) -> None:
    with pytest.raises(TopologyError, match=r"wan.yaml:1: empty file"):
        load_wan(write(tmp_path, "# nothing here\n"))


def test_default_wan_is_the_nine_cities() -> None:
    wan = default_wan()
    assert wan.name == "nine-cities"
    assert wan.n == 9
    assert {c.code for c in wan.cities} == {
        "TYO",
        "SIN",
        "HKG",
        "LON",
        "FRA",
        "AMS",
        "NYC",
        "CHI",
        "LAX",
    }
    continents = {c.continent for c in wan.cities}
    assert continents == {"Asia", "Europe", "North America"}
    assert len(wan.measured_rtt_s) == 36  # every pair measured
    assert wan.measured_source == "azure-p95"


def test_default_wan_cites_every_figure() -> None:
    wan = default_wan()
    used = {c.source for c in wan.cities} | {wan.measured_source}
    used |= {link.source for link in wan.links} | {link.capacity_source for link in wan.links}
    assert used <= set(wan.sources)
    assert {link.source for link in wan.links} == {"fit"}
    assert {link.capacity_source for link in wan.links} == {"backbone"}
    assert "Estimate" in wan.citation("backbone")
    assert {link.capacity_bps for link in wan.links} == {100e9}
    assert "learn.microsoft.com" in wan.citation("azure-p95")
