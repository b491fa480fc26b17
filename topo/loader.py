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
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import yaml

from innet.exceptions import UnitError
from innet.units import parse_duration, parse_rate
from topo.exceptions import TopologyError, WanError, YamlLimitError
from topo.siteplan import MAX_ISLANDS
from topo.wan import City, Wan, WanLink
from topo.yamlfile import compose, read_text

T = TypeVar("T")

DEFAULT_DATA = "nine-cities.yaml"

_TOP_KEYS = (("name", "sources", "cities", "links"), ("measured_rtt",))
_CITY_KEYS = (("name", "code", "continent", "lat", "lon", "source"), ())
_LINK_KEYS = (("a", "b", "delay", "capacity", "source"), ("capacity_source", "jitter"))
_RTT_KEYS = (("source", "ms"), ())


@dataclass(frozen=True)
class _Entry:
    """A YAML mapping checked against its allowed keys: key -> (key node, value node)."""

    items: dict[str, tuple[yaml.Node, yaml.Node]]

    def value(self, key: str) -> yaml.Node:
        return self.items[key][1]

    def key_node(self, key: str) -> yaml.Node:
        return self.items[key][0]


@dataclass(frozen=True)
class _Document:
    """Typed access to composed YAML nodes; every failure raises `TopologyError` at the node."""

    path: Path | str

    def fail(self, node: yaml.Node, what: str) -> TopologyError:
        return TopologyError(self.path, _line_of(node), what)

    def mapping(
        self,
        node: yaml.Node,
        what: str,
        keys: tuple[tuple[str, ...], tuple[str, ...]],
        owner: yaml.Node | None = None,
    ) -> _Entry:
        """The mapping at node, with all the required keys and only allowed optional ones.

        A missing key is reported at `owner` (the key holding the mapping) when given.
        """
        required, optional = keys
        allowed = ", ".join((*required, *optional))
        if not isinstance(node, yaml.MappingNode):
            raise self.fail(node, f"{what} must be a mapping with keys {allowed}")
        items: dict[str, tuple[yaml.Node, yaml.Node]] = {}
        for key_node, value_node in node.value:
            key = self.text(key_node, f"a key of {what}")
            if key not in (*required, *optional):
                raise self.fail(key_node, f"unknown key {key!r} in {what} (allowed: {allowed})")
            if key in items:
                first = _line_of(items[key][0])
                raise self.fail(
                    key_node, f"key {key!r} given twice in {what} (first at line {first})"
                )
            items[key] = (key_node, value_node)
        missing = [key for key in required if key not in items]
        if missing:
            at = node if owner is None else owner
            raise self.fail(at, f"{what} is missing {', '.join(missing)} (keys: {allowed})")
        return _Entry(items)

    def sequence(self, node: yaml.Node, what: str) -> list[yaml.Node]:
        if not isinstance(node, yaml.SequenceNode):
            raise self.fail(node, f"{what} must be a list")
        return list(node.value)

    def pairs(self, node: yaml.Node, what: str) -> list[tuple[yaml.Node, yaml.Node]]:
        """A mapping with free keys, as (key node, value node) pairs; duplicate keys rejected."""
        if not isinstance(node, yaml.MappingNode):
            raise self.fail(node, f"{what} must be a mapping")
        seen: dict[str, int] = {}
        for key_node, _ in node.value:
            key = self.text(key_node, f"a key of {what}")
            if key in seen:
                raise self.fail(
                    key_node, f"{key!r} given twice in {what} (first at line {seen[key]})"
                )
            seen[key] = _line_of(key_node)
        return list(node.value)

    def text(self, node: yaml.Node, what: str) -> str:
        value = self.scalar(node)
        if not isinstance(value, str) or not value.strip():
            raise self.fail(node, f"{what} must be a non-empty string, got {_shown(node)}")
        return value

    def number(self, node: yaml.Node, what: str) -> float:
        value = self.scalar(node)
        if isinstance(value, bool) or not isinstance(value, int | float) or math.isnan(value):
            raise self.fail(node, f"{what} must be a number, got {_shown(node)}")
        if math.isinf(value):
            raise self.fail(node, f"{what} must be finite, got {_shown(node)}")
        return float(value)

    def quantity(self, node: yaml.Node, what: str, parse: Callable[[str], T]) -> T:
        if not isinstance(node, yaml.ScalarNode):
            raise self.fail(node, f"{what} must be a single value such as 10Gbps or 26ms")
        try:
            return parse(node.value)
        except UnitError as exc:
            raise self.fail(node, f"{what}: {exc}") from None

    def scalar(self, node: yaml.Node) -> Any:
        if not isinstance(node, yaml.ScalarNode):
            return node
        return yaml.constructor.SafeConstructor().construct_object(node)


def _line_of(node: yaml.Node) -> int:
    """1-based line where a node starts."""
    return int(node.start_mark.line) + 1


def _shown(node: yaml.Node) -> str:
    if isinstance(node, yaml.ScalarNode):
        return repr(node.value)
    return "a list" if isinstance(node, yaml.SequenceNode) else "a mapping"


def load_wan(path: Path) -> Wan:
    """Load and check the WAN model in a YAML file."""
    try:
        text = read_text(path)
    except OSError as err:
        raise TopologyError(path, None, f"cannot read topology file: {err.strerror}") from err
    except UnicodeDecodeError as err:
        raise TopologyError(path, None, f"not a UTF-8 text file ({err.reason})") from err
    except YamlLimitError as err:
        raise TopologyError(path, None, f"cannot read topology file: {err.what}") from None
    return parse_wan(text, path)


def default_wan() -> Wan:
    """The nine-city WAN shipped with the package (topo/data/nine-cities.yaml)."""
    resource = importlib.resources.files("topo.data") / DEFAULT_DATA
    return parse_wan(resource.read_text(encoding="utf-8"), f"topo/data/{DEFAULT_DATA}")


def parse_wan(text: str, path: Path | str = "<string>") -> Wan:
    """Parse and check WAN YAML text; `path` is only used in error messages."""
    doc = _Document(path)
    root = _compose(text, path)
    top = doc.mapping(root, "the WAN file", _TOP_KEYS)
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
        raise doc.fail(root, str(exc)) from None


def _compose(text: str, path: Path | str) -> yaml.Node:
    try:
        root = compose(text)
    except YamlLimitError as exc:
        raise TopologyError(path, exc.line, exc.what) from None
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark is not None else 1
        raise TopologyError(path, line, f"malformed YAML: {exc.problem or exc.context}") from None
    except yaml.YAMLError as exc:
        raise TopologyError(path, 1, f"malformed YAML: {exc}") from None
    if root is None:
        raise TopologyError(path, 1, "empty file; expected keys name, sources, cities, links")
    return root


def _sources(doc: _Document, node: yaml.Node) -> dict[str, str]:
    return {
        doc.text(key, "a source id"): doc.text(value, f"source {key.value!r}")
        for key, value in doc.pairs(node, "sources")
    }


def _source(doc: _Document, node: yaml.Node, sources: dict[str, str]) -> str:
    source = doc.text(node, "source")
    if source not in sources:
        raise doc.fail(node, f"unknown source {source!r} (sources: {', '.join(sources)})")
    return source


def _cities(
    doc: _Document, top: _Entry, sources: dict[str, str]
) -> tuple[list[City], dict[str, str]]:
    """The cities, and a table from every name and code to the city's name."""
    cities: list[City] = []
    lookup: dict[str, str] = {}
    first: dict[str, tuple[int, int]] = {}  # name or code -> (city number, line)
    nodes = doc.sequence(top.value("cities"), "cities")
    if len(nodes) < 2:
        raise doc.fail(top.key_node("cities"), f"a WAN needs at least 2 cities, got {len(nodes)}")
    if len(nodes) > MAX_ISLANDS:
        raise doc.fail(
            top.key_node("cities"),
            f"{len(nodes)} cities: innet carries at most {MAX_ISLANDS} islands (innet.p4 marks "
            f"each island's contribution in a {MAX_ISLANDS}-bit bitmap); remove cities",
        )
    for number, node in enumerate(nodes):
        entry = doc.mapping(node, "a city", _CITY_KEYS)
        name = doc.text(entry.value("name"), "city name")
        code = doc.text(entry.value("code"), "city code")
        for label, key in (("name", name), ("code", code)):
            owner, line = first.setdefault(key, (number, _line_of(node)))
            if owner != number:
                raise doc.fail(
                    entry.value(label), f"duplicate city {label} {key!r} (first at line {line})"
                )
            lookup[key] = name
        lat = doc.number(entry.value("lat"), "lat")
        lon = doc.number(entry.value("lon"), "lon")
        if not (-90 <= lat <= 90 and -180 <= lon <= 180):
            raise doc.fail(node, f"city {name!r}: lat must be in [-90, 90] and lon in [-180, 180]")
        continent = doc.text(entry.value("continent"), "continent")
        source = _source(doc, entry.value("source"), sources)
        cities.append(City(name, code, continent, lat, lon, source))
    return cities, lookup


def _city(doc: _Document, node: yaml.Node, lookup: dict[str, str]) -> str:
    key = doc.text(node, "a city")
    if key not in lookup:
        known = ", ".join(dict.fromkeys(lookup.values()))
        raise doc.fail(node, f"unknown city {key!r} (cities: {known})")
    return lookup[key]


def _links(
    doc: _Document, top: _Entry, sources: dict[str, str], lookup: dict[str, str]
) -> list[WanLink]:
    links: list[WanLink] = []
    seen: dict[frozenset[str], int] = {}
    for node in doc.sequence(top.value("links"), "links"):
        entry = doc.mapping(node, "a link", _LINK_KEYS)
        a, b = _city(doc, entry.value("a"), lookup), _city(doc, entry.value("b"), lookup)
        if a == b:
            raise doc.fail(node, f"link from {a} to itself")
        pair = frozenset((a, b))
        if pair in seen:
            raise doc.fail(node, f"duplicate link {a}-{b} (first at line {seen[pair]})")
        seen[pair] = _line_of(node)
        delay = doc.quantity(entry.value("delay"), "delay", parse_duration)
        capacity = doc.quantity(entry.value("capacity"), "capacity", parse_rate)
        source = _source(doc, entry.value("source"), sources)
        capacity_source = ""
        if "capacity_source" in entry.items:
            capacity_source = _source(doc, entry.value("capacity_source"), sources)
        jitter = _jitter(doc, entry) if "jitter" in entry.items else 0.0
        links.append(WanLink(a, b, delay, capacity, source, capacity_source, jitter))
    _check_connected(doc, top.key_node("links"), list(dict.fromkeys(lookup.values())), links)
    return links


def _jitter(doc: _Document, entry: _Entry) -> float:
    """A link's optional `jitter`: a duration >= 0 (each way, uniform in [-jitter, +jitter])."""
    node = entry.value("jitter")
    jitter = doc.quantity(node, "jitter", lambda text: parse_duration(text, allow_zero=True))
    if not math.isfinite(jitter):
        raise doc.fail(node, f"jitter must be finite, got {_shown(node)}")
    return jitter


def _check_connected(
    doc: _Document, node: yaml.Node, names: list[str], links: list[WanLink]
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
            node, f"the links leave {', '.join(unreachable)} unreachable from {names[0]}"
        )


def _measured(
    doc: _Document, top: _Entry, sources: dict[str, str], lookup: dict[str, str]
) -> tuple[str, dict[frozenset[str], float]]:
    node, owner = top.value("measured_rtt"), top.key_node("measured_rtt")
    entry = doc.mapping(node, "measured_rtt", _RTT_KEYS, owner)
    source = _source(doc, entry.value("source"), sources)
    measured: dict[frozenset[str], float] = {}
    first_line: dict[frozenset[str], int] = {}
    for row_key, row in doc.pairs(entry.value("ms"), "measured_rtt.ms"):
        a = _city(doc, row_key, lookup)
        for col_key, value in doc.pairs(row, f"the row of {a}"):
            b = _city(doc, col_key, lookup)
            if a == b:
                raise doc.fail(col_key, f"measured RTT from {a} to itself; give other cities only")
            pair = frozenset((a, b))
            if pair in measured:
                first = first_line[pair]
                raise doc.fail(col_key, f"RTT {a}-{b} given twice (first at line {first})")
            rtt_ms = doc.number(value, f"RTT {a}-{b}")
            if rtt_ms <= 0:
                raise doc.fail(value, f"RTT {a}-{b} must be positive, got {rtt_ms:g} ms")
            measured[pair] = rtt_ms / 1e3
            first_line[pair] = _line_of(col_key)
    return source, measured
