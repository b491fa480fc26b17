r"""YAML with line numbers: mappings and lists remember where they start, so that an error in a
case file can say `file:line`. The file is read by innet's YAML reader (topo/yamlfile.py), within
its limits, and every error is a `CaseError`.

    >>> doc = load_text("steps:\n  - send: {port: 1, hex: '00'}\n", "case.yaml")
    >>> doc["steps"][0].line, doc["steps"][0]["send"]["port"]
    (2, 1)
    >>> load_text("mac: 12:34:56:78:9a:bc\nn: 0x0800\n", "case.yaml")
    {'mac': '12:34:56:78:9a:bc', 'n': 2048}
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml

from p4diff.exceptions import CaseError
from topo.yamlfile import BoundedLoader, YamlReader
from topo.yamlfile import line_of as node_line


class Mapping(dict[str, Any]):
    """A YAML mapping and the line it starts on (1-based)."""

    line: int = 0


class Sequence(list[Any]):
    """A YAML list and the line it starts on (1-based)."""

    line: int = 0


class _Loader(BoundedLoader):
    """innet's bounded safe loader (topo/yamlfile.py: no deeper than MAX_YAML_DEPTH), building
    `Mapping` and `Sequence` with their lines, and reading no base-60 integers:
    `12:34:56:78:9a:bc` is a MAC address, not 2_708_736_000 and something."""


_INT = "tag:yaml.org,2002:int"
_Loader.yaml_implicit_resolvers = {
    first: [(tag, rx) for tag, rx in resolvers if tag != _INT]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}
_Loader.add_implicit_resolver(
    _INT,
    re.compile(r"^(?:[-+]?0b[0-1_]+|[-+]?0[0-7_]+|[-+]?(?:0|[1-9][0-9_]*)|[-+]?0x[0-9a-fA-F_]+)$"),
    list("-+0123456789"),
)


def _mapping(loader: _Loader, node: yaml.MappingNode) -> Mapping:
    out = Mapping()
    out.line = node_line(node)
    for key_node, value_node in node.value:
        key = loader.construct_object(key_node, deep=True)
        if not isinstance(key, str):
            raise CaseError(loader.name, node_line(key_node), f"key {key!r} is not a name")
        if key in out:
            raise CaseError(loader.name, node_line(key_node), f"key {key!r} given twice")
        out[key] = loader.construct_object(value_node, deep=True)
    return out


def _sequence(loader: _Loader, node: yaml.SequenceNode) -> Sequence:
    out = Sequence(loader.construct_object(child, deep=True) for child in node.value)
    out.line = node_line(node)
    return out


_Loader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _mapping)
_Loader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_SEQUENCE_TAG, _sequence)


def load_text(text: str, path: Path | str) -> Mapping:
    """The top mapping of a YAML document; CaseError (with the line) if it is not one, or over
    innet's size or depth limits."""
    doc = _reader(path).load(text, _Loader)
    if not isinstance(doc, Mapping):
        raise CaseError(path, 1, "a case file is a mapping (program:, ports:, steps:, ...)")
    return doc


def load(path: Path) -> Mapping:
    return load_text(_reader(path).read("the case file"), path)


def _reader(path: Path | str) -> YamlReader:
    """innet's YAML reader (topo/yamlfile.py), raising `CaseError`."""
    return YamlReader(path, _error, syntax="not valid YAML")


def _error(path: Path | str, line: int | None, key: str, what: str) -> CaseError:
    return CaseError(path, line, f"{key}: {what}" if key else what)


def line_of(value: object, default: int | None = None) -> int | None:
    """The line a mapping or list starts on (`default` for a scalar, which has none)."""
    return value.line if isinstance(value, Mapping | Sequence) else default
