"""The differential harness on this machine (root): innet.p4's case on two p4switch processes
and against the recording committed beside it, the other programs' cases against BMv2's
recordings, and real differences caught byte by byte: a
program with one action changed, a doctored recording, a batch the case says must apply.

Each run builds its namespaces (`p4d<pid>t<k>`) and deletes them, whatever the outcome; the
tests check that none is left behind.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from p4switch import EXAMPLES

pytestmark = [pytest.mark.netns, pytest.mark.slow, pytest.mark.usefixtures("netns_available")]

REPO = Path(__file__).resolve().parents[2]
CASES = REPO / "tests" / "p4diff"
INNET, EXPECTED = CASES / "innet.yaml", CASES / "innet.expected.json"


def p4diff(*args: str, timeout: float = 300) -> tuple[subprocess.CompletedProcess[str], int]:
    """Run the harness; its result and its PID (its namespaces are named after it)."""
    with subprocess.Popen(
        [sys.executable, "-m", "p4diff", *args, "--no-progress"],
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    ) as proc:
        out, err = proc.communicate(timeout=timeout)
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err), proc.pid


def assert_torn_down(pid: int) -> None:
    listed = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True, check=True)
    assert [n for n in listed.stdout.split() if n.startswith(f"p4d{pid}t")] == []


def test_the_innet_case_agrees_on_two_p4switch_processes(tmp_path: Path) -> None:
    done, pid = p4diff(str(INNET), "--targets", "p4switch,p4switch", "--out", str(tmp_path))
    assert done.returncode == 0, done.stdout + done.stderr
    assert "p4switch and p4switch-2 agree on 79 steps (41 frames emitted, 5 counter reads)" in (
        done.stdout
    )
    assert_torn_down(pid)
    recorded = json.loads((tmp_path / "p4switch.json").read_text())
    assert [s["step"] for s in recorded["steps"]][:3] == ["setup 1", "setup 2", "step 1"]
    assert {p.name for p in tmp_path.iterdir()} >= {"p4switch.log", "p4switch-2.log"}


def test_the_innet_case_matches_its_recording() -> None:
    done, pid = p4diff(str(INNET), "--expect", str(EXPECTED))
    assert_torn_down(pid)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "recording innet.expected.json and p4switch agree on 79 steps" in done.stdout


@pytest.mark.parametrize("case", ["ipv4_lpm", "agg32", "multicast", "clone", "register_counter"])
def test_p4switch_matches_bmv2_s_recording_of_the_other_programs(case: str) -> None:
    """Recorded from BMv2 (tests/bmv2/test_p4diff_bmv2.py checks they still are BMv2's), so
    p4switch is held to the reference target where BMv2 is not installed."""
    done, pid = p4diff(
        str(CASES / f"{case}.yaml"), "--expect", str(CASES / f"{case}.expected.json")
    )
    assert_torn_down(pid)
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"recording {case}.expected.json and p4switch agree on" in done.stdout


def test_a_doctored_recording_fails_at_the_first_differing_byte(tmp_path: Path) -> None:
    doc = json.loads(EXPECTED.read_text())
    step = next(s for s in doc["steps"] if s["step"] == "step 15")  # the RESULT of chunk 0
    frame = bytearray.fromhex(step["emitted"]["1"][0])
    frame[58] ^= 0xFF  # the high byte of the first sum
    step["emitted"]["1"][0] = frame.hex()
    doctored = tmp_path / "doctored.json"
    doctored.write_text(json.dumps(doc))
    done, pid = p4diff(str(INNET), "--expect", str(doctored), "--out", str(tmp_path / "out"))
    assert done.returncode == 1, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == f"{INNET}: recording doctored.json and p4switch differ"
    assert lines[1].startswith("first difference at step 15 (line 101): Hong Kong's chunk 0")
    assert lines[2] == "  port 1, frame 0: 1 of 186 bytes differ, the first at offset 58 (0x3a)"
    assert lines[5].split() == ["58", f"{frame[58]:02x}", f"{frame[58] ^ 0xFF:02x}"]
    row = lines.index(next(line for line in lines if line.startswith("  0030  r ")))
    assert lines[row + 2] == "          " + "   " * 10 + "^^"  # under offset 0x3a
    assert (tmp_path / "out" / "report.txt").read_text() == done.stdout
    assert_torn_down(pid)


def test_a_program_with_one_action_changed_is_caught(tmp_path: Path) -> None:
    recording = tmp_path / "l2.json"
    done, pid = p4diff(str(CASES / "l2.yaml"), "--targets", "p4switch", "--record", str(recording))
    assert done.returncode == 0, done.stdout + done.stderr
    assert_torn_down(pid)
    variant = tmp_path / "l2-changed.yaml"
    variant.write_text(
        (CASES / "l2.yaml")
        .read_text()
        .replace(
            "program: ../../p4switch/src/p4switch/examples/l2.p4",
            f"program: {CASES / 'l2-changed.p4'}",
        )
    )
    done, pid = p4diff(str(variant), "--expect", str(recording))
    assert done.returncode == 1, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    assert lines[1] == "first difference at step 1 (line 19): send on port 1: to-h2"
    assert lines[2] == "  port 2, frame 0: 1 of 22 bytes differ, the first at offset 11 (0xb)"
    assert lines[5].split() == ["11", "01", "ff"]  # the source MAC's last byte, rewritten
    assert lines[6:9] == [
        "  0000  r 02 00 00 00 00 02 02 00 00 00 00 01 88 b5 00 01",
        "        p 02 00 00 00 00 02 02 00 00 00 00 ff 88 b5 00 01",
        "          " + "   " * 11 + "^^",
    ]
    assert_torn_down(pid)


def test_a_target_that_refuses_a_batch_the_case_needs_stops_the_run(tmp_path: Path) -> None:
    entry = (
        '{table: L2Ingress.dmac, match: {hdr.ethernet.dstAddr: "02:00:00:00:00:02"}, '
        "action: L2Ingress.forward, params: {port: 2}}"
    )
    case = tmp_path / "twice.yaml"
    case.write_text(f"""\
program: {EXAMPLES / "l2.p4"}
ports: 2
writes: [[{entry}]]
steps:
  - write: [{entry}]
    note: the same entry again, which the switch refuses
  - send: {{port: 1, hex: "020000000002 020000000001 88b5"}}
""")
    done, pid = p4diff(str(case), "--targets", "p4switch,p4switch")
    assert done.returncode == 1, done.stdout + done.stderr
    assert f"{case}:5: step 1 (the same entry again" in done.stderr
    assert "target p4switch refused the batch, the case requires it applied" in done.stderr
    assert "ALREADY_EXISTS" in done.stderr and done.stderr.count("\n") == 1
    assert_torn_down(pid)
