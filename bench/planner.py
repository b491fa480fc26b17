"""Planner benchmarks: print figures, with their goals and the figures they are measured against.

- `innet plan sweep` over 24 memory points on the nine cities (goal: under 2 s), end to end as a
  user runs it (a new process, plot included) and in process.
- The 3x3 grid optimiser against the exhaustive search it must agree with, on the nine cities.
- The three networks (plain, multicast, inna) on the nine cities, 1 GB at 10 Gb/s, 25.6 MB and
  1.6 GB of aggregator memory (goal: all six plans under 1 s).
- `Planner(synthetic_wan(n)).plan(...)` on 64, 256 and 1,000 synthetic islands (goals: 256
  under 30 s, 1,000 under 5 minutes), beside the times recorded before the planner was made
  faster (the code that took them is gone, so they are quoted, not measured again), with the
  local search's gain over its starting assignment on 64 islands.

Run with `make bench` (`--sizes 64,256` to leave out the largest). Figures vary with the
machine's load: wall-clock and CPU time are both printed. They are not pass/fail tests.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import TypeVar

from controller.planner.cost import CostParams
from controller.planner.optimise import Plan, Planner, best_grid, exhaustive_grid
from controller.planner.schedule import grid_rounds
from controller.planner.sweep import memory_points, sweep
from innet.vocabulary import NetworkMode
from topo.loader import default_wan
from topo.synthetic import synthetic_wan

T = TypeVar("T")

GB, MB = 10**9, 10**6
# Planner(synthetic_wan(n)).plan(...), all default families, inna, measured on a loaded machine
# before this benchmark's figures (about n^2.5)
RECORDED_S = {64: 15.0, 128: 85.0, 256: 245.0}
GOAL_S = {256: 30.0, 1000: 300.0}


def timed(fn: Callable[[], T]) -> tuple[float, T]:
    start = time.perf_counter()
    out = fn()
    return time.perf_counter() - start, out


def cpu_timed(fn: Callable[[], T]) -> tuple[float, float, T]:
    """(wall-clock seconds, CPU seconds of this process, result)."""
    cpu = time.process_time()
    wall, out = timed(fn)
    return wall, time.process_time() - cpu, out


def bench_sweep() -> None:
    wan = default_wan()
    base = CostParams(GB, MB, 10e9)
    points = memory_points(MB, 8 * GB, 24)
    secs, result = timed(lambda: sweep(Planner(wan), base, points))
    innet = Path(sys.executable).with_name("innet")
    with tempfile.TemporaryDirectory() as tmp:
        argv = [str(innet), "plan", "sweep", "--memory", "1MB..8GB", "--plot", f"{tmp}/s.png"]
        e2e, done = timed(lambda: subprocess.run(argv, capture_output=True, text=True, check=True))
    cross = ", ".join(f"{c.memory_bytes / MB:.1f} MB" for c in result.crossovers)
    print("sweep, nine cities, 24 memory points (goal < 2 s)")
    print(f"  in process:              {secs:6.2f} s   (crossover at {cross})")
    print(f"  innet plan sweep, e2e:   {e2e:6.2f} s   (new process, plot written)")
    assert "crossover" in done.stdout


def bench_exhaustive() -> None:
    wan = default_wan()
    print("3x3 grid assignment, nine cities: optimiser vs exhaustive search (10,080 grids)")
    for memory in (4 * MB, 64 * MB, 8 * GB):
        model = Planner(wan).model(CostParams(GB, memory, 10e9))
        fast, a = timed(partial(best_grid, model, 3))
        slow, b = timed(partial(exhaustive_grid, model, 3))
        print(
            f"  memory {memory / MB:6.0f} MB: optimiser {fast * 1e3:7.1f} ms, exhaustive "
            f"{slow * 1e3:7.1f} ms ({slow / fast:5.1f}x), same answer: {a == b}"
        )


def bench_networks() -> None:
    wan = default_wan()
    print("nine cities, every network, 1 GB at 10 Gb/s (goal: all six plans < 1 s)")
    planner, total = Planner(wan), 0.0
    for network in (NetworkMode.PLAIN, NetworkMode.MULTICAST, NetworkMode.INNA):
        for memory in (25_600_000, 1_600_000_000):
            params = CostParams(GB, memory, 10e9, network=network)
            secs, plan = timed(partial(planner.plan, params))
            total += secs
            print(
                f"  {network:9s} {memory / MB:7.1f} MB: {secs * 1e3:6.1f} ms; best "
                f"{plan.best.family}, {plan.best.time_s:.2f} s to consensus"
            )
    print(f"  all six: {total:.2f} s (one planner, sharing what does not depend on sizes)")


def bench_synthetic(sizes: list[int]) -> None:
    print("Planner(synthetic_wan(n)).plan(...), all families, 1 GB, 64 MB, 10 Gb/s")
    recorded = ", ".join(f"{n} islands {s:.0f} s" for n, s in RECORDED_S.items())
    print(f"  before (recorded earlier, that code is gone): {recorded}")
    for n in sizes:
        build, wan = timed(partial(synthetic_wan, n, seed=0))
        for network in (NetworkMode.INNA, NetworkMode.PLAIN) if n == 256 else (NetworkMode.INNA,):
            planner = Planner(wan)
            params = CostParams(GB, 64 * MB, 10e9, network=network)
            wall, cpu, plan = cpu_timed(partial(planner.plan, params))
            inna = network == NetworkMode.INNA
            goal = f" (goal < {GOAL_S[n]:.0f} s)" if n in GOAL_S and inna else ""
            was = f", {RECORDED_S[n]:.0f} s before" if n in RECORDED_S and inna else ""
            print(
                f"  {n:5d} islands, {network:5s}: plan {wall:6.1f} s wall, {cpu:6.1f} s CPU"
                f"{goal}; WAN built in {build:.1f} s{was}; best {plan.best.family}, "
                f"{plan.best.time_s:.2f} s to consensus"
            )
            if n == 64 and network == NetworkMode.INNA:
                local_search_gain(planner, params, plan)


def local_search_gain(planner: Planner, params: CostParams, plan: Plan) -> None:
    model = planner.model(params)
    for k, dims in ((4, (4, 4, 4)), (8, (8, 8))):
        start = sum(
            model.round_cost(r).time_s for r in grid_rounds(planner.tour(), dims)[: len(dims)]
        )
        found = plan.family(f"cliques-{k}").time_s
        print(f"    cliques-{k}: start {start:.3f} s -> local search {found:.3f} s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="64,256,1000", help="synthetic WAN sizes, e.g. 64,256")
    sizes = [int(s) for s in parser.parse_args().sizes.split(",") if s]
    bench_sweep()
    bench_exhaustive()
    bench_networks()
    bench_synthetic(sizes)


if __name__ == "__main__":
    main()
