"""innet's one YAML reader (topo.yamlfile.YamlReader): every node at its line, every failure the
caller's own error naming file:line and the key, and the same limits for every kind of file innet
reads (topologies, scenarios, schedules, p4diff cases)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

from controller.planner.exceptions import ScheduleFileError
from controller.planner.schedule_file import load_schedule
from controller.runner.exceptions import ScenarioError
from controller.runner.scenario import load_scenario
from innet.units import parse_duration
from p4diff.case import load_case
from p4diff.exceptions import CaseError
from topo.exceptions import TopologyError
from topo.loader import default_wan, load_wan
from topo.yamlfile import MAX_YAML_BYTES, MAX_YAML_DEPTH, BoundedLoader, YamlReader, line_of

TEXT = """\
name: tiny
hosts: 2
links:
  - {a: Alpha, b: Beta}
  - {a: Beta, b: Gamma}
rtt:
  AAA: {BBB: 21}
"""


@dataclass(frozen=True)
class Failure(Exception):
    """What the reader hands the caller's error: the file, the line, the key, what is wrong."""

    path: Path | str
    line: int | None
    key: str
    what: str


def reader(syntax: str = "malformed YAML") -> YamlReader:
    return YamlReader("f.yaml", Failure, syntax)


def failure(call: Callable[[], object]) -> Failure:
    with pytest.raises(Failure) as caught:
        call()
    return caught.value


def test_every_node_keeps_its_line() -> None:
    doc = reader()
    top = doc.record(doc.compose(TEXT, "empty"), "the file", ("name", "links"), ("hosts", "rtt"))
    assert [line_of(top.key_node(key)) for key in ("name", "hosts", "links", "rtt")] == [1, 2, 3, 6]
    links = doc.sequence(top.value("links"), "links")
    assert [line_of(link) for link in links] == [4, 5]
    ((row, columns),) = doc.pairs(top.value("rtt"), "rtt")
    ((column, value),) = doc.pairs(columns, "the row")
    assert (line_of(row), line_of(column), doc.number(value, "rtt")) == (7, 7, 21.0)


def test_a_failure_names_the_file_the_line_and_the_key() -> None:
    doc = reader()
    top = doc.options(doc.compose(TEXT, "empty"), "", ("name", "hosts", "links", "rtt"))
    assert failure(lambda: doc.text(top["hosts"], "hosts")) == Failure(
        "f.yaml", 2, "hosts", "must be a non-empty string, got '2'"
    )
    assert failure(lambda: doc.integer(top["name"], "name", 1, low=1)) == Failure(
        "f.yaml", 1, "name", "must be a whole number, got 'tiny'"
    )
    assert failure(lambda: doc.number(top["links"], "links")) == Failure(
        "f.yaml", 4, "links", "must be a number, got a list"
    )
    not_a_flag = failure(lambda: doc.boolean(top["hosts"], "hosts"))
    assert not_a_flag.what == "must be true or false, got '2'"
    rtt = failure(lambda: doc.quantity(top["rtt"], "rtt", parse_duration))
    assert (rtt.line, rtt.key) == (7, "rtt")
    assert rtt.what == "must be a single value with a unit, such as 10Gbps"


def test_the_callers_error_class_is_what_is_raised() -> None:
    doc = YamlReader("s.yaml", ScenarioError)
    top = doc.options(doc.compose(TEXT, "empty"), "", ("name", "hosts", "links", "rtt"))
    with pytest.raises(ScenarioError) as caught:
        doc.integer(top["hosts"], "hosts", 1, low=3)
    assert str(caught.value) == "s.yaml:2: hosts: must be at least 3, got 2"
    assert (caught.value.line, caught.value.key) == (2, "hosts")


def test_mapping_keys_are_checked_with_their_lines() -> None:
    doc = reader()
    root = doc.compose("a: 1\nb: 2\na: 3\n", "empty")
    twice = failure(lambda: doc.record(root, "the file", ("a", "b")))
    assert (twice.line, twice.what) == (3, "key 'a' given twice in the file (first at line 1)")
    unknown = failure(lambda: doc.record(root, "the file", ("a",)))
    assert (unknown.line, unknown.what) == (2, "unknown key 'b' in the file (allowed: a)")
    missing = failure(lambda: doc.record(doc.compose("a: 1\n", "empty"), "x", ("a", "c")))
    assert (missing.line, missing.key, missing.what) == (1, "x", "is missing c (keys: a, c)")
    hint = failure(lambda: doc.options(doc.compose("nme: x\n", "empty"), "", ("name",)))
    assert (hint.key, hint.what) == ("nme", "unknown key; did you mean 'name'? (known: name)")
    assert doc.options(doc.compose("name: null\n", "empty"), "", ("name",)) == {}


def test_a_file_that_is_not_yaml_is_an_error_at_its_line_in_the_callers_words() -> None:
    assert failure(lambda: reader().compose("a: [1\nb: 2\n", "empty")).what.startswith(
        "malformed YAML: "
    )
    unclosed = failure(lambda: reader("not valid YAML").compose("a: [1\nb: 2\n", "empty"))
    assert (unclosed.line, unclosed.key) == (2, "")
    assert unclosed.what.startswith("not valid YAML: ")
    control = failure(lambda: reader().compose("a: \x07\n", "empty"))
    assert (control.line, control.what[:40]) == (1, "malformed YAML: unacceptable character #")
    assert failure(lambda: reader().compose("# nothing\n", "nothing here")) == Failure(
        "f.yaml", 1, "", "nothing here"
    )


def test_a_loader_of_its_own_is_held_to_the_same_limits() -> None:
    doc = reader()
    assert doc.load("a: [1, {b: 2}]\n", BoundedLoader) == {"a": [1, {"b": 2}]}
    assert doc.load("", BoundedLoader) is None
    deep = "a: " + "[" * (MAX_YAML_DEPTH + 1) + "]" * (MAX_YAML_DEPTH + 1)
    assert failure(lambda: doc.load(deep, BoundedLoader)).line == 1
    big = failure(lambda: doc.load("#" * (MAX_YAML_BYTES + 1), BoundedLoader))
    assert (big.line, big.what) == (None, "larger than 1,000,000 bytes, the most innet reads")


def test_a_file_that_cannot_be_read_is_an_error_for_the_whole_file(tmp_path: Path) -> None:
    doc = YamlReader(tmp_path / "absent.yaml", Failure)
    absent = failure(lambda: doc.read("the file"))
    assert (absent.line, absent.what) == (None, "cannot read the file: No such file or directory")
    (tmp_path / "latin1.yaml").write_bytes(b"name: caf\xe9\n")
    latin = failure(lambda: YamlReader(tmp_path / "latin1.yaml", Failure).read("the file"))
    assert latin.what == "not a UTF-8 text file (invalid continuation byte)"
    folder = failure(lambda: YamlReader(tmp_path, Failure).read("the file"))
    assert folder.what == "cannot read the file: not a regular file"


# --- every kind of file innet reads, through its own loader -----------------------------------


@dataclass(frozen=True)
class Kind:
    load: Callable[[Path], object]
    error: type[Exception]
    noun: str  # as "cannot read ..." names the file
    syntax: str  # how an error in the YAML itself begins


KINDS = [
    pytest.param(Kind(load_wan, TopologyError, "topology file", "malformed YAML"), id="topology"),
    pytest.param(Kind(load_scenario, ScenarioError, "scenario", "malformed YAML"), id="scenario"),
    pytest.param(
        Kind(
            lambda p: load_schedule(p, default_wan()),
            ScheduleFileError,
            "schedule file",
            "malformed YAML",
        ),
        id="schedule",
    ),
    pytest.param(Kind(load_case, CaseError, "the case file", "not valid YAML"), id="p4diff-case"),
]


def refused(kind: Kind, path: Path, text: str | bytes) -> Exception:
    if isinstance(text, str):
        path.write_text(text, encoding="utf-8")
    else:
        path.write_bytes(text)
    with pytest.raises(kind.error) as caught:
        kind.load(path)
    return caught.value


@pytest.mark.parametrize("kind", KINDS)
def test_every_kind_of_file_is_refused_past_the_depth_limit_at_its_line(
    tmp_path: Path, kind: Kind
) -> None:
    path = tmp_path / "deep.yaml"
    err = refused(kind, path, "name: deep\nrounds: " + "[" * 20000 + "]" * 20000 + "\n")
    what = f"nested deeper than {MAX_YAML_DEPTH} levels; innet's files nest at most 4"
    assert str(err) == f"{path}:2: {what} (is a bracket left open?)"


@pytest.mark.parametrize("kind", KINDS)
def test_every_kind_of_file_is_refused_past_the_size_limit(tmp_path: Path, kind: Kind) -> None:
    path = tmp_path / "big.yaml"
    err = refused(kind, path, "name: big\n" + "#" * MAX_YAML_BYTES + "\n")
    what = "larger than 1,000,000 bytes, the most innet reads"
    assert str(err) == f"{path}: cannot read {kind.noun}: {what}"


@pytest.mark.parametrize("kind", KINDS)
def test_every_kind_of_file_that_is_no_text_or_no_yaml_is_one_error(
    tmp_path: Path, kind: Kind
) -> None:
    path = tmp_path / "bad.yaml"
    assert str(refused(kind, path, b"name: caf\xe9\n")) == (
        f"{path}: not a UTF-8 text file (invalid continuation byte)"
    )
    assert str(refused(kind, path, "name: [x\nhosts: 1\n")).startswith(f"{path}:2: {kind.syntax}: ")
    # PyYAML refuses a control character before it parses: still the caller's error, at line 1
    assert str(refused(kind, path, "name: \x07\n")).startswith(
        f"{path}:1: {kind.syntax}: unacceptable character #x0007"
    )


def test_the_safe_loader_s_tags_are_what_a_scalar_reads() -> None:
    doc = reader()
    root = doc.compose("n: 0x10\nf: 1.5\nt: yes\ns: '12'\n", "empty")
    values = {
        key: doc.scalar(node) for key, node in doc.options(root, "", ("n", "f", "t", "s")).items()
    }
    assert values == {"n": 16, "f": 1.5, "t": True, "s": "12"}
    assert isinstance(doc.scalar(doc.compose("[1]", "empty")), yaml.SequenceNode)
