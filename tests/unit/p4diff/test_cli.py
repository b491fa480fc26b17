"""`python -m p4diff`: bad input is one line and exit status 2, before anything is started
(these run without root: nothing gets as far as a namespace)."""

from __future__ import annotations

import doctest
import importlib
import subprocess
import sys
from pathlib import Path

import pytest

from p4diff.cli import main
from topo import bmv2
from topo.bmv2 import missing_tools

REPO = Path(__file__).resolve().parents[3]
INNET = REPO / "tests" / "p4diff" / "innet.yaml"


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_a_bad_case_file_is_one_line_naming_the_file_the_step_and_what(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    case = tmp_path / "bad.yaml"
    text = INNET.read_text().replace(
        "  - send: {port: 1, frame: ipv4}\n", "  - send: {port: 7, frame: ipv4}\n", 1
    )
    case.write_text(text.replace("../../p4src/innet.p4", str(REPO / "p4src" / "innet.p4")))
    code, out, err = run(capsys, str(case), "--targets", "p4switch,p4switch")
    assert code == 2 and out == ""
    assert err.count("\n") == 1
    assert err.startswith(f"p4diff: error: {case}:70: step 1: send: port 7 is not a port")


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--targets", "p4switch"), "one target and nothing to compare it with"),
        (("--targets", "p4switch,tofino"), "unknown target 'tofino' (known: p4switch, bmv2)"),
        (("--targets", "p4switch,,bmv2"), "name targets separated by commas"),
        (("--expect", "nowhere.json"), "nowhere.json: cannot read the recording"),
        (("--settle", "0", "--targets", "p4switch,p4switch"), "--settle 0: a quiet time above 0"),
    ],
)
def test_bad_flags_are_one_line_and_exit_status_2(
    capsys: pytest.CaptureFixture[str], args: tuple[str, ...], message: str
) -> None:
    code, _, err = run(capsys, str(INNET), *args)
    assert code == 2 and message in err and err.count("\n") == 1


@pytest.mark.parametrize("flag", ["--out", "--record"])
def test_an_output_inside_a_file_is_refused_before_any_target_starts(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, flag: str
) -> None:
    (tmp_path / "notes").write_text("x")
    inside = tmp_path / "notes" / "here" / "x.json"
    code, out, err = run(capsys, str(INNET), "--targets", "p4switch,p4switch", flag, str(inside))
    assert code == 2 and out == "" and err.count("\n") == 1
    assert f"{tmp_path / 'notes'} is a file, not a folder" in err


def test_the_bmv2_target_says_why_it_cannot_run_here(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))  # whatever this machine has, BMv2 is nowhere
    monkeypatch.setattr(bmv2, "EXTRA_TOOL_DIRS", ())
    assert missing_tools() == ["simple_switch_grpc", "p4c-bm2-ss"]
    code, _, err = run(capsys, str(INNET), "--targets", "p4switch,bmv2")
    assert code == 2
    assert "target bmv2: simple_switch_grpc, p4c-bm2-ss not installed here" in err


def test_help_runs_as_a_module() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "p4diff", "--help"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0 and "--expect FILE" in done.stdout and "--targets" in done.stdout


@pytest.mark.parametrize("name", ["yamlfile", "frames", "innetround", "compare"])
def test_the_docstring_examples_run(name: str) -> None:
    """p4diff's doctests (the docs test runs those of the other packages)."""
    module = importlib.import_module(f"p4diff.{name}")
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0 and result.failed == 0
