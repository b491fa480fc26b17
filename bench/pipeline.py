"""p4switch pipeline benchmarks: frames/s through the pipeline alone, in process (no sockets), on
both back ends, side by side in one run.

- (a) L2 forwarding: parse Ethernet, one exact-match table, deparse (p4switch's example l2.p4).
- (b) The aggregation shape: Ethernet/IPv4/UDP plus a header of 32 int32 values, each added
  into its own register lane, the sums written back, a contribution count (tests' agg32.p4).
- (c) innet.p4 at a member edge, as the testbed programs it (the machine check's entries): all
  nine islands' contributions to each chunk, the last one completing the slot and sending the
  sum to the hosts. Beside it, where BMv2 is installed and the benchmark runs as root, the same
  edge on BMv2's simple_switch_grpc, its default build and its build for speed, measured as the
  machine check of a BMv2 run measures it (controller/runner/bmv2rate.py: the frames in through
  veths, per CPU second of the switch process), with how many times p4switch's native back end
  is that rate; a BMv2 row that cannot run says why.

Each row: the python back end (`Pipeline.process`), the native back end called from Python
(`NativePipeline.process`, through ctypes), and the native back end called from C with no
Python between frames (`p4s_process` in a loop, `bench/native/pipeline_loop.c`): the ceiling of
any I/O loop around it. Also the one-off costs: compiling the program, building the native
library (cached afterwards). Figures vary with the machine's load; they are not pass/fail
tests (`--json` prints them as one JSON document).

    python bench/pipeline.py [--seconds 2] [--json]
"""

from __future__ import annotations

import argparse
import ctypes
import functools
import json
import os
import struct
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run as a script from anywhere

from p4switch import EXAMPLES, native
from p4switch import runtime as rt
from p4switch.program import CompiledProgram, compile_file

from bench.bmv2_forwarder import BUILDS, switch_binary, unavailable
from bench.native_tools import build_library
from controller.runner import calibration as cal
from controller.runner.bmv2rate import bmv2_rate
from controller.runner.emulation import resolve
from controller.runner.scenario import parse_scenario
from innet.exceptions import InnetError, one_line
from topo.local_switch import LocalSwitch

HERE = Path(__file__).resolve().parent
PROGRAMS = HERE.parent / "p4switch" / "tests" / "programs"
MEMBER_SCENARIO = "name: bench\nscale: 100000\nmemory: [1.6GB]\nhosts: 2\n"
BMV2_REPEATS = 3  # spans on BMv2; the best counts, as in the machine check

Frames = list[tuple[int, bytes]]  # (ingress port, frame)


def rate(process: Callable[[int, bytes], list], frames: Frames, seconds: float) -> float:
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
    """bench/native/pipeline_loop.c, built into build/bench/ when its source is newer."""
    library = build_library("pipeline_loop")
    lib = ctypes.CDLL(str(library))
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
            raise native.NativeBuildError("the C loop could not allocate its output buffer")
        if elapsed >= seconds / 4:
            return total / elapsed
        total *= 4


def l2_case() -> tuple[CompiledProgram, Callable[[rt.SwitchState], None], Frames]:
    program = compile_file(EXAMPLES / "l2.p4")

    def setup(state: rt.SwitchState) -> None:
        table = state.table("L2Ingress.dmac")
        for host in range(64):
            call = rt.ActionCall("L2Ingress.forward", (host,))
            table.insert(rt.TableEntry((rt.exact(host, 48),), call))

    frames = [(1, h.to_bytes(6, "big") + bytes(6) + b"\x08\x00" + bytes(50)) for h in range(64)]
    return program, setup, frames


def agg_frame(slot: int, values: list[int]) -> bytes:
    agg = struct.pack("!HH32i", slot, 0, *values)
    udp = struct.pack("!HHHH", 5000, 0x4000, 8 + len(agg), 0)
    ip = struct.pack("!BBHHHBBHII", 0x45, 0, 28 + len(agg), 0, 0, 64, 17, 0, 0x0A000001, 0x0A000002)
    return bytes(6) + bytes(6) + b"\x08\x00" + ip + udp + agg


def agg32_case() -> tuple[CompiledProgram, Callable[[rt.SwitchState], None], Frames]:
    program = compile_file(PROGRAMS / "agg32.p4")

    def setup(state: rt.SwitchState) -> None:
        call = rt.ActionCall("AggIngress.forward", (2,))
        state.table("AggIngress.route").insert(rt.TableEntry((rt.exact(0x0A000002, 32),), call))

    frames = [(1, agg_frame(slot, list(range(slot, slot + 32)))) for slot in range(256)]
    return program, setup, frames


def measure_program(name: str, case: Callable[[], Any], seconds: float) -> dict[str, Any]:
    start = time.perf_counter()
    program, setup, frames = case()
    compile_s = time.perf_counter() - start
    row: dict[str, Any] = {"program": name, "frame_bytes": len(frames[0][1])}
    row["compile_s"] = compile_s
    py_state, nat_state = program.new_state(), program.new_state()
    setup(py_state)
    setup(nat_state)
    python = program.pipeline(py_state)
    row["python_fps"] = rate(python.process, frames, seconds)
    start = time.perf_counter()
    pipe = program.pipeline(nat_state, backend="native")
    row["native_build_s"] = time.perf_counter() - start
    row["native_fps"] = rate(pipe.process, frames, seconds)
    row["native_c_loop_fps"] = c_loop_rate(pipe.native_entry, frames, seconds)
    return row


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
    reason = native.available()
    if reason is not None:
        print(f"pipeline benchmark: the native back end cannot run here: {reason}")
        return 1
    load = os.getloadavg()
    rows = [
        measure_program("l2.p4", l2_case, args.seconds),
        measure_program("agg32.p4", agg32_case, args.seconds),
        measure_innet(args.seconds),
    ]
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
