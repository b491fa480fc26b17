"""Check what `make demo` printed and wrote: the comparison table has a row for every (network,
memory, schedule) the scenario plays, and the results folder it names holds summary.csv (the
same rows) and the plots, beside the sweep's plot.

    make demo 2>&1 | tee demo.log
    python scripts/check_demo.py demo.log                        # scenarios/nine-cities.yaml
    python scripts/check_demo.py demo.log --scenario scenarios/memory-sweep.yaml

Prints one line per problem and exits 1, or one line saying what it checked and exits 0. CI runs
it after the demo (.ci/run): the README's first command must keep doing what the README says.
"""

from __future__ import annotations

import argparse
import csv
import re
import sys
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from controller.runner.emulation import Emulation, resolve
from controller.runner.scenario import load_scenario
from innet.paths import DEFAULT_SCENARIO
from innet.units import format_size
from innet.vocabulary import NetworkMode

PNG = b"\x89PNG\r\n\x1a\n"
RUN_PLOTS = ("round-time.png", "loss.png", "predicted-vs-measured.png")
ANY_MEMORY = "any memory"
# a row of the table: network (when several), memory, schedule, then the figures
ROW = re.compile(
    r"^(?:(?P<network>[a-z0-9-]+)\s+)?"
    r"(?P<memory>any memory|\S+ \S*B \(\d+ slots?/bank\))\s+(?P<schedule>\S+)\s"
)
HEADER = re.compile(r"^(network\s+)?memory\s+schedule\s+consensus\b")
TABLE_END = "* reached consensus first"
RESULTS = re.compile(r"^results: (?P<folder>.+)$")


@dataclass(frozen=True, order=True, slots=True)
class Row:
    network: str
    memory: str  # as the table prints it: "any memory", or the size without its slots
    schedule: str


def expected_rows(emulation: Emulation) -> Counter[Row]:
    """What the scenario plays: inna at every memory point, the others once."""
    rows: Counter[Row] = Counter()
    for point in emulation.played:
        for play in point.plays:
            memory = (
                format_size(point.memory_bytes) if play.network == NetworkMode.INNA else ANY_MEMORY
            )
            rows[Row(play.network, memory, play.plan.family)] += 1
    return rows


def table_rows(log: str, networks: Sequence[str]) -> Counter[Row] | None:
    """The rows of the last comparison table in the log (None: no table)."""
    lines = log.splitlines()
    starts = [i for i, line in enumerate(lines) if HEADER.match(line)]
    if not starts:
        return None
    rows: Counter[Row] = Counter()
    for line in lines[starts[-1] + 1 :]:
        if line.startswith(TABLE_END):
            return rows
        match = ROW.match(line)
        if match is None:
            rows[Row("?", "?", line.strip())] += 1  # a line the table should not hold
            continue
        memory = match["memory"]
        if memory != ANY_MEMORY:
            memory = memory.split(" (")[0]
        network = match["network"] or (networks[0] if len(networks) == 1 else "?")
        rows[Row(network, memory, match["schedule"])] += 1
    return None  # the table never ended: cut short


def summary_rows(path: Path) -> Counter[Row]:
    rows: Counter[Row] = Counter()
    with path.open(newline="", encoding="utf-8") as f:
        for row in csv.DictReader(f):
            per_memory = row["per_memory"] == "True"
            memory = format_size(int(row["memory"])) if per_memory else ANY_MEMORY
            rows[Row(row["network"], memory, row["schedule"])] += 1
    return rows


def _differences(what: str, expected: Counter[Row], got: Counter[Row]) -> list[str]:
    problems = []
    for row in sorted((expected - got).elements()):
        problems.append(f"{what}: no row for {row.network}, {row.memory}, {row.schedule}")
    for row in sorted((got - expected).elements()):
        problems.append(f"{what}: a row the scenario does not play: {row}")
    return problems


def _png_problems(path: Path) -> list[str]:
    if not path.is_file():
        return [f"{path}: missing"]
    with path.open("rb") as f:
        if f.read(len(PNG)) != PNG:
            return [f"{path}: not a PNG"]
    return []


def check(log: str, emulation: Emulation, sweep: Path) -> list[str]:
    """Every problem with what the demo printed (`log`) and wrote; [] when there is none."""
    expected = expected_rows(emulation)
    networks = list(dict.fromkeys(row.network for row in expected))
    table = table_rows(log, networks)
    problems = _png_problems(sweep)
    if table is None:
        problems.append("the log holds no whole comparison table")
    else:
        problems += _differences("the table", expected, table)
    folders = [m["folder"] for line in log.splitlines() if (m := RESULTS.match(line))]
    if not folders:
        return [*problems, "the log names no results folder ('results: FOLDER')"]
    folder = Path(folders[-1])
    summary = folder / "summary.csv"
    if not summary.is_file():
        problems.append(f"{summary}: missing")
    else:
        problems += _differences(str(summary), expected, summary_rows(summary))
    for name in RUN_PLOTS:
        problems += _png_problems(folder / name)
    return problems


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Check what make demo printed and wrote.")
    parser.add_argument("log", type=Path, help="what make demo printed (stdout and stderr)")
    parser.add_argument(
        "--scenario",
        type=Path,
        default=DEFAULT_SCENARIO,
        help="the demo's scenario (default scenarios/nine-cities.yaml)",
    )
    parser.add_argument(
        "--sweep",
        type=Path,
        default=Path("results/demo/sweep.png"),
        help="the sweep's plot (default results/demo/sweep.png)",
    )
    args = parser.parse_args(argv)
    emulation = resolve(load_scenario(args.scenario))
    try:
        log = args.log.read_text(encoding="utf-8", errors="replace")
    except OSError as err:
        print(f"check_demo: cannot read {args.log}: {err.strerror}", file=sys.stderr)
        return 2
    problems = check(log, emulation, args.sweep)
    for problem in problems:
        print(f"check_demo: {problem}", file=sys.stderr)
    if problems:
        return 1
    rows = sum(expected_rows(emulation).values())
    print(
        f"check_demo: {args.scenario}: the table and summary.csv have its {rows} rows; "
        f"summary.csv, {len(RUN_PLOTS)} plots and the sweep's are written"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
