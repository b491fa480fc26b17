"""Planner benchmarks: print figures, side by side with a reference measured in the same run.

- `innet plan sweep` over 24 memory points on the nine cities (goal: under 2 s), end to end as a
  user runs it (a new process, plot included) and in process.
- The 3x3 grid optimiser against the exhaustive search it must agree with, on the nine cities.
- The optimiser on 64 synthetic islands (goal: under 30 s), with the local search's gain over its
  starting assignment.

Run with `make bench`. Figures vary with the machine's load; they are not pass/fail tests.
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from controller.planner.cost import CostParams
from controller.planner.optimise import Planner, best_grid, exhaustive_grid
from controller.planner.schedule import grid_rounds
from controller.planner.sweep import memory_points, sweep
from topo.loader import default_wan
from topo.synthetic import synthetic_wan

T = TypeVar("T")

GB, MB = 10**9, 10**6


def timed(fn: Callable[[], T]) -> tuple[float, T]:
    start = time.perf_counter()
    out = fn()
    return time.perf_counter() - start, out


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
        fast, a = timed(lambda m=model: best_grid(m, 3))
        slow, b = timed(lambda m=model: exhaustive_grid(m, 3))
        print(
            f"  memory {memory / MB:6.0f} MB: optimiser {fast * 1e3:7.1f} ms, exhaustive "
            f"{slow * 1e3:7.1f} ms ({slow / fast:5.1f}x), same answer: {a == b}"
        )


def bench_64() -> None:
    wan = synthetic_wan(64, seed=0)
    planner = Planner(wan)
    params = CostParams(GB, 64 * MB, 10e9)
    secs, plan = timed(lambda: planner.plan(params))
    print("optimiser, 64 synthetic islands, all families (goal < 30 s)")
    print(f"  total: {secs:.2f} s; best {plan.best.family}, {plan.best.time_s:.2f} s to consensus")
    model = planner.model(params)
    for k, dims in ((4, (4, 4, 4)), (8, (8, 8))):
        start = sum(
            model.round_cost(r).time_s for r in grid_rounds(planner.tour(), dims)[: len(dims)]
        )
        found = plan.family(f"cliques-{k}").time_s
        print(f"  cliques-{k}: start {start:.3f} s -> local search {found:.3f} s")


if __name__ == "__main__":
    bench_sweep()
    bench_exhaustive()
    bench_64()
