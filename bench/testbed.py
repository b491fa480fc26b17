"""Benchmark the innet service: `innet net up` to all switches programmed, and per-round
installation time (median over several `round advance`s). Needs root.

    sudo .venv/bin/python bench/testbed.py [--hosts 1] [--advances 12] [--port 8799]

Uses a temporary run directory and stops everything it started (`innet net down`, then
`innet clean` for anything left).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

REPO = Path(__file__).resolve().parents[1]
MAIN = "import sys; from innet_cli import main; sys.exit(main())"


def innet(run_dir: Path, *args: str) -> str:
    env = {**os.environ, "INNET_RUN_DIR": str(run_dir)}
    done = subprocess.run(
        [sys.executable, "-c", MAIN, *args],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        raise SystemExit(f"innet {' '.join(args)} failed: {done.stderr.strip()}")
    return done.stdout


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hosts", type=int, default=1)
    parser.add_argument("--advances", type=int, default=12)
    parser.add_argument("--port", type=int, default=8799)
    parser.add_argument("--grpc-base-port", type=int, default=20500)
    args = parser.parse_args()
    if os.geteuid() != 0:
        raise SystemExit("bench/testbed.py needs root (Mininet)")
    with tempfile.TemporaryDirectory(prefix="innet-bench-") as tmp:
        run_dir = Path(tmp)
        began = time.monotonic()
        try:
            innet(
                run_dir,
                "net",
                "up",
                "--hosts",
                str(args.hosts),
                "--port",
                str(args.port),
                "--grpc-base-port",
                str(args.grpc_base_port),
                "--slots",
                "64",
            )
            up_s = time.monotonic() - began
            api = f"http://127.0.0.1:{args.port}"
            server, wall = [], []
            for _ in range(args.advances):
                t0 = time.monotonic()
                reply = httpx.post(api + "/rounds/advance", timeout=60).json()
                wall.append(time.monotonic() - t0)
                server.append(reply["install_s"])
            t0 = time.monotonic()
            innet(run_dir, "net", "down")
            down_s = time.monotonic() - t0
        finally:
            innet(run_dir, "clean")
    print(f"nine cities x {args.hosts} host(s), p4switch, switch shaping")
    print(f"innet net up -> all 9 switches programmed, API answering: {up_s:.2f} s")
    print(f"round advance on 9 switches (all-or-none), median of {args.advances}:")
    print(
        f"  installing the round (service side): {statistics.median(server) * 1000:.1f} ms "
        f"(min {min(server) * 1000:.1f}, max {max(server) * 1000:.1f})"
    )
    print(
        "  whole advance over REST (install + retire the round before the previous): "
        f"{statistics.median(wall) * 1000:.1f} ms"
    )
    print(f"innet net down: {down_s:.2f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
