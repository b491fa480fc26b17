"""The front end against mutated programs: every P4 program, however broken, compiles or is
refused as `file:line:col: error: ...` (a P4CompileError with a line, exit status 2 from the
command line), never a Python traceback.

The programs are this directory's test programs and p4switch's examples, mutated token by
token: spans deleted, duplicated or replaced by another of the program's tokens, and P4
punctuation and keywords inserted. CI runs a bounded, derandomized number of them;
P4SWITCH_FUZZ=long (`make fuzz`) twenty times as many, new ones each run (tests/fuzz_profile.py).
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from p4switch import EXAMPLES
from p4switch.exceptions import P4CompileError
from p4switch.program import compile_file
from tests.fuzz_profile import fuzz_settings

HERE = Path(__file__).resolve().parent
PROGRAMS = sorted([*(HERE / "programs").glob("*.p4"), *EXAMPLES.glob("*.p4")])
INCLUDES = [HERE / "programs", EXAMPLES]
TOKEN = re.compile(
    r'\s+|//[^\n]*|/\*.*?\*/|"[^"]*"|[A-Za-z_]\w*|\d+[ws]?\w*|&&&|<<|>>|==|!=|<=|>=|&&|\|\||.', re.S
)
INSERTED = (
    "{",
    "}",
    "(",
    ")",
    ";",
    "<",
    ">",
    "[",
    "]",
    ",",
    ".",
    "=",
    "0",
    "1w1",
    "bit<8>",
    "exit;",
    "return;",
    "apply",
    "header",
    "struct",
    "x",
    '@name("a")',
    "const",
    "in",
    "out",
    "inout",
    "table",
    "action",
    "state",
    "transition",
    "select",
    "&&&",
    "..",
    "digest",
    "digest<bit<8>>(",
    "implementation",
    "selector",
    "==",
    "value_set<bit<8>>(1)",
)
TOKENS = {p: TOKEN.findall(p.read_text()) for p in PROGRAMS}

mutation = st.tuples(
    st.sampled_from(("delete", "duplicate", "replace", "insert")),
    st.floats(0, 1, exclude_max=True),  # where, as a share of the program
    st.integers(1, 6),  # how many tokens
    st.integers(0, 10**6),  # which token to put in
)


def mutate(tokens: list[str], edits: list[tuple[str, float, int, int]]) -> str:
    toks = list(tokens)
    for op, where, span, pick in edits:
        solid = [k for k, t in enumerate(toks) if not t.isspace()]
        if not solid:
            break
        k = solid[int(where * len(solid))]
        if op == "delete":
            del toks[k : k + span]
        elif op == "duplicate":
            toks[k:k] = toks[k : k + span]
        elif op == "replace":
            toks[k] = toks[solid[pick % len(solid)]]
        else:
            toks.insert(k, " " + INSERTED[pick % len(INSERTED)] + " ")
    return "".join(toks)


@fuzz_settings(150)
@given(program=st.sampled_from(PROGRAMS), edits=st.lists(mutation, min_size=1, max_size=3))
def test_a_mutated_program_compiles_or_is_refused_at_a_line(
    tmp_path_factory, program: Path, edits: list[tuple[str, float, int, int]]
) -> None:
    path = tmp_path_factory.mktemp("fuzz") / "mutated.p4"
    path.write_text(mutate(TOKENS[program], edits))
    try:
        compile_file(path, INCLUDES)
    except P4CompileError as err:
        preprocessor = "the C preprocessor failed" in err.what  # cpp's own file:line inside
        assert err.line > 0 or preprocessor, str(err)


def test_the_command_line_answers_a_broken_program_with_one_line(tmp_path: Path) -> None:
    path = tmp_path / "broken.p4"
    path.write_text(mutate(TOKENS[PROGRAMS[0]], [("delete", 0.5, 3, 0)]))
    run = subprocess.run(
        [sys.executable, "-m", "p4switch.program", str(path)],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        check=False,
    )
    assert run.returncode == 2 and "Traceback" not in run.stderr
    assert run.stderr.startswith(f"{path}:") and run.stderr.strip().count("\n") == 0
