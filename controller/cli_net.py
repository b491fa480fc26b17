"""The `innet` commands that drive a running testbed through its service (docs/service.md).

    innet net up [TOPOLOGY] --hosts 1 --port 8700    # background service; returns once it answers
    innet status | schedule show|set FILE|plan | round advance | counters [CITY] | shell CITY
    innet net down                                    # the service tears the testbed down
    innet serve ...                                   # the same service in the foreground
    innet clean                                       # undo what a run left (recorded PIDs only)

Exit status 2 for bad input, 1 when the service is not running (or not answering).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import yaml

from controller.rundir import STATE_FILE, clean, default_run_dir, read_state, same_process
from topo.units import format_size

UP_TIMEOUT_S = 300.0
DOWN_TIMEOUT_S = 60.0
SERVICE_COMMANDS = ("net", "status", "schedule", "round", "counters", "shell", "serve", "clean")


class NotRunning(Exception):
    """No service answers: exit status 1."""


class BadInput(Exception):
    """The service refused the request (4xx) or the input is wrong: exit status 2."""


def add_commands(sub: argparse._SubParsersAction) -> None:
    from controller.service import service_options

    def run_dir_option(p: argparse.ArgumentParser) -> None:
        p.add_argument(
            "--run-dir",
            type=Path,
            help="the service's run directory (default $INNET_RUN_DIR, /run/innet "
            "for root, else $XDG_RUNTIME_DIR/innet)",
        )

    net = sub.add_parser("net", help="build (up) or tear down (down) the emulated WAN")
    net_sub = net.add_subparsers(dest="net_command", required=True)
    up = net_sub.add_parser("up", help="start the testbed service in the background")
    service_options(up)
    up.add_argument(
        "--timeout",
        type=float,
        default=UP_TIMEOUT_S,
        help=f"seconds to wait for the API (default {UP_TIMEOUT_S:g})",
    )
    down = net_sub.add_parser("down", help="stop the service; it tears the testbed down")
    run_dir_option(down)
    down.add_argument("--timeout", type=float, default=DOWN_TIMEOUT_S)
    serve = sub.add_parser("serve", help="the testbed service and its REST API, in the foreground")
    service_options(serve)
    status = sub.add_parser("status", help="switches' health, schedule and current round")
    run_dir_option(status)
    sched = sub.add_parser("schedule", help="show, set or plan the schedule rounds are played from")
    sched_sub = sched.add_subparsers(dest="schedule_command", required=True)
    run_dir_option(sched_sub.add_parser("show", help="print the schedule"))
    sset = sched_sub.add_parser("set", help="play the schedule in this YAML file from next round")
    sset.add_argument("file", type=Path)
    run_dir_option(sset)
    splan = sched_sub.add_parser("plan", help="plan with these parameters and play the best")
    splan.add_argument("--memory", default="64MB")
    splan.add_argument("--update-size", default="1GB")
    splan.add_argument("--bandwidth", default="10Gbps")
    splan.add_argument("--family", action="append", dest="families", metavar="NAME")
    splan.add_argument("--epsilon", type=float, default=1e-3)
    splan.add_argument("--pacing", choices=["rate", "window"], default="rate")
    run_dir_option(splan)
    rnd = sub.add_parser("round", help="advance to the next round")
    rnd_sub = rnd.add_subparsers(dest="round_command", required=True)
    run_dir_option(rnd_sub.add_parser("advance", help="install the next round on every switch"))
    counters = sub.add_parser("counters", help="innet statistics and port counters")
    counters.add_argument("city", nargs="?", help="one city (default: every city, totals only)")
    run_dir_option(counters)
    shell = sub.add_parser("shell", help="p4runtime-shell on a city's switch (read-only)")
    shell.add_argument("city")
    run_dir_option(shell)
    cl = sub.add_parser("clean", help="stop what innet started and delete its interfaces")
    run_dir_option(cl)


# --- talking to the service --------------------------------------------------------------------


class Service:
    """The running service as its state file describes it."""

    def __init__(self, run_dir: Path | None) -> None:
        self.run_dir = (run_dir or default_run_dir()).resolve()
        state = read_state(self.run_dir)
        if state is None or not same_process(state.get("service", {"pid": -1})):
            hint = "start it with 'innet net up'"
            if state is not None:
                hint += " (a previous run left state: 'innet clean' first)"
            raise NotRunning(f"no innet service runs with run directory {self.run_dir}: {hint}")
        self.state = state
        self.api = state["api"]
        token_file = state.get("token_file")
        self.headers = {}
        if token_file:
            self.headers["Authorization"] = f"Bearer {Path(token_file).read_text().strip()}"

    def request(self, method: str, path: str, body: Any = None, timeout: float = 120.0) -> Any:
        import httpx

        try:
            reply = httpx.request(
                method, self.api + path, json=body, headers=self.headers, timeout=timeout
            )
        except httpx.HTTPError as err:
            raise NotRunning(
                f"the innet service at {self.api} does not answer ({err}); "
                f"see its log in {self.run_dir / 'service.log'}"
            ) from None
        if reply.status_code == 422:
            raise BadInput(_validation_text(reply.json()))
        if reply.status_code >= 400:
            detail = reply.json().get("detail", reply.text) if _is_json(reply) else reply.text
            raise (BadInput if reply.status_code < 500 else NotRunning)(
                f"{method} {path}: {reply.status_code}: {detail}"
            )
        return reply.json()


def _is_json(reply: Any) -> bool:
    return reply.headers.get("content-type", "").startswith("application/json")


def _validation_text(body: dict[str, Any]) -> str:
    errors = body.get("detail", [])
    if not isinstance(errors, list):
        return str(errors)
    parts = []
    for e in errors:
        loc = [str(x) for x in e.get("loc", []) if x != "body"]
        parts.append(f"{'.'.join(loc) or 'body'}: {e.get('msg')}")
    return "; ".join(parts)


# --- commands ----------------------------------------------------------------------------------


def run(command: str, args: argparse.Namespace) -> None:
    if command == "net":
        (_net_up if args.net_command == "up" else _net_down)(args)
    elif command == "serve":
        from controller.service import run as serve

        serve(args)
    elif command == "clean":
        run_dir = (args.run_dir or default_run_dir()).resolve()
        done = clean(run_dir)
        print("\n".join(done) if done else f"nothing to clean in {run_dir}")
    elif command == "status":
        _status(Service(args.run_dir))
    elif command == "schedule":
        _schedule(args)
    elif command == "round":
        current = Service(args.run_dir).request("POST", "/rounds/advance")
        print(
            f"round {current['number']} installed on every switch in "
            f"{current['install_s'] * 1000:.0f} ms: {_groups(current['groups'])}"
        )
        print(f"installed rounds: {', '.join(map(str, current['installed']))}")
    elif command == "counters":
        _counters(Service(args.run_dir), args.city)
    elif command == "shell":
        _shell(Service(args.run_dir), args.city)


def _service_argv(args: argparse.Namespace, run_dir: Path) -> list[str]:
    argv = [sys.executable, "-m", "controller.service"]
    if args.topology is not None:
        argv.append(str(args.topology.resolve()))
    argv += [
        "--hosts",
        str(args.hosts),
        "--memory",
        args.memory,
        "--update-size",
        args.update_size,
        "--bandwidth",
        args.bandwidth,
        "--scale",
        str(args.scale),
        "--shaping",
        args.shaping,
        "--target",
        args.target,
        "--port",
        str(args.port),
        "--host",
        args.host,
        "--run-dir",
        str(run_dir),
        "--grpc-base-port",
        str(args.grpc_base_port),
    ]
    if args.slots is not None:
        argv += ["--slots", str(args.slots)]
    if args.log_console:
        argv.append("--log-console")
    if args.token_file is not None:
        argv += ["--token-file", str(args.token_file.resolve())]
    return argv


def _net_up(args: argparse.Namespace) -> None:
    import httpx

    from topo.loader import load_wan

    if args.topology is not None:
        load_wan(args.topology)  # a bad topology file fails here, before anything starts
    if os.geteuid() != 0:
        raise BadInput("innet net up needs root (Mininet builds namespaces and veth pairs)")
    run_dir = (args.run_dir or default_run_dir()).resolve()
    state = read_state(run_dir)
    if state is not None:
        if same_process(state.get("service", {"pid": -1})):
            raise BadInput(f"an innet service already runs at {state['api']}: 'innet net down'")
        raise BadInput(f"{run_dir / STATE_FILE} is left from an earlier run: 'innet clean' first")
    run_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
    log_path = run_dir / "service.log"
    started = time.monotonic()
    with log_path.open("ab") as out:
        proc = subprocess.Popen(
            _service_argv(args, run_dir),
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            cwd=Path(__file__).resolve().parents[1],
        )
    api = f"http://{args.host}:{args.port}"
    token = args.token_file.read_text().strip() if args.token_file else None
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    deadline = started + args.timeout
    while True:
        code = proc.poll()
        if code is not None:
            tail = "; ".join(log_path.read_text(errors="replace").splitlines()[-3:])
            raise BadInput(f"the service exited with status {code}: {tail} (log {log_path})")
        try:
            reply = httpx.get(api + "/health", headers=headers, timeout=2.0)
            if reply.status_code == 200:
                break
        except httpx.HTTPError:
            pass
        if time.monotonic() > deadline:
            raise NotRunning(
                f"the service (PID {proc.pid}) did not answer within "
                f"{args.timeout:g} s; see {log_path}, stop it with "
                "'innet net down' or 'innet clean'"
            )
        time.sleep(0.2)  # polling interval while the testbed builds
    health = reply.json()
    took = time.monotonic() - started
    print(
        f"innet testbed up in {took:.1f} s: {len(health['switches'])} switches programmed, "
        f"service PID {proc.pid}"
    )
    print(f"API {api} (docs {api}/docs); run directory {run_dir}")


def _net_down(args: argparse.Namespace) -> None:
    service = Service(args.run_dir)
    pid = int(service.state["service"]["pid"])
    service.request("POST", "/shutdown")
    deadline = time.monotonic() + args.timeout
    while same_process(service.state["service"]):
        if time.monotonic() > deadline:
            raise NotRunning(
                f"the service (PID {pid}) is still running after {args.timeout:g} s;"
                " 'innet clean' stops it"
            )
        time.sleep(0.1)  # polling interval while the testbed is torn down
    print(f"innet testbed down (service PID {pid} exited)")


def _groups(groups: list[list[str]]) -> str:
    return "  ".join("{" + ", ".join(g) + "}" for g in groups)


def _status(service: Service) -> None:
    health = service.request("GET", "/health")
    topo = service.request("GET", "/topology")
    current = service.request("GET", "/rounds/current")
    sched = service.request("GET", "/schedule")
    print(
        f"innet service {service.api}: {'healthy' if health['ok'] else 'NOT healthy'}; "
        f"{topo['name']}, {topo['hosts_per_city']} host(s) per city, aggregator memory "
        f"{format_size(topo['memory_bytes'])} ({topo['slots']} slots/bank), "
        f"{topo.get('shaping', '?')} shaping, scale {topo.get('scale', '?')}"
    )
    print(f"{'city':<12} {'switch':<7} {'P4Runtime':<22} {'process':<8} {'stream':<7} control")
    addr = {s["city"]: s["grpc_addr"] for s in topo["switches"]}
    for s in health["switches"]:
        print(
            f"{s['city']:<12} {s['switch']:<7} {addr[s['city']]:<22} "
            f"{_yes(s['process']):<8} {_yes(s['p4runtime']):<7} {_yes(s['control'])}"
        )
    print(f"schedule {sched['family']}: {len(sched['rounds'])} round(s) per cycle")
    if current is None:
        print("no round installed yet ('innet round advance' installs the first)")
    else:
        print(f"current round {current['number']}: {_groups(current['groups'])}")


def _yes(value: bool | None) -> str:
    return "-" if value is None else ("ok" if value else "DOWN")


def _schedule(args: argparse.Namespace) -> None:
    service = Service(args.run_dir)
    if args.schedule_command == "show":
        sched = service.request("GET", "/schedule")
    elif args.schedule_command == "set":
        sched = service.request("PUT", "/schedule", _schedule_body(args.file, service))
    else:
        body = {
            "memory": args.memory,
            "update_size": args.update_size,
            "bandwidth": args.bandwidth,
            "families": args.families,
            "epsilon": args.epsilon,
            "pacing": args.pacing,
        }
        sched = service.request("POST", "/schedule/plan", body)
        for f in sched["plan"]:
            mark = "*" if f["family"] == sched["family"] else " "
            print(f"{mark} {f['family']:<20} {f['time_s']:10.3f} s  rounds {f['rounds']}")
    print(f"schedule {sched['family']} (from round {sched['cycle_start']}):")
    for i, rnd in enumerate(sched["rounds"]):
        print(f"  round {i}: {_groups(rnd)}")


def _schedule_body(path: Path, service: Service) -> dict[str, Any]:
    """The file checked as `innet plan --schedule` checks it (file:line errors), as JSON."""
    from controller.planner.schedule_file import load_schedule
    from topo.loader import default_wan, load_wan

    topology = service.state.get("topology")
    wan = default_wan() if topology is None else load_wan(Path(topology))
    schedule = load_schedule(path, wan)  # ScheduleFileError names file and line
    rounds = [[[wan.names[i] for i in g] for g in r.groups] for r in schedule.rounds]
    name = yaml.safe_load(path.read_text()).get("name", path.stem)
    return {"name": str(name), "rounds": rounds}


def _counters(service: Service, city: str | None) -> None:
    if city is not None:
        c = service.request("GET", f"/counters/{city}")
        print(f"{c['city']} ({c['switch']}): innet statistics")
        for name, value in c["stats"].items():
            print(f"  {name:<16} {value:>12}")
        if c.get("ports"):
            print(f"{'port':>4} {'interface':<12} {'rx':>10} {'tx':>10} {'drops':>8}")
            for port, p in sorted(c["ports"].items(), key=lambda kv: int(kv[0])):
                print(
                    f"{port:>4} {p.get('interface', ''):<12} {p.get('rx_packets', 0):>10} "
                    f"{p.get('tx_packets', 0):>10} {_drops(p):>8}"
                )
        return
    rows = service.request("GET", "/counters")
    names = list(rows[0]["stats"]) if rows else []
    short = [
        "contribution",
        "completed",
        "duplicate",
        "slot_conflict",
        "unknown",
        "ipv4_forwarded",
        "dropped_other",
    ]
    cols = [n for n in short if n in names]
    print(f"{'city':<12} " + " ".join(f"{n[:12]:>12}" for n in cols))
    for c in rows:
        print(f"{c['city']:<12} " + " ".join(f"{c['stats'][n]:>12}" for n in cols))


def _drops(port: dict[str, Any]) -> int:
    drops = port.get("drops", {})
    return sum(drops.values()) if isinstance(drops, dict) else int(drops or 0)


def _shell(service: Service, city: str) -> None:
    topo = service.request("GET", "/topology")
    wanted = city.lower()
    codes = {c["code"].lower(): c["name"] for c in topo["cities"]}
    name = codes.get(wanted, city)
    site = next((s for s in topo["switches"] if s["city"].lower() == name.lower()), None)
    if site is None:
        known = ", ".join(s["city"] for s in topo["switches"])
        raise BadInput(f"unknown city {city!r}; known: {known}")
    argv = [
        sys.executable,
        "-m",
        "p4runtime_sh",
        "--grpc-addr",
        site["grpc_addr"],
        "--device-id",
        str(site["device_id"]),
        "--election-id",
        "0,1",
    ]
    print(
        f"p4runtime-shell on {site['city']} ({site['grpc_addr']}), read-only: the testbed's "
        "controller stays primary",
        flush=True,
    )
    os.execv(sys.executable, argv)
