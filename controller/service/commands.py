"""The `innet` commands that ask a running service: status, schedule, round, counters, shell."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any

import yaml

from controller.planner.schedule_file import load_schedule
from controller.service.client import ServiceClient
from controller.service.exceptions import RequestRefused
from innet.jsontypes import JSONObject, JSONValue
from innet.units import format_size
from topo.loader import default_wan, load_wan

SHORT_STATS = (
    "contribution",
    "completed",
    "duplicate",
    "slot_conflict",
    "unknown",
    "ipv4_forwarded",
    "dropped_other",
)


def run(command: str, args: argparse.Namespace, service: ServiceClient) -> None:
    if command == "status":
        status(service)
    elif command == "schedule":
        schedule(args, service)
    elif command == "round":
        current = service.request("POST", "/rounds/advance")
        print(
            f"round {current['number']} installed on every switch in "
            f"{current['install_s'] * 1000:.0f} ms: {_groups(current['groups'])}"
        )
        print(f"installed rounds: {', '.join(map(str, current['installed']))}")
    elif command == "counters":
        counters(service, args.city)
    elif command == "shell":
        shell(service, args.city)


def _groups(groups: list[list[str]]) -> str:
    return "  ".join("{" + ", ".join(g) + "}" for g in groups)


def _yes(value: bool | None) -> str:
    return "-" if value is None else ("ok" if value else "DOWN")


def _word(value: str | None) -> str:
    """A health word: "ok" as is, anything else (lost, diverged, timed out) in capitals."""
    return "-" if value is None else (value if value == "ok" else value.upper())


def status(service: ServiceClient) -> None:
    health = service.request("GET", "/health")
    topo = service.request("GET", "/topology")
    current = service.request("GET", "/rounds/current")
    sched = service.request("GET", "/schedule")
    print(
        f"innet service {service.api}: {'healthy' if health['ok'] else 'NOT healthy'}; "
        f"{topo['name']}, {topo['hosts_per_city']} host(s) per city, aggregator memory "
        f"{format_size(topo['memory_bytes'])} ({topo['slots']} slots/bank), "
        f"{topo['shaping']} shaping, scale {topo['scale']:g}"
    )
    print(
        f"{'city':<12} {'switch':<7} {'P4Runtime':<22} {'process':<8} {'stream':<7} "
        f"{'control':<8} {'primary':<8} {'state':<9} write"
    )
    addr = {s["city"]: s["grpc_addr"] for s in topo["switches"]}
    for s in health["switches"]:
        print(
            f"{s['city']:<12} {s['switch']:<7} {addr[s['city']]:<22} "
            f"{_yes(s['process']):<8} {_yes(s['p4runtime']):<7} {_yes(s['control']):<8} "
            f"{_word(s.get('primary')):<8} {_word(s.get('state')):<9} {_word(s.get('write'))}"
        )
    for s in health["switches"]:
        if not s.get("ok", True) and s.get("reason"):
            print(f"  {s['city']}: {s['reason']}")
    print(f"schedule {sched['family']}: {len(sched['rounds'])} round(s) per cycle")
    if current is None:
        print("no round installed yet ('innet round advance' installs the first)")
    else:
        print(f"current round {current['number']}: {_groups(current['groups'])}")


def schedule(args: argparse.Namespace, service: ServiceClient) -> None:
    if args.schedule_command == "show":
        sched = service.request("GET", "/schedule")
    elif args.schedule_command == "set":
        sched = service.request("PUT", "/schedule", _schedule_body(args.file, service))
    else:
        body: JSONObject = {
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


def _schedule_body(path: Path, service: ServiceClient) -> JSONObject:
    """The file checked as `innet plan --schedule` checks it (file:line errors), as JSON."""
    topology = service.state.topology
    wan = default_wan() if topology is None else load_wan(Path(topology))
    sched = load_schedule(path, wan)  # ScheduleFileError names file and line
    rounds: list[JSONValue] = [[[wan.names[i] for i in g] for g in r.groups] for r in sched.rounds]
    name = yaml.safe_load(path.read_text()).get("name", path.stem)
    return {"name": str(name), "rounds": rounds}


def counters(service: ServiceClient, city: str | None) -> None:
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
    cols = [n for n in SHORT_STATS if n in names]
    print(f"{'city':<12} " + " ".join(f"{n[:12]:>12}" for n in cols))
    for c in rows:
        print(f"{c['city']:<12} " + " ".join(f"{c['stats'][n]:>12}" for n in cols))


def _drops(port: dict[str, Any]) -> int:
    drops = port.get("drops", {})
    return sum(drops.values()) if isinstance(drops, dict) else int(drops or 0)


def shell(service: ServiceClient, city: str) -> None:
    """p4runtime-shell on the city's switch, as a second, read-only client (election id 0,1)."""
    topo = service.request("GET", "/topology")
    wanted = city.lower()
    codes = {c["code"].lower(): c["name"] for c in topo["cities"]}
    name = codes.get(wanted, city)
    site = next((s for s in topo["switches"] if s["city"].lower() == name.lower()), None)
    if site is None:
        known = ", ".join(s["city"] for s in topo["switches"])
        raise RequestRefused(f"unknown city {city!r}; known: {known}")
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
