"""Per-link jitter in the WAN model: path jitter, the YAML key, and what the shaping gets."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest
from p4switch import ShapeSpec, parse_shape

from topo.exceptions import TopologyError, WanError
from topo.linknode import emulator_shapes
from topo.loader import default_wan, load_wan
from topo.shaping import kernel_link_params, switch_shape
from topo.wan import City, Wan, WanLink

MS = 1e-3


def spec_of(text: str) -> ShapeSpec:
    """What p4switch makes of a shaping spec (as one port's, `PORT:SPEC`)."""
    return parse_shape(f"1:{text}")[1]


def line_wan(jitters_ms: list[float], delays_ms: list[float] | None = None) -> Wan:
    """Cities C0-C1-...-Cn joined in a line, link k with jitters_ms[k]."""
    delays = delays_ms or [10.0] * len(jitters_ms)
    cities = tuple(City(f"C{i}", f"K{i}", "X", 0.0, float(i)) for i in range(len(delays) + 1))
    links = tuple(
        WanLink(f"C{k}", f"C{k + 1}", d * MS, 10e9, "t", jitter_s=j * MS)
        for k, (d, j) in enumerate(zip(delays, jitters_ms, strict=True))
    )
    return Wan("line", cities, links)


# -- the model ----------------------------------------------------------------------------------


def test_path_jitter_sums_the_links_along_the_shortest_path() -> None:
    wan = line_wan([1.0, 2.0, 0.5])
    expected = np.array(
        [[0.0, 1.0, 3.0, 3.5], [1.0, 0.0, 2.0, 2.5], [3.0, 2.0, 0.0, 0.5], [3.5, 2.5, 0.5, 0.0]]
    )
    assert wan.jitter == pytest.approx(expected * MS)
    assert not wan.jitter.flags.writeable
    assert wan.has_jitter


def test_path_jitter_follows_the_delay_not_the_hops() -> None:
    # C0-C2 direct is slow (50 ms) with no jitter; the two-hop path is faster and jittery
    cities = tuple(City(f"C{i}", f"K{i}", "X", 0.0, float(i)) for i in range(3))
    links = (
        WanLink("C0", "C1", 10 * MS, 10e9, "t", jitter_s=1 * MS),
        WanLink("C1", "C2", 10 * MS, 10e9, "t", jitter_s=2 * MS),
        WanLink("C0", "C2", 50 * MS, 10e9, "t"),
    )
    wan = Wan("tri", cities, links)
    assert wan.jitter[0, 2] == pytest.approx(3 * MS)


def test_no_jitter_by_default_and_with_jitter_sets_every_link() -> None:
    wan = default_wan()
    assert not wan.has_jitter
    assert not wan.jitter.any()
    jittery = wan.with_jitter(2 * MS)
    assert {link.jitter_s for link in jittery.links} == {2 * MS}
    assert jittery.delay == pytest.approx(wan.delay)
    assert jittery.jitter == pytest.approx(wan.hops * 2 * MS)


@pytest.mark.parametrize("jitter", [-1e-3, float("inf"), float("nan")])
def test_bad_link_jitter_is_rejected(jitter: float) -> None:
    wan = line_wan([1.0])
    with pytest.raises(WanError, match="jitter"):
        dataclasses.replace(wan, links=(dataclasses.replace(wan.links[0], jitter_s=jitter),))


# -- the YAML key -------------------------------------------------------------------------------

TEXT = """\
name: tiny
sources:
  s: "a source"
cities:
  - {name: Alpha, code: AAA, continent: X, lat: 0.0, lon: 0.0, source: s}
  - {name: Beta, code: BBB, continent: X, lat: 0.0, lon: 10.0, source: s}
links:
  - {a: Alpha, b: Beta, delay: 10ms, capacity: 10Gbps, source: s}
  - {a: Beta, b: Gamma, delay: 5ms, capacity: 1Gbps, source: s, JITTER}
"""


def write(tmp_path: Path, jitter: str) -> Path:
    cities = "  - {name: Gamma, code: CCC, continent: Y, lat: 10.0, lon: 10.0, source: s}\n"
    text = TEXT.replace("links:\n", cities + "links:\n").replace(", JITTER", jitter)
    path = tmp_path / "wan.yaml"
    path.write_text(text, encoding="utf-8")
    return path


@pytest.mark.parametrize(
    ("key", "seconds"), [("", 0.0), (", jitter: 2ms", 2 * MS), (", jitter: 0 ms", 0.0)]
)
def test_a_link_may_carry_jitter(tmp_path: Path, key: str, seconds: float) -> None:
    wan = load_wan(write(tmp_path, key))
    assert wan.links[0].jitter_s == 0.0
    assert wan.links[1].jitter_s == pytest.approx(seconds)


@pytest.mark.parametrize(
    ("key", "what"),
    [
        (", jitter: -1ms", "jitter: '-1ms': a duration must not be negative"),
        (", jitter: 2", "jitter: '2': duration has no unit"),
        (", jitter: fast", "jitter: 'fast': not a duration"),
        (", jitter: [1ms]", "jitter must be a single value"),
        (f", jitter: {'9' * 400}s", "jitter must be finite"),
        (", jitter: 1ms, jitter: 2ms", "key 'jitter' given twice"),
    ],
)
def test_bad_jitter_is_reported_at_its_line(tmp_path: Path, key: str, what: str) -> None:
    path = write(tmp_path, key)
    with pytest.raises(TopologyError) as caught:
        load_wan(path)
    assert f"{path}:10:" in str(caught.value)
    assert what in str(caught.value)


def test_unknown_link_key_lists_jitter_as_allowed(tmp_path: Path) -> None:
    with pytest.raises(TopologyError, match=r"allowed: .*capacity_source, jitter"):
        load_wan(write(tmp_path, ", wobble: 1ms"))


# -- what shaping gets --------------------------------------------------------------------------


def test_switch_shape_carries_the_link_jitter() -> None:
    link = default_wan().with_jitter(0.7 * MS).links[0]
    text = switch_shape(link, 1000.0, 0.01)
    assert ",jitter=0.0007s" in text
    spec = spec_of(text)
    assert spec.jitter_s == pytest.approx(0.7 * MS)
    assert spec.delay_s == pytest.approx(link.delay_s)
    assert spec.loss == pytest.approx(0.01)
    assert not spec.reorder  # user-space shaping keeps frames in order


def test_switch_shape_has_no_jitter_key_without_jitter() -> None:
    link = default_wan().links[0]
    assert "jitter" not in switch_shape(link, 1000.0)
    assert spec_of(switch_shape(link, 1000.0)).jitter_s == 0.0


def test_netem_gets_the_jitter_as_mininet_takes_it() -> None:
    link = default_wan().links[0]
    assert "jitter" not in kernel_link_params(link, 1000.0)
    params = kernel_link_params(dataclasses.replace(link, jitter_s=2 * MS), 1000.0)
    assert params["jitter"] == "2ms"
    assert params["delay"] == kernel_link_params(link, 1000.0)["delay"]
    sub_ms = kernel_link_params(dataclasses.replace(link, jitter_s=0.7 * MS), 1000.0)
    assert sub_ms["jitter"] == "0.7ms"


def test_the_link_emulator_shapes_both_directions_with_the_jitter() -> None:
    wan = default_wan().with_jitter(3 * MS)
    shapes = emulator_shapes(wan, 1000.0, 0.0)
    assert len(shapes) == 2 * len(wan.links)
    assert {spec_of(text).jitter_s for text in shapes.values()} == {3 * MS}
