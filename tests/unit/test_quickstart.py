"""The README's quick start held to the Makefile and to CI: its commands are Makefile targets,
CI runs each of them, and what the README says `make demo` runs is what the Makefile runs."""

from __future__ import annotations

import re
import shutil
import subprocess

import pytest

from tests.docs import blocks

README = blocks.REPO / "README.md"
CI = blocks.REPO / ".ci" / "run"


def quick_start() -> tuple[blocks.Block, str]:
    """The quick start's command block and the prose after it (up to the next heading)."""
    text = README.read_text(encoding="utf-8")
    section = text[text.index("## Quick start") :]
    section = section[: section.index("\n## ", 1)]
    found, _ = blocks.markdown(README)
    line = text[: text.index("## Quick start")].count("\n") + 1
    block = next(b for b in found if b.line > line and b.lang == "sh")
    return block, section[section.index("```", section.index("```") + 3) + 3 :]


def dry_run(target: str) -> str:
    """What `make -n TARGET` would run (nothing is run)."""
    make = shutil.which("make")
    if make is None:
        pytest.skip("make is not installed here")
    done = subprocess.run(
        [make, "-n", "-C", str(blocks.REPO), target], capture_output=True, text=True, check=True
    )
    return done.stdout


def test_the_quick_start_is_make_demo_and_make_test():
    block, _ = quick_start()
    assert [c.argv for c in blocks.commands(block)] == [("make", "demo"), ("make", "test")]


def test_ci_runs_every_quick_start_command_then_checks_the_demo():
    block, _ = quick_start()
    ci = CI.read_text(encoding="utf-8").splitlines()
    for command in blocks.commands(block):
        assert any(
            re.match(rf"^{re.escape(command.text.split('#')[0].strip())}\b", line) for line in ci
        ), f".ci/run does not run `{command.text}`"
    assert any("scripts/check_demo.py" in line for line in ci)


def test_what_the_readme_says_make_demo_runs_is_what_it_runs():
    _, prose = quick_start()
    recipe = dry_run("demo")
    sweep = re.search(r"innet plan sweep (?P<args>.*) --plot (?P<plot>\S+)", recipe)
    run = re.search(r"innet run (?P<scenario>\S+) --out (?P<out>\S+)/run-", recipe)
    assert sweep is not None and run is not None, recipe
    assert sweep["args"] == "--memory 1MB..8GB --update-size 1GB --bandwidth 10Gbps"
    assert "a 1 GB update at 10 Gb/s per island" in prose
    assert "aggregator memory from 1 MB to 8 GB" in prose
    assert f"`{sweep['plot']}`" in prose
    assert f"`innet run {run['scenario']}`" in prose
    assert f"`{run['out']}/`" in prose
    assert re.search(rf"innet run {re.escape(run['scenario'])} --check\b", recipe)
    # the demo plays whatever the machine check says (a busy machine: warned, rounds flagged)
    played = re.search(r"innet run \S+ --out .*? --calibration (?P<mode>\w+)", recipe)
    assert played is not None and played["mode"] == "warn", recipe
    assert "`make demo` runs the check with `--calibration warn`" in " ".join(prose.split())


def test_make_test_runs_pytest():
    assert re.search(r"^\S*python -m pytest\b", dry_run("test"), re.M)


def test_ci_installs_bmv2_where_offered_and_then_requires_the_bmv2_tests() -> None:
    """Where the prebuilt toolchain is there, CI installs it before the tests and sets the
    variable that turns a missing BMv2 tool from a skip into a failure (tests/bmv2/conftest.py)."""
    from tests.bmv2.conftest import REQUIRE

    ci = CI.read_text(encoding="utf-8")
    install = ci.index('"$toolchain"')
    assert "toolchain=../shared/p4-toolchain/install" in ci
    assert ci.index(f"export {REQUIRE}=1") > install
    assert install < ci.index("make test")
