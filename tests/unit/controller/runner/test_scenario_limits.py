"""Scenario files are bounded like every YAML file innet reads (topo/yamlfile.py): too deep, too
large or not a regular file is a ScenarioError at file:line, before anything starts."""

from __future__ import annotations

from pathlib import Path

import pytest

from controller.runner.exceptions import ScenarioError
from controller.runner.scenario import load_scenario, parse_scenario
from topo.yamlfile import MAX_YAML_BYTES


def test_a_scenario_nested_20000_levels_deep_is_refused_at_its_line(tmp_path: Path) -> None:
    path = tmp_path / "deep.yaml"
    path.write_text("name: deep\nhosts: 1\ntraining: " + "[" * 20000 + "]" * 20000 + "\n")
    with pytest.raises(ScenarioError, match=r"deep.yaml:3: nested deeper than 16 levels") as err:
        load_scenario(path)
    assert err.value.line == 3


def test_a_scenario_over_the_size_limit_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "big.yaml"
    path.write_text("name: big\n" + "#" * MAX_YAML_BYTES + "\n")
    with pytest.raises(ScenarioError, match=r"big\.yaml: cannot read scenario: larger than"):
        load_scenario(path)
    with pytest.raises(ScenarioError, match="larger than 1,000,000 bytes"):
        parse_scenario(path.read_text(), path)


def test_a_scenario_that_is_not_a_regular_file_is_not_read() -> None:
    with pytest.raises(ScenarioError, match="cannot read scenario: not a regular file"):
        load_scenario(Path("/dev/zero"))


def test_a_scenario_whose_topology_has_33_cities_is_refused_at_check(tmp_path: Path) -> None:
    lines = ["name: line", "sources: {s: made up}", "cities:"]
    lines += [
        f"  - {{name: C{i}, code: C{i}, continent: X, lat: 0, lon: {i}, source: s}}"
        for i in range(33)
    ]
    lines += ["links:"] + [
        f"  - {{a: C{i - 1}, b: C{i}, delay: 1ms, capacity: 10Gbps, source: s}}"
        for i in range(1, 33)
    ]
    (tmp_path / "line.yaml").write_text("\n".join(lines) + "\n")
    path = tmp_path / "s.yaml"
    path.write_text("name: s\nhosts: 1\ntopology: line.yaml\n")
    with pytest.raises(ScenarioError, match=r"s.yaml:3: topology: .*at most 32 islands"):
        load_scenario(path)


def test_a_rate_too_large_for_a_float_is_refused_at_its_line() -> None:
    text = "name: s\nhosts: 1\nbandwidth: 1" + "0" * 400 + "bps\n"
    with pytest.raises(ScenarioError, match=r"s\.yaml:3: bandwidth: .* is too large"):
        parse_scenario(text, "s.yaml")
