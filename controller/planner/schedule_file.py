"""Schedules written by the user: YAML naming the cities of each group of each round.

    name: continents-then-columns        # optional
    rounds:
      - [[TYO, SIN, HKG], [LON, FRA, AMS], [NYC, CHI, LAX]]
      - [[Tokyo, London, New York], [Singapore, Frankfurt, Chicago], [HKG, AMS, LAX]]

Cities may be given by name or code. Every round must place every city in exactly one group.
Errors name the file and line.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import yaml

from controller.planner.exceptions import ScheduleFileError
from controller.planner.schedule import Round, Schedule
from topo.exceptions import YamlLimitError
from topo.wan import Wan
from topo.yamlfile import compose, read_text


def load_schedule(path: Path, wan: Wan) -> Schedule:
    try:
        text = read_text(path)  # a regular file of at most topo.yamlfile.MAX_YAML_BYTES
    except OSError as err:
        raise ScheduleFileError(path, None, f"cannot read schedule file: {err.strerror}") from err
    except UnicodeDecodeError as err:
        raise ScheduleFileError(path, None, f"not a UTF-8 text file ({err.reason})") from err
    except YamlLimitError as err:
        raise ScheduleFileError(path, None, f"cannot read schedule file: {err.what}") from None
    try:
        root = compose(text)
    except YamlLimitError as err:
        raise ScheduleFileError(path, err.line, err.what) from None
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        line = mark.line + 1 if mark else 1
        raise ScheduleFileError(
            path, line, f"malformed YAML: {getattr(err, 'problem', err)}"
        ) from err

    def fail(node: yaml.Node, what: str) -> ScheduleFileError:
        return ScheduleFileError(path, node.start_mark.line + 1, what)

    if not isinstance(root, yaml.MappingNode):
        raise ScheduleFileError(path, 1, "expected a mapping with 'rounds' (and optionally 'name')")
    fields = {k.value: (k, v) for k, v in root.value}
    for key, (knode, _) in fields.items():
        if key not in ("name", "rounds"):
            raise fail(knode, f"unknown key {key!r} (allowed: name, rounds)")
    if "rounds" not in fields:
        raise ScheduleFileError(path, 1, "missing key 'rounds'")
    name = fields["name"][1].value if "name" in fields else path.stem
    rounds_node = fields["rounds"][1]
    if not isinstance(rounds_node, yaml.SequenceNode) or not rounds_node.value:
        raise fail(rounds_node, "'rounds' must be a non-empty list of rounds")
    return Schedule(f"file:{name}", wan.n, tuple(_round(r, wan, fail) for r in rounds_node.value))


def _round(node: yaml.Node, wan: Wan, fail: Callable[[yaml.Node, str], ScheduleFileError]) -> Round:
    if not isinstance(node, yaml.SequenceNode) or not node.value:
        raise fail(node, "a round must be a non-empty list of groups")
    seen: dict[int, str] = {}
    groups = []
    for gnode in node.value:
        if not isinstance(gnode, yaml.SequenceNode) or not gnode.value:
            raise fail(gnode, "a group must be a non-empty list of city names")
        group = []
        for cnode in gnode.value:
            if not isinstance(cnode, yaml.ScalarNode):
                raise fail(cnode, "a city must be a name")
            try:
                island = wan.index(str(cnode.value))
            except ValueError as err:
                raise fail(cnode, str(err)) from err
            if island in seen:
                raise fail(cnode, f"city {cnode.value!r} is in two groups of this round")
            seen[island] = cnode.value
            group.append(island)
        groups.append(group)
    missing = [wan.names[i] for i in range(wan.n) if i not in seen]
    if missing:
        raise fail(node, f"round leaves out {', '.join(missing)} (every city must be in a group)")
    return Round.of(groups)
