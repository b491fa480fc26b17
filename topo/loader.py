"""Load a WAN model from YAML, reporting every mistake as "file:line: what is wrong".

The format (see docs/wan-model.md and topo/data/nine-cities.yaml)::

    name: nine-cities
    sources:                  # id -> full citation; everything below names its source by id
      geo: "..."
      fit: "..."
    cities:
      - {name: Tokyo, code: TYO, continent: Asia, lat: 35.68, lon: 139.69, source: geo}
    links:                    # undirected; a and b are city names or codes
      - {a: Tokyo, b: Hong Kong, delay: 26.0ms, capacity: 10Gbps, source: fit,
         capacity_source: dz-link, jitter: 2ms}   # capacity_source, jitter: optional
    measured_rtt:             # optional; each pair once, in milliseconds
      source: azure-p95
      ms:
        TYO: {SIN: 74, HKG: 52}

The YAML is composed into nodes (which keep their position) and walked by hand, so each error
names the line of the entry or key at fault.
"""

from __future__ import annotations

import importlib.resources
import math
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import yaml

from innet.exceptions import UnitError
from innet.units import parse_duration, parse_rate
from topo.exceptions import TopologyError, WanError
from topo.siteplan import MAX_ISLANDS
from topo.wan import City, Wan, WanLink
from topo.yamlfile import Record, YamlReader, line_of, shown

T = TypeVar("T")

DEFAULT_DATA = "nine-cities.yaml"

_TOP_KEYS = (("name", "sources", "cities", "links"), ("measured_rtt",))
_CITY_KEYS = (("name", "code", "continent", "lat", "lon", "source"), ())
_LINK_KEYS = (("a", "b", "delay", "capacity", "source"), ("capacity_source", "jitter"))
_RTT_KEYS = (("source", "ms"), ())


def load_wan(path: Path) -> Wan:
    """Load and check the WAN model in a YAML file."""
    return parse_wan(YamlReader(path, _error).read("topology file"), path)


def default_wan() -> Wan:
    """The nine-city WAN shipped with the package (topo/data/nine-cities.yaml)."""
    resource = importlib.resources.files("topo.data") / DEFAULT_DATA
    return parse_wan(resource.read_text(encoding="utf-8"), f"topo/data/{DEFAULT_DATA}")


def parse_wan(text: str, path: Path | str = "<string>") -> Wan:
    """Parse and check WAN YAML text; `path` is only used in error messages."""
    doc = YamlReader(path, _error)
    root = doc.compose(text, empty="empty file; expected keys name, sources, cities, links")
    top = doc.record(root, "the WAN file", *_TOP_KEYS)
    name = doc.text(top.value("name"), "name")
    sources = _sources(doc, top.value("sources"))
    cities, lookup = _cities(doc, top, sources)
    links = _links(doc, top, sources, lookup)
    measured: dict[frozenset[str], float] = {}
    measured_source = ""
    if "measured_rtt" in top.items:
        measured_source, measured = _measured(doc, top, sources, lookup)
    try:
        return Wan(name, tuple(cities), tuple(links), measured, measured_source, sources)
    except WanError as exc:  # the checks above should have caught it with a better line
        raise doc.fail(root, "", str(exc)) from None


def _error(path: Path | str, line: int | None, key: str, what: str) -> TopologyError:
    """A topology's error: the key, when named, is the subject of `what` ("lat must be ...")."""
    return TopologyError(path, line, f"{key} {what}" if key else what)


def _quantity(doc: YamlReader, node: yaml.Node, key: str, parse: Callable[[str], T]) -> T:
    """A size, rate or duration (a topology's own words; a scenario's are `doc.quantity`'s)."""
    if not isinstance(node, yaml.ScalarNode):
        raise doc.fail(node, key, "must be a single value such as 10Gbps or 26ms")
    try:
        return parse(node.value)
    except UnitError as exc:
        raise doc.fail(node, "", f"{key}: {exc}") from None


def _sources(doc: YamlReader, node: yaml.Node) -> dict[str, str]:
    return {
        doc.text(key, "a source id"): doc.text(value, f"source {key.value!r}")
        for key, value in doc.pairs(node, "sources")
    }


def _source(doc: YamlReader, node: yaml.Node, sources: dict[str, str]) -> str:
    source = doc.text(node, "source")
    if source not in sources:
        raise doc.fail(node, "", f"unknown source {source!r} (sources: {', '.join(sources)})")
    return source


def _cities(
    doc: YamlReader, top: Record, sources: dict[str, str]
) -> tuple[list[City], dict[str, str]]:
    """The cities, and a table from every name and code to the city's name."""
    cities: list[City] = []
    lookup: dict[str, str] = {}
    first: dict[str, tuple[int, int]] = {}  # name or code -> (city number, line)
    nodes = doc.sequence(top.value("cities"), "cities")
    if len(nodes) < 2:
        raise doc.fail(
            top.key_node("cities"), "", f"a WAN needs at least 2 cities, got {len(nodes)}"
        )
    if len(nodes) > MAX_ISLANDS:
        raise doc.fail(
            top.key_node("cities"),
            "",
            f"{len(nodes)} cities: innet carries at most {MAX_ISLANDS} islands (innet.p4 marks "
            f"each island's contribution in a {MAX_ISLANDS}-bit bitmap); remove cities",
        )
    for number, node in enumerate(nodes):
        entry = doc.record(node, "a city", *_CITY_KEYS)
        name = doc.text(entry.value("name"), "city name")
        code = doc.text(entry.value("code"), "city code")
        for label, key in (("name", name), ("code", code)):
            owner, line = first.setdefault(key, (number, line_of(node)))
            if owner != number:
                raise doc.fail(
                    entry.value(label), "", f"duplicate city {label} {key!r} (first at line {line})"
                )
            lookup[key] = name
        lat = doc.number(entry.value("lat"), "lat")
        lon = doc.number(entry.value("lon"), "lon")
        if not (-90 <= lat <= 90 and -180 <= lon <= 180):
            raise doc.fail(
                node, "", f"city {name!r}: lat must be in [-90, 90] and lon in [-180, 180]"
            )
        continent = doc.text(entry.value("continent"), "continent")
        source = _source(doc, entry.value("source"), sources)
        cities.append(City(name, code, continent, lat, lon, source))
    return cities, lookup


def _city(doc: YamlReader, node: yaml.Node, lookup: dict[str, str]) -> str:
    key = doc.text(node, "a city")
    if key not in lookup:
        known = ", ".join(dict.fromkeys(lookup.values()))
        raise doc.fail(node, "", f"unknown city {key!r} (cities: {known})")
    return lookup[key]


def _links(
    doc: YamlReader, top: Record, sources: dict[str, str], lookup: dict[str, str]
) -> list[WanLink]:
    links: list[WanLink] = []
    seen: dict[frozenset[str], int] = {}
    for node in doc.sequence(top.value("links"), "links"):
        entry = doc.record(node, "a link", *_LINK_KEYS)
        a, b = _city(doc, entry.value("a"), lookup), _city(doc, entry.value("b"), lookup)
        if a == b:
            raise doc.fail(node, "", f"link from {a} to itself")
        pair = frozenset((a, b))
        if pair in seen:
            raise doc.fail(node, "", f"duplicate link {a}-{b} (first at line {seen[pair]})")
        seen[pair] = line_of(node)
        delay = _quantity(doc, entry.value("delay"), "delay", parse_duration)
        capacity = _quantity(doc, entry.value("capacity"), "capacity", parse_rate)
        source = _source(doc, entry.value("source"), sources)
        capacity_source = ""
        if "capacity_source" in entry.items:
            capacity_source = _source(doc, entry.value("capacity_source"), sources)
        jitter = _jitter(doc, entry) if "jitter" in entry.items else 0.0
        links.append(WanLink(a, b, delay, capacity, source, capacity_source, jitter))
    _check_connected(doc, top.key_node("links"), list(dict.fromkeys(lookup.values())), links)
    return links


def _jitter(doc: YamlReader, entry: Record) -> float:
    """A link's optional `jitter`: a duration >= 0 (each way, uniform in [-jitter, +jitter])."""
    node = entry.value("jitter")
    jitter = _quantity(doc, node, "jitter", lambda text: parse_duration(text, allow_zero=True))
    if not math.isfinite(jitter):
        raise doc.fail(node, "jitter", f"must be finite, got {shown(node)}")
    return jitter


def _check_connected(
    doc: YamlReader, node: yaml.Node, names: list[str], links: list[WanLink]
) -> None:
    reached = {names[0]}
    frontier = [names[0]]
    while frontier:
        city = frontier.pop()
        for link in links:
            if city in (link.a, link.b):
                other = link.b if city == link.a else link.a
                if other not in reached:
                    reached.add(other)
                    frontier.append(other)
    unreachable = [name for name in names if name not in reached]
    if unreachable:
        raise doc.fail(
            node, "", f"the links leave {', '.join(unreachable)} unreachable from {names[0]}"
        )


def _measured(
    doc: YamlReader, top: Record, sources: dict[str, str], lookup: dict[str, str]
) -> tuple[str, dict[frozenset[str], float]]:
    node, owner = top.value("measured_rtt"), top.key_node("measured_rtt")
    entry = doc.record(node, "measured_rtt", *_RTT_KEYS, owner=owner)
    source = _source(doc, entry.value("source"), sources)
    measured: dict[frozenset[str], float] = {}
    first_line: dict[frozenset[str], int] = {}
    for row_key, row in doc.pairs(entry.value("ms"), "measured_rtt.ms"):
        a = _city(doc, row_key, lookup)
        for col_key, value in doc.pairs(row, f"the row of {a}"):
            b = _city(doc, col_key, lookup)
            if a == b:
                raise doc.fail(
                    col_key, "", f"measured RTT from {a} to itself; give other cities only"
                )
            pair = frozenset((a, b))
            if pair in measured:
                first = first_line[pair]
                raise doc.fail(col_key, "", f"RTT {a}-{b} given twice (first at line {first})")
            rtt_ms = doc.number(value, f"RTT {a}-{b}")
            if rtt_ms <= 0:
                raise doc.fail(value, f"RTT {a}-{b}", f"must be positive, got {rtt_ms:g} ms")
            measured[pair] = rtt_ms / 1e3
            first_line[pair] = line_of(col_key)
    return source, measured
