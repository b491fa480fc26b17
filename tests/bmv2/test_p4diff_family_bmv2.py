"""p4switch held against BMv2 on a generated family of innet.p4 cases (p4diff.generate;
docs/p4diff.md, "Generated families"): a few cases of one seed, every one of them agreeing
frame by frame, counter by counter and write by write. `make diff-bmv2` runs a larger family.

Skipped (with the reason, by tests/bmv2/conftest.py) where simple_switch_grpc or p4c-bm2-ss is
missing; needs root too: every target runs in a namespace of its own.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.bmv2, pytest.mark.slow]

REPO = Path(__file__).resolve().parents[2]
CASES, SEED = 3, 1


def test_p4switch_and_bmv2_agree_on_a_generated_family(tmp_path: Path) -> None:
    if os.geteuid() != 0:
        pytest.skip("BMv2 p4diff test skipped: needs root (network namespaces, raw sockets)")
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "p4diff",
            "--generate",
            str(CASES),
            "--seed",
            str(SEED),
            "--targets",
            "p4switch,bmv2",
            "--out",
            str(tmp_path),
            "--no-progress",
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=1800,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    assert lines[-1].startswith(f"p4diff: seed {SEED}: {CASES} cases, ")
    assert lines[-1].endswith(" steps played on p4switch and bmv2: all agree")
    assert sum("p4switch and bmv2 agree on" in line for line in lines) == CASES
    assert len(list(tmp_path.glob(f"seed{SEED}-case*.yaml"))) == CASES
