"""The `innet` commands of the testbed service (docs/service.md).

    innet net up [TOPOLOGY] --hosts 1 --port 8700    # background service; returns once it answers
    innet status | schedule show|set FILE|plan | round advance | counters [CITY] | shell CITY
    innet net down                                    # the service tears the testbed down
    innet serve ...                                   # the same service in the foreground
    innet clean                                       # undo what a run left (recorded PIDs only)

This module builds the parsers and runs the life-cycle commands; the ones that query a running
service are in controller/service/commands.py. Errors are `InnetError`s: exit status 2 for bad
input, 1 when the service is not running or not answering.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

import httpx

from controller.exceptions import CommandLineError, Interrupted, RunDirError
from controller.flags import number
from controller.rundir import RunDir
from controller.service import commands
from controller.service.client import ServiceClient
from controller.service.exceptions import NotRunning, ServiceFailure, ServiceRefused
from controller.service.options import SERVICE_ERROR, ServiceConfig, service_options
from innet.paths import CHECKOUT
from innet.stopping import StopSignals, held
from innet.vocabulary import Pacing

UP_TIMEOUT_S = 300.0
SERVICE_STOP_S = 8.0  # a service stopped while it builds tears down within this (then killed)
DOWN_TIMEOUT_S = 60.0
MAX_TIMEOUT_S = 86400.0  # a day: longer is a mistake, not a wait
POLL_S = 0.2  # polling interval while the service builds or tears down
SERVICE_COMMANDS = ("net", "status", "schedule", "round", "counters", "shell", "serve", "clean")


def _run_dir_option(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--run-dir",
        type=Path,
        help="the service's run directory (default $INNET_RUN_DIR, /run/innet "
        "for root, else $XDG_RUNTIME_DIR/innet)",
    )


_timeout = number(0, MAX_TIMEOUT_S, above=True)


def add_commands(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    net = sub.add_parser("net", help="build (up) or tear down (down) the emulated WAN")
    net_sub = net.add_subparsers(dest="net_command", required=True)
    up = net_sub.add_parser("up", help="start the testbed service in the background")
    service_options(up)
    up.add_argument(
        "--timeout",
        type=_timeout,
        default=UP_TIMEOUT_S,
        help=f"seconds to wait for the API (default {UP_TIMEOUT_S:g})",
    )
    down = net_sub.add_parser("down", help="stop the service; it tears the testbed down")
    _run_dir_option(down)
    down.add_argument(
        "--timeout",
        type=_timeout,
        default=DOWN_TIMEOUT_S,
        help=f"seconds to wait (default {DOWN_TIMEOUT_S:g})",
    )
    serve = sub.add_parser("serve", help="the testbed service and its REST API, in the foreground")
    service_options(serve)
    _run_dir_option(sub.add_parser("status", help="switches' health, schedule and current round"))
    sched = sub.add_parser("schedule", help="show, set or plan the schedule rounds are played from")
    sched_sub = sched.add_subparsers(dest="schedule_command", required=True)
    _run_dir_option(sched_sub.add_parser("show", help="print the schedule"))
    sset = sched_sub.add_parser("set", help="play the schedule in this YAML file from next round")
    sset.add_argument("file", type=Path)
    _run_dir_option(sset)
    splan = sched_sub.add_parser("plan", help="plan with these parameters and play the best")
    splan.add_argument("--memory", default="64MB")
    splan.add_argument("--update-size", default="1GB")
    splan.add_argument("--bandwidth", default="10Gbps")
    splan.add_argument("--family", action="append", dest="families", metavar="NAME")
    splan.add_argument(
        "--epsilon",
        type=number(0, 1, below=True),
        default=1e-3,
        help="consensus error to reach, in [0, 1) (default 0.001)",
    )
    splan.add_argument("--pacing", type=Pacing.argument, choices=tuple(Pacing), default=Pacing.RATE)
    _run_dir_option(splan)
    rnd = sub.add_parser("round", help="advance to the next round")
    rnd_sub = rnd.add_subparsers(dest="round_command", required=True)
    _run_dir_option(rnd_sub.add_parser("advance", help="install the next round on every switch"))
    counters = sub.add_parser("counters", help="innet statistics and port counters")
    counters.add_argument("city", nargs="?", help="one city (default: every city, totals only)")
    _run_dir_option(counters)
    shell = sub.add_parser("shell", help="p4runtime-shell on a city's switch (read-only)")
    shell.add_argument("city")
    _run_dir_option(shell)
    clean = sub.add_parser("clean", help="stop what innet started and delete its interfaces")
    _run_dir_option(clean)


def run(command: str, args: argparse.Namespace) -> None:
    if command == "net":
        (_net_up if args.net_command == "up" else _net_down)(args)
    elif command == "serve":
        # imported here: the service loads Mininet, gRPC and FastAPI, which no other command needs
        from controller.service.server import run as serve

        serve(args)
    elif command == "clean":
        run_dir = RunDir(args.run_dir)
        done = run_dir.clean()
        print("\n".join(done) if done else f"nothing to clean in {run_dir.path}")
    else:
        commands.run(command, args, ServiceClient(RunDir(args.run_dir)))


def service_argv(args: argparse.Namespace, run_dir: Path) -> list[str]:
    """The background service's command line: the same options, paths made absolute."""
    argv = [sys.executable, "-m", "controller.service"]
    if args.topology is not None:
        argv.append(str(args.topology.resolve()))
    options = {
        "--hosts": args.hosts,
        "--memory": args.memory,
        "--update-size": args.update_size,
        "--bandwidth": args.bandwidth,
        "--scale": args.scale,
        "--shaping": args.shaping,
        "--target": args.target,
        "--port": args.port,
        "--host": args.host,
        "--run-dir": run_dir,
        "--grpc-base-port": args.grpc_base_port,
        "--lanes": args.lanes,
    }
    if args.slots is not None:
        options["--slots"] = args.slots
    if args.token_file is not None:
        options["--token-file"] = args.token_file.resolve()
    if args.cluster is not None:
        options["--cluster"] = args.cluster
        options["--clocks"] = args.clocks
    for flag, value in options.items():
        argv += [flag, str(value)]
    for placed in args.placement or ():
        argv += ["--placement", placed]
    if args.log_console:
        argv.append("--log-console")
    return argv


def _net_up(args: argparse.Namespace) -> None:
    config = ServiceConfig.from_args(args)  # bad options fail here, before anything starts
    if os.geteuid() != 0 and config.cluster is None:  # on a cluster, each machine builds
        raise CommandLineError("innet net up needs root (Mininet builds namespaces and veth pairs)")
    config.spec.shaping_mode()  # the target's tools and the shaping asked for, checked here too
    run_dir = RunDir(args.run_dir)
    busy = run_dir.occupied()
    if busy is not None:
        raise RunDirError(busy)
    run_dir.path.mkdir(parents=True, exist_ok=True, mode=0o700)
    log_path = run_dir.path / "service.log"
    started = time.monotonic()
    with log_path.open("ab") as out:
        log_start = out.tell()  # this attempt's lines start here; earlier ones are not its
        proc = subprocess.Popen(
            service_argv(args, run_dir.path),
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            cwd=CHECKOUT,
        )
    signals = StopSignals().install()
    try:
        reply = _wait_until_up(proc, config, args, started, (log_path, log_start))
    except KeyboardInterrupt:
        with held():
            how = _stop_service(proc, run_dir)
        what = f"interrupted ({signals.name or 'SIGINT'}) while the testbed was built"
        raise Interrupted(f"{what}: {how}") from None
    finally:
        signals.restore()
    took = time.monotonic() - started
    api = f"http://{args.host}:{args.port}"
    print(
        f"innet testbed up in {took:.1f} s: {len(reply.json()['switches'])} switches "
        f"programmed, aggregator memory {args.memory} at scale {config.pool.scale:g} -> slot "
        f"pool {config.pool}; service PID {proc.pid}"
    )
    if config.cluster is not None:
        print(_placed(api, config))
    print(f"API {api} (docs {api}/docs); run directory {run_dir.path}")


def _stop_service(proc: subprocess.Popen[bytes], run_dir: RunDir) -> str:
    """Stop the service `net up` started (it tears its testbed down on SIGTERM); what became
    of it. One that does not end in time is killed and its recorded state cleaned."""
    proc.terminate()
    try:
        proc.wait(SERVICE_STOP_S)
        return f"the service (PID {proc.pid}) stopped and tore its testbed down"
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
        run_dir.clean()
        return f"the service (PID {proc.pid}) was killed and what it recorded cleaned up"


def _wait_until_up(
    proc: subprocess.Popen[bytes],
    config: ServiceConfig,
    args: argparse.Namespace,
    started: float,
    log: tuple[Path, int],
) -> httpx.Response:
    """The service's first 200 from /health; ServiceFailure if it exits, NotRunning if it is
    still not answering at the deadline. `log` is its log file and where this start's lines
    begin in it."""
    log_path = log[0]
    api = f"http://{args.host}:{args.port}"
    headers = {"Authorization": f"Bearer {config.token}"} if config.token else {}
    deadline = started + args.timeout
    while True:
        code = proc.poll()
        if code is not None:
            failed = ServiceRefused if code == ServiceRefused.exit_status else ServiceFailure
            raise failed(
                f"the service exited with status {code}: {_failure(*log)} (log {log_path})"
            )
        try:
            reply = httpx.get(api + "/health", headers=headers, timeout=2.0)
            if reply.status_code == 200:
                return reply
        except httpx.HTTPError:
            pass
        if time.monotonic() > deadline:
            raise NotRunning(
                f"the service (PID {proc.pid}) did not answer within {args.timeout:g} s; see "
                f"{log_path}, stop it with 'innet net down' or 'innet clean'"
            )
        time.sleep(POLL_S)


def _placed(api: str, config: ServiceConfig) -> str:
    """Where the service placed the cities on its cluster, as its /topology says."""
    headers = {"Authorization": f"Bearer {config.token}"} if config.token else {}
    try:
        cluster = httpx.get(api + "/topology", headers=headers, timeout=10.0).json()["cluster"]
        summary = str(cluster["placement_summary"])
    except (httpx.HTTPError, ValueError, KeyError, TypeError):
        summary = "the placement is in GET /topology's cluster"
    return f"cluster {config.cluster}: {summary}"


def _failure(log_path: Path, start: int = 0) -> str:
    """Why the service exited, from what it logged after byte `start`: its one-line error, else
    its last lines."""
    with log_path.open("rb") as log:
        log.seek(start)
        lines = log.read().decode(errors="replace").splitlines()
    errors = [line for line in lines if line.startswith(SERVICE_ERROR)]
    if errors:
        return errors[-1].removeprefix(SERVICE_ERROR)
    return "; ".join(lines[-3:]) or "it logged nothing"


def _net_down(args: argparse.Namespace) -> None:
    service = ServiceClient(RunDir(args.run_dir))
    owner = service.state.owner
    service.request("POST", "/shutdown")
    deadline = time.monotonic() + args.timeout
    while owner.running():
        if time.monotonic() > deadline:
            raise NotRunning(
                f"the service (PID {owner.pid}) is still running after {args.timeout:g} s; "
                "'innet clean' stops it"
            )
        time.sleep(POLL_S)
    print(f"innet testbed down (service PID {owner.pid} exited)")
