"""`python -m p4diff CASE.yaml`: play a case on several P4 targets and compare what they emit.

    python -m p4diff tests/p4diff/innet.yaml --targets p4switch,bmv2
    python -m p4diff tests/p4diff/innet.yaml --targets p4switch,p4switch
    python -m p4diff tests/p4diff/innet.yaml --expect tests/p4diff/innet.expected.json
    python -m p4diff CASE.yaml --targets p4switch --record RECORDING.json

Each target is compared with the first of them, or with the recording `--expect` names; the
first difference is printed byte by byte. Exit status: 0 when all agree, 1 on a difference (or
when a target fails), 2 on bad input (the case file, a flag, a recording), 130 on Ctrl-C.
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
from p4diff.case import Case, Step, load_case
from p4diff.compare import first_difference
from p4diff.recording import Recording, load_recording
from p4diff.runner import run_case

log = logging.getLogger("p4diff")


def build_parser() -> argparse.ArgumentParser:
    p = OneLineParser(prog="python -m p4diff", description=__doc__.split("\n\n")[0])
    p.add_argument("case", type=Path, help="the case file (YAML; docs/p4diff.md)")
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
        help="keep the targets' logs, compiled programs, recordings and the report here",
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
