"""The first difference between two recordings, and its byte-by-byte report; the recording's
JSON file."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from p4diff.compare import byte_diff, first_difference
from p4diff.exceptions import RecordingError
from p4diff.recording import Recording, StepRecord, load_recording

FRAME = bytes(range(40))


def recording(target: str, *steps: StepRecord) -> Recording:
    return Recording(target, "case.yaml", steps)


def step(label: str = "step 1", **fields: Any) -> StepRecord:
    return StepRecord(label, f"what {label} does", **fields)


def test_identical_recordings_agree() -> None:
    a = recording("p4switch", step(emitted={"2": (FRAME,)}), step("step 2", outcome="applied"))
    assert first_difference(a, a) is None


def test_a_changed_byte_is_reported_with_its_offset_both_bytes_and_both_frames_marked() -> None:
    changed = bytearray(FRAME)
    changed[17], changed[33] = 0xAA, 0xBB
    a = recording("p4switch", step(), step("step 2", emitted={"1": (FRAME,), "3": (FRAME,) * 2}))
    b = recording(
        "bmv2", step(), step("step 2", emitted={"1": (FRAME,), "3": (FRAME, bytes(changed))})
    )
    found = first_difference(a, b)
    assert found is not None and found.step.label == "step 2"
    lines = str(found).splitlines()
    assert lines[0] == "first difference at step 2: what step 2 does"
    assert lines[1] == "  port 3, frame 1: 2 of 40 bytes differ, the first at offset 17 (0x11)"
    assert lines[2].split() == ["p", "=", "p4switch,", "b", "=", "bmv2"]
    assert [line.split() for line in lines[4:6]] == [["17", "11", "aa"], ["33", "21", "bb"]]
    row = lines.index("  0010  p 10 11 12 13 14 15 16 17 18 19 1a 1b 1c 1d 1e 1f")
    assert lines[row + 1] == "        b 10 aa 12 13 14 15 16 17 18 19 1a 1b 1c 1d 1e 1f"
    assert lines[row + 2] == "             ^^"  # under the byte at offset 0x11
    assert lines[row - 2].endswith("0e 0f") and not lines[row - 1].strip().startswith("^")


def test_frames_of_different_lengths_and_a_missing_frame() -> None:
    text = byte_diff(FRAME, FRAME[:38], "p4switch", "bmv2")
    assert text.startswith("2 of 40 and 38 bytes differ, the first at offset 38 (0x26)")
    assert "        38  26  --" in text
    a = recording("p4switch", step(emitted={"4": (FRAME,)}))
    b = recording("p4switch-2", step(emitted={}))
    report = str(first_difference(a, b))
    expected = (
        "port 4: p4switch emitted 1 frame, p4switch-2 0 frames; frame 0 (40 bytes) only on p4switch"
    )
    assert expected in report
    assert "0020  20 21 22 23 24 25 26 27" in report


def test_outcomes_counters_and_stray_frames_are_compared() -> None:
    outcome = first_difference(
        recording("a", step(outcome="refused")), recording("b", step(outcome="applied"))
    )
    assert outcome is not None and "a: the batch was refused; b: applied" in outcome.detail
    cells_a = {"InnetIngress.stats": ((0, 3, 558), (10, 1, 59))}
    cells_b = {"InnetIngress.stats": ((0, 3, 558), (10, 0, 0))}
    counters = first_difference(
        recording("p4switch", step(counters=cells_a)), recording("bmv2", step(counters=cells_b))
    )
    assert counters is not None
    assert counters.detail.splitlines() == [
        "  counter InnetIngress.stats: 1 cells differ",
        "    [10] (dropped_other): p4switch 1 packets / 59 bytes, bmv2 0 packets / 0 bytes",
    ]
    stray = first_difference(recording("a", step(stray={"1": (FRAME,)})), recording("b", step()))
    assert stray is not None and "the harness did not send" in stray.detail


def test_recordings_of_different_steps_are_refused() -> None:
    with pytest.raises(RecordingError, match="did not play the same steps"):
        first_difference(recording("a", step()), recording("b", step(), step("step 2")))


def test_a_recording_survives_its_json_file(tmp_path: Path) -> None:
    original = Recording(
        "p4switch",
        "case.yaml",
        (
            step(
                emitted={"3": (FRAME, FRAME[:20]), "cpu": (FRAME,)}, packet_in_metadata=("port=1",)
            ),
            step("step 2", outcome="refused"),
            step("step 3", counters={"C": ((0, 1, 2), (1, 0, 0))}, stray={"2": (FRAME,)}),
        ),
        notes=("made by hand",),
    )
    path = tmp_path / "r.json"
    original.save(path)
    assert load_recording(path) == original


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("{", "not JSON"),
        ('{"format": "something else"}', "not a p4diff recording"),
        (
            '{"format": "p4diff recording 1", "case": "c", "target": "t", "steps": '
            '[{"step": "s", "what": "w", "emitted": {"x": []}}]}',
            "not a port",
        ),
        (
            '{"format": "p4diff recording 1", "case": "c", "target": "t", "steps": '
            '[{"step": "s", "what": "w", "emitted": {}, "colour": 1}]}',
            "unknown key 'colour'",
        ),
    ],
)
def test_a_bad_recording_says_what_is_wrong(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "r.json"
    path.write_text(text)
    with pytest.raises(RecordingError, match=message) as info:
        load_recording(path)
    assert info.value.exit_status == 2 and str(path) in str(info.value)
