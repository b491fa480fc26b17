"""innet.p4's P4Info as `make p4` writes and compares it: the p4switch command's `.txtpb` (protobuf
text format) reads back as the program's P4Info, and `python -m p4switch.p4info_diff` finds it
agrees with itself. (The file formats themselves are p4switch's tests:
p4switch/tests/test_p4info_txtpb.py.)"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import p4switch

REPO = Path(__file__).resolve().parents[3]
INNET_P4 = REPO / "p4src" / "innet.p4"


def test_innet_p4_s_p4info_txtpb_reads_back_and_agrees_with_itself(tmp_path: Path) -> None:
    out = tmp_path / "innet.p4switch.p4info.txtpb"
    argv = ["--p4", str(INNET_P4), "-D", "SLOTS=64", "--check", "--p4info-out", str(out)]
    assert p4switch.main(argv) == 0
    assert 'name: "InnetIngress.membership"' in out.read_text()
    compiled = p4switch.compile_file(INNET_P4, defines={"SLOTS": "64"})
    assert p4switch.load_p4info(out) == compiled.p4info
    diff = [sys.executable, "-m", "p4switch.p4info_diff", str(out), str(out)]
    done = subprocess.run(diff, capture_output=True, text=True, check=False, timeout=60)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.startswith("P4Info agree: 5 tables, 10 actions"), done.stdout
