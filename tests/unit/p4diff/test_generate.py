"""Generated families of p4diff cases (p4diff.generate): the same case for the same seed, every
case a valid case file for innet.p4, every kind of step present in a family and doing what its
kind says, the slot model the generator steers by agreeing with p4switch frame by frame, and
bad input to `python -m p4diff --generate` refused in one line (exit status 2). None of this
needs root: playing a family on real targets is tests/netns/test_p4diff_family.py and
tests/bmv2/test_p4diff_family_bmv2.py.
"""

from __future__ import annotations

import functools
import os
import subprocess
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

import pytest
from p4.v1 import p4runtime_pb2
from p4switch import CompiledProgram, InProcessSwitch, WriteRefusedError, compile_file

from controller.p4rt.schema import Schema
from controller.rounds import STATS, STATS_COUNTER
from p4diff import cli
from p4diff.case import Case, ReadCounters, Send, Step, Write, load_case
from p4diff.cli import main
from p4diff.generate import KINDS, GeneratedCase, generate_case, generate_family
from p4diff.recording import Recording, StepRecord
from p4diff.runner import check_against, target_names
from p4diff.writes import updates
from tests.unit.backends import backend
from tests.unit.dataplane.harness import FakeClock

__all__ = ["backend"]

REPO = Path(__file__).resolve().parents[3]
SEED, COUNT = 11, 24
SETUP = 2  # the controller's base entries and the first round come before the drawn steps


@pytest.fixture(scope="module")
def family(tmp_path_factory: pytest.TempPathFactory) -> list[tuple[GeneratedCase, Case]]:
    folder = tmp_path_factory.mktemp("family")
    return [(g, load_case(g.write(folder))) for g in generate_family(SEED, COUNT, folder)]


@functools.cache
def program(slots: str) -> CompiledProgram:
    return compile_file(REPO / "p4src" / "innet.p4", defines={"SLOTS": slots})


# --- the same seed, the same cases ----------------------------------------------------------------


def test_a_case_depends_on_its_seed_and_index_alone(tmp_path: Path) -> None:
    case = generate_case(5, 2, tmp_path)
    assert generate_family(5, 4, tmp_path)[2] == case
    assert generate_case(5, 2, tmp_path) == case
    assert generate_case(6, 2, tmp_path).text != case.text
    assert generate_case(5, 3, tmp_path).text != case.text


def test_a_case_is_the_same_in_another_process_with_other_string_hashes(tmp_path: Path) -> None:
    script = (
        "import sys; from pathlib import Path; from p4diff.generate import generate_case; "
        f"sys.stdout.write(generate_case(7, 1, Path({str(tmp_path)!r})).text)"
    )
    texts = {
        subprocess.run(
            [sys.executable, "-c", script],
            cwd=REPO,
            capture_output=True,
            text=True,
            env={**os.environ, "PYTHONHASHSEED": seed},
            check=True,
            timeout=120,
        ).stdout
        for seed in ("1", "2")
    }
    assert texts == {generate_case(7, 1, tmp_path).text}


# --- valid cases, every kind ----------------------------------------------------------------------


def test_every_generated_case_loads_and_fits_innet_p4s_p4info(
    family: list[tuple[GeneratedCase, Case]],
) -> None:
    for generated, case in family:
        check_against(case, Schema(program(case.defines["SLOTS"]).p4info), "p4switch")
        assert len(case.steps) == SETUP + len(generated.kinds) == SETUP + len(generated.outcomes)
        assert 30 <= len(generated.kinds) <= 90
        assert isinstance(case.steps[-1], ReadCounters)
        assert case.program == (REPO / "p4src" / "innet.p4").resolve()


def test_a_family_has_every_kind_of_step(family: list[tuple[GeneratedCase, Case]]) -> None:
    found = {kind for generated, _ in family for kind in generated.kinds}
    assert found == set(KINDS)


def _innet(step: Step) -> bytes:
    """The innet header and values of a sent frame (b"" if it is too short to hold one)."""
    assert isinstance(step, Send)
    return step.frame[42:]


def _ethertype(step: Step) -> int:
    assert isinstance(step, Send)
    return int.from_bytes(step.frame[12:14], "big")


def _values(step: Step) -> set[int]:
    body = _innet(step)[16:]
    return {int.from_bytes(body[k : k + 4], "big", signed=True) for k in range(0, len(body), 4)}


def _dport(step: Step) -> int:
    assert isinstance(step, Send)
    return int.from_bytes(step.frame[36:38], "big")


def _batch(step: Step) -> tuple[bool, bool]:
    assert isinstance(step, Write)
    return step.batch.expect_refused, step.batch.atomic


def _ops(step: Step) -> set[str]:
    return {u.op for u in step.batch.updates} if isinstance(step, Write) else set()


INNET = 0x4E49


def _well_formed(step: Step) -> bool:
    """An innet frame the edge takes (docs/protocol.md, "What the edge switch does", 1-2)."""
    assert isinstance(step, Send)
    frame = step.frame
    if len(frame) != 186 or _ethertype(step) != 0x0800:
        return False
    ip, udp, innet = frame[14:34], frame[34:42], frame[42:58]
    checksum = sum(int.from_bytes(ip[k : k + 2], "big") for k in range(0, 20, 2))
    checksum = (checksum & 0xFFFF) + (checksum >> 16)
    return (
        ip[0] == 0x45
        and checksum == 0xFFFF
        and ip[9] == 17
        and int.from_bytes(ip[6:8], "big") & 0x1FFF == 0
        and int.from_bytes(ip[2:4], "big") == 172
        and udp[2:6] == bytes.fromhex("4e490098")
        and innet[0] >> 4 == 1
        and innet[0] & 15 in (1, 3, 4)
        and innet[7] < 32
    )


WHAT_EACH_KIND_SENDS: dict[str, Callable[[Step], bool]] = {
    "truncated": lambda s: isinstance(s, Send) and len(s.frame) < 186,
    "wrong_udp_port": lambda s: len(_innet(s)) == 144 and _dport(s) != INNET,
    "wrong_length": lambda s: not _well_formed(s),
    "bad_header": lambda s: not _well_formed(s),
    "vlan": lambda s: _ethertype(s) in (0x8100, 0x88A8),
    "non_ip": lambda s: _ethertype(s) not in (0x0800, 0x8100, 0x88A8) or len(_innet(s)) < 6,
    "boundary": lambda s: _values(s) <= {2**31 - 1, -(2**31), 0, -1, -(2**31 - 1), 1},
    "nack": lambda s: _innet(s)[0] == 0x13 and _values(s) == {0},
    "recover": lambda s: _innet(s)[0] == 0x14,
    "member": lambda s: _well_formed(s) and _innet(s)[0] == 0x11,
    "conflict": lambda s: _well_formed(s) and _innet(s)[0] == 0x11,
    "stale": lambda s: _well_formed(s) and _innet(s)[0] == 0x11,
    "ipv4": lambda s: _ethertype(s) == 0x0800 and _dport(s) != INNET,
    "refused": lambda s: _batch(s)[0],
    "write": lambda s: not _batch(s)[0],
    "read_counters": lambda s: isinstance(s, ReadCounters) and s.counter == STATS_COUNTER,
    "retire_round": lambda s: _ops(s) == {"delete"},
    "install_round": lambda s: _ops(s) == {"insert"},
}


@pytest.mark.parametrize("kind", sorted(WHAT_EACH_KIND_SENDS))
def test_every_step_of_a_kind_sends_or_writes_what_the_kind_says(
    family: list[tuple[GeneratedCase, Case]], kind: str
) -> None:
    steps = [
        step
        for generated, case in family
        for step, k in zip(case.steps[SETUP:], generated.kinds, strict=True)
        if k == kind
    ]
    assert steps and all(WHAT_EACH_KIND_SENDS[kind](step) for step in steps)


def test_refused_batches_come_atomic_and_not(family: list[tuple[GeneratedCase, Case]]) -> None:
    batches = {
        _batch(step)
        for generated, case in family
        for step, kind in zip(case.steps[SETUP:], generated.kinds, strict=True)
        if kind == "refused"
    }
    assert batches == {(True, True), (True, False)}


def test_chunks_collide_in_slots(family: list[tuple[GeneratedCase, Case]]) -> None:
    """Some case sends two contributions of different chunks to one slot cell."""
    collisions = 0
    for _, case in family:
        cells = 2 * int(case.defines["SLOTS"])
        tags: dict[int, set[bytes]] = {}
        for step in case.steps:
            if isinstance(step, Send) and len(step.frame) == 186 and _innet(step)[0] == 0x11:
                chunk = int.from_bytes(_innet(step)[8:12], "big")
                tags.setdefault(chunk % cells, set()).add(_innet(step)[2:12])
        collisions += sum(len(t) > 1 for t in tags.values())
    assert collisions > COUNT


# --- the slot model against p4switch --------------------------------------------------------------

# What a contribution adds to innet.p4's `stats` counter, by the model's outcome.
COUNTED = (
    "contribution",
    "completed",
    "duplicate",
    "slot_conflict",
    "stale",
    "result_resent",
    "unknown",
    "not_member",
    "spoofed",
)
ADDS = {
    "UNKNOWN": {"unknown"},
    "NOT_MEMBER": {"not_member"},
    "SPOOFED": {"spoofed"},
    "PASSED": set(),
    "MERGED": {"contribution"},
    "COMPLETED": {"contribution", "completed"},
    "DUPLICATE": {"duplicate"},
    "RESENT": {"duplicate", "result_resent"},
    "CLAIMED": {"contribution"},
    "STALE_CLAIM": {"stale", "contribution"},
    "LATE_COPY": {"duplicate"},
    "CONFLICT": {"slot_conflict"},
}


def _write(
    switch: InProcessSwitch, batch: Sequence[p4runtime_pb2.Update], atomic: bool
) -> list[str]:
    """Apply a batch as a P4Runtime Write would: atomically, or each update on its own
    (CONTINUE_ON_ERROR); what was refused."""
    refused = []
    for part in [batch] if atomic else [[u] for u in batch]:
        try:
            switch.write(part)
        except WriteRefusedError as err:
            refused.append(str(err))
    return refused


def _replay(case: Case, generated: GeneratedCase, clock: FakeClock, backend: str) -> list[str]:
    """Play the case on one in-process p4switch pipeline, each step lasting its settle time;
    what differs from the model (a contribution's counts, a batch's fate)."""
    compiled = program(case.defines["SLOTS"])
    switch = InProcessSwitch(compiled, backend, clock=clock.monotonic_ns)
    schema = Schema(compiled.p4info)
    wrong = []
    outcomes = ("",) * SETUP + generated.outcomes
    for step, outcome in zip(case.steps, outcomes, strict=True):
        if isinstance(step, Write):
            refused = _write(switch, updates(schema, step.batch), step.batch.atomic)
            if bool(refused) != step.batch.expect_refused:
                wrong.append(f"{generated.name} {step.title}: {refused}")
        elif isinstance(step, Send):
            before = switch.counter(STATS_COUNTER)
            for _ in range(step.repeat):
                switch.process(step.port, step.frame)
                if outcome:
                    after = switch.counter(STATS_COUNTER)
                    added = {n for n in COUNTED if after[STATS.index(n)] > before[STATS.index(n)]}
                    if added - {"completed"} != ADDS[outcome] - {"completed"}:
                        wrong.append(f"{generated.name} {step.title}: {outcome}, counted {added}")
                    outcome = ""  # the repeats: what the first left decides
        clock.advance(case.settle)
    return wrong


def test_the_slot_model_agrees_with_p4switch_on_every_contribution(
    family: list[tuple[GeneratedCase, Case]], backend: str
) -> None:
    clock = FakeClock()
    wrong = [w for generated, case in family for w in _replay(case, generated, clock, backend)]
    assert wrong == []
    found = {o for generated, _ in family for o in generated.outcomes}
    assert found >= {"CONFLICT", "STALE_CLAIM", "LATE_COPY", "RESENT", "COMPLETED", "SPOOFED"}


# --- the command line -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ((), "give a case file, or --generate N to play generated cases"),
        (("--generate", "0"), "--generate 0: at least one case"),
        (("--generate", "two"), "argument --generate: invalid int value: 'two'"),
        (("--generate", "2", "tests/p4diff/innet.yaml"), "plays generated cases, not a case file"),
        (("tests/p4diff/innet.yaml", "--seed", "3"), "--seed 3: a seed goes with --generate N"),
        (("--generate", "2", "--expect", "x.json"), "generated cases are compared between targets"),
        (("--generate", "2", "--targets", "p4switch"), "one target and nothing to compare it with"),
        (("--generate", "2", "--targets", "p4switch,tofino"), "unknown target 'tofino'"),
        (
            ("--generate", "2", "--targets", "p4switch,p4switch", "--settle", "-1"),
            "--settle -1: a quiet time above 0 seconds",
        ),
    ],
)
def test_bad_input_to_generate_is_one_line_and_exit_status_2(
    capsys: pytest.CaptureFixture[str], args: tuple[str, ...], message: str
) -> None:
    try:
        code = main(list(args))
    except SystemExit as exit_:  # the argument parser's own refusals
        code = int(exit_.code or 0)
    out, err = capsys.readouterr()
    assert code == 2 and out == ""
    assert message in err and err.count("\n") == 1


def test_an_out_folder_inside_a_file_is_refused_before_anything_is_generated(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    (tmp_path / "notes").write_text("x")
    out = tmp_path / "notes" / "family"
    code = main(["--generate", "2", "--targets", "p4switch,p4switch", "--out", str(out)])
    _, err = capsys.readouterr()
    assert code == 2 and f"{tmp_path / 'notes'} is a file, not a folder" in err
    assert err.count("\n") == 1


def _recordings(case: Case, kinds: Sequence[str], changed: bool) -> list[Recording]:
    """What two targets would record for `case`: one frame a step, the second target's
    last frame one byte off if `changed`."""
    frame = bytes(range(60))
    steps = [StepRecord(step.label, step.what, {"1": (frame,)}) for step in case.steps]
    other = list(steps)
    if changed:
        other[-1] = StepRecord(steps[-1].label, steps[-1].what, {"1": (frame[:-1] + b"!",)})
    name = case.path.name
    first, second = target_names(kinds)
    return [Recording(first, name, tuple(steps)), Recording(second, name, tuple(other))]


def test_a_family_reports_every_case_that_differs_and_fails(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The family goes on past a difference, reports each byte by byte, keeps every case file
    and recording under --out, and exits 1 (the targets stand in: nothing is started)."""
    played: list[str] = []

    def play(case: Case, kinds: Sequence[str], workdir: Path, progress: bool) -> list[Recording]:
        played.append(case.path.name)
        assert workdir == tmp_path / case.path.stem
        return _recordings(case, kinds, changed=case.path.stem.endswith(("1", "3")))

    monkeypatch.setattr(cli, "_play", play)
    code = main(
        ["--generate", "4", "--seed", "9", "--targets", "p4switch,p4switch", "--out", str(tmp_path)]
    )
    out, _ = capsys.readouterr()
    names = [f"seed9-case00{k}" for k in range(4)]
    assert code == 1 and played == [f"{n}.yaml" for n in names]
    lines = out.splitlines()
    assert lines[0].startswith(f"p4diff: {tmp_path / names[0]}.yaml: p4switch and p4switch-2 agree")
    assert lines[1] == f"{tmp_path / names[1]}.yaml: p4switch and p4switch-2 differ"
    assert "1 of 60 bytes differ, the first at offset 59 (0x3b)" in out
    steps = sum(len(load_case(tmp_path / f"{n}.yaml").steps) for n in names)
    assert lines[-1] == (
        f"p4diff: seed 9: 4 cases, {steps} steps played on p4switch and p4switch-2: 2 differ: "
        f"{names[1]}, {names[3]} (case files in {tmp_path})"
    )
    assert (tmp_path / names[3] / "report.txt").read_text().startswith(f"{tmp_path / names[3]}")
    assert (tmp_path / names[0] / "p4switch-2.json").is_file()
    assert not (tmp_path / names[0] / "report.txt").exists()
