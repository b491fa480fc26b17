"""The machine check of a run on BMv2 measures innet.p4 on BMv2, not on p4switch, and refuses
a plan BMv2 cannot carry, naming the scale from which it would.

Skipped (with the reason, by tests/bmv2/conftest.py) where simple_switch_grpc or p4c-bm2-ss is
missing. Needs root: the check's switch runs in a namespace of its own.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from controller.runner import calibration as cal
from controller.runner.emulation import resolve
from controller.runner.scenario import parse_scenario

pytestmark = [pytest.mark.bmv2, pytest.mark.slow]

REPO = Path(__file__).resolve().parents[2]


def needs_root() -> None:
    if os.geteuid() != 0:
        pytest.skip("BMv2 machine-check test skipped: needs root (a network namespace)")


def namespaces() -> set[str]:
    done = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True, check=True)
    return {line.split()[0] for line in done.stdout.splitlines() if line.strip()}


def own_switches() -> list[int]:
    """PIDs of simple_switch_grpc processes this process started (zombies included)."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            text = stat.read_text()
        except OSError:  # gone meanwhile
            continue
        name, rest = text[text.index("(") + 1 : text.rindex(")")], text[text.rindex(")") + 2 :]
        if name.startswith("simple_switch") and int(rest.split()[1]) == os.getpid():
            found.append(int(stat.parent.name))
    return found


def test_the_check_measures_innet_p4_on_bmv2_and_leaves_nothing_behind() -> None:
    needs_root()
    em = resolve(
        parse_scenario(
            "name: t\nhosts: 1\nscale: 100000\nmemory: [1.6GB]\nschedules: [all-to-all]\n"
        )
    )
    machine = cal.measure(em, target="bmv2")
    assert machine.backend == "bmv2"
    assert machine.frames_per_cpu_s > 0  # a figure, never a speed asserted here
    print(f"innet.p4 on BMv2: {machine.frames_per_cpu_s:,.0f} frames per CPU second")
    assert f"innetchk{os.getpid()}" not in namespaces()  # (other work may hold others)
    assert own_switches() == []  # the check's switch was stopped and waited for


def test_innet_run_on_bmv2_refuses_the_demo_at_scale_2000_and_names_a_scale(
    tmp_path: Path,
) -> None:
    """The nine cities at scale 2000 ask about 6,100 frames/s of each edge and 55,000 of all
    nine: on p4switch's native back end some 10% of the machine, on BMv2 several machines."""
    needs_root()
    out = tmp_path / "out"
    argv = [
        sys.executable,
        "-c",
        "import sys; from innet_cli import main; sys.exit(main())",
        "run",
        "scenarios/nine-cities.yaml",
        "--target",
        "bmv2",
        "--out",
        str(out),
        "--run-dir",
        str(tmp_path / "run"),
        "--no-progress",
    ]
    done = subprocess.run(argv, cwd=REPO, capture_output=True, text=True, timeout=900, check=False)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "switch pipeline (bmv2)" in done.stderr and "does not fit" in done.stderr
    assert "raise the scenario's scale to at least " in done.stderr
    assert not out.exists()
