"""p4switch against p4c's sample programs: which compile, which p4c packet tests pass, and
whether the P4Info is p4c's. A conformance benchmark: it prints its figures and writes them as
JSON; it is not a test.

    python p4switch/bench/p4c_samples.py --p4c P4C_CHECKOUT [--tutorials TUTORIALS_CHECKOUT]
        [--backends python,native] [--p4info] [--bmv2] [-k SUBSTRING] [--jobs N]
        [--out FILE.json]

What is counted. The programs are p4c's testdata/p4_16_samples (sub-folders included, but not
files under an `include` folder, which are pieces of another program) whose text matches the
pattern p4c's BMv2 tests select v1model programs by (`include.*v1model.p4`, in p4c's
backends/bmv2/CMakeLists.txt). A program with a `.stf` beside it is a packet test. p4c runs
the STF of its `*-bmv2.p4` programs (and of parser-inline/) on BMv2, a few marked as expected
failures; this counts every v1model program that has an STF, whatever its name, none left out
(in the p4c checkout measured when this was written: 492 programs and 204 packet tests, 188
of them `*-bmv2.p4` at the top, 13 in parser-inline/ and 3 others; none on p4c's xfail list).
With --tutorials, the solutions of p4lang's tutorials (exercises/*/solution/*.p4) are compiled
too.

Each program is examined in a child process of its own (a memory limit, a timeout): compiled
with p4switch's own includes, its class one of `compiles`, `refused` (P4CompileError: its first
line), `crash` (any other exception: its type, message and innermost frame; or the child died)
or `timeout`. A packet test that compiles is then run on each back end asked for, in process
(p4switch.InProcessSwitch), by bench/stf.py, with the semantics p4c's BMv2 runner gives STF
files: `pass`, `fail` (its first difference), `error` (the switch raised while running it),
`unsupported` (a command the harness does not carry out: not p4switch's failure), `no-backend`
(the native back end cannot run the program) or `timeout`. With --p4info, the P4Info p4switch
generates is compared by p4switch.p4info_diff (kinds of difference counted) with two of p4c's:
the one the installed p4c-bm2-ss writes for the program (`p4c-bm2-ss`, cached under build/;
`p4c-refused` where that p4c refuses the program), and the one p4c's own tests keep in the
checkout, testdata/p4_16_samples_outputs/NAME.p4info.txtpb (`testdata`, written by p4test from
that checkout's sources; `no-reference` for a program without one).

With --bmv2, each packet test also runs on BMv2 (bench/bmv2.py), in the same child, whether or
not p4switch compiles the program: p4c-bm2-ss's JSON on simple_switch_grpc, the test's writes as
the same P4Runtime updates against p4c-bm2-ss's P4Info, frames through pcap files per port as
p4c's runner feeds them. Its status is one of `pass`, `fail`, `unsupported`, `p4c-refused`
(p4c-bm2-ss refuses the program) or `error` (BMv2 did not start, died or did not finish). The
report puts it beside p4switch's, counts BMv2's passes and lists the programs where p4switch
and BMv2 disagree: one passes and the other does not, or both fail with other frames out. The
child tells the parent the PID of each BMv2 it starts; one left running by a child killed on
its timeout is stopped by the parent. Without BMv2 installed the option says so and exits 2.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import multiprocessing
import multiprocessing.connection
import os
import re
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import traceback
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run as a script from anywhere

from bench import bmv2
from bench.stf import (
    StfError,
    StfUnsupported,
    check_supported,
    parse_stf,
    ports,
    run_stf,
    run_stf_on,
)

REPO = Path(__file__).resolve().parents[2]
V1MODEL = re.compile(r"include.*v1model\.p4")
TOOL_DIRS = bmv2.TOOL_DIRS  # where p4c is installed, off PATH
MEMORY_LIMIT = 3 << 30  # bytes of address space a child may take
P4INFO_SOURCES = ("p4c-bm2-ss", "testdata")  # where p4c's P4Info comes from (see above)
Result = dict[str, Any]


@dataclass(frozen=True)
class Sample:
    """One program to examine: `name` as reported, `stf` its packet test if any."""

    name: str
    path: Path
    stf: Path | None
    kind: str  # "sample" or "tutorial"


def samples(p4c: Path) -> list[Sample]:
    """p4c's v1model sample programs, as counted here (see the module's doc)."""
    root = p4c / "testdata" / "p4_16_samples"
    found = []
    for path in sorted(root.rglob("*.p4")):
        relative = path.relative_to(root)
        if "include" in relative.parts[:-1] or not path.is_file():
            continue
        if not V1MODEL.search(path.read_text(errors="replace")):
            continue
        stf = path.with_suffix(".stf")
        found.append(Sample(str(relative), path, stf if stf.is_file() else None, "sample"))
    return found


def tutorials(checkout: Path) -> list[Sample]:
    """The solutions of p4lang's tutorials."""
    paths = sorted((checkout / "exercises").glob("*/solution/*.p4"))
    return [Sample(str(p.relative_to(checkout / "exercises")), p, None, "tutorial") for p in paths]


# --- in the child ----------------------------------------------------------------------------


def innermost(err: BaseException) -> str:
    """`file:line in function` of the frame that raised `err`."""
    frames = traceback.extract_tb(err.__traceback__)
    if not frames:
        return "?"
    frame = frames[-1]
    return f"{Path(frame.filename).name}:{frame.lineno} in {frame.name}"


def crash_detail(err: BaseException) -> str:
    message = " ".join(str(err).split())[:300]
    return f"{type(err).__name__}: {message} ({innermost(err)})"


def compile_stage(sample: Sample) -> tuple[Result, Any]:
    """The compile class, and the program when it compiles."""
    from p4switch import P4CompileError, compile_file

    try:
        program = compile_file(sample.path)
    except P4CompileError as err:
        return {"class": "refused", "detail": str(err).splitlines()[0]}, None
    except Exception as err:  # any other exception is p4switch crashing on the program
        return {"class": "crash", "detail": crash_detail(err)}, None
    return {"class": "compiles"}, program


def stf_stage(program: Any, stf: Path, backend: str) -> Result:
    """One packet test on one back end."""
    from p4switch import InProcessSwitch, P4SwitchError

    try:
        commands = parse_stf(stf.read_text())
    except StfError as err:
        return {"status": "unsupported", "detail": f"STF not read: {err}"}
    try:
        switch = InProcessSwitch(program, backend)
    except P4SwitchError as err:
        return {"status": "no-backend", "detail": " ".join(str(err).split())[:300]}
    except Exception as err:
        return {"status": "error", "detail": "building the pipeline: " + crash_detail(err)}
    try:
        outcome = run_stf(switch, commands)
    except (StfUnsupported, StfError) as err:
        return {"status": "unsupported", "detail": str(err)}
    except Exception as err:
        return {"status": "error", "detail": crash_detail(err)}
    return outcome_result(outcome)


def outcome_result(outcome: Any) -> Result:
    """A run's status, first difference and the frames that came out (hex)."""
    frames = [[port, frame.hex()] for port, frame in outcome.frames]
    if outcome.passed:
        return {"status": "pass", "frames": frames}
    return {"status": "fail", "detail": outcome.detail, "frames": frames}


def bmv2_stage(
    sample: Sample, stf: Path, options: dict[str, Any], send: Callable[[Any], None]
) -> Result:
    """One packet test on BMv2 (bench/bmv2.py): p4c-bm2-ss's JSON on simple_switch_grpc."""
    tools = bmv2.Bmv2Tools(Path(options["bmv2"][0]), Path(options["bmv2"][1]))
    try:
        commands = parse_stf(stf.read_text())
        check_supported(commands)
    except (StfError, StfUnsupported) as err:
        return {"status": "unsupported", "detail": str(err)}
    inputs, named = ports(commands)
    with tempfile.TemporaryDirectory(prefix="bmv2-stf-") as tmp:
        send(("scratch", tmp))  # removed by the parent too, should this child be killed
        try:
            program = bmv2.compile_program(tools, sample.path, Path(tmp))
        except bmv2.Bmv2CompileError as err:
            return {"status": "p4c-refused", "detail": str(err)}
        try:
            with bmv2.running(
                tools,
                program,
                inputs,
                named,
                lambda pid: send(("helper", pid)),
                lambda pid: send(("helper-stopped", pid)),
                under=Path(tmp),
            ) as switch:
                outcome = run_stf_on(switch, commands)
        except (StfUnsupported, StfError) as err:
            return {"status": "unsupported", "detail": str(err)}
        except Exception as err:  # BMv2 dying or hanging, gRPC failing: the harness's
            return {"status": "error", "detail": crash_detail(err)}
    return outcome_result(outcome)


def find_p4c_bm2_ss() -> Path | None:
    """p4c's BMv2 compiler: on PATH, else in the usual install folders."""
    found = shutil.which("p4c-bm2-ss")
    if found is not None:
        return Path(found)
    return next((d / "p4c-bm2-ss" for d in TOOL_DIRS if (d / "p4c-bm2-ss").is_file()), None)


def p4c_p4info(path: Path, compiler: Path, cache: Path) -> tuple[Path | None, str]:
    """p4c-bm2-ss's P4Info for `path` (cached by the program's text), or None and why."""
    key = hashlib.sha256(path.read_bytes() + str(path).encode()).hexdigest()[:20]
    out, refused = cache / f"{key}.p4info.txtpb", cache / f"{key}.refused"
    if not out.exists() and not refused.exists():
        cache.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory() as tmp:
            run = subprocess.run(
                [
                    str(compiler),
                    "--p4runtime-files",
                    str(Path(tmp) / "p.txtpb"),
                    "-o",
                    str(Path(tmp) / "p.json"),
                    str(path),
                ],
                capture_output=True,
                text=True,
                timeout=300,
                env={
                    **os.environ,
                    "P4C_16_INCLUDE_PATH": str(compiler.parents[1] / "share/p4c/p4include"),
                },
            )
            made = Path(tmp) / "p.txtpb"
            if run.returncode == 0 and made.exists():
                shutil.copy(made, out)
            else:
                errors = (ln for ln in run.stderr.splitlines() if re.search(r"\berror:", ln))
                first = next(errors, run.stderr)
                refused.write_text(first.strip()[:300] or f"exit {run.returncode}")
    if out.exists():
        return out, ""
    return None, refused.read_text()


def p4info_stage(sample: Sample, program: Any, source: str, options: dict[str, Any]) -> Result:
    """p4switch's P4Info against p4c's from `source` (`p4c-bm2-ss` or `testdata`)."""
    from p4switch import load_p4info
    from p4switch.p4info_diff import diff

    if source == "p4c-bm2-ss":
        compiler, cache = Path(options["p4c_bm2_ss"]), Path(options["cache"])
        reference, why = p4c_p4info(sample.path, compiler, cache)
        if reference is None:
            return {"status": "p4c-refused", "detail": why}
    else:
        reference = Path(options["outputs"]) / f"{sample.name}.p4info.txtpb"
        if sample.kind != "sample" or not reference.is_file():
            return {"status": "no-reference"}
    lines = diff(load_p4info(reference), program.p4info, ("p4c", "p4switch"))
    if not lines:
        return {"status": "equal"}
    return {
        "status": "different",
        "differences": lines,
        "kinds": sorted({kind(ln) for ln in lines}),
    }


def kind(line: str) -> str:
    """The kind of one p4info_diff line: `table missing from p4switch`, `action params`, ..."""
    what, _, rest = line.partition(": ")
    entity = what.split(" ")[0]
    if rest.startswith("in p4c, missing"):
        return f"{entity} missing from p4switch"
    if rest.startswith("in p4switch, missing"):
        return f"{entity} only in p4switch"
    return f"{entity} {rest.split(' ')[0]}"


def examine(sample: Sample, options: dict[str, Any], send: Callable[[Any], None]) -> None:
    """Every stage of one program, each announced (`start`) then reported (`done`)."""
    send(("start", "compile"))
    compiled, program = compile_stage(sample)
    send(("done", "compile", compiled))
    if program is not None and sample.stf is not None:
        for backend in options["backends"]:
            send(("start", f"stf.{backend}"))
            send(("done", f"stf.{backend}", stf_stage(program, sample.stf, backend)))
    if options.get("bmv2") and sample.stf is not None:  # whether p4switch compiles it or not
        send(("start", "stf.bmv2"))
        send(("done", "stf.bmv2", bmv2_stage(sample, sample.stf, options, send)))
    if program is None:
        return
    for source in options["p4info"]:
        send(("start", f"p4info.{source}"))
        try:
            result = p4info_stage(sample, program, source, options)
        except Exception as err:  # p4c hanging, a P4Info not read: the harness's, not p4switch's
            result = {"status": "not-compared", "detail": crash_detail(err)}
        send(("done", f"p4info.{source}", result))


def child(
    sample: Sample, options: dict[str, Any], conn: multiprocessing.connection.Connection
) -> None:
    resource.setrlimit(resource.RLIMIT_AS, (options["memory"], options["memory"]))
    try:
        examine(sample, options, conn.send)
    except BaseException as err:  # MemoryError and the like: reported, then the child ends
        conn.send(("crash", crash_detail(err)))
    finally:
        conn.close()


# --- in the parent ---------------------------------------------------------------------------


@dataclass
class Running:
    sample: Sample
    process: multiprocessing.process.BaseProcess
    conn: multiprocessing.connection.Connection
    deadline: float
    started: float
    result: Result
    stage: str = ""
    helpers: set[int] = field(default_factory=set)  # BMv2 PIDs the child started
    scratch: list[str] = field(default_factory=list)  # the child's temporary folders


def run_all(
    programs: Sequence[Sample],
    options: dict[str, Any],
    jobs: int,
    timeout: float,
    progress: Callable[[Result], None] = lambda result: None,
) -> list[Result]:
    """Every program examined in a child of its own, `jobs` at a time."""
    context = multiprocessing.get_context("fork")
    waiting, running, done = list(programs), list[Running](), list[Result]()
    while waiting or running:
        while waiting and len(running) < jobs:
            sample = waiting.pop(0)
            ours, theirs = context.Pipe(duplex=False)
            process = context.Process(target=child, args=(sample, options, theirs), daemon=True)
            process.start()
            theirs.close()
            now = time.monotonic()
            result: Result = {
                "program": sample.name,
                "kind": sample.kind,
                "stf": sample.stf is not None,
            }
            running.append(Running(sample, process, ours, now + timeout, now, result))
        ready = multiprocessing.connection.wait(
            [r.conn for r in running], timeout=min(r.deadline for r in running) - time.monotonic()
        )
        for job in list(running):
            finished = _drain(job) if job.conn in ready else False
            if not finished and time.monotonic() >= job.deadline:
                job.process.kill()
                _settle(job, "timeout", f"no answer in {timeout:.0f} s")
                finished = True
            if finished:
                _stop_helpers(job)
                job.process.join()
                job.conn.close()
                job.result["seconds"] = round(time.monotonic() - job.started, 2)
                running.remove(job)
                done.append(job.result)
                progress(job.result)
    order = {s.name: i for i, s in enumerate(programs)}
    return sorted(done, key=lambda r: order[r["program"]])


def _drain(job: Running) -> bool:
    """Read what the child sent; True once it has ended."""
    while job.conn.poll():
        try:
            message = job.conn.recv()
        except EOFError:
            job.process.join()
            if job.stage or "compile" not in job.result:  # it died inside a stage
                _settle(job, "crash", f"the child died (exit status {job.process.exitcode})")
            return True
        if message[0] == "start":
            job.stage = message[1]
        elif message[0] == "done":
            job.result[message[1]] = message[2]
            job.stage = ""
        elif message[0] == "crash":
            _settle(job, "crash", message[1])
        elif message[0] == "helper":
            job.helpers.add(message[1])
        elif message[0] == "helper-stopped":
            job.helpers.discard(message[1])
        elif message[0] == "scratch":
            job.scratch.append(message[1])
    return False


def _stop_helpers(job: Running) -> None:
    """A BMv2 the child started and could not stop (it was killed, or died): stopped by its
    PID; the child's temporary folders removed (gone already when it ended normally)."""
    for pid in job.helpers:
        with contextlib.suppress(ProcessLookupError):  # it ended on its own
            os.kill(pid, signal.SIGKILL)
    job.helpers.clear()
    for folder in job.scratch:
        shutil.rmtree(folder, ignore_errors=True)


def _settle(job: Running, status: str, detail: str) -> None:
    """The stage under way ended as `status` (timeout, crash)."""
    stage = job.stage or "compile"
    key = "class" if stage == "compile" else "status"
    job.result[stage] = {key: status, "detail": detail}
    job.stage = ""


# --- the report ------------------------------------------------------------------------------


def columns(backends: Sequence[str], bmv2: bool) -> list[str]:
    """The packet-test columns: p4switch's back ends, then BMv2 when it ran."""
    return [*backends, "bmv2"] if bmv2 else list(backends)


def disagreement(result: Result, backend: str) -> str | None:
    """How p4switch on `backend` and BMv2 disagree on a packet test (one passes, the other
    does not; or both fail with other frames), or None."""
    if "stf.bmv2" not in result:
        return None
    compiled = result.get("compile", {"class": "not-compiled"})
    ours = result.get(
        f"stf.{backend}", {"status": "not-compiled", "detail": compiled.get("detail", "")}
    )
    theirs = result["stf.bmv2"]
    if (ours["status"] == "pass") != (theirs["status"] == "pass"):
        failing, who = (theirs, "BMv2") if ours["status"] == "pass" else (ours, "p4switch")
        return (
            f"p4switch {ours['status']}, BMv2 {theirs['status']}: "
            f"{who}: {failing.get('detail', '')}"
        )
    if ours["status"] == theirs["status"] == "fail":
        difference = frames_difference(ours.get("frames", []), theirs.get("frames", []))
        if difference:
            return f"both fail, other frames: {difference}"
    return None


def frames_difference(ours: Sequence[Sequence[Any]], theirs: Sequence[Sequence[Any]]) -> str:
    """The first difference between two runs' frames ([port, hex] in order per port)."""
    by_port: dict[int, tuple[list[str], list[str]]] = {}
    for side, frames in enumerate((ours, theirs)):
        for port, frame in frames:
            by_port.setdefault(port, ([], []))[side].append(frame)
    for port in sorted(by_port):
        mine, bmv2s = by_port[port]
        for index, (a, b) in enumerate(zip(mine, bmv2s, strict=False)):
            if a != b:
                at = next((i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), None)
                at = min(len(a), len(b)) if at is None else at
                at -= at % 2
                return (
                    f"port {port} frame {index} byte {at // 2}: "
                    f"p4switch {a[at : at + 16] or '(end)'}, BMv2 {b[at : at + 16] or '(end)'}"
                )
        if len(mine) != len(bmv2s):
            return f"port {port}: p4switch {len(mine)} frame(s), BMv2 {len(bmv2s)}"
    return ""


def summarise(
    results: Sequence[Result], backends: Sequence[str], bmv2: bool = False
) -> dict[str, Any]:
    sample_results = [r for r in results if r["kind"] == "sample"]
    tests = [r for r in sample_results if r["stf"]]
    summary: dict[str, Any] = {
        "programs": len(sample_results),
        "packet_tests": len(tests),
        "compile": dict(Counter(r["compile"]["class"] for r in sample_results)),
        "compile_packet_tests": dict(Counter(r["compile"]["class"] for r in tests)),
        "stf": {
            b: dict(
                Counter(
                    r.get(f"stf.{b}", {}).get(
                        "status", "not-run" if b == "bmv2" else "not-compiled"
                    )
                    for r in tests
                )
            )
            for b in columns(backends, bmv2)
        },
    }
    if bmv2:
        summary["disagree_with_bmv2"] = {
            b: [r["program"] for r in tests if disagreement(r, b)] for b in backends
        }
    for source in P4INFO_SOURCES:
        compared = [r[f"p4info.{source}"] for r in sample_results if f"p4info.{source}" in r]
        if compared:
            summary[f"p4info.{source}"] = {
                "status": dict(Counter(p["status"] for p in compared)),
                "kinds": dict(
                    Counter(k for p in compared for k in p.get("kinds", ())).most_common()
                ),
            }
    tutorial_results = [r for r in results if r["kind"] == "tutorial"]
    if tutorial_results:
        summary["tutorials"] = {
            "programs": len(tutorial_results),
            "compile": dict(Counter(r["compile"]["class"] for r in tutorial_results)),
        }
    return summary


def report(
    results: Sequence[Result],
    summary: dict[str, Any],
    backends: Sequence[str],
    bmv2: bool = False,
) -> str:
    shown = columns(backends, bmv2)
    out = [
        f"{summary['programs']} v1model sample programs, "
        f"{summary['packet_tests']} with a packet test",
        "",
        f"{'compile':<26}{'all':>8}{'packet tests':>14}",
    ]
    for cls in ("compiles", "refused", "crash", "timeout"):
        out.append(
            f"  {cls:<24}{summary['compile'].get(cls, 0):>8}"
            f"{summary['compile_packet_tests'].get(cls, 0):>14}"
        )
    out += ["", f"{'packet tests':<26}" + "".join(f"{b:>10}" for b in shown)]
    statuses = (
        "pass",
        "fail",
        "error",
        "unsupported",
        "no-backend",
        "timeout",
        "crash",
        "not-compiled",
        "p4c-refused",
        "not-run",
    )
    for status in statuses:
        row = [summary["stf"][b].get(status, 0) for b in shown]
        if any(row) or status in ("pass", "fail"):
            out.append(f"  {status:<24}" + "".join(f"{n:>10}" for n in row))
    if bmv2:
        out += ["", bmv2_summary_line(summary, backends)]
    for source in P4INFO_SOURCES:
        if f"p4info.{source}" in summary:
            compared = summary[f"p4info.{source}"]
            counts = ", ".join(f"{n} {s}" for s, n in compared["status"].items())
            out += ["", f"P4Info against p4c's ({source}): {counts}"]
            out += [f"  {n:>4}  {k}" for k, n in compared["kinds"].items()]
    if "tutorials" in summary:
        t = summary["tutorials"]
        out += ["", f"tutorials: {t['compile'].get('compiles', 0)} of {t['programs']} compile"]
        out += [
            f"  {r['program']}: {r['compile']['class']}: {r['compile'].get('detail', '')}"
            for r in results
            if r["kind"] == "tutorial" and r["compile"]["class"] != "compiles"
        ]
    out += ["", "packet-test programs that do not pass:"]
    for r in results:
        if not r["stf"]:
            continue
        failing = [b for b in shown if b == "bmv2" or r["compile"]["class"] == "compiles"]
        if r["compile"]["class"] != "compiles":
            out.append(
                f"  {r['program']}: {r['compile']['class']}: {r['compile'].get('detail', '')}"
            )
        for b in failing:
            stage = r.get(f"stf.{b}", {"status": "missing"})
            if stage["status"] != "pass":
                out.append(f"  {r['program']} [{b}]: {stage['status']}: {stage.get('detail', '')}")
    if bmv2:
        out += ["", "packet tests where p4switch and BMv2 disagree:"]
        out += disagreement_lines(results, backends)
    return "\n".join(out)


def bmv2_summary_line(summary: dict[str, Any], backends: Sequence[str]) -> str:
    passes = ", ".join(f"p4switch [{b}] {summary['stf'][b].get('pass', 0)}" for b in backends)
    disagree = ", ".join(f"[{b}] {len(summary['disagree_with_bmv2'][b])}" for b in backends)
    return (
        f"on BMv2 {summary['stf']['bmv2'].get('pass', 0)} of {summary['packet_tests']} packet "
        f"tests pass ({passes}); programs where p4switch and BMv2 disagree: {disagree}"
    )


def disagreement_lines(results: Sequence[Result], backends: Sequence[str]) -> list[str]:
    lines = []
    for r in results:
        for b in backends:
            difference = disagreement(r, b) if r["stf"] else None
            if difference:
                lines.append(f"  {r['program']} [{b}]: {difference}")
    return lines


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="p4c_samples.py",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--p4c", type=Path, required=True, help="a p4c checkout (testdata/)")
    parser.add_argument("--tutorials", type=Path, help="a p4lang/tutorials checkout")
    parser.add_argument("--backends", default="python,native", help="comma-separated back ends")
    parser.add_argument("--p4info", action="store_true", help="compare P4Info with p4c's")
    parser.add_argument(
        "--bmv2", action="store_true", help="run the packet tests on BMv2 too, beside p4switch"
    )
    parser.add_argument("-k", dest="substring", default="", help="only programs whose name has it")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="children at a time")
    parser.add_argument("--timeout", type=float, default=600.0, help="seconds per program")
    parser.add_argument(
        "--out", type=Path, default=REPO / "build" / "p4c_samples.json", help="the JSON written"
    )
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    backends = [b for b in args.backends.split(",") if b]
    if not (args.p4c / "testdata" / "p4_16_samples").is_dir():
        print(f"p4c_samples: error: {args.p4c} has no testdata/p4_16_samples", file=sys.stderr)
        return 2
    sources = list(P4INFO_SOURCES) if args.p4info else []
    compiler = find_p4c_bm2_ss()
    if args.p4info and compiler is None:
        print("p4c_samples: no p4c-bm2-ss found: P4Info against testdata only", file=sys.stderr)
        sources.remove("p4c-bm2-ss")
    tools = bmv2.find_tools() if args.bmv2 else None
    if args.bmv2 and tools is None:
        print("p4c_samples: error: --bmv2: no simple_switch_grpc or p4c-bm2-ss", file=sys.stderr)
        return 2
    programs = samples(args.p4c) + (tutorials(args.tutorials) if args.tutorials else [])
    programs = [p for p in programs if args.substring in p.name]
    options = {
        "backends": backends,
        "p4info": sources,
        "outputs": str(args.p4c / "testdata" / "p4_16_samples_outputs"),
        "p4c_bm2_ss": str(compiler),
        "cache": str(REPO / "build" / "p4c_samples" / "p4c"),
        "memory": MEMORY_LIMIT,
        "bmv2": (str(tools.compiler), str(tools.switch)) if tools is not None else None,
    }
    start = time.monotonic()

    def progress(result: Result) -> None:
        print(
            f"  {result['program']}: {result['compile']['class']} ({result['seconds']} s)",
            file=sys.stderr,
        )

    results = run_all(programs, options, args.jobs, args.timeout, progress)
    summary = summarise(results, backends, args.bmv2)
    print(report(results, summary, backends, args.bmv2))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    document = {
        "p4c": str(args.p4c),
        "backends": columns(backends, args.bmv2),
        "seconds": round(time.monotonic() - start, 1),
        "summary": summary,
        "programs": results,
    }
    args.out.write_text(json.dumps(document, indent=1) + "\n")
    print(f"\nwritten: {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
