"""What bench/forwarding.py measures, which rows can run here, and how the figures read.

Each `ForwardingRow` is one row: a forwarder command to run in the switch namespace (None: no
forwarder, the sender into a sink that only counts), or the reason it cannot run here. A program
runs in the `p4switch` command, on each back end and in each I/O loop
(`bench.p4switch_forwarder`), programmed over P4Runtime as BMv2 is; BMv2 is looked for as
`topo.bmv2` looks for it, its default build and its build for speed each a row
(`bench.bmv2_forwarder`). The C port swap in the native I/O loop and a `--processor` are no P4
program, so no command runs them: p4switch's own benchmark does (p4switch/bench/io_loop.py).
Ratios compare each row with that C port swap (the same batched I/O, no P4: the limit of the
veth path for that loop) and, for a program, with the same program on the python back end in
the python I/O loop; a BMv2 row also gives how many times faster p4switch's native back end in
its native loop forwards the same program:

    >>> rows = [{"io": "C", "delivered": {"value": 800_000.0}}]
    >>> rows.append({"program": "l2", "pipeline": "python", "io": "python",
    ...              "delivered": {"value": 40_000.0}})
    >>> found = ratios({"program": "l2", "pipeline": "native", "io": "native",
    ...                 "delivered": {"value": 400_000.0}}, rows)
    >>> {name: figure["value"] for name, figure in found.items()}
    {'of_c_forwarder': 0.5, 'of_python_backend': 10.0}
    >>> rows.append({"program": "l2", "pipeline": "native", "io": "native",
    ...              "delivered": {"value": 400_000.0}})
    >>> found = ratios({"program": "l2", "pipeline": "bmv2", "io": "bmv2",
    ...                 "delivered": {"value": 25_000.0}}, rows)
    >>> found["p4switch_native_is"]["value"]
    16.0
"""

from __future__ import annotations

import functools
import os
import platform
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from p4switch import EXAMPLES, InProcessSwitch, P4SwitchError, compile_file

from bench import bmv2_forwarder
from bench.native_tools import AGG_BYTES

PROGRAMS = ("l2", "agg32")
AGG_PAYLOAD = AGG_BYTES
HERE = Path(__file__).resolve().parent
FORWARDING = HERE / "forwarding.py"
BMV2_FORWARDER = HERE / "bmv2_forwarder.py"
P4SWITCH_FORWARDER = HERE / "p4switch_forwarder.py"
IO_LOOP = HERE.parent / "p4switch" / "bench" / "io_loop.py"  # p4switch's own benchmark
PORTSWAP_C = "bench.processors:portswap_c"  # a processor of p4switch's bench
PORTS = ("s1-eth1", "s1-eth2")
UNIT = "frames/s"


@dataclass(frozen=True)
class ForwardingRow:
    """One row of the table: what forwards the frames, and why it cannot run here (if so)."""

    label: str
    program: str | None  # a --program, or None for the references
    pipeline: str | None  # "native", "python", "bmv2", or None (no P4 program)
    io: str  # "native", "python", "C" (the reference), "C-recvmmsg", or "sink"
    command: tuple[str, ...] | None  # run in the switch namespace; None: no forwarder
    unavailable: str | None = None

    def describe(self) -> dict[str, Any]:
        row: dict[str, Any] = {"label": self.label, "program": self.program}
        row |= {"pipeline": self.pipeline, "io": self.io}
        if self.unavailable is not None:
            row["unavailable"] = self.unavailable
        return row


def switch_command(
    program: str, backend: str, io: str, shapes: Sequence[str] = ()
) -> tuple[str, ...]:
    """The p4switch command running `program` on the two ports (`bench.p4switch_forwarder`)."""
    shaped = tuple(f"--shape={shape}" for shape in shapes)
    return (sys.executable, str(P4SWITCH_FORWARDER), program, backend, io, *PORTS, *shaped)


def loop_command(io: str, processor: str) -> tuple[str, ...]:
    """p4switch's `io` loop around `processor` (module:callable), no P4 program: its bench's
    io_loop.py, which imports a processor beside it or from the working directory."""
    return (sys.executable, str(IO_LOOP), *PORTS, io, "--processor", processor)


@functools.cache
def native_backend_unavailable() -> str | None:
    """Why p4switch's native back end cannot run here (its own words), or None."""
    try:
        InProcessSwitch(compile_file(EXAMPLES / "l2.p4"), backend="native")
    except (P4SwitchError, OSError) as err:
        return f"p4switch's native back end cannot run here: {err}"
    return None


def bmv2_rows(program: str) -> list[ForwardingRow]:
    """`program` on BMv2's simple_switch_grpc, its default build and its build for speed."""
    return [
        ForwardingRow(
            f"{program}: BMv2 simple_switch_grpc, {build} build",
            program,
            "bmv2",
            "bmv2",
            (sys.executable, str(BMV2_FORWARDER), program, build, *PORTS),
            bmv2_forwarder.unavailable(build),
        )
        for build in bmv2_forwarder.BUILDS
    ]


def planned(
    programs: Sequence[str], processors: Sequence[str], forwarder: Path
) -> list[ForwardingRow]:
    """The rows in the order they are measured (references first, so ratios can be given)."""
    native = native_backend_unavailable()
    planned_rows = [
        ForwardingRow("sender alone, into a sink that counts", None, None, "sink", None),
        ForwardingRow(
            "minimal C forwarder, recvmmsg/sendmmsg",
            None,
            None,
            "C-recvmmsg",
            (str(forwarder), *PORTS),
        ),
        ForwardingRow(  # the reference of "of C fwd": the native loop's own I/O, no P4
            "C port swap in the native I/O loop (no P4)",
            None,
            None,
            "C",
            loop_command("native", PORTSWAP_C),
            None if IO_LOOP.is_file() else f"no {IO_LOOP}",
        ),
        ForwardingRow(
            "plain Python AF_PACKET forwarder",
            None,
            None,
            "python",
            (sys.executable, str(FORWARDING), "_plain", *PORTS),
        ),
    ]
    for program in programs:
        for backend, io in (
            ("python", "python"),
            ("python", "native"),
            ("native", "python"),
            ("native", "native"),
        ):
            planned_rows.append(
                ForwardingRow(
                    f"{program}: {backend} back end, {io} I/O",
                    program,
                    backend,
                    io,
                    switch_command(program, backend, io),
                    native if backend == "native" else None,
                )
            )
        planned_rows += bmv2_rows(program)
    for spec in processors:
        planned_rows.append(
            ForwardingRow(f"{spec}, python I/O", None, None, "python", loop_command("python", spec))
        )
    return planned_rows


@dataclass(frozen=True)
class ShapingLoop:
    """An I/O loop of the p4switch command whose egress shaping is measured, forwarding l2.p4
    on the back end it goes with."""

    label: str
    io: str
    unavailable: str | None = None

    def command(self, *shapes: str) -> tuple[str, ...]:
        return switch_command("l2", self.io, self.io, shapes)


def shaping_loops() -> list[ShapingLoop]:
    """Both loops, each forwarding with l2.p4: the shaping is the loop's own."""
    return [
        ShapingLoop("python I/O, l2 on the python back end", "python"),
        ShapingLoop(
            "native I/O, l2 on the native back end", "native", native_backend_unavailable()
        ),
    ]


def figures(offered: float, delivered: float, totals: dict[str, Any] | None) -> dict[str, Any]:
    """A measured row: both rates with their unit, and what the forwarder said it dropped."""
    row: dict[str, Any] = {
        "delivered": {"value": delivered, "unit": UNIT},
        "offered": {"value": offered, "unit": UNIT},
    }
    if totals is not None and "stats" in totals:
        drops = {}
        for port, stats in totals["stats"].get("ports", {}).items():
            drops[port] = {kind: n for kind, n in stats.get("drops", {}).items() if n}
        row["switch_drops"] = {"ports": drops, "unit": "frames"}
    elif totals is not None:
        row["forwarder_totals"] = {"counts": totals, "unit": "frames"}
    return row


def ratios(row: dict[str, Any], earlier: Sequence[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """`row`'s delivered rate against the C forwarder's and against its program's on the python
    back end in the python I/O loop."""
    found: dict[str, dict[str, Any]] = {}
    if "delivered" not in row:
        return found
    value = row["delivered"]["value"]
    for other in earlier:
        if "delivered" not in other or not other["delivered"]["value"]:
            continue
        base = other["delivered"]["value"]
        if other["io"] == "C" and row["io"] != "C":
            found["of_c_forwarder"] = {"value": value / base, "unit": "ratio"}
        same_program = row.get("program") is not None and other.get("program") == row["program"]
        baseline = (other.get("pipeline"), other.get("io")) == ("python", "python")  # p4switch
        if same_program and baseline and (row.get("pipeline"), row["io"]) != ("python", "python"):
            found["of_python_backend"] = {"value": value / base, "unit": "ratio"}
        native = (other.get("pipeline"), other.get("io")) == ("native", "native")
        if same_program and native and row.get("pipeline") == "bmv2" and value:
            found["p4switch_native_is"] = {"value": base / value, "unit": "times this row"}
    return found


def machine() -> dict[str, Any]:
    """The facts a figure depends on: cores, CPU, kernel, and the load before the run."""
    model = "unknown"
    cpuinfo = Path("/proc/cpuinfo")
    if cpuinfo.is_file():
        for line in cpuinfo.read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    return {
        "cores": os.cpu_count(),
        "usable_cores": len(os.sched_getaffinity(0)),
        "cpu": model,
        "kernel": platform.release(),
        "python": platform.python_version(),
        "load_before": list(os.getloadavg()),
    }


def load_text(load: Sequence[float]) -> str:
    return " ".join(f"{x:.2f}" for x in load)


def heading(report: dict[str, Any]) -> str:
    m = report["machine"]
    frames = "agg32 aggregation frames" if report["aggregation_frames"] else "UDP frames"
    return (
        f"{frames} of {report['frame_bytes']} B, {report['window_s']:g} s windows; "
        f"{m['cores']} cores ({m['cpu']}), Linux {m['kernel']}, "
        f"load average before: {load_text(m['load_before'])}\n"
        f"  {'':46} {'delivered':>12} {'offered':>12}  {'of C fwd':>8} {'of python':>9}"
    )


def table_row(row: dict[str, Any], earlier: Sequence[dict[str, Any]]) -> str:
    """One line of the table; adds the row's ratios to it (as figures for the JSON too)."""
    start = f"  {row['label']:46} "
    if "unavailable" in row:
        return start + f"not run: {row['unavailable']}"
    if "error" in row:
        return start + f"failed: {row['error'].strip().splitlines()[-1]}"
    row |= ratios(row, earlier)
    of_c = f"{row['of_c_forwarder']['value']:.0%}" if "of_c_forwarder" in row else ""
    of_python = ""
    if "of_python_backend" in row:
        of_python = f"{row['of_python_backend']['value']:.1f}x"
    drops = {
        port: kinds for port, kinds in row.get("switch_drops", {}).get("ports", {}).items() if kinds
    }
    native = ""
    if "p4switch_native_is" in row:
        native = f"  p4switch native {row['p4switch_native_is']['value']:.1f}x this"
    return (
        f"{start}{row['delivered']['value']:12,.0f} {row['offered']['value']:12,.0f}  "
        f"{of_c:>8} {of_python:>9}{native}{f'  drops {drops}' if drops else ''}"
    )


def shaping_lines(shaped: dict[str, Any]) -> str:
    if "unavailable" in shaped:
        return f"  shaping, {shaped['loop']}: not run: {shaped['unavailable']}"
    if "error" in shaped:
        return f"  shaping, {shaped['loop']}: failed: {shaped['error'].strip().splitlines()[-1]}"
    d, r = shaped["delay_rtt_ms"], shaped["rate_mbps"]
    return (
        f"  shaping, {shaped['loop']}:\n"
        f"    delay 50 ms each way: RTT median {d['median']:.2f} ms, mean {d['mean']:.2f}, "
        f"min {d['min']:.2f}, max {d['max']:.2f} (goal 100; {d['replies']}/{d['sent']} "
        f"replies; worst lateness {d['worst_lateness_ms']:.2f} ms)\n"
        f"    rate 10 Mb/s: {r['delivered']:.2f} Mb/s delivered ({r['frame_bytes']} B frames "
        f"offered at 20 Mb/s; queue_full drops {r['queue_full_drops']})"
    )
