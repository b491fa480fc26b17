"""Schedules written by the user: YAML naming the cities of each group of each round.

    name: continents-then-columns        # optional
    rounds:
      - [[TYO, SIN, HKG], [LON, FRA, AMS], [NYC, CHI, LAX]]
      - [[Tokyo, London, New York], [Singapore, Frankfurt, Chicago], [HKG, AMS, LAX]]

Cities may be given by name or code. Every round must place every city in exactly one group.
Errors name the file and line.
"""

from __future__ import annotations

from pathlib import Path

import yaml

from controller.planner.exceptions import ScheduleFileError
from controller.planner.schedule import Round, Schedule
from topo.wan import Wan
from topo.yamlfile import YamlReader

_NOT_A_MAPPING = "expected a mapping with 'rounds' (and optionally 'name')"


def load_schedule(path: Path, wan: Wan) -> Schedule:
    doc = YamlReader(path, _error)
    root = doc.compose(doc.read("schedule file"), empty=_NOT_A_MAPPING)
    if not isinstance(root, yaml.MappingNode):
        raise ScheduleFileError(path, 1, _NOT_A_MAPPING)
    fields = {k.value: (k, v) for k, v in root.value}
    for key, (knode, _) in fields.items():
        if key not in ("name", "rounds"):
            raise doc.fail(knode, "", f"unknown key {key!r} (allowed: name, rounds)")
    if "rounds" not in fields:
        raise ScheduleFileError(path, 1, "missing key 'rounds'")
    name = fields["name"][1].value if "name" in fields else path.stem
    rounds_node = fields["rounds"][1]
    if not isinstance(rounds_node, yaml.SequenceNode) or not rounds_node.value:
        raise doc.fail(rounds_node, "", "'rounds' must be a non-empty list of rounds")
    return Schedule(f"file:{name}", wan.n, tuple(_round(doc, r, wan) for r in rounds_node.value))


def _round(doc: YamlReader, node: yaml.Node, wan: Wan) -> Round:
    if not isinstance(node, yaml.SequenceNode) or not node.value:
        raise doc.fail(node, "", "a round must be a non-empty list of groups")
    seen: dict[int, str] = {}
    groups = []
    for gnode in node.value:
        if not isinstance(gnode, yaml.SequenceNode) or not gnode.value:
            raise doc.fail(gnode, "", "a group must be a non-empty list of city names")
        group = []
        for cnode in gnode.value:
            if not isinstance(cnode, yaml.ScalarNode):
                raise doc.fail(cnode, "", "a city must be a name")
            try:
                island = wan.index(str(cnode.value))
            except ValueError as err:
                raise doc.fail(cnode, "", str(err)) from err
            if island in seen:
                raise doc.fail(cnode, "", f"city {cnode.value!r} is in two groups of this round")
            seen[island] = cnode.value
            group.append(island)
        groups.append(group)
    missing = [wan.names[i] for i in range(wan.n) if i not in seen]
    if missing:
        raise doc.fail(
            node, "", f"round leaves out {', '.join(missing)} (every city must be in a group)"
        )
    return Round.of(groups)


def _error(path: Path | str, line: int | None, key: str, what: str) -> ScheduleFileError:
    return ScheduleFileError(Path(path), line, f"{key}: {what}" if key else what)
