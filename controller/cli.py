"""The `innet` command line: the planner's commands here, the runner's and the service's from
their packages. Every innet error becomes one line on stderr and the exit status its class
gives (`innet.exceptions`: 2 for bad input, 1 for a failure)."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import cast

from controller.exceptions import CommandLineError
from controller.planner.check import check_family
from controller.planner.collectives import NETWORKS
from controller.planner.cost import CostParams
from controller.planner.optimise import DEFAULT_EPSILON, Plan, Planner
from controller.planner.plot import plot_sweep
from controller.planner.report import (
    check_text,
    networks_json,
    networks_text,
    sweep_json,
    sweep_text,
    topo_text,
)
from controller.planner.schedule_file import load_schedule
from controller.planner.sweep import memory_points, sweep
from controller.runner.cli import add_command as add_run_command
from controller.runner.cli import run as run_experiment
from controller.service.cli import SERVICE_COMMANDS, add_commands
from controller.service.cli import run as run_service_command
from innet.argparsing import OneLineParser
from innet.exceptions import InnetError, one_line
from innet.units import format_rate, format_size, parse_rate, parse_size, parse_size_range
from topo.loader import default_wan, load_wan
from topo.siteplan import SLOT_BYTES
from topo.wan import Wan


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
        type=float,
        default=DEFAULT_EPSILON,
        help=f"consensus error to reach (default {DEFAULT_EPSILON:g}; exact families reach 0)",
    )
    p.add_argument(
        "--no-offsets",
        dest="align",
        action="store_false",
        help="send all members at once instead of aligning arrivals",
    )
    p.add_argument(
        "--pacing",
        choices=["rate", "window"],
        default="rate",
        help="rate: members send at the planned rate, a slot is busy for the arrival skew "
        "(default); window: each leader keeps half the slots unanswered, as the worker library "
        "does, so the rate is bounded by memory over the time to a result",
    )
    p.add_argument("--slot-size", default=f"{SLOT_BYTES}B", help="bytes of one slot")
    p.add_argument("--json", action="store_true", help="print machine-readable JSON")


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
        description="innet plan [sweep|simulate] ...: choose a schedule for a "
        "topology, sweep memory sizes, or check the cost model by simulation",
    )
    _plan_options(plan, "64MB")
    plan.add_argument("--schedule", type=Path, help="evaluate the schedule in this YAML file")
    plan.add_argument(
        "--network",
        action="append",
        dest="networks",
        choices=NETWORKS,
        help="what the edges do (repeatable; default all three): plain (route only; ring "
        "all-reduce or direct exchange on the hosts), multicast (replicate, hosts sum), inna "
        "(multicast and in-line aggregation)",
    )
    sweep = OneLineParser(
        prog="innet plan sweep", description="time to consensus per family per memory size"
    )
    _plan_options(sweep, "1MB..8GB")
    sweep.add_argument("--points", type=int, default=24, help="memory points (log-spaced)")
    sweep.add_argument(
        "--plot",
        type=Path,
        default=Path("results/plan-sweep.png"),
        help="PNG to write (default results/plan-sweep.png)",
    )
    sim = OneLineParser(
        prog="innet plan simulate",
        description="simulate the chosen schedule's rounds chunk by "
        "chunk and compare with the cost model",
    )
    _plan_options(sim, "64MB")
    sim.add_argument("--chunks", type=int, default=2000, help="chunks per stream (default 2000)")
    sim.add_argument(
        "--rate-factor",
        type=float,
        default=1.0,
        help="send faster (>1) or slower than the planned rate",
    )
    topo = sub.add_parser("topo", help="show a topology and how well it fits measured RTTs")
    topo.add_argument("topology", nargs="?", type=Path, help="topology YAML (default: nine cities)")

    add_commands(sub)
    add_run_command(sub)
    return {"main": main, "sweep": sweep, "simulate": sim}


def main(argv: Sequence[str] | None = None) -> int:
    args_in = list(sys.argv[1:] if argv is None else argv)
    parsers = build_parser()
    if len(args_in) >= 2 and args_in[0] == "plan" and args_in[1] in ("sweep", "simulate"):
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
        elif command in SERVICE_COMMANDS:
            run_service_command(command, args)
        elif command == "run":
            return run_experiment(args)
    except InnetError as err:
        print(f"innet: error: {one_line(err)}", file=sys.stderr)
        return err.exit_status
    return 0


def _wan(path: Path | None) -> Wan:
    return default_wan() if path is None else load_wan(path)


def _setup(args: argparse.Namespace, memory: int) -> tuple[Wan, CostParams]:
    wan = _wan(args.topology)
    bandwidth = parse_rate(args.bandwidth)
    if args.wan_bandwidth is not None:
        wan = wan.with_capacity(parse_rate(args.wan_bandwidth))
    if not 0 <= args.epsilon < 1:
        raise CommandLineError(f"--epsilon must be in [0, 1), got {args.epsilon}")
    params = CostParams(
        update_bytes=parse_size(args.update_size),
        memory_bytes=memory,
        access_bps=bandwidth,
        slot_bytes=parse_size(args.slot_size),
        align=args.align,
        pacing=args.pacing,
    )
    return wan, params


def _plan(args: argparse.Namespace) -> None:
    wan, base = _setup(args, parse_size(args.memory))
    planner = Planner(wan)
    schedule = None if args.schedule is None else load_schedule(args.schedule, wan)
    plans = []
    for network in dict.fromkeys(args.networks or NETWORKS):  # in order, once each
        params = replace(base, network=network)
        if schedule is not None:
            evaluated = planner.evaluate(planner.model(params), schedule, args.epsilon)
            plans.append(Plan(params, args.epsilon, (evaluated,)))
        else:
            plans.append(planner.plan(params, args.epsilon, args.families))
    if args.json:
        print(json.dumps(networks_json(wan, plans), indent=2))
    else:
        print(networks_text(wan, plans))


def _sweep(args: argparse.Namespace) -> None:
    low, high = parse_size_range(args.memory)
    if args.points < 2:
        raise CommandLineError(f"--points must be at least 2, got {args.points}")
    wan, params = _setup(args, low)
    planner = Planner(wan)
    result = sweep(
        planner,
        params,
        memory_points(low, high, args.points),
        args.epsilon,
        args.families,
    )
    title = (
        f"{wan.name}: {format_size(params.update_bytes)} update, "
        f"{format_rate(params.access_bps)} per island"
    )
    plot_sweep(result, args.plot, title)
    if args.json:
        print(json.dumps(sweep_json(wan, result), indent=2))
    else:
        print(sweep_text(wan, result))
        print(f"plot written to {args.plot}")


def _simulate(args: argparse.Namespace) -> None:
    if args.chunks < 1:
        raise CommandLineError(f"--chunks must be at least 1, got {args.chunks}")
    if args.rate_factor <= 0:
        raise CommandLineError(f"--rate-factor must be positive, got {args.rate_factor}")
    wan, params = _setup(args, parse_size(args.memory))
    planner = Planner(wan)
    model = planner.model(params)
    plan = planner.plan(params, args.epsilon, args.families)
    for fam in plan.families:
        print(check_text(wan, fam, check_family(model, fam, args.chunks, args.rate_factor)))
        print()
