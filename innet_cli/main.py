"""The `innet` command line: the planner's commands here, the runner's and the service's from
their packages. Every innet error becomes one line on stderr and the exit status its class
gives (`innet.exceptions`: 2 for bad input, 1 for a failure)."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import cast

from controller.cluster.probe import DEFAULT_EXCHANGES
from controller.exceptions import CommandLineError
from controller.flags import MAX_SIZE_BYTES, duration, number, rate_flag, size_flag, whole
from controller.planner import utilisation
from controller.planner.check import MAX_CHUNKS, MAX_SIM_EVENTS, check_family
from controller.planner.compute import Compute
from controller.planner.cost import CostParams
from controller.planner.margin import band_of, band_wans, plans_choice
from controller.planner.optimise import DEFAULT_EPSILON, Plan, Planner
from controller.planner.params import DEFAULT_SLOT_BYTES
from controller.planner.plot import check_plot_path, plot_sweep
from controller.planner.report import check_text, networks_json, networks_text, topo_text
from controller.planner.schedule import Schedule
from controller.planner.schedule_file import load_schedule
from controller.planner.simulate import MAX_RATE_FACTOR, MIN_RATE_FACTOR, RATE_FACTOR_WHY
from controller.planner.sweep import MAX_SWEEP_POINTS, memory_points, sweep, with_choices
from controller.planner.sweep_report import sweep_json, sweep_text
from controller.runner.cli import add_command as add_run_command
from controller.runner.cli import add_sums_command
from controller.runner.cli import run as run_experiment
from controller.runner.cli import sums as compare_run_sums
from controller.service.cli import SERVICE_COMMANDS, add_commands
from controller.service.cli import run as run_service_command
from innet.argparsing import OneLineParser
from innet.exceptions import InnetError, InputError, one_line
from innet.units import format_rate, format_size, parse_size_range
from innet.vocabulary import PLANNED_NETWORKS, Pacing
from topo.loader import default_wan, load_wan
from topo.wan import Wan

DEFAULT_PLOT = Path("results/plan-sweep.png")
MAX_JITTER_S = 1.0  # far above any WAN's delay variation; beyond it delays lose their meaning
JITTER_WHY = "a WAN's delay variation, each way"
# one inner step at full scale: from 1 ms (far below any large model's) to an hour
MIN_STEP_S, MAX_STEP_S = 1e-3, 3600.0
MAX_EXCHANGES = 10_000  # timed exchanges per clock or wire: far more than the shortest needs
MAX_INNER_STEPS = 100_000  # far above DiLoCo's 500 inner steps a round
# `innet plan X` with parsers of their own
PLAN_COMMANDS = ("sweep", "simulate", "bandwidth", "machines")


def _plan_options(p: argparse.ArgumentParser, memory: str) -> None:
    p.add_argument("topology", nargs="?", type=Path, help="topology YAML (default: nine cities)")
    p.add_argument(
        "--memory", default=memory, help=f"aggregator memory per site (default {memory})"
    )
    p.add_argument("--update-size", default="1GB", help="bytes each island sends per round")
    p.add_argument(
        "--bandwidth",
        default="10Gbps",
        help="each island's access bandwidth: the rate it sends and receives at (default 10Gbps)",
    )
    p.add_argument(
        "--wan-bandwidth",
        metavar="RATE",
        help="capacity of every WAN link (default: as in the topology file)",
    )
    p.add_argument(
        "--family",
        action="append",
        dest="families",
        metavar="NAME",
        help="schedule family to consider (repeatable): all-to-all, cliques-K, "
        "ring-pairs, exponential-pairs (default: all that fit)",
    )
    p.add_argument(
        "--epsilon",
        type=number(0, 1, below=True),
        default=DEFAULT_EPSILON,
        help=f"consensus error to reach, in [0, 1) (default {DEFAULT_EPSILON:g}; exact "
        "families reach 0)",
    )
    p.add_argument(
        "--no-offsets",
        dest="align",
        action="store_false",
        help="send all members at once instead of aligning arrivals",
    )
    p.add_argument(
        "--pacing",
        type=Pacing.argument,
        choices=tuple(Pacing),
        default=Pacing.RATE,
        help="rate: members send at the planned rate, a slot is busy for the arrival skew "
        "(default); window: each leader keeps half the slots unanswered, as the worker library "
        "does, so the rate is bounded by memory over the time to a result",
    )
    p.add_argument("--slot-size", default=f"{DEFAULT_SLOT_BYTES}B", help="bytes of one slot")
    p.add_argument(
        "--jitter",
        type=duration(0, MAX_JITTER_S, why=JITTER_WHY),
        metavar="DURATION",
        help="jitter of every WAN link, each way: a frame's delay is the link's plus a draw "
        "uniform in [-jitter, +jitter]; replaces the topology file's per-link values (default: "
        "as in the topology file, 0 for the nine cities)",
    )
    p.add_argument("--json", action="store_true", help="print machine-readable JSON")


def _margin_option(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--margin",
        type=duration(0, MAX_JITTER_S, why=JITTER_WHY),
        metavar="DURATION",
        help="robustness margin: the plan is costed at jitter - margin (at least 0), jitter and "
        "jitter + margin, and a family is named the winner only if it is fastest at all three "
        "(default: the jitter, the largest link's)",
    )


def _targets(text: str) -> tuple[float, ...]:
    """Comma-separated percentages, each in (0, 100), as shares in ascending order."""
    share = number(0, 100, above=True, below=True, why="a share of the wall-clock, in percent")
    return tuple(sorted({share(part.strip()) / 100 for part in text.split(",")}))


def _scales(text: str) -> tuple[float, ...]:
    """Comma-separated scale factors, each at least 1 (a scenario's `scale`), as given, once."""
    scale = number(1, why="a scenario's scale: 1 is full scale")
    return tuple(dict.fromkeys(scale(part.strip()) for part in text.split(",")))


def _machines_parser() -> argparse.ArgumentParser:
    machines = OneLineParser(
        prog="innet plan machines",
        description="how many machines the scenario's islands need at each scale factor (each "
        "island whole on one machine, each machine within the share of its cores the machine "
        "check calls fitting), the WAN links that then cross machines, and each machine's "
        "share; of this machine's kind, measured (about a second), or of the kind --cores, "
        "--switch-fps and --leader-fps describe",
    )
    machines.add_argument("scenario", type=Path, help="scenario YAML")
    machines.add_argument(
        "--scales",
        type=_scales,
        default=(1000.0, 100.0, 10.0, 1.0),
        metavar="S,S,...",
        help="scale factors, comma-separated, each at least 1 (default 1000,100,10,1)",
    )
    machines.add_argument(
        "--cores", type=whole(1), metavar="N", help="another machine's cores (with the next two)"
    )
    rate = number(0, above=True, why="frames one core processes in a second")
    machines.add_argument(
        "--switch-fps",
        type=rate,
        metavar="F",
        help="frames per second one of its cores processes through a switch's pipeline",
    )
    machines.add_argument(
        "--leader-fps",
        type=rate,
        metavar="L",
        help="frames per second one of its cores processes through a leader",
    )
    machines.add_argument("--json", action="store_true", help="print one JSON document")
    return machines


def _cluster_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    cluster = sub.add_parser(
        "cluster",
        help="the machines of a Ray cluster, as innet would run on them",
        description="innet cluster check ADDRESS: whether every machine of the Ray cluster has "
        "what innet needs there, and their clocks and the wires between them, measured",
    )
    commands = cluster.add_subparsers(dest="cluster_command", required=True)
    check = commands.add_parser(
        "check",
        help="check and measure the cluster's machines",
        description="every alive node of the Ray cluster whose head is at ADDRESS: what it is "
        "(root, network namespaces, Mininet, the same Ray, Python, innet and p4switch as here), "
        "its clock against this machine's and the one-way delay between every two nodes, each "
        "from the shortest of a number of timed UDP exchanges; one line naming every node that "
        "lacks something, and exit status 2",
    )
    check.add_argument("address", help="the head's HOST[:PORT] (Ray's port 6379 by default)")
    check.add_argument(
        "--exchanges",
        type=whole(1, MAX_EXCHANGES, why="each is a round trip, one at a time"),
        default=DEFAULT_EXCHANGES,
        help=f"timed exchanges per clock and per wire, 1..{MAX_EXCHANGES} (default "
        f"{DEFAULT_EXCHANGES})",
    )
    check.add_argument("--json", action="store_true", help="print one JSON document")


def _compute_options(p: argparse.ArgumentParser, required: bool) -> None:
    both = "required" if required else "give both, or neither"
    p.add_argument(
        "--compute",
        type=duration(MIN_STEP_S, MAX_STEP_S, why="one inner step at full scale"),
        metavar="STEP_TIME",
        required=required,
        help="full-scale time of one inner step of the emulated system (e.g. 450ms); with "
        f"--inner-steps, each family's compute utilisation is printed ({both})",
    )
    p.add_argument(
        "--inner-steps",
        type=whole(1, MAX_INNER_STEPS, why="inner steps a round"),
        metavar="H",
        required=required,
        help=f"inner steps a round, 1..{MAX_INNER_STEPS}: a round computes H x STEP_TIME, then "
        f"exchanges ({both})",
    )


def build_parser() -> dict[str, argparse.ArgumentParser]:
    main = OneLineParser(prog="innet", description=__doc__)
    # the subcommands' parsers are Parsers too; the runner and service packages add theirs
    # through argparse's own type
    sub = cast(
        "argparse._SubParsersAction[argparse.ArgumentParser]",
        main.add_subparsers(dest="command", required=True),
    )
    plan = sub.add_parser(
        "plan",
        help="choose a synchronisation schedule",
        description="innet plan [sweep|simulate|bandwidth|machines] ...: choose a schedule for "
        "a topology, sweep memory sizes, check the cost model by simulation, find the "
        "bandwidth that keeps the compute busy, or count the machines a scenario needs",
    )
    _plan_options(plan, "64MB")
    _margin_option(plan)
    _compute_options(plan, required=False)
    plan.add_argument("--schedule", type=Path, help="evaluate the schedule in this YAML file")
    plan.add_argument(
        "--network",
        action="append",
        dest="networks",
        choices=PLANNED_NETWORKS,
        help="what the edges do (repeatable; default all three): plain (route only; ring "
        "all-reduce or direct exchange on the hosts), multicast (replicate, hosts sum), inna "
        "(multicast and in-line aggregation)",
    )
    sweep = OneLineParser(
        prog="innet plan sweep", description="time to consensus per family per memory size"
    )
    _plan_options(sweep, "1MB..8GB")
    _margin_option(sweep)
    sweep.add_argument(
        "--points",
        type=whole(2, MAX_SWEEP_POINTS, why="each point is a full plan"),
        default=24,
        help=f"memory points, log-spaced, 2..{MAX_SWEEP_POINTS} (default 24)",
    )
    sweep.add_argument(
        "--plot",
        type=Path,
        help="PNG to write, its folder made when missing (default results/plan-sweep.png)",
    )
    sim = OneLineParser(
        prog="innet plan simulate",
        description="simulate the chosen schedule's rounds chunk by "
        "chunk and compare with the cost model",
    )
    _plan_options(sim, "64MB")
    sim.add_argument(
        "--chunks",
        type=whole(1, MAX_CHUNKS, why="each chunk is simulated"),
        default=2000,
        help=f"chunks per stream, 1..{MAX_CHUNKS} (default 2000)",
    )
    sim.add_argument(
        "--rate-factor",
        type=number(MIN_RATE_FACTOR, MAX_RATE_FACTOR, why=RATE_FACTOR_WHY),
        default=1.0,
        help="send faster (>1) or slower than the planned rate, "
        f"{MIN_RATE_FACTOR:g}..{MAX_RATE_FACTOR:g} (default 1)",
    )
    sim.add_argument(
        "--seed", type=whole(0, 2**32 - 1), default=0, help="seed of the jitter draws (default 0)"
    )
    bandwidth = OneLineParser(
        prog="innet plan bandwidth",
        description="the least bandwidth at which each network keeps the compute busy 50, 90 "
        "or 99% of the time, without and with overlap, and the same islands in one building. "
        "The swept quantity is each island's access rate into the WAN; every WAN link's capacity "
        "is scaled by the same factor, keeping the topology's backbone-to-access ratio (the nine "
        "cities: 100 Gb/s links at 10 Gb/s access; --bandwidth and --wan-bandwidth set it)",
    )
    _plan_options(bandwidth, "64MB")
    _compute_options(bandwidth, required=True)
    bandwidth.add_argument(
        "--targets",
        type=_targets,
        default=utilisation.DEFAULT_TARGETS,
        metavar="PERCENTS",
        help="utilisations to reach, in percent, comma-separated, each in (0, 100) (default "
        + ",".join(f"{t:.0%}".rstrip("%") for t in utilisation.DEFAULT_TARGETS)
        + ")",
    )
    _cluster_parser(sub)
    topo = sub.add_parser("topo", help="show a topology and how well it fits measured RTTs")
    topo.add_argument("topology", nargs="?", type=Path, help="topology YAML (default: nine cities)")

    add_commands(sub)
    add_run_command(sub)
    add_sums_command(sub)
    return {
        "main": main,
        "sweep": sweep,
        "simulate": sim,
        "bandwidth": bandwidth,
        "machines": _machines_parser(),
    }


def main(argv: Sequence[str] | None = None) -> int:
    args_in = list(sys.argv[1:] if argv is None else argv)
    parsers = build_parser()
    if len(args_in) >= 2 and args_in[0] == "plan" and args_in[1] in PLAN_COMMANDS:
        parser, command = parsers[args_in[1]], args_in[1]
        args = parser.parse_args(args_in[2:])
    else:
        parser = parsers["main"]
        args = parser.parse_args(args_in)
        command = args.command
    try:
        if command == "topo":
            print(topo_text(_wan(args.topology)))
        elif command == "plan":
            _plan(args)
        elif command == "sweep":
            _sweep(args)
        elif command == "simulate":
            _simulate(args)
        elif command == "bandwidth":
            _bandwidth(args)
        elif command == "machines":
            _machines(args)
        elif command == "cluster":
            _cluster_check(args)
        elif command in SERVICE_COMMANDS:
            run_service_command(command, args)
        elif command == "sums":
            return compare_run_sums(args.here, args.there)
        elif command == "run":
            args.own_process = argv is None  # the process's own command line: it ends with it
            return run_experiment(args)
    except InnetError as err:
        print(f"innet: error: {one_line(err)}", file=sys.stderr)
        return err.exit_status
    except KeyboardInterrupt:  # Ctrl-C: plans and sweeps write their files only at the end
        print(f"innet: interrupted ({command})", file=sys.stderr)
        return 130
    return 0


def _wan(path: Path | None) -> Wan:
    return default_wan() if path is None else load_wan(path)


def _setup(args: argparse.Namespace, memory: int) -> tuple[Wan, CostParams]:
    wan = _wan(args.topology)
    bandwidth = rate_flag("--bandwidth", args.bandwidth)
    if args.wan_bandwidth is not None:
        rate = rate_flag("--wan-bandwidth", args.wan_bandwidth)
        wan = wan.with_capacity(rate)
    if args.jitter is not None:  # the flag, when given, replaces every link's jitter
        wan = wan.with_jitter(args.jitter)
    params = CostParams(
        update_bytes=size_flag("--update-size", args.update_size),
        memory_bytes=memory,
        access_bps=bandwidth,
        slot_bytes=size_flag("--slot-size", args.slot_size),
        align=args.align,
        pacing=args.pacing,
    )
    return wan, params


def _plan(args: argparse.Namespace) -> None:
    wan, base = _setup(args, size_flag("--memory", args.memory))
    compute = _round_compute(args, wan, base)
    band = band_of(wan, args.margin)
    schedule = None if args.schedule is None else load_schedule(args.schedule, wan)
    points = [_plans(Planner(w), base, schedule, args) for w in band_wans(wan, band)]
    plans = points[band.shifts.index(0.0)]
    choice = plans_choice(points, band)
    if args.json:
        print(json.dumps(networks_json(wan, plans, choice, compute), indent=2))
    else:
        print(networks_text(wan, plans, choice, compute))


def _round_compute(
    args: argparse.Namespace, wan: Wan, base: CostParams
) -> utilisation.RoundCompute | None:
    """A round's compute from --compute and --inner-steps (both or neither), and the
    one-building reference it is compared with."""
    given = {"--compute": args.compute, "--inner-steps": args.inner_steps}
    missing = [flag for flag, value in given.items() if value is None]
    if len(missing) == 2:
        return None
    if missing:
        raise CommandLineError(
            f"{missing[0]} is missing: --compute STEP_TIME and --inner-steps H go together "
            "(a round computes H inner steps of STEP_TIME, then exchanges)"
        )
    compute = Compute(args.compute, "given")
    return utilisation.RoundCompute.of(compute, args.inner_steps, wan, base, args.epsilon)


def _bandwidth(args: argparse.Namespace) -> None:
    wan, base = _setup(args, size_flag("--memory", args.memory))
    compute = _round_compute(args, wan, base)
    assert compute is not None  # the parser requires both flags
    with _progress("searching bandwidths") as progress:
        found = utilisation.search_bandwidth(
            wan, base, compute, args.targets, args.families, progress=progress
        )
    if args.json:
        print(json.dumps(utilisation.bandwidth_json(found), indent=2))
    else:
        print(utilisation.bandwidth_text(found))


def _machines(args: argparse.Namespace) -> None:
    from controller.cluster import sizing  # imported here: the scenario's emulation loads torch

    machine = sizing.given_machine(args.cores, args.switch_fps, args.leader_fps)
    found = sizing.plan_machines(args.scenario, args.scales, machine)
    if args.json:
        print(json.dumps(sizing.sizing_json(found), indent=2, allow_nan=False))
    else:
        print(sizing.sizing_text(found))


def _cluster_check(args: argparse.Namespace) -> None:
    from controller.cluster.raycluster import Cluster  # imported here: Ray takes a second

    with Cluster.connect(args.address) as cluster:
        survey = cluster.survey(args.exchanges)
    if args.json:
        print(json.dumps(survey.to_json(), indent=2, allow_nan=False))
    else:
        print(survey.text)


def _plans(
    planner: Planner, base: CostParams, schedule: Schedule | None, args: argparse.Namespace
) -> list[Plan]:
    """A plan per network asked for (in order, once each), or the schedule file evaluated."""
    plans = []
    for network in dict.fromkeys(args.networks or PLANNED_NETWORKS):
        params = replace(base, network=network)
        if schedule is not None:
            evaluated = planner.evaluate(planner.model(params), schedule, args.epsilon)
            plans.append(Plan(params, args.epsilon, (evaluated,)))
        else:
            plans.append(planner.plan(params, args.epsilon, args.families))
    return plans


def _sweep(args: argparse.Namespace) -> None:
    try:
        low, high = parse_size_range(args.memory)
    except InputError as err:
        raise CommandLineError(f"--memory: {err}") from None
    if high > MAX_SIZE_BYTES:
        raise CommandLineError(
            f"--memory: {args.memory!r} goes above the largest innet plans for (1 PB)"
        )
    plot = DEFAULT_PLOT if args.plot is None else args.plot
    check_plot_path(plot)  # before minutes of planning
    wan, params = _setup(args, low)
    band = band_of(wan, args.margin)
    planners = [Planner(w) for w in band_wans(wan, band)]
    planner = planners[band.shifts.index(0.0)]
    points = memory_points(low, high, args.points)
    with _progress("planning memory points") as progress:
        result = sweep(planner, params, points, args.epsilon, args.families, progress=progress)
    with _progress("planning the jitter margin") as progress:
        result = with_choices(result, planners, band, progress=progress)
    title = (
        f"{wan.name}: {format_size(params.update_bytes)} update, "
        f"{format_rate(params.access_bps)} per island"
    )
    plot_sweep(result, plot, title)
    if args.json:
        print(json.dumps(sweep_json(wan, result), indent=2))
    else:
        print(sweep_text(wan, result))
        print(f"plot written to {plot}")


@contextmanager
def _progress(what: str) -> Iterator[Callable[[int, int], None] | None]:
    """A rich progress bar on stderr when it is a terminal (nothing otherwise)."""
    if not sys.stderr.isatty():
        yield None
        return
    from rich.progress import Progress  # imported here: only a sweep on a terminal needs it

    with Progress(transient=True) as bar:
        task = bar.add_task(what, total=None)
        yield lambda done, total: bar.update(task, completed=done, total=total)


def _simulate(args: argparse.Namespace) -> None:
    wan, params = _setup(args, size_flag("--memory", args.memory))
    planner = Planner(wan)
    model = planner.model(params)
    plan = planner.plan(params, args.epsilon, args.families)
    budget = MAX_SIM_EVENTS  # for the whole command: every family's rounds draw on it
    for fam in plan.families:
        checks = check_family(
            model, fam, args.chunks, args.rate_factor, max_events=budget, seed=args.seed
        )
        budget -= sum(c.sim.events for c in checks)
        print(check_text(wan, fam, checks, args.seed))
        print()
