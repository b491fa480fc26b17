r"""The YAML files innet reads (topologies, scenarios, schedules, p4diff cases): bounded first,
then read with every failure at its file:line.

    >>> compose("rounds: [[[TYO, SIN]]]").value[0][1].value[0].value[0].value[1].value
    'SIN'
    >>> compose("rounds: " + "[" * 20 + "]" * 20)
    Traceback (most recent call last):
    topo.exceptions.YamlLimitError: line 1: nested deeper than 16 levels; ...

`read_text(path)` reads a file for `compose`: a regular file of at most MAX_YAML_BYTES.
`BoundedLoader` is the loader `compose` uses; p4diff's case files are read by one built on it
(`load`).

PyYAML composes nested collections by recursion, so a file of 20,000 opening brackets ends in a
RecursionError; and a topology or scenario of hundreds of megabytes is a mistake, not a WAN.
The deepest file innet defines nests 4 levels (a WAN's `measured_rtt.ms` rows); the limits leave
room to spare.

`YamlReader` reads one file within these limits, and the values at its nodes by type; every
failure is the caller's own error (`error`), at the node's line and naming the key:

    >>> def error(path, line, key, what):
    ...     return ValueError(f"{path}:{line}: {key}: {what}")
    >>> doc = YamlReader("s.yaml", error)
    >>> top = doc.options(doc.compose("name: x\nhosts: [2]\n", "empty"), "", ("name", "hosts"))
    >>> doc.text(top["name"], "name"), line_of(top["hosts"])
    ('x', 2)
    >>> doc.integer(top["hosts"], "hosts", 1, low=1)
    Traceback (most recent call last):
    ValueError: s.yaml:2: hosts: must be a whole number, got a list
"""

from __future__ import annotations

import difflib
import math
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import yaml

from innet.exceptions import UnitError
from topo.exceptions import YamlLimitError

T = TypeVar("T")

MAX_YAML_BYTES = 1_000_000  # the nine-city topology is 6 kB; a schedule of 5,000 rounds fits
MAX_YAML_DEPTH = 16  # collections inside collections; innet's own files need 4

ErrorAt = Callable[[Path | str, int | None, str, str], Exception]
"""A caller's own error from the file, the line (None: the file as a whole), the key ("": none)
and what is wrong; `ScenarioError` is one, a function around `TopologyError` another."""


def read_text(path: Path | str) -> str:
    """The UTF-8 text of a regular file of at most MAX_YAML_BYTES; OSError and
    UnicodeDecodeError as `Path.read_text` raises them."""
    path = Path(path)
    if path.exists() and not path.is_file():  # a FIFO would block, a device never end
        raise YamlLimitError(None, "not a regular file")
    with path.open("rb") as file:
        data = file.read(MAX_YAML_BYTES + 1)
    if len(data) > MAX_YAML_BYTES:
        raise YamlLimitError(None, f"larger than {MAX_YAML_BYTES:,} bytes, the most innet reads")
    return data.decode("utf-8")


def compose(text: str) -> yaml.Node | None:
    """The document's root node (None when empty), as `yaml.compose` with the safe loader;
    YamlLimitError beyond MAX_YAML_BYTES or MAX_YAML_DEPTH, yaml.YAMLError when malformed."""
    loader = _loader(text, BoundedLoader)
    try:
        return loader.get_single_node()
    finally:
        loader.dispose()


def load(text: str, loader_class: type[BoundedLoader], name: str) -> Any:
    """The document's data as `loader_class` constructs it (None when empty), within the limits
    `compose` keeps; `name` names the text in PyYAML's marks."""
    loader = _loader(text, loader_class)
    loader.name = name
    try:
        return loader.get_single_data()
    finally:
        loader.dispose()


def _loader(text: str, loader_class: type[BoundedLoader]) -> BoundedLoader:
    if len(text) > MAX_YAML_BYTES:
        raise YamlLimitError(None, f"larger than {MAX_YAML_BYTES:,} bytes, the most innet reads")
    return loader_class(text)


class BoundedLoader(yaml.SafeLoader):
    """The safe loader, refusing collections nested deeper than MAX_YAML_DEPTH (a base for a
    loader of its own, as p4diff's case files have)."""

    def __init__(self, text: str) -> None:
        super().__init__(text)
        self.depth = 0

    def compose_node(self, parent: yaml.Node | None, index: int) -> yaml.Node | None:
        self.depth += 1
        try:
            if self.depth > MAX_YAML_DEPTH:
                event = self.peek_event()  # type: ignore[no-untyped-call]
                line = int(event.start_mark.line) + 1
                raise YamlLimitError(
                    line,
                    f"nested deeper than {MAX_YAML_DEPTH} levels; innet's files nest at most 4 "
                    "(is a bracket left open?)",
                )
            return super().compose_node(parent, index)
        finally:
            self.depth -= 1


def line_of(node: yaml.Node) -> int:
    """The 1-based line a node starts on."""
    return int(node.start_mark.line) + 1


def shown(node: yaml.Node) -> str:
    """What a node holds, as an error shows it: a scalar as written, else its kind."""
    if isinstance(node, yaml.ScalarNode):
        return repr(node.value)
    return "a list" if isinstance(node, yaml.SequenceNode) else "a mapping"


@dataclass(frozen=True)
class Record:
    """A mapping checked against its keys (`YamlReader.record`): key -> (key node, value node)."""

    items: dict[str, tuple[yaml.Node, yaml.Node]]

    def value(self, key: str) -> yaml.Node:
        return self.items[key][1]

    def key_node(self, key: str) -> yaml.Node:
        return self.items[key][0]


@dataclass(frozen=True)
class YamlReader:
    """One YAML file, read within innet's limits, and the values at its nodes by type; every
    failure is `error` at the node's line, naming the key."""

    path: Path | str
    error: ErrorAt
    syntax: str = "malformed YAML"  # how an error in the YAML itself begins

    def fail(self, node: yaml.Node | None, key: str, what: str) -> Exception:
        """The caller's error at node's line (None: the file as a whole)."""
        return self.error(self.path, None if node is None else line_of(node), key, what)

    def read(self, noun: str) -> str:
        """The file's text (`read_text`); an error for the whole file, calling it `noun`, if it
        cannot be read."""
        try:
            return read_text(self.path)
        except OSError as err:
            raise self.error(self.path, None, "", f"cannot read {noun}: {err.strerror}") from err
        except UnicodeDecodeError as err:
            what = f"not a UTF-8 text file ({err.reason})"
            raise self.error(self.path, None, "", what) from err
        except YamlLimitError as err:
            raise self.error(self.path, None, "", f"cannot read {noun}: {err.what}") from None

    def compose(self, text: str, empty: str) -> yaml.Node:
        """The root node of `text`; `empty` is the error, at line 1, for a file with none."""
        root = self._parsed(lambda: compose(text))
        if root is None:
            raise self.error(self.path, 1, "", empty)
        return root

    def load(self, text: str, loader_class: type[BoundedLoader]) -> Any:
        """The data `loader_class` constructs from `text` (None for an empty file)."""
        return self._parsed(lambda: load(text, loader_class, str(self.path)))

    def _parsed(self, parse: Callable[[], T]) -> T:
        """What `parse` returns; a limit or an error in the YAML as the caller's error."""
        try:
            return parse()
        except YamlLimitError as err:
            raise self.error(self.path, err.line, "", err.what) from None
        except yaml.MarkedYAMLError as err:
            mark = err.problem_mark or err.context_mark
            line = mark.line + 1 if mark is not None else 1
            what = f"{self.syntax}: {err.problem or err.context}"
            raise self.error(self.path, line, "", what) from None
        except yaml.YAMLError as err:
            raise self.error(self.path, 1, "", f"{self.syntax}: {err}") from None

    # --- values at nodes ---------------------------------------------------------------------

    def scalar(self, node: yaml.Node) -> Any:
        """A scalar's value as the safe loader constructs it (a list or a mapping: its node)."""
        if not isinstance(node, yaml.ScalarNode):
            return node
        return yaml.constructor.SafeConstructor().construct_object(node)

    def text(self, node: yaml.Node, key: str) -> str:
        value = self.scalar(node)
        if not isinstance(value, str) or not value.strip():
            raise self.fail(node, key, f"must be a non-empty string, got {shown(node)}")
        return value

    def boolean(self, node: yaml.Node | None, key: str, default: bool = False) -> bool:
        """true or false; `default` when node is None (the key not given)."""
        if node is None:
            return default
        value = self.scalar(node)
        if not isinstance(value, bool):
            raise self.fail(node, key, f"must be true or false, got {node.value!r}")
        return value

    def integer(
        self, node: yaml.Node | None, key: str, default: int, low: int, high: int | None = None
    ) -> int:
        """A whole number from `low` to `high`; `default` when node is None."""
        if node is None:
            return default
        value = self.scalar(node)
        if isinstance(value, bool) or not isinstance(value, int):
            raise self.fail(node, key, f"must be a whole number, got {shown(node)}")
        if value < low or (high is not None and value > high):
            bound = f"from {low} to {high}" if high is not None else f"at least {low}"
            raise self.fail(node, key, f"must be {bound}, got {value}")
        return value

    def number(
        self,
        node: yaml.Node | None,
        key: str,
        default: float = 0.0,
        low: float | None = None,
        open_low: bool = False,
    ) -> float:
        """A finite number, at least `low` (above it with `open_low`) when given; `default` when
        node is None."""
        if node is None:
            return default
        value = self.scalar(node)
        if isinstance(value, bool) or not isinstance(value, int | float) or math.isnan(value):
            raise self.fail(node, key, f"must be a number, got {shown(node)}")
        if low is None:
            if math.isinf(value):
                raise self.fail(node, key, f"must be finite, got {shown(node)}")
        elif math.isinf(value) or value < low or (open_low and value == low):
            bound = f"above {low:g}" if open_low else f"at least {low:g}"
            raise self.fail(node, key, f"must be finite and {bound}, got {value:g}")
        return float(value)

    def quantity(
        self, node: yaml.Node | None, key: str, parse: Callable[[str], T], default: str = ""
    ) -> T:
        """A size, rate or duration; parsed from `default` when node is None."""
        if node is None:
            return parse(default)
        if not isinstance(node, yaml.ScalarNode):
            raise self.fail(node, key, "must be a single value with a unit, such as 10Gbps")
        try:
            value = parse(node.value)
        except UnitError as err:
            raise self.fail(node, key, str(err)) from None
        if isinstance(value, float) and not math.isfinite(value):  # a number of 400 digits
            raise self.fail(node, key, f"{node.value[:40]!r}... is too large to be a quantity")
        return value

    # --- lists and mappings ------------------------------------------------------------------

    def sequence(self, node: yaml.Node, key: str) -> list[yaml.Node]:
        if not isinstance(node, yaml.SequenceNode):
            raise self.fail(node, key, "must be a list")
        return list(node.value)

    def pairs(self, node: yaml.Node, key: str) -> list[tuple[yaml.Node, yaml.Node]]:
        """A mapping with free keys, as (key node, value node) pairs; a key given twice is an
        error."""
        if not isinstance(node, yaml.MappingNode):
            raise self.fail(node, key, "must be a mapping")
        seen: dict[str, int] = {}
        for key_node, _ in node.value:
            name = self.text(key_node, f"a key of {key}")
            if name in seen:
                what = f"{name!r} given twice in {key} (first at line {seen[name]})"
                raise self.fail(key_node, "", what)
            seen[name] = line_of(key_node)
        return list(node.value)

    def record(
        self,
        node: yaml.Node,
        key: str,
        required: tuple[str, ...],
        optional: tuple[str, ...] = (),
        owner: yaml.Node | None = None,
    ) -> Record:
        """The mapping at node, with every required key and only allowed optional ones; a
        missing key is reported at `owner` (the key holding the mapping) when given."""
        allowed = ", ".join((*required, *optional))
        if not isinstance(node, yaml.MappingNode):
            raise self.fail(node, key, f"must be a mapping with keys {allowed}")
        items: dict[str, tuple[yaml.Node, yaml.Node]] = {}
        for key_node, value_node in node.value:
            name = self.text(key_node, f"a key of {key}")
            if name not in (*required, *optional):
                what = f"unknown key {name!r} in {key} (allowed: {allowed})"
                raise self.fail(key_node, "", what)
            if name in items:
                first = line_of(items[name][0])
                what = f"key {name!r} given twice in {key} (first at line {first})"
                raise self.fail(key_node, "", what)
            items[name] = (key_node, value_node)
        missing = [name for name in required if name not in items]
        if missing:
            at = node if owner is None else owner
            raise self.fail(at, key, f"is missing {', '.join(missing)} (keys: {allowed})")
        return Record(items)

    def options(
        self, node: yaml.Node, key: str, known: tuple[str, ...], document: str = "the file"
    ) -> dict[str, yaml.Node]:
        """The mapping at node, key -> value node, leaving out keys whose value is null (null
        stands for the default); an unknown key is answered with the closest known one. The
        mapping at the root (`key` "") is called `document` in an error."""
        if not isinstance(node, yaml.MappingNode):
            what = "must be a mapping" if key else f"{document} must be a mapping"
            raise self.fail(node, key, f"{what} with keys {', '.join(known)}")
        items: dict[str, yaml.Node] = {}
        lines: dict[str, int] = {}
        for key_node, value_node in node.value:
            name = key_node.value if isinstance(key_node, yaml.ScalarNode) else str(key_node)
            path = f"{key}.{name}" if key else name
            if name not in known:
                close = difflib.get_close_matches(name, known, n=1)
                hint = f"did you mean {close[0]!r}? " if close else ""
                raise self.fail(key_node, path, f"unknown key; {hint}(known: {', '.join(known)})")
            if name in items:
                raise self.fail(key_node, path, f"given twice (first at line {lines[name]})")
            items[name] = value_node
            lines[name] = line_of(key_node)
        return {name: value for name, value in items.items() if self.scalar(value) is not None}
