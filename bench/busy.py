"""Benchmark: the demo scenario beside 0, 1 and 2 busy loops. Needs root.

    sudo .venv/bin/python bench/busy.py [--hogs 0,1,2] [--scenario scenarios/nine-cities.yaml]
                                        [--out results/bench/busy]

For each number of busy loops (the other jobs of a shared machine) it runs the scenario with
`innet run` and prints: the machine check's verdict, how many rounds were within 20% of the
planner's prediction and unflagged, how many were flagged and why (controller/runner/flags.py),
and the table's winners (the starred row at each memory point, or none where the fastest row
was flagged). The runs are sequential; the loops are stopped by PID after each.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from innet.cpuload import CpuHogs  # noqa: E402

MAIN = "import sys; from innet_cli import main; sys.exit(main())"
TOLERANCE = 0.20


def run_beside(hogs: int, scenario: Path, out: Path, port: int) -> dict[str, object]:
    """One `innet run` beside `hogs` busy loops; what its results say."""
    argv = [
        sys.executable,
        "-c",
        MAIN,
        "run",
        str(scenario),
        "--out",
        str(out),
        "--no-progress",
        "--grpc-base-port",
        str(port),
        "--calibration",
        "warn",
    ]
    with CpuHogs(hogs):
        done = subprocess.run(argv, cwd=REPO, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"innet run beside {hogs} busy loop(s) failed: {done.stderr.strip()}")
    rounds = [json.loads(line) for line in (out / "rounds.jsonl").read_text().splitlines()]
    finished = [r for r in rounds if r["status"] == "ok"]
    on_time = [
        r
        for r in finished
        if not r["flags"] and abs(r["time_s"] / r["predicted_s"] - 1) < TOLERANCE
    ]
    flags = Counter(name for r in finished for name in r["flags"])
    table = done.stdout.split("network  memory", 1)[-1].splitlines()
    winners = [" ".join(line.split()[:6]) for line in table if " * " in line]
    calibration = json.loads((out / "calibration.json").read_text())
    return {
        "hogs": hogs,
        "rounds": len(rounds),
        "failed": len(rounds) - len(finished),
        "on_time": len(on_time),
        "unflagged_off": sum(1 for r in finished if not r["flags"]) - len(on_time),
        "flagged": sum(1 for r in finished if r["flags"]),
        "flags": dict(flags),
        "winners": winners,
        "verdict": calibration["verdict"],
        "calibration": calibration.get("summary", ""),
        "worst": max((r["time_s"] / r["predicted_s"] for r in finished), default=None),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hogs", default="0,1,2", help="busy loops per run, comma-separated")
    parser.add_argument("--scenario", type=Path, default=REPO / "scenarios" / "nine-cities.yaml")
    parser.add_argument("--out", type=Path, default=REPO / "results" / "bench" / "busy")
    parser.add_argument("--grpc-base-port", type=int, default=20700)
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = parser.parse_args()
    try:
        counts = [int(n) for n in args.hogs.split(",")]
    except ValueError:
        parser.error(f"--hogs {args.hogs!r}: write whole numbers separated by commas, e.g. 0,1,2")
    if any(n < 0 for n in counts):
        parser.error("--hogs: a number of busy loops is not negative")
    args.out.mkdir(parents=True, exist_ok=True)
    results = []
    for n in counts:
        out = args.out / f"hogs-{n}"
        if out.exists():
            parser.error(f"{out} exists: give another --out")
        results.append(run_beside(n, args.scenario, out, args.grpc_base_port))
        r = results[-1]
        print(
            f"{n} busy loop(s): calibration {r['verdict']}; {r['on_time']} of {r['rounds']} "
            f"rounds within {TOLERANCE:.0%} and unflagged, {r['flagged']} flagged "
            f"{r['flags'] or ''}, {r['unflagged_off']} unflagged but off, {r['failed']} "
            f"failed; worst {r['worst']:.2f}x",
            flush=True,
        )
        print(f"  {r['calibration']}")
        for line in r["winners"] or ["(no winner starred)"]:
            print(f"  winner: {line}")
    if args.json:
        print(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
