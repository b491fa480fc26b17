"""The conformance benchmark against p4c's samples (bench/p4c_samples.py, bench/stf.py): the STF
reader, the runner on a program of our own (passes, first differences, wildcards, priorities,
counters, multicast), how a child's end is classified (refused, crash, died, timeout), and BMv2
beside p4switch (bench/bmv2.py: its reader's order, its log read for the end of a frame, the same
tests run on it where it is installed). No p4c checkout is needed."""

from __future__ import annotations

import os
import re
import time
from pathlib import Path

import pytest

import p4switch
from bench import bmv2, p4c_samples
from bench.bmv2 import FrameQueue, LogWatch
from bench.p4c_samples import Sample, compile_stage, run_all
from bench.stf import (
    CheckCounter,
    Expect,
    NodeCreate,
    Outcome,
    Packet,
    StfError,
    StfUnsupported,
    TableAdd,
    frame_difference,
    parse_stf,
    ports,
    run_stf,
    run_stf_on,
)

PROGRAM = Path(__file__).resolve().parent / "programs" / "stf_harness.p4"
ETH = "000000000002 000000000001 1234"  # dst, src, type


@pytest.fixture(scope="module")
def program() -> p4switch.CompiledProgram:
    return p4switch.compile_file(PROGRAM)


def run(program: p4switch.CompiledProgram, backend: str, text: str):  # type: ignore[no-untyped-def]
    return run_stf(p4switch.InProcessSwitch(program, backend), parse_stf(text))


def test_the_reader_reads_each_command() -> None:
    commands = parse_stf(
        "# a comment\n"
        "add classify 5 hdr.probe.f:0x****0101 Ig.set_b(b:0x7f, port:2)  # trailing comment\n"
        "\n"
        "PACKET 0 00 01 0a\n"
        "expect 2 0001**$\n"
        "expect 3\n"
        "wait\n"
        "mc_node_create 400 6 7\n"
        "check_counter seen(0) packets == 3\n"
    )
    assert commands == [
        TableAdd(
            2,
            "classify",
            5,
            (("hdr.probe.f", "0x****0101"),),
            "Ig.set_b",
            (("b", "0x7f"), ("port", "2")),
        ),
        Packet(4, 0, bytes([0, 1, 10])),
        Expect(5, 2, "0001**$"),
        Expect(6, 3, None),
        NodeCreate(8, 400, (6, 7)),
        CheckCounter(9, "seen", 0, "==", 3),
    ]


def test_a_line_it_cannot_read_is_named() -> None:
    with pytest.raises(StfError, match=r"line 2: .*FIELD:VALUE"):
        parse_stf("packet 0 00\nadd t f 0x1 a()\n")


def test_wildcards_and_the_end_marker() -> None:
    assert frame_difference("00**02", bytes([0, 0xAB, 2, 3])) == ""  # longer matches
    assert "exactly 3" in frame_difference("00**02$", bytes([0, 0xAB, 2, 3]))
    assert frame_difference("0011*3", bytes([0, 0x11, 0x23])) == ""
    assert frame_difference("0011*3", bytes([0, 0x12, 0x23])).startswith(
        "byte 1: expected 11*3, got 1223"
    )
    assert "at least 4" in frame_difference("00000000", bytes(3))


def test_a_test_that_passes_priorities_decide_between_overlapping_entries(
    program: p4switch.CompiledProgram, backend: str
) -> None:
    outcome = run(
        program,
        backend,
        # both match f = 0x00000101; the higher STF priority (20) wins, as on BMv2
        "add classify 10 f:0x****0101 set_b(b:0x11, port:1)\n"
        "add classify 20 f:0x00000101 set_b(b:0x22, port:2)\n"
        f"packet 0 {ETH} 00000101 00 00\n"
        f"expect 2 {ETH} 00000101 22 00 $\n"
        # only the first entry matches this one: its value with `*` nibbles is a mask
        f"packet 0 {ETH} abcd0101 00 00\n"
        f"expect 1 {ETH} ****0101 11 **\n",
    )
    assert outcome.passed, outcome.detail


def test_a_failing_test_reports_its_first_difference(
    program: p4switch.CompiledProgram, backend: str
) -> None:
    outcome = run(
        program,
        backend,
        "add classify 1 f:0x00000101 set_b(b:0x22, port:2)\n"
        f"packet 0 {ETH} 00000101 00 00\n"
        f"expect 2 {ETH} 00000101 23 00\n",
    )
    assert not outcome.passed
    assert outcome.detail == "port 2 frame 0 (line 3): byte 18: expected 2300, got 2200"


def test_a_missing_or_an_extra_frame_fails(program: p4switch.CompiledProgram, backend: str) -> None:
    two_out = f"add classify 1 f:0x1 set_b(b:1, port:2)\npacket 0 {ETH} 00000001 00 00\n"
    assert run(program, backend, two_out + f"expect 2 {ETH}\n").passed
    extra = run(program, backend, two_out + f"packet 0 {ETH} 00000001 00 00\nexpect 2 {ETH}\n")
    assert extra.detail.startswith("port 2: expected 1 frame(s), got 2, first extra 000000000002")
    # no entry: it goes to port 0, which no line names
    missing = run(program, backend, f"packet 1 {ETH} 00000001 00 00\nexpect 2 {ETH}\n")
    assert missing.detail == "port 2: expected 1 frame(s), got 0"
    # named by a line, port 0's frames are seen
    extra = run(program, backend, f"packet 0 {ETH} 00000001 00 00\nexpect 2 {ETH}\n")
    assert extra.detail.startswith("port 0: expected 0 frame(s), got 1, first extra")


def test_frames_to_a_port_no_line_names_are_not_seen(
    program: p4switch.CompiledProgram, backend: str
) -> None:
    """BMv2 has no interface for such a port: what is sent there is lost, not an extra frame."""
    text = f"add classify 1 f:0x1 set_b(b:1, port:7)\npacket 0 {ETH} 00000001 00 00\n"
    assert run(program, backend, text).passed


def test_lpm_and_default_actions(program: p4switch.CompiledProgram, backend: str) -> None:
    outcome = run(
        program,
        backend,
        "add route dstAddr:0x0000000000**  Ig.to_port(port:3)\n"  # a /40 prefix
        "add route hdr.ethernet.dstAddr:0x000000000100/48 to_port(port:4)\n"
        "setdefault classify set_b(b:0x99, port:5)\n"
        f"packet 0 {ETH} 00000000 00 00\n"
        f"packet 0 000000000100 000000000001 1234 00000000 00 00\n"
        f"expect 5 {ETH} 00000000 99 00\n"
        f"expect 5 000000000100 000000000001 1234 00000000 99 00\n",
    )
    assert outcome.passed, outcome.detail
    # with the classify default left alone, the route tables' ports show
    outcome = run(
        program,
        backend,
        "add route dstAddr:0x0000000000**  Ig.to_port(port:3)\n"
        f"packet 0 {ETH} 00000000 00 00\n"
        f"expect 3 {ETH} 00000000 00 00\n",
    )
    assert outcome.passed, outcome.detail


def test_counters_are_checked_where_the_command_stands(
    program: p4switch.CompiledProgram, backend: str
) -> None:
    frames = f"packet 1 {ETH} 00000000 00 00\n" * 2  # out on port 0, which no line names
    assert run(program, backend, frames + "check_counter seen(0) packets == 2\n").passed
    failed = run(
        program, backend, "check_counter seen(0) == 0\n" + frames + "check_counter seen(0) == 3\n"
    )
    assert failed.detail == "line 4: Ig.seen[0] counted 2 packets, expected == 3"


def test_multicast_groups_from_nodes(program: p4switch.CompiledProgram, backend: str) -> None:
    outcome = run(
        program,
        backend,
        "add classify 1 f:0x2 to_group(group:7)\n"
        "mc_mgrp_create 7\n"
        "mc_node_create 400 1\n"  # handle 0: rid 400 (0x90 in its low byte) to port 1
        "mc_node_create 5 2 3\n"  # handle 1: rid 5 to ports 2 and 3
        "mc_node_associate 7 0\n"
        "mc_node_associate 7 1\n"
        f"packet 0 {ETH} 00000002 00 00\n"
        f"expect 1 {ETH} 00000002 00 90\n"
        f"expect 2 {ETH} 00000002 00 05\n"
        f"expect 3 {ETH} 00000002 00 05\n",
    )
    assert outcome.passed, outcome.detail


def test_a_write_the_switch_refuses_fails_the_test(
    program: p4switch.CompiledProgram, backend: str
) -> None:
    entry = "add classify 1 f:0x2 set_b(b:1, port:1)\n"
    outcome = run(program, backend, entry + entry)  # the same key twice
    assert not outcome.passed
    assert outcome.detail.startswith("line 2: write refused: ")
    assert outcome.detail.endswith("an entry with this key is already installed")


def test_what_the_runner_does_not_carry_out_is_unsupported(
    program: p4switch.CompiledProgram, backend: str
) -> None:
    with pytest.raises(StfUnsupported, match="line 2: `register_write`"):
        run(program, backend, f"packet 0 {ETH}\nregister_write r 0 1\n")
    with pytest.raises(StfUnsupported, match="check_counter without a condition"):
        run(program, backend, "check_counter seen(0)\n")
    with pytest.raises(StfError, match="no table `nosuch`"):
        run(program, backend, "add nosuch 1 f:0x2 to_group(group:7)\n")


# --- classification --------------------------------------------------------------------------


def test_a_refusal_is_its_first_line(tmp_path: Path) -> None:
    bad = tmp_path / "bad.p4"
    bad.write_text("#include <v1model.p4>\ncontrol c() { apply { x = 1; } }\n")  # no main
    result, program = compile_stage(Sample("bad.p4", bad, None, "sample"))
    assert program is None
    assert result["class"] == "refused"
    assert result["detail"] == f"{bad}:1:1: error: no `main` package instantiation (V1Switch)"


def _sample(tmp_path: Path, name: str) -> Sample:
    path = tmp_path / name
    path.write_text("/* never read: compile_file is replaced */\n")
    return Sample(name, path, None, "sample")


def _options() -> dict[str, object]:
    return {"backends": [], "p4info": [], "cache": "", "outputs": "", "memory": 4 << 30}


def test_a_child_that_raises_is_a_crash_not_a_refusal(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def compile_file(path: Path) -> None:
        raise KeyError(f"no such thing in {path.name}")

    monkeypatch.setattr(p4switch, "compile_file", compile_file)
    [result] = run_all([_sample(tmp_path, "raises.p4")], _options(), jobs=1, timeout=120)
    assert result["compile"]["class"] == "crash"
    assert re.fullmatch(
        r"KeyError: 'no such thing in raises.p4' "
        r"\(test_p4c_samples_harness.py:\d+ in compile_file\)",
        result["compile"]["detail"],
    )


def test_a_child_that_dies_or_hangs_does_not_stop_the_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def compile_file(path: Path) -> None:
        if path.name == "dies.p4":
            os._exit(3)
        if path.name == "hangs.p4":
            time.sleep(600)
        raise p4switch.P4CompileError(str(path), 1, 2, "refused")

    monkeypatch.setattr(p4switch, "compile_file", compile_file)
    names = ["dies.p4", "hangs.p4", "refused.p4"]
    results = run_all([_sample(tmp_path, n) for n in names], _options(), jobs=3, timeout=5)
    assert [r["program"] for r in results] == names
    assert [r["compile"]["class"] for r in results] == ["crash", "timeout", "refused"]
    assert results[0]["compile"]["detail"] == "the child died (exit status 3)"
    assert results[2]["compile"]["detail"] == f"{tmp_path / 'refused.p4'}:1:2: error: refused"


def test_the_summary_counts_classes_per_back_end() -> None:
    results = [
        {
            "program": "a",
            "kind": "sample",
            "stf": True,
            "compile": {"class": "compiles"},
            "stf.python": {"status": "pass"},
        },
        {"program": "b", "kind": "sample", "stf": True, "compile": {"class": "refused"}},
        {"program": "c", "kind": "sample", "stf": False, "compile": {"class": "crash"}},
    ]
    summary = p4c_samples.summarise(results, ["python"])
    assert summary["compile"] == {"compiles": 1, "refused": 1, "crash": 1}
    assert summary["stf"] == {"python": {"pass": 1, "not-compiled": 1}}
    assert "b [python]" not in p4c_samples.report(results, summary, ["python"])
    assert "  b: refused: " in p4c_samples.report(results, summary, ["python"])


def test_p4info_is_compared_with_p4c_s_and_its_differences_kinded(
    tmp_path: Path, program: p4switch.CompiledProgram
) -> None:
    from google.protobuf import text_format

    sample = Sample("prog.p4", PROGRAM, None, "sample")
    options = {"outputs": str(tmp_path)}
    reference = tmp_path / "prog.p4.p4info.txtpb"
    assert p4c_samples.p4info_stage(sample, program, "testdata", options) == {
        "status": "no-reference"
    }
    reference.write_text(text_format.MessageToString(program.p4info))
    assert p4c_samples.p4info_stage(sample, program, "testdata", options) == {"status": "equal"}
    theirs = type(program.p4info)()
    theirs.CopyFrom(program.p4info)
    next(a for a in theirs.actions if a.params).params[0].bitwidth += 1
    del theirs.tables[0]
    reference.write_text(text_format.MessageToString(theirs))
    result = p4c_samples.p4info_stage(sample, program, "testdata", options)
    assert result["status"] == "different"
    assert result["kinds"] == ["action params", "table only in p4switch"]


# --- BMv2 beside p4switch (bench/bmv2.py) ------------------------------------------------------


def test_bmv2_s_reader_hands_over_a_frame_once_every_open_port_has_one() -> None:
    queue = FrameQueue({0: [], 2: []})
    queue.add(0)
    assert queue.handed_over(closed=False) == 0  # port 2 has none yet: the reader waits on it
    queue.add(2)
    queue.add(0)
    # 0 (port 0) goes; then 1 (port 2) goes; port 2 is empty again, so 2 (port 0) waits
    assert queue.handed_over(closed=False) == 2
    assert queue.handed_over(closed=True) == 3
    single = FrameQueue({1: []})
    single.add(1)
    single.add(1)
    assert single.handed_over(closed=False) == 2


def _log(tmp_path: Path, *lines: str) -> LogWatch:
    path = tmp_path / "switch.txt"
    with path.open("a") as log:
        log.writelines(f"[12:00:00.000] [bmv2] [D] [thread 7] [0.0] [cxt 0] {ln}\n" for ln in lines)
    return LogWatch(path)


def test_the_log_tells_when_every_copy_of_a_frame_has_left(tmp_path: Path) -> None:
    watch = _log(
        tmp_path,
        "Processing packet received on port 0",
        "Cloning packet at ingress",
        "Cloning packet to egress port 4",
        "Egress port is 2",
    )
    watch.read()
    assert not watch.settled(1)  # two copies on their way
    with (tmp_path / "switch.txt").open("a") as log:
        log.write("[x] Transmitting packet of size 60 out of port 4\n[x] Transmitting packet of")
    watch.read()
    assert not watch.settled(1)  # the second line is not whole yet
    with (tmp_path / "switch.txt").open("a") as log:
        log.write(" size 64 out of port 2\n")
    watch.read()
    assert watch.settled(1)
    assert watch.transmitted == {4: 1, 2: 1}
    assert not watch.settled(2)  # a second frame not taken in yet


def test_a_resubmitted_or_multicast_frame_is_followed_to_its_end(tmp_path: Path) -> None:
    watch = _log(
        tmp_path,
        "Processing packet received on port 1",
        "Resubmitting packet",
        "Processing packet received on port 1",
        "Multicast requested for packet",
        "Replicating packet on port 2",
        "Replicating packet on port 3",
        "Dropping packet at the end of egress",
    )
    watch.read()
    assert not watch.settled(1)
    with (tmp_path / "switch.txt").open("a") as log:
        log.write("[x] Transmitting packet of size 60 out of port 3\n")
    watch.read()
    assert watch.settled(1)


def test_a_disagreement_is_a_pass_against_a_failure_or_other_frames() -> None:
    def result(ours: dict[str, object], theirs: dict[str, object]) -> dict[str, object]:
        return {"program": "p", "stf": True, "stf.python": ours, "stf.bmv2": theirs}

    passed = {"status": "pass", "frames": [[1, "00aa"]]}
    failed = {"status": "fail", "detail": "port 1: expected 1 frame(s), got 0", "frames": []}
    assert p4c_samples.disagreement(result(passed, passed), "python") is None
    assert p4c_samples.disagreement(result(passed, failed), "python") == (
        "p4switch pass, BMv2 fail: BMv2: port 1: expected 1 frame(s), got 0"
    )
    other = {"status": "fail", "detail": "d", "frames": [[1, "00ab"], [2, "00"]]}
    mine = {"status": "fail", "detail": "d", "frames": [[1, "00aa"], [2, "00"]]}
    assert p4c_samples.disagreement(result(mine, other), "python") == (
        "both fail, other frames: port 1 frame 0 byte 1: p4switch aa, BMv2 ab"
    )
    assert p4c_samples.disagreement(result(other, other), "python") is None
    compile_refused = {  # no p4switch run
        "program": "p",
        "stf": True,
        "compile": {"class": "refused", "detail": "p.p4:1:2: error: no"},
        "stf.bmv2": passed,
    }
    assert p4c_samples.disagreement(compile_refused, "python") == (
        "p4switch not-compiled, BMv2 pass: p4switch: p.p4:1:2: error: no"
    )


TOOLS = bmv2.find_tools()
needs_bmv2 = pytest.mark.skipif(
    TOOLS is None, reason="BMv2 test: no simple_switch_grpc or p4c-bm2-ss found"
)


def run_bmv2(tmp_path: Path, text: str) -> Outcome:
    assert TOOLS is not None
    commands = parse_stf(text)
    compiled = bmv2.compile_program(TOOLS, PROGRAM, tmp_path)
    inputs, named = ports(commands)
    with bmv2.running(TOOLS, compiled, inputs, named) as switch:
        return run_stf_on(switch, commands)


@pytest.mark.bmv2
@needs_bmv2
def test_bmv2_runs_a_test_and_reports_its_frames(tmp_path: Path) -> None:
    outcome = run_bmv2(
        tmp_path,
        "add classify 10 f:0x****0101 set_b(b:0x11, port:1)\n"
        "add classify 20 f:0x00000101 set_b(b:0x22, port:2)\n"
        f"packet 0 {ETH} 00000101 00 00\n"
        f"expect 2 {ETH} 00000101 22 00 $\n"
        f"packet 3 {ETH} abcd0101 00 00\n"
        f"expect 1 {ETH} ****0101 11 **\n",
    )
    assert outcome.passed, outcome.detail
    eth = bytes.fromhex(ETH.replace(" ", ""))
    assert outcome.frames == (
        (1, eth + bytes.fromhex("abcd0101 11 00")),
        (2, eth + bytes.fromhex("00000101 22 00")),
    )


@pytest.mark.bmv2
@needs_bmv2
def test_bmv2_fails_a_test_with_its_first_difference(tmp_path: Path) -> None:
    outcome = run_bmv2(
        tmp_path,
        "add classify 1 f:0x00000101 set_b(b:0x22, port:2)\n"
        f"packet 0 {ETH} 00000101 00 00\n"
        f"expect 2 {ETH} 00000101 23 00\n"
        f"packet 0 {ETH} 00000001 00 00\n",  # no entry: out on port 0, named by a line
    )
    assert not outcome.passed
    assert outcome.detail == (
        "port 0: expected 0 frame(s), got 1, first extra 00000000000200000000000112340000..."
    )
    eth = bytes.fromhex(ETH.replace(" ", ""))
    assert [port for port, _ in outcome.frames] == [0, 2]
    assert outcome.frames[1][1] == eth + bytes.fromhex("00000101 22 00")
    lone = run_bmv2(
        tmp_path,
        "add classify 1 f:0x00000101 set_b(b:0x22, port:2)\n"
        f"packet 0 {ETH} 00000101 00 00\n"
        f"expect 2 {ETH} 00000101 23 00\n",
    )
    assert lone.detail == "port 2 frame 0 (line 3): byte 18: expected 2300, got 2200"


@pytest.mark.bmv2
@needs_bmv2
def test_bmv2_finishes_frames_before_a_later_write_and_replicates(tmp_path: Path) -> None:
    outcome = run_bmv2(
        tmp_path,
        # before the entry: the route default leaves egress_spec 0
        f"packet 0 {ETH} 00000002 00 00\n"
        f"expect 0 {ETH} 00000002 00 00\n"
        "add classify 1 f:0x2 to_group(group:7)\n"
        "mc_mgrp_create 7\n"
        "mc_node_create 400 1\n"
        "mc_node_create 5 2 3\n"
        "mc_node_associate 7 0\n"
        "mc_node_associate 7 1\n"
        f"packet 0 {ETH} 00000002 00 00\n"
        f"expect 1 {ETH} 00000002 00 90\n"
        f"expect 2 {ETH} 00000002 00 05\n"
        f"expect 3 {ETH} 00000002 00 05\n"
        "check_counter seen(0) packets == 2\n",
    )
    assert outcome.passed, outcome.detail


def test_the_bmv2_option_without_bmv2_says_so_and_exits_2(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "testdata" / "p4_16_samples").mkdir(parents=True)
    monkeypatch.setattr(bmv2, "find_tools", lambda: None)
    assert p4c_samples.main(["--p4c", str(tmp_path), "--bmv2", "--out", str(tmp_path / "o")]) == 2
    assert capsys.readouterr().err == (
        "p4c_samples: error: --bmv2: no simple_switch_grpc or p4c-bm2-ss\n"
    )
