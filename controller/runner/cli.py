"""`innet run [SCENARIO]`: the experiment from the command line, with a progress bar.

    innet run                                   # scenarios/nine-cities.yaml
    innet run scenarios/memory-sweep.yaml --out results/sweep
    innet run SCENARIO --check                  # validate, print the plan; build nothing
    innet run SCENARIO --calibration warn       # run even where the plan does not fit the CPU

Exit status: 0 when every schedule ran to the end, 1 when one failed (the results folder says
which round and island), 2 for bad input (the scenario is refused before anything starts), 130
after Ctrl-C (the network is torn down first). Before anything starts, the machine check
(controller/runner/calibration.py) prints one line; with `--calibration refuse` (the default) a
plan that does not fit this machine's CPU now stops there with exit status 1.
"""

from __future__ import annotations

import argparse
import gc
import os
import sys
import time
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING

from rich.progress import BarColumn, MofNCompleteColumn, Progress, TaskID, TimeElapsedColumn

from controller.exceptions import CommandLineError, RunDirError
from controller.flags import MAX_PORT, port
from controller.rundir import RunDir
from innet.exceptions import InputError
from innet.paths import DEFAULT_SCENARIO, RESULTS, check_destination
from innet.stopping import StopSignals
from innet.vocabulary import Backend, P4Target, Shaping
from topo.shaping import SHAPING_HELP
from topo.siteplan import GRPC_BASE_PORT

if TYPE_CHECKING:  # the runner itself is imported by `run` (it loads torch)
    from controller.runner.emulation import Emulation
    from controller.runner.run import Run, Testbeds
    from controller.runner.script import ScriptRun

# the machine check's modes (controller.runner.calibration.MODES, which loads torch)
CALIBRATION_MODES = ("refuse", "warn", "off")
CLOCK_MODES = ("refuse", "flag")  # controller.cluster.clocks.ClockMode's


def add_command(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "run",
        help="train through the emulated WAN with every schedule of a scenario",
        description="Build the network for each memory size of the scenario, train with each "
        "schedule, tear down, and write a results folder (rounds.jsonl, summary.csv, plots).",
    )
    p.add_argument(
        "scenario",
        nargs="?",
        type=Path,
        default=DEFAULT_SCENARIO,
        help="scenario YAML (default scenarios/nine-cities.yaml)",
    )
    p.add_argument(
        "--out",
        type=Path,
        help="results folder, made with its parents when missing "
        "(default results/NAME-YYYYmmdd-HHMMSS)",
    )
    p.add_argument(
        "--check",
        action="store_true",
        help="validate the scenario and print the predictions; build nothing",
    )
    p.add_argument(
        "--shaping",
        type=Shaping.argument,
        choices=tuple(Shaping),
        default=Shaping.AUTO,
        help=SHAPING_HELP,
    )
    p.add_argument(
        "--target",
        type=P4Target.argument,
        choices=tuple(P4Target),
        default=P4Target.P4SWITCH,
        help="edge switches: p4switch (default) or bmv2 (simple_switch_grpc)",
    )
    p.add_argument(
        "--backend",
        type=Backend.argument,
        choices=tuple(Backend),
        help="what runs the program in each p4switch: native (C) or python; default native "
        "where a C compiler is available (p4switch --backend)",
    )
    p.add_argument(
        "--calibration",
        choices=CALIBRATION_MODES,
        default="refuse",
        help="the machine check before anything starts: refuse (default) stops a plan that does "
        "not fit this machine's CPU now and warns of a tight one; warn only warns; off skips it",
    )
    p.add_argument(
        "--cluster",
        metavar="HEAD",
        help="run on the Ray cluster whose head is at HEAD[:PORT], each island on one of its "
        "machines (the scenario's `placement`, or chosen); overrides the scenario's `cluster` "
        "(docs/cluster.md)",
    )
    p.add_argument(
        "--clocks",
        choices=CLOCK_MODES,
        default="refuse",
        help="with --cluster, a machine whose clock offset is known more loosely than the plan's "
        "smallest timing headroom: refuse (default) starts nothing; flag runs and flags every "
        "round 'clocks'",
    )
    p.add_argument("--run-dir", type=Path, help="state directory (as for innet net up)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.add_argument(
        "--grpc-base-port",
        type=port(),
        default=GRPC_BASE_PORT,
        help=f"P4Runtime port of the first city's switch (default {GRPC_BASE_PORT})",
    )


def add_sums_command(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "sums",
        help="compare two runs' int32 sums round by round",
        description="innet sums A B: the int32 sums each leader recorded (rounds.jsonl) in the "
        "rounds both results folders finished, round by round: the same scenario on p4switch "
        "and on BMv2, or on two back ends, must agree. Exit 0 when every compared round "
        "agrees, 1 when one differs or none has sums, 2 when a folder has no rounds.",
    )
    p.add_argument("here", type=Path, metavar="A", help="a results folder")
    p.add_argument("there", type=Path, metavar="B", help="the results folder to compare it with")


def sums(here: Path, there: Path) -> int:
    """`innet sums A B`: 0 when every round both results folders finished has the same int32
    sums, 1 when one differs (or none could be compared); a folder without rounds is bad input."""
    from controller.runner.results.sums import compare_sums  # (the results read with plots)
    from controller.runner.results.writer import ROUNDS_FILE, read_records

    runs = []
    for folder in (here, there):
        if not (folder / ROUNDS_FILE).is_file():
            raise CommandLineError(f"{folder} is not a results folder: it has no {ROUNDS_FILE}")
        try:
            runs.append(read_records(folder))
        except ValueError as err:
            raise CommandLineError(str(err)) from None
    result = compare_sums(*runs)
    print(result.report(str(here), str(there)))
    return 0 if result.same else 1


def _check_out(folder: Path) -> None:
    """The results folder: made by the run with its parents; refused before anything starts when
    it is a file, lies inside one, or cannot be written."""
    if folder.exists() and not folder.is_dir():
        raise CommandLineError(f"--out {folder} is a file; give a folder")
    try:
        check_destination(folder, "--out")
    except InputError as err:
        raise CommandLineError(str(err)) from None


def run(args: argparse.Namespace) -> int:
    """`innet run`; errors of the input raise (the CLI prints them), the run's own end here.

    SIGINT and SIGTERM are this command's own from its first line (innet/stopping.py):
    whatever it was doing, it tears down what it started, writes the results of the rounds
    recorded so far, says on stderr how far it got and returns 130."""
    signals, where = StopSignals(), HowFar()
    try:
        signals.install()
        return _run(args, where)
    except KeyboardInterrupt:
        how = signals.name or "SIGINT"
        print(f"\ninnet: interrupted ({how}) {where.report()}", file=sys.stderr, flush=True)
        return 130
    finally:
        if getattr(args, "own_process", False):  # the process's own command: it ends here
            # Exit fast: the interpreter's last collection of the heap torch and the plots
            # leave takes seconds on a busy machine; none of it needs finalising one by one.
            gc.freeze()  # (its handlers go on noting signals until the process is gone)
        else:  # called in-process: its caller's handlers again
            signals.restore()


class HowFar:
    """How far a run got, for the line an interrupted run ends with."""

    def __init__(self) -> None:
        self.experiment: Run | None = None
        self.script: ScriptRun | None = None
        self.folder: Path | None = None

    def report(self) -> str:
        if self.script is not None:
            n = len(self.script.records)
            return (
                f"during {self.script.phase}; {n} collective{'' if n == 1 else 's'} recorded; "
                f"results so far in {self.folder}"
            )
        run = self.experiment
        if run is None or run.writer is None:
            what = run.phase if run is not None else "start-up"
            return f"during {what}; nothing built, no results written"
        n = len(run.records)
        built = "network torn down" if run.built else "nothing built"
        return (
            f"during {run.phase}; {n} round{'' if n == 1 else 's'} recorded; {built}; "
            f"results so far in {self.folder}"
        )


def _run(args: argparse.Namespace, where: HowFar) -> int:
    # imported here: the runner loads torch (seconds), which no other command needs
    from controller.runner.emulation import resolve
    from controller.runner.run import Run, built_testbeds
    from controller.runner.scenario import load_scenario
    from topo.mininet_net import preflight

    folder = args.out
    if folder is not None:
        _check_out(folder)  # before the scenario: minutes of planning are not spent in vain
    emulation = resolve(load_scenario(args.scenario))  # refused here, before anything starts
    last_port = args.grpc_base_port + len(emulation.scenario.islands) - 1
    if last_port > MAX_PORT:
        raise CommandLineError(
            f"--grpc-base-port {args.grpc_base_port}: the switches would need ports up to "
            f"{last_port}; give at most {MAX_PORT - len(emulation.scenario.islands) + 1}"
        )
    plan = emulation.predictions()
    if args.check:
        print("\n".join(plan))
        return 0
    head = args.cluster or emulation.scenario.cluster
    if head is not None and emulation.scenario.script is not None:
        raise CommandLineError(
            "a training script runs on one machine: give no --cluster (or `cluster:`) with it"
        )
    if head is not None:
        return _run_on_cluster(args, where, emulation, head, folder)
    if os.geteuid() != 0:
        raise CommandLineError("innet run needs root (Mininet builds namespaces and veth pairs)")
    preflight(args.shaping, args.target)  # the target's tools and the shaping, before anything
    folder = _results_folder(emulation, folder)
    run_dir = RunDir(args.run_dir)
    busy = run_dir.occupied()
    if busy is not None:
        raise RunDirError(busy)
    print("\n".join(plan), flush=True)
    testbeds = built_testbeds(
        emulation,
        run_dir,
        shaping=args.shaping,
        target=args.target,
        backend=args.backend,
        grpc_base_port=args.grpc_base_port,
    )
    if emulation.scenario.script is not None:
        return _run_script(where, emulation, folder, testbeds)
    progress = ProgressBar(args.no_progress)
    experiment = Run(
        emulation,
        folder,
        testbeds,
        progress=progress,
        calibration=args.calibration,
        backend=args.backend,
        target=args.target,
    )
    where.experiment, where.folder = experiment, folder
    with progress:
        calibration = experiment.calibrate()  # before anything starts; refuses what does not fit
        if calibration is not None:  # (a warning, when there is one, is logged to stderr)
            print(calibration.summary, flush=True)
        experiment.execute()
    return _report(emulation, experiment, folder)


def _run_script(where: HowFar, emulation: Emulation, folder: Path, testbeds: Testbeds) -> int:
    """The scenario's training script, one rank per island, every play (script.py); the
    plays side by side, 1 when one failed."""
    from controller.runner.script import ScriptRun, format_rows

    def progress(what: str) -> None:
        print(f"playing {what}", file=sys.stderr, flush=True)

    script = ScriptRun(emulation, folder, testbeds, progress=progress)
    where.script, where.folder = script, folder
    rows = script.execute()
    print(format_rows(rows, script.script.target))
    warning = emulation.tcp_warning()
    if warning:
        print(warning)
    print(f"results: {folder}")
    failed = [row for row in rows if row.status != "ok"]
    for row in failed:
        print(f"innet: failed: {row.label}: {row.status}", file=sys.stderr)
    return 1 if failed else 0


def _results_folder(emulation: Emulation, folder: Path | None) -> Path:
    """The results folder given, or one named by the scenario and the time; refused when it
    holds anything."""
    if folder is None:
        folder = RESULTS / f"{emulation.scenario.name}-{time.strftime('%Y%m%d-%H%M%S')}"
        _check_out(folder)
    if folder.exists() and any(folder.iterdir()):
        raise CommandLineError(f"{folder} exists and is not empty: choose another --out")
    return folder


def _run_on_cluster(
    args: argparse.Namespace, where: HowFar, emulation: Emulation, head: str, folder: Path | None
) -> int:
    """The run with each island on a machine of the Ray cluster at `head` (docs/cluster.md):
    the cluster checked, measured and the islands placed before anything starts there; the
    machine check is the placement's, per machine, not this machine's."""
    from controller.cluster.raycluster import Cluster
    from controller.cluster.runs import prepare
    from controller.runner.run import Run

    if args.target != P4Target.P4SWITCH or args.shaping not in (Shaping.AUTO, Shaping.LINKS):
        raise CommandLineError(
            "--cluster runs p4switch edges with their WAN links in link emulators (--target "
            f"p4switch, --shaping links), not --target {args.target} --shaping {args.shaping}"
        )
    folder = _results_folder(emulation, folder)
    with Cluster.connect(head) as cluster:
        prepared = prepare(cluster, emulation, args.clocks)  # refuses, naming node or link
        print("\n".join(emulation.predictions()), flush=True)
        print(prepared.placement.summary, flush=True)
        progress = ProgressBar(args.no_progress)
        experiment = Run(
            emulation,
            folder,
            prepared.testbeds(emulation),
            progress=progress,
            cluster=prepared.to_json(),
            clocks_flag=prepared.clocks.reason,
        )
        where.experiment, where.folder = experiment, folder
        with progress:
            experiment.execute()
    return _report(emulation, experiment, folder)


def _report(emulation: Emulation, experiment: Run, folder: Path) -> int:
    """The comparison table, the gap, the TCP warning and where the results are; 1 when a
    schedule failed."""
    from controller.runner.results import format_table

    print(format_table(experiment.summary))
    if experiment.gap is not None:
        from controller.runner.results.gap import gap_table

        print(f"\nthe gap to one data centre\n{gap_table(experiment.gap)}")
    warning = emulation.tcp_warning()
    if warning:
        print(warning)
    print(f"results: {folder}")
    for failure in experiment.failures:
        print(f"innet: failed: {failure}", file=sys.stderr)
    return 1 if experiment.failures else 0


class ProgressBar:
    """A rich progress bar (or a line per round where stderr is no terminal), called as
    progress(label, done, total)."""

    def __init__(self, off: bool) -> None:
        self.off = off or not sys.stderr.isatty()
        self.bar: Progress | None = None
        self.task: TaskID | None = None

    def __enter__(self) -> ProgressBar:
        if not self.off:
            self.bar = Progress(
                "[progress.description]{task.description}",
                BarColumn(),
                MofNCompleteColumn(),
                TimeElapsedColumn(),
                transient=False,
            )
            self.bar.start()
            self.task = self.bar.add_task("starting", total=None)
        return self

    def __call__(self, label: str, done: int, total: int) -> None:
        if self.bar is not None and self.task is not None:
            self.bar.update(self.task, description=label, completed=done, total=total)
        elif self.off:
            print(f"[{done}/{total}] {label}", file=sys.stderr, flush=True)

    def __exit__(
        self, kind: type[BaseException] | None, err: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self.bar is not None:
            self.bar.stop()
