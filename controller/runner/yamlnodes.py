"""Typed access to a composed YAML document: every value checked, every failure at its line.

doc = NodeReader("s.yaml")
top = doc.mapping(doc.compose(text), "", ("name", "hosts"))
hosts = doc.integer(top.get("hosts"), "hosts", 2, low=1, high=8)   # ScenarioError at its line
"""

from __future__ import annotations

import difflib
import math
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import yaml

from controller.runner.exceptions import ScenarioError
from innet.exceptions import UnitError
from topo.exceptions import YamlLimitError
from topo.yamlfile import compose

T = TypeVar("T")


@dataclass(frozen=True)
class NodeReader:
    """Typed access to composed YAML nodes; a failure names the node's line and the key path."""

    path: Path | str

    def fail(self, node: yaml.Node | None, key: str, what: str) -> ScenarioError:
        line = int(node.start_mark.line) + 1 if node is not None else None
        return ScenarioError(self.path, line, key, what)

    def compose(self, text: str) -> yaml.Node:
        try:
            root = compose(text)  # bounded in size and depth (topo/yamlfile.py)
        except YamlLimitError as exc:
            raise ScenarioError(self.path, exc.line, "", exc.what) from None
        except yaml.MarkedYAMLError as exc:
            mark = exc.problem_mark or exc.context_mark
            line = mark.line + 1 if mark is not None else 1
            what = f"malformed YAML: {exc.problem or exc.context}"
            raise ScenarioError(self.path, line, "", what) from None
        except yaml.YAMLError as exc:
            raise ScenarioError(self.path, 1, "", f"malformed YAML: {exc}") from None
        if root is None:
            raise ScenarioError(self.path, 1, "", "empty file; a scenario needs at least a name")
        return root

    def mapping(self, node: yaml.Node, key: str, known: tuple[str, ...]) -> dict[str, yaml.Node]:
        """The mapping at node, key -> value node, leaving out keys whose value is null (null
        stands for the default); an unknown key is answered with the closest known one."""
        if not isinstance(node, yaml.MappingNode):
            what = "must be a mapping" if key else "the scenario must be a mapping"
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
            lines[name] = int(key_node.start_mark.line) + 1
        return {name: value for name, value in items.items() if self.scalar(value) is not None}

    def scalar(self, node: yaml.Node) -> Any:
        if not isinstance(node, yaml.ScalarNode):
            return node
        return yaml.constructor.SafeConstructor().construct_object(node)

    def text(self, node: yaml.Node, key: str) -> str:
        value = self.scalar(node)
        if not isinstance(value, str) or not value.strip():
            raise self.fail(node, key, f"must be a non-empty string, got {_shown(node)}")
        return value

    def integer(
        self, node: yaml.Node | None, key: str, default: int, low: int, high: int | None = None
    ) -> int:
        if node is None:
            return default
        value = self.scalar(node)
        if isinstance(value, bool) or not isinstance(value, int):
            raise self.fail(node, key, f"must be a whole number, got {_shown(node)}")
        if value < low or (high is not None and value > high):
            bound = f"from {low} to {high}" if high is not None else f"at least {low}"
            raise self.fail(node, key, f"must be {bound}, got {value}")
        return value

    def number(
        self,
        node: yaml.Node | None,
        key: str,
        default: float,
        low: float,
        open_low: bool = False,
    ) -> float:
        if node is None:
            return default
        value = self.scalar(node)
        if isinstance(value, bool) or not isinstance(value, int | float) or math.isnan(value):
            raise self.fail(node, key, f"must be a number, got {_shown(node)}")
        if math.isinf(value) or value < low or (open_low and value == low):
            bound = f"above {low:g}" if open_low else f"at least {low:g}"
            raise self.fail(node, key, f"must be finite and {bound}, got {value:g}")
        return float(value)

    def quantity(
        self, node: yaml.Node | None, key: str, parse: Callable[[str], T], default: str = ""
    ) -> T:
        """A size, rate or duration; parsed from `default` when the key is absent."""
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


def _shown(node: yaml.Node) -> str:
    if isinstance(node, yaml.ScalarNode):
        return repr(node.value)
    return "a list" if isinstance(node, yaml.SequenceNode) else "a mapping"
