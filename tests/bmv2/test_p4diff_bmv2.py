"""p4switch held against BMv2 frame by frame: innet.p4's case (tests/p4diff/innet.yaml) on
both, and BMv2 against the recording p4switch's regression tests use (docs/p4diff.md).

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
    return subprocess.run([sys.executable, "-m", "p4diff", *args, "--no-progress"], cwd=REPO,
                          capture_output=True, text=True, timeout=900, check=False)  # fmt: skip


def test_p4switch_and_bmv2_agree_on_the_innet_case(tmp_path: Path) -> None:
    done = p4diff(str(CASES / "innet.yaml"), "--targets", "p4switch,bmv2", "--out", str(tmp_path))
    assert done.returncode == 0, done.stdout + done.stderr
    assert "p4switch and bmv2 agree on 79 steps" in done.stdout


def test_bmv2_matches_the_recording_p4switch_is_tested_against() -> None:
    done = p4diff(str(CASES / "innet.yaml"), "--targets", "bmv2",
                  "--expect", str(CASES / "innet.expected.json"))  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr


def test_p4switch_and_bmv2_agree_on_the_l2_case() -> None:
    done = p4diff(str(CASES / "l2.yaml"), "--targets", "p4switch,bmv2")
    assert done.returncode == 0, done.stdout + done.stderr
