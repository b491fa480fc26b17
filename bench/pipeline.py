"""innet.p4 through the pipeline alone: frames/s in process (no sockets) on both of p4switch's
back ends, beside BMv2, in one run.

innet.p4 at a member edge, as the testbed programs it (the machine check's entries): all nine
islands' contributions to each chunk, the last one completing the slot and sending the sum to
the hosts. Each back end runs in p4switch's `InProcessSwitch` (`topo.local_switch`): the python
one and the native one called from Python (`process()`), and the native one called from C with
no Python between frames (its `native_entry` in the loop of p4switch's own benchmark,
p4switch/bench/native/pipeline_loop.c, which p4switch/bench/native_build.py builds): the
ceiling of any I/O loop around it. Beside it, where BMv2 is installed and the benchmark runs as
root, the same edge on BMv2's simple_switch_grpc, its default build and its build for speed,
measured as the machine check of a BMv2 run measures it (controller/runner/bmv2rate.py: the
frames in through veths, per CPU second of the switch process), with how many times p4switch's
native back end is that rate; a BMv2 row that cannot run says why. Figures vary with the
machine's load; they are not pass/fail tests (`--json` prints them as one JSON document).
p4switch's own programs (l2.p4, agg32.p4) are measured the same way by p4switch/bench/pipeline.py.

    python bench/pipeline.py [--seconds 2] [--json]
"""

from __future__ import annotations

import argparse
import ctypes
import functools
import json
import os
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run as a script from anywhere

from bench.bmv2_forwarder import BUILDS, switch_binary, unavailable
from bench.forwarding_rows import native_backend_unavailable
from bench.native_tools import ForwardingBenchError
from controller.runner import calibration as cal
from controller.runner.bmv2rate import bmv2_rate
from controller.runner.emulation import resolve
from controller.runner.scenario import parse_scenario
from innet.exceptions import InnetError, one_line
from topo.local_switch import LocalSwitch

HERE = Path(__file__).resolve().parent
NATIVE_BUILD = HERE.parent / "p4switch" / "bench" / "native_build.py"  # p4switch's own benchmark
MEMBER_SCENARIO = "name: bench\nscale: 100000\nmemory: [1.6GB]\nhosts: 2\n"
BMV2_REPEATS = 3  # spans on BMv2; the best counts, as in the machine check

Frames = list[tuple[int, bytes]]  # (ingress port, frame)


def rate(process: Callable[[int, bytes], list[Any]], frames: Frames, seconds: float) -> float:
    """Frames per second over about `seconds` of back-to-back calls."""
    for port, f in frames[:100]:
        process(port, f)  # warm up
    count, start = 0, time.perf_counter()
    while True:
        for port, f in frames:
            process(port, f)
        count += len(frames)
        elapsed = time.perf_counter() - start
        if elapsed >= seconds:
            return count / elapsed


def loop_library() -> ctypes.CDLL:
    """p4switch/bench/native/pipeline_loop.c, as p4switch's benchmark builds it (again only when
    its source is newer)."""
    done = subprocess.run(
        [sys.executable, str(NATIVE_BUILD), "pipeline_loop"],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    if done.returncode != 0:
        raise ForwardingBenchError(f"the C loop did not build: {done.stderr.strip()}")
    lib = ctypes.CDLL(done.stdout.strip())
    u32, u64, p = ctypes.c_uint32, ctypes.c_uint64, ctypes.c_void_p
    lib.p4s_bench_loop.restype = ctypes.c_double
    lib.p4s_bench_loop.argtypes = [p, p, ctypes.c_char_p, p, p, u32, u32, u64, p]
    return lib


def c_loop_rate(entry: tuple[int, int], frames: Frames, seconds: float) -> float:
    """Frames per second of `p4s_process` called from C, back to back over `frames`."""
    lib = loop_library()
    stride = max(len(f) for _, f in frames)
    blob = b"".join(f.ljust(stride, b"\0") for _, f in frames)
    lens = (ctypes.c_uint32 * len(frames))(*(len(f) for _, f in frames))
    ports = (ctypes.c_uint32 * len(frames))(*(port for port, _ in frames))
    emitted = ctypes.c_uint64()
    fn, ctx = entry
    total = len(frames)
    while True:  # grow the run until it lasts long enough to time
        elapsed = lib.p4s_bench_loop(
            fn, ctx, blob, lens, ports, stride, len(frames), total, ctypes.byref(emitted)
        )
        if elapsed < 0:
            raise ForwardingBenchError("the C loop could not allocate its output buffer")
        if elapsed >= seconds / 4:
            return float(total / elapsed)
        total *= 4


def measure_innet(seconds: float) -> dict[str, Any]:
    """innet.p4 at Tokyo's edge in an all-to-all round of nine islands (1024 chunks)."""
    em = resolve(parse_scenario(MEMBER_SCENARIO))
    frames = [f for chunk in range(1024) for f in cal.chunk_frames(em, chunk)]
    row: dict[str, Any] = {"program": "innet.p4 member edge", "frame_bytes": len(frames[0][1])}
    switches: dict[str, LocalSwitch] = {}
    for backend in ("python", "native"):
        start = time.perf_counter()
        switches[backend] = cal.member_switch(em, backend=backend)
        row[f"{backend}_setup_s"] = time.perf_counter() - start
    row["python_fps"] = rate(switches["python"].process, frames, seconds)
    row["native_fps"] = rate(switches["native"].process, frames, seconds)
    entry = switches["native"].pipeline.native_entry
    row["native_c_loop_fps"] = c_loop_rate(entry, frames, seconds)
    return row


def measure_innet_bmv2(seconds: float) -> list[dict[str, Any]]:
    """(c) on BMv2: frames in per CPU second of simple_switch_grpc, for each build."""
    em = resolve(parse_scenario(MEMBER_SCENARIO))
    rows: list[dict[str, Any]] = []
    for build in BUILDS:
        row: dict[str, Any] = {"program": "innet.p4 member edge", "target": f"bmv2 {build}"}
        reason = unavailable(build)
        if reason is None and os.geteuid() != 0:
            reason = "needs root (a network namespace of its own)"
        binary = switch_binary(build)
        if reason is not None or binary is None:
            row["not_run"] = reason
        else:
            frames = functools.partial(cal.chunk_frames, em)
            try:
                row["fps_per_cpu_s"] = bmv2_rate(em, frames, seconds, BMV2_REPEATS, binary)
            except InnetError as err:  # it did not start, or refused the program: say so
                row["not_run"] = one_line(err)
        rows.append(row)
    return rows


def bmv2_table(rows: Sequence[dict[str, Any]], innet: dict[str, Any]) -> str:
    lines = [
        "innet.p4 member edge on BMv2 (frames in per CPU second of simple_switch_grpc; "
        "p4switch native's rate above, as a multiple):"
    ]
    for r in rows:
        if "not_run" in r:
            lines.append(f"  {r['target']:12} not run: {r['not_run']}")
            continue
        fps = r["fps_per_cpu_s"]
        lines.append(
            f"  {r['target']:12}{fps:12,.0f}   p4switch native is "
            f"{innet['native_fps'] / fps:,.0f}x (process()), "
            f"{innet['native_c_loop_fps'] / fps:,.0f}x (C loop)"
        )
    return "\n".join(lines)


def table(rows: Sequence[dict[str, Any]]) -> str:
    head = f"{'':34}{'python':>12}{'native':>12}{'native, C':>12}{'C / python':>12}"
    lines = [head, f"{'':34}{'process()':>12}{'process()':>12}{'loop':>12}"]
    for r in rows:
        name = f"{r['program']} ({r['frame_bytes']} B)"
        gain = r["native_c_loop_fps"] / r["python_fps"]
        lines.append(
            f"{name:34}{r['python_fps']:12,.0f}{r['native_fps']:12,.0f}"
            f"{r['native_c_loop_fps']:12,.0f}{gain:11,.0f}x"
        )
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=2.0, help="per measurement")
    parser.add_argument("--json", action="store_true", help="one JSON document on stdout")
    args = parser.parse_args(argv)
    reason = native_backend_unavailable()
    if reason is not None:
        print(f"pipeline benchmark: {reason}")
        return 1
    load = os.getloadavg()
    try:
        rows = [measure_innet(args.seconds)]
    except ForwardingBenchError as err:
        print(f"pipeline benchmark: {err}")
        return 1
    bmv2 = measure_innet_bmv2(args.seconds)
    if args.json:
        print(
            json.dumps(
                {
                    "unit": "frames/s",
                    "load_before": load,
                    "load_after": os.getloadavg(),
                    "cores": os.cpu_count(),
                    "rows": rows,
                    "bmv2_rows": bmv2,
                },
                indent=2,
            )
        )
    else:
        print(f"frames/s through the pipeline alone (load average before {load[0]:.2f})")
        print(table(rows))
        print(bmv2_table(bmv2, rows[-1]))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
