"""The YAML files innet reads are bounded: in size, in nesting depth, and to regular files; and a
WAN has at most the 32 islands innet.p4's contributor bitmap can mark. Each limit is reported by
the loader at file:line, never as a RecursionError or a hang."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest

from controller.planner.exceptions import ScheduleFileError
from controller.planner.schedule_file import load_schedule
from topo.exceptions import TopologyError, YamlLimitError
from topo.loader import default_wan, load_wan, parse_wan
from topo.siteplan import MAX_ISLANDS
from topo.yamlfile import MAX_YAML_BYTES, MAX_YAML_DEPTH, compose, read_text


def line_wan(cities: int) -> str:
    """A WAN of `cities` cities in a line; the `cities:` key is on line 3."""
    lines = ["name: line", "sources: {s: made up}", "cities:"]
    lines += [
        f"  - {{name: C{i}, code: C{i}, continent: X, lat: 0, lon: {i}, source: s}}"
        for i in range(cities)
    ]
    lines += ["links:"]
    lines += [
        f"  - {{a: C{i - 1}, b: C{i}, delay: 1ms, capacity: 10Gbps, source: s}}"
        for i in range(1, cities)
    ]
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize(
    "text",
    [
        "name: x\ncities: " + "[" * 20000 + "]" * 20000 + "\n",  # flow style
        "name: x\ncities:\n" + "".join("  " * i + "-\n" for i in range(700)),  # block style
        "name: x\ncities: " + "{a: " * 5000 + "1" + "}" * 5000 + "\n",
    ],
    ids=["flow-lists", "block-lists", "flow-mappings"],
)
def test_deep_nesting_is_refused_at_its_line(tmp_path: Path, text: str) -> None:
    path = tmp_path / "deep.yaml"
    path.write_text(text)
    with pytest.raises(TopologyError, match=rf"deep.yaml:\d+: nested deeper than {MAX_YAML_DEPTH}"):
        load_wan(path)


def test_the_depth_innet_needs_is_well_within_the_limit() -> None:
    nested = "a: " + "[" * (MAX_YAML_DEPTH - 1) + "]" * (MAX_YAML_DEPTH - 1)
    assert compose(nested) is not None
    with pytest.raises(YamlLimitError, match="line 1: nested deeper"):
        compose("a: " + "[" * MAX_YAML_DEPTH + "]" * MAX_YAML_DEPTH)
    assert default_wan().n == 9  # measured_rtt.ms rows are the deepest part of a WAN file


def test_files_over_the_size_limit_are_refused(tmp_path: Path) -> None:
    path = tmp_path / "big.yaml"
    path.write_text(line_wan(3) + "#" * MAX_YAML_BYTES + "\n")
    with pytest.raises(TopologyError, match=r"big.yaml: cannot read topology file: larger than"):
        load_wan(path)
    with pytest.raises(TopologyError, match="larger than 1,000,000 bytes"):
        parse_wan(path.read_text(), path)
    sched = tmp_path / "rounds.yaml"
    sched.write_text("rounds:\n" + "  - [[TYO, SIN, HKG, LON, FRA, AMS, NYC, CHI, LAX]]\n" * 30000)
    with pytest.raises(ScheduleFileError, match=r"rounds\.yaml: cannot read schedule file: larger"):
        load_schedule(sched, default_wan())


def test_a_schedule_nested_too_deep_is_refused_at_its_line(tmp_path: Path) -> None:
    sched = tmp_path / "s.yaml"
    sched.write_text("name: x\nrounds:\n  - " + "[" * 20000 + "]" * 20000 + "\n")
    with pytest.raises(ScheduleFileError, match=r"s.yaml:3: nested deeper than"):
        load_schedule(sched, default_wan())


def test_devices_and_fifos_are_not_read(tmp_path: Path) -> None:
    with pytest.raises(TopologyError, match="/dev/zero: cannot read topology file: not a regular"):
        load_wan(Path("/dev/zero"))
    fifo = tmp_path / "fifo.yaml"
    os.mkfifo(fifo)
    # a writer that never writes: reading the FIFO would block; the timer ends such a read
    # (and the test) rather than hang, should the check ever go
    writer = os.open(fifo, os.O_RDWR | os.O_NONBLOCK)
    timer = threading.Timer(10.0, os.close, [writer])
    timer.start()
    try:
        with pytest.raises(YamlLimitError, match="not a regular file"):
            read_text(fifo)
    finally:
        timer.cancel()
        os.close(writer)


def test_a_wan_of_more_islands_than_innet_carries_is_refused() -> None:
    assert parse_wan(line_wan(MAX_ISLANDS), "line.yaml").n == MAX_ISLANDS
    with pytest.raises(TopologyError, match=r"line.yaml:3: 33 cities: innet carries at most 32"):
        parse_wan(line_wan(MAX_ISLANDS + 1), "line.yaml")
