"""p4switch held against BMv2 frame by frame: innet.p4's case (tests/p4diff/innet.yaml) and a
case for each other program the tests compile that forwards frames (L2, IPv4 LPM, agg32,
multicast, clones, registers and counters) on both, and BMv2 against the recordings p4switch's
regression tests use (docs/p4diff.md).

Skipped (with the reason, by tests/bmv2/conftest.py) where simple_switch_grpc or p4c-bm2-ss is
missing; the Vagrant VM has both. Needs root too: every target runs in a namespace of its own.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.bmv2, pytest.mark.slow]

REPO = Path(__file__).resolve().parents[2]
CASES = REPO / "tests" / "p4diff"


def p4diff(*args: str) -> subprocess.CompletedProcess[str]:
    if os.geteuid() != 0:
        pytest.skip("BMv2 p4diff test skipped: needs root (network namespaces, raw sockets)")
    return subprocess.run(
        [sys.executable, "-m", "p4diff", *args, "--no-progress"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )


def test_p4switch_and_bmv2_agree_on_the_innet_case(tmp_path: Path) -> None:
    done = p4diff(str(CASES / "innet.yaml"), "--targets", "p4switch,bmv2", "--out", str(tmp_path))
    assert done.returncode == 0, done.stdout + done.stderr
    assert "p4switch and bmv2 agree on 79 steps" in done.stdout


def test_bmv2_matches_the_recording_p4switch_is_tested_against() -> None:
    done = p4diff(
        str(CASES / "innet.yaml"),
        "--targets",
        "bmv2",
        "--expect",
        str(CASES / "innet.expected.json"),
    )
    assert done.returncode == 0, done.stdout + done.stderr


# a case for each other program the tests compile that forwards frames (tests/p4diff/)
PROGRAM_CASES = ("l2", "ipv4_lpm", "agg32", "multicast", "clone", "register_counter")


@pytest.mark.parametrize("case", PROGRAM_CASES)
def test_p4switch_and_bmv2_agree_on_the_other_programs(case: str) -> None:
    done = p4diff(str(CASES / f"{case}.yaml"), "--targets", "p4switch,bmv2")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "p4switch and bmv2 agree on" in done.stdout, done.stdout


@pytest.mark.parametrize("case", PROGRAM_CASES[1:])
def test_bmv2_matches_the_recordings_p4switch_is_tested_against(case: str) -> None:
    """The recordings the netns tier holds p4switch to (tests/netns/test_p4diff.py) are
    BMv2's frames: made with --targets bmv2 --record, and still what BMv2 sends."""
    done = p4diff(
        str(CASES / f"{case}.yaml"),
        "--targets",
        "bmv2",
        "--expect",
        str(CASES / f"{case}.expected.json"),
    )
    assert done.returncode == 0, done.stdout + done.stderr
