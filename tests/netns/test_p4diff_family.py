"""A generated family of innet.p4 cases (p4diff.generate) on two p4switch processes: every case
agrees, the case files are kept under --out and one of them replays as a plain case file with
the same steps. Each run builds its namespaces (`p4d<pid>t<k>`) and deletes them.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.netns.test_p4diff import assert_torn_down, p4diff

pytestmark = [pytest.mark.netns, pytest.mark.slow, pytest.mark.usefixtures("netns_available")]

REPO = Path(__file__).resolve().parents[2]
CASES, SEED = 3, 4


def test_a_generated_family_agrees_on_two_p4switch_processes_and_replays(tmp_path: Path) -> None:
    done, pid = p4diff(
        "--generate",
        str(CASES),
        "--seed",
        str(SEED),
        "--targets",
        "p4switch,p4switch",
        "--out",
        str(tmp_path),
        timeout=900,
    )
    assert_torn_down(pid)
    assert done.returncode == 0, done.stdout + done.stderr
    summary = done.stdout.splitlines()[-1]
    assert re.fullmatch(
        rf"p4diff: seed {SEED}: {CASES} cases, \d+ steps played on p4switch and p4switch-2: "
        "all agree",
        summary,
    )
    names = [f"seed{SEED}-case{k:03d}" for k in range(CASES)]
    assert sorted(p.stem for p in tmp_path.glob("*.yaml")) == names
    assert all((tmp_path / name / "p4switch-2.json").is_file() for name in names)

    case = tmp_path / f"{names[1]}.yaml"
    agreed = next(line for line in done.stdout.splitlines() if line.startswith(f"p4diff: {case}"))
    replay, pid = p4diff(str(case), "--targets", "p4switch,p4switch", timeout=900)
    assert_torn_down(pid)
    assert replay.returncode == 0, replay.stdout + replay.stderr
    assert replay.stdout.strip() == agreed
