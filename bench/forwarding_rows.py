"""What bench/forwarding.py measures, which rows can run here, and how the figures read.

Each `ForwardingRow` is one row: a forwarder command to run in the switch namespace (None: no
forwarder, the sender into a sink that only counts), or the reason it cannot run here. The
native back end and the native I/O loop are imported only to ask whether they can run; BMv2 is
looked for as `topo.bmv2` looks for it, its default build and its build for speed each a row
(`bench.bmv2_forwarder`). Ratios compare each row with the C port swap in the native I/O loop
(the same batched I/O, no P4: the limit of the veth path for that loop) and, for a program, with
the same program on the python back end in the python I/O loop; a BMv2 row also gives how many
times faster p4switch's native back end in its native loop forwards the same program:

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

import importlib
import os
import platform
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench import bmv2_forwarder
from bench.native_tools import AGG_BYTES
from innet.exceptions import InnetError

PROGRAMS = ("l2", "agg32")
AGG_PAYLOAD = AGG_BYTES
FORWARDING = Path(__file__).resolve().parent / "forwarding.py"
BMV2_FORWARDER = Path(__file__).resolve().parent / "bmv2_forwarder.py"
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


def switch_command(io: str, processor: str | None, shapes: Sequence[str] = ()) -> tuple[str, ...]:
    """bench/forwarding.py's switch role on the two ports, in the `io` loop."""
    chosen = ("--processor", processor) if processor else ()
    return (sys.executable, str(FORWARDING), "_switch", *PORTS, io, *chosen, *shapes)


def _probe(module: str, attribute: str) -> str | None:
    """Why `module` cannot run here, or None: not importable, no `attribute`, or what its
    `available()` (where it has one) says."""
    try:
        found = importlib.import_module(module)
    except (ImportError, InnetError, OSError) as err:
        return f"{module} cannot be imported: {err}"
    if not hasattr(found, attribute):
        return f"{module} has no {attribute}"
    available: Callable[[], str | None] | None = getattr(found, "available", None)
    try:
        reason = available() if available is not None else None
    except (InnetError, OSError) as err:
        reason = f"available() failed: {err}"
    return f"{module} is unavailable: {reason}" if reason else None


def native_backend_unavailable() -> str | None:
    return _probe("p4switch.native", "NativePipeline")


def native_io_unavailable() -> str | None:
    return _probe("p4switch.nativeio", "NativeSwitch")


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
    native, native_io = native_backend_unavailable(), native_io_unavailable()
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
            switch_command("native", "bench.p4_processors:portswap_c"),
            native_io,
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
        python = f"bench.p4_processors:{program}"
        native_factory = f"{python}_native"
        planned_rows += [
            ForwardingRow(
                f"{program}: python back end, python I/O",
                program,
                "python",
                "python",
                switch_command("python", python),
            ),
            ForwardingRow(
                f"{program}: python back end, native I/O",
                program,
                "python",
                "native",
                switch_command("native", python),
                native_io,
            ),
            ForwardingRow(
                f"{program}: native back end, python I/O",
                program,
                "native",
                "python",
                switch_command("python", native_factory),
                native,
            ),
            ForwardingRow(
                f"{program}: native back end, native I/O",
                program,
                "native",
                "native",
                switch_command("native", native_factory),
                native or native_io,
            ),
            *bmv2_rows(program),
        ]
    for spec in processors:
        planned_rows.append(
            ForwardingRow(
                f"{spec}, python I/O", None, None, "python", switch_command("python", spec)
            )
        )
    return planned_rows


@dataclass(frozen=True)
class ShapingLoop:
    """An I/O loop whose egress shaping is measured, with the processor it runs."""

    label: str
    io: str
    processor: str | None
    unavailable: str | None = None

    def command(self, *shapes: str) -> tuple[str, ...]:
        return switch_command(self.io, self.processor, shapes)


def shaping_loops() -> list[ShapingLoop]:
    """Both loops, each running the two-port forwarder: the shaping is the loop's own."""
    return [
        ShapingLoop("python I/O, two-port forwarder", "python", None),
        ShapingLoop("native I/O, two-port forwarder", "native", None, native_io_unavailable()),
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
