"""Free-form annotation bodies (any balanced tokens, structured `[...]` ones), annotations on
table properties and on block statements: accepted, kept as written for P4Info, and line
numbers after a multi-line body still right."""

from __future__ import annotations

from pathlib import Path

import pytest

from p4switch.exceptions import P4CompileError
from p4switch.frontend.annotations import raw_bodies
from p4switch.program import compile_file
from tests.eth_program import eth_program

PROGRAM = eth_program(
    """\
    @my_pragma(a b = c, [x]) @brief("a (parenthesised) note")
    @spread(first
            second)
    table t {
        @hidden key = { h.eth.dst: exact; }
        actions = { NoAction; }
        @name("ignored") default_action = NoAction();
    }
    @structured[k = "v", n = 1]
    action a() { }
    apply {
        @atomic {
            s.egress_spec = 1;
            log_msg("not an annotation: @x(");
        }
        t.apply();
        a();
    }
"""
)


def compiled(tmp_path: Path, text: str):
    path = tmp_path / "annotations.p4"
    path.write_text(text)
    return compile_file(path)


def test_free_form_annotations_are_kept_as_written(tmp_path: Path, backend: str) -> None:
    program = compiled(tmp_path, PROGRAM)
    (table,) = program.p4info.tables
    # @brief is documentation, left out of the annotations as p4c does
    assert list(table.preamble.annotations) == ["@my_pragma(a b = c, [x])", "@spread(first second)"]
    action = next(a for a in program.p4info.actions if a.preamble.name == "I.a")
    assert list(action.preamble.annotations) == ['@structured(k = "v", n = 1)']
    pipe = program.pipeline(program.new_state())
    assert [p for p, _ in pipe.process(0, bytes(14))] == [1]


def test_lines_after_a_multi_line_body_keep_their_numbers(tmp_path: Path) -> None:
    text = PROGRAM.replace("a();", "nosuch();")
    with pytest.raises(P4CompileError) as err:
        compiled(tmp_path, text)
    line = next(i for i, x in enumerate(text.splitlines(), 1) if "nosuch();" in x)
    assert err.value.line == line and "not declared" in err.value.what


def test_raw_bodies_leaves_strings_and_read_annotations_alone() -> None:
    text = '@name("x(") @id(3) log("@a(b") @c(d "e)" f)\n@g(h\ni)'
    assert raw_bodies(text) == '@name("x(") @id(3) log("@a(b") @c(`d "e)" f`)\n@g(`h i`)\n'
    assert raw_bodies("@open(never closed") == "@open(never closed"
