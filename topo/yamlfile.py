"""The YAML files innet reads (topologies, scenarios, schedules, p4diff cases), bounded first.

    >>> compose("rounds: [[[TYO, SIN]]]").value[0][1].value[0].value[0].value[1].value
    'SIN'
    >>> compose("rounds: " + "[" * 20 + "]" * 20)
    Traceback (most recent call last):
    topo.exceptions.YamlLimitError: line 1: nested deeper than 16 levels; ...

`read_text(path)` reads a file for `compose`: a regular file of at most MAX_YAML_BYTES.
`BoundedLoader` is the loader `compose` uses; p4diff's case files are read by one built on it.

PyYAML composes nested collections by recursion, so a file of 20,000 opening brackets ends in a
RecursionError; and a topology or scenario of hundreds of megabytes is a mistake, not a WAN.
The deepest file innet defines nests 4 levels (a WAN's `measured_rtt.ms` rows); the limits leave
room to spare. Each loader turns `YamlLimitError` into its own file:line error.
"""

from __future__ import annotations

from pathlib import Path

import yaml

from topo.exceptions import YamlLimitError

MAX_YAML_BYTES = 1_000_000  # the nine-city topology is 6 kB; a schedule of 5,000 rounds fits
MAX_YAML_DEPTH = 16  # collections inside collections; innet's own files need 4


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
    if len(text) > MAX_YAML_BYTES:
        raise YamlLimitError(None, f"larger than {MAX_YAML_BYTES:,} bytes, the most innet reads")
    loader = BoundedLoader(text)
    try:
        return loader.get_single_node()
    finally:
        loader.dispose()


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
