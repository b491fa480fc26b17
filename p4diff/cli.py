"""`python -m p4diff CASE.yaml`: play a case on several P4 targets and compare what they emit.

    python -m p4diff tests/p4diff/innet.yaml --targets p4switch,bmv2
    python -m p4diff tests/p4diff/innet.yaml --targets p4switch,p4switch
    python -m p4diff tests/p4diff/innet.yaml --expect tests/p4diff/innet.expected.json
    python -m p4diff CASE.yaml --targets p4switch --record RECORDING.json
    python -m p4diff --generate 20 --seed 7 --targets p4switch,bmv2 --out DIR

Each target is compared with the first of them, or with the recording `--expect` names; the
first difference is printed byte by byte. `--generate N` plays cases 0..N-1 of a generated
family (`p4diff.generate`) instead of a case file, each to its end, and reports every case
that differs. Exit status: 0 when all agree, 1 on a difference (or when a target fails), 2 on
bad input (the case file, a flag, a recording), 130 on Ctrl-C.
"""

from __future__ import annotations

import argparse
import dataclasses
import logging
import signal
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from types import FrameType

from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeElapsedColumn

from innet.argparsing import OneLineParser
from innet.exceptions import InnetError, InputError, one_line
from innet.paths import check_destination, make_folder
from p4diff.case import DEFAULT_SETTLE_S, Case, Step, load_case
from p4diff.compare import first_difference
from p4diff.exceptions import CaseFailed, TargetError
from p4diff.generate import generate_family
from p4diff.recording import Recording, load_recording
from p4diff.runner import run_case, target_names
from p4diff.targets import target_kind

log = logging.getLogger("p4diff")


def build_parser() -> argparse.ArgumentParser:
    p = OneLineParser(prog="python -m p4diff", description=__doc__.split("\n\n")[0])
    p.add_argument("case", type=Path, nargs="?", help="the case file (YAML; docs/p4diff.md)")
    p.add_argument(
        "--generate",
        type=int,
        metavar="N",
        help="instead of a case file, play the first N cases of the family --seed names",
    )
    p.add_argument("--seed", type=int, metavar="S", help="the generated family's seed (default 0)")
    p.add_argument(
        "--targets",
        help="comma-separated targets to run, each compared with the first: p4switch, bmv2 "
        "(default p4switch,bmv2; p4switch alone with --expect)",
    )
    p.add_argument("--expect", type=Path, metavar="FILE", help="compare with this recording")
    p.add_argument(
        "--record", type=Path, metavar="FILE", help="write the first target's recording here"
    )
    p.add_argument(
        "--out",
        type=Path,
        metavar="DIR",
        help="keep the targets' logs, compiled programs, recordings and the report here "
        "(with --generate: the case files too, and a folder per case)",
    )
    p.add_argument("--settle", type=float, help="quiet time that ends a step, in seconds")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.add_argument("--log-level", default="warning", choices=["debug", "info", "warning", "error"])
    return p


def targets_of(args: argparse.Namespace) -> list[str]:
    text = args.targets or ("p4switch" if args.expect is not None else "p4switch,bmv2")
    names = [name.strip() for name in text.split(",")]
    if any(not name for name in names):
        raise InputError(f"--targets {text!r}: name targets separated by commas")
    if len(names) + (args.expect is not None) < 2 and args.record is None:
        raise InputError(
            f"--targets {text}: one target and nothing to compare it with; "
            "give a second target, --expect FILE, or --record FILE"
        )
    return names


def summary(recordings: Sequence[Recording]) -> str:
    steps = recordings[0].steps
    frames = sum(len(f) for step in steps for f in step.emitted.values())
    reads = sum(len(step.counters) for step in steps)
    return f"{len(steps)} steps ({frames} frames emitted, {reads} counter reads)"


def compare(case: Case, recordings: Sequence[Recording], out: Path | None) -> int:
    """Each recording against the first; the first difference printed. The exit status."""
    base = recordings[0]
    for other in recordings[1:]:
        difference = first_difference(base, other)
        if difference is not None:
            titles = {step.label: step.title for step in case.steps}
            title = titles.get(difference.step.label)
            report = (
                f"{case.path}: {base.target} and {other.target} differ\n"
                f"{difference.describe(title)}\n"
            )
            print(report, end="")
            if out is not None:
                (out / "report.txt").write_text(report, encoding="utf-8")
            return 1
    names = " and ".join(r.target for r in recordings)
    print(f"p4diff: {case.path}: {names} agree on {summary(recordings)}")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    logging.basicConfig(
        level=getattr(logging, args.log_level.upper()),
        format="%(asctime)s p4diff %(levelname)s %(name)s: %(message)s",
    )
    signal.signal(signal.SIGTERM, _exit_on_signal)  # so that every target is torn down
    try:
        return _main(args)
    except InnetError as err:
        print(f"p4diff: error: {one_line(err)}", file=sys.stderr)
        return err.exit_status
    except KeyboardInterrupt:
        print("p4diff: interrupted; every target was stopped", file=sys.stderr)
        return 130


def _main(args: argparse.Namespace) -> int:
    kinds = targets_of(args)
    if _family_asked(args):
        return _family(args, kinds)
    case = load_case(args.case)
    if args.out is not None:  # before any target starts: folders made when missing
        check_destination(args.out, "--out")
    if args.record is not None:
        check_destination(args.record.parent, "--record")
    if args.settle is not None:
        if not args.settle > 0:
            raise InputError(f"--settle {args.settle:g}: a quiet time above 0 seconds")
        case = dataclasses.replace(case, settle=args.settle)
    expected = load_recording(args.expect) if args.expect is not None else None
    with tempfile.TemporaryDirectory(prefix="p4diff-") as scratch:
        workdir = make_folder(args.out if args.out is not None else Path(scratch), "--out")
        recordings = _play(case, kinds, workdir, progress=not args.no_progress)
        if args.out is not None:
            for recording in recordings:
                recording.save(args.out / f"{recording.target}.json")
        if args.record is not None:
            recordings[0].save(args.record)
            log.info("recorded %s to %s", recordings[0].target, args.record)
        if expected is not None:
            named = dataclasses.replace(expected, target=f"recording {args.expect.name}")
            recordings = [named, *recordings]
        if len(recordings) < 2:
            print(
                f"p4diff: {case.path}: recorded {recordings[0].target} to {args.record}: "
                f"{summary(recordings)}"
            )
            return 0
        return compare(case, recordings, args.out)


def _family_asked(args: argparse.Namespace) -> bool:
    """Whether the command line asks for a generated family; InputError if it mixes one with
    a case file's options."""
    if args.generate is None:
        if args.case is None:
            raise InputError("give a case file, or --generate N to play generated cases")
        if args.seed is not None:
            raise InputError(f"--seed {args.seed}: a seed goes with --generate N")
        return False
    if args.case is not None:
        raise InputError(f"{args.case}: --generate N plays generated cases, not a case file")
    if args.generate < 1:
        raise InputError(f"--generate {args.generate}: at least one case")
    for flag, given in (("--expect", args.expect), ("--record", args.record)):
        if given is not None:
            raise InputError(f"{flag} {given}: generated cases are compared between targets")
    return True


def _family(args: argparse.Namespace, kinds: Sequence[str]) -> int:
    """Cases 0..N-1 of the seed's family on every target; every difference reported."""
    seed = args.seed if args.seed is not None else 0
    settle = DEFAULT_SETTLE_S if args.settle is None else args.settle
    if not settle > 0:
        raise InputError(f"--settle {settle:g}: a quiet time above 0 seconds")
    for kind in kinds:
        target_kind(kind)  # every target can run here, before anything is generated
    with tempfile.TemporaryDirectory(prefix="p4diff-") as scratch:
        folder = make_folder(args.out if args.out is not None else Path(scratch), "--out")
        generated = generate_family(seed, args.generate, folder, settle=settle)
        cases = [load_case(g.write(folder)) for g in generated]
        differ, steps = [], 0
        for case, g in zip(cases, generated, strict=True):
            workdir = make_folder(folder / g.name, "--out")
            try:
                recordings = _play(case, kinds, workdir, progress=not args.no_progress)
            except (CaseFailed, TargetError) as err:
                print(f"p4diff: {case.path}: {one_line(err)}")
                differ.append(g.name)
                continue
            steps += len(case.steps)
            kept = workdir if args.out is not None else None
            for recording in recordings if kept is not None else ():
                recording.save(workdir / f"{recording.target}.json")
            if compare(case, recordings, kept):
                differ.append(g.name)
    names = " and ".join(target_names(kinds))
    ran = f"seed {seed}: {len(cases)} cases, {steps} steps played on {names}"
    if not differ:
        print(f"p4diff: {ran}: all agree")
        return 0
    files = f"case files in {args.out}" if args.out is not None else "--out DIR keeps them"
    print(f"p4diff: {ran}: {len(differ)} differ: {', '.join(differ)} ({files})")
    return 1


def _play(case: Case, kinds: Sequence[str], workdir: Path, progress: bool) -> list[Recording]:
    shown = progress and sys.stderr.isatty()
    columns = ("{task.description}", BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    with Progress(*columns, disable=not shown, transient=True) as bar:
        task = bar.add_task(f"{case.path.name} on {', '.join(kinds)}", total=len(case.steps))

        def advanced(step: Step) -> None:
            bar.advance(task)
            log.debug("%s done", step.title)

        return run_case(case, kinds, workdir, on_step=advanced)


def _exit_on_signal(signum: int, frame: FrameType | None) -> None:
    raise SystemExit(128 + signum)


if __name__ == "__main__":
    sys.exit(main())
