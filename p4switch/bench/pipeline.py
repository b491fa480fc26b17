"""p4switch pipeline benchmarks: frames/s through the pipeline alone, in process (no sockets), on
both back ends, side by side in one run.

- (a) L2 forwarding: parse Ethernet, one exact-match table, deparse (the example l2.p4).
- (b) The aggregation shape: Ethernet/IPv4/UDP plus a header of 32 int32 values, each added
  into its own register lane, the sums written back, a contribution count (tests' agg32.p4).

Each row: the python back end (`Pipeline.process`), the native back end called from Python
(`NativePipeline.process`, through ctypes), and the native back end called from C with no
Python between frames (`p4s_process` in a loop, bench/native/pipeline_loop.c): the ceiling of
any I/O loop around it. Also the one-off costs: compiling the program, building the native
library (cached afterwards). Figures vary with the machine's load; they are not pass/fail
tests (`--json` prints them as one JSON document).

    python bench/pipeline.py [--seconds 2] [--json]
"""

from __future__ import annotations

import argparse
import ctypes
import json
import os
import struct
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run as a script from anywhere

from bench.native_build import build_library
from p4switch import EXAMPLES, native
from p4switch import runtime as rt
from p4switch.program import CompiledProgram, compile_file

PROGRAMS = Path(__file__).resolve().parents[1] / "tests" / "programs"

Frames = list[tuple[int, bytes]]  # (ingress port, frame)
Case = tuple[CompiledProgram, Callable[[rt.SwitchState], None], Frames]


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
    """bench/native/pipeline_loop.c, built into build/bench/ when its source is newer."""
    lib = ctypes.CDLL(str(build_library("pipeline_loop")))
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
            return float(total / elapsed)
        total *= 4


def l2_case() -> Case:
    program = compile_file(EXAMPLES / "l2.p4")

    def setup(state: rt.SwitchState) -> None:
        table = state.table("L2Ingress.dmac")
        for host in range(64):
            call = rt.ActionCall("L2Ingress.forward", (host,))
            table.insert(rt.TableEntry((rt.exact(host, 48),), call))

    frames = [(1, h.to_bytes(6, "big") + bytes(6) + b"\x08\x00" + bytes(50)) for h in range(64)]
    return program, setup, frames


def agg_frame(slot: int, values: list[int]) -> bytes:
    """An agg32.p4 frame to 10.0.0.2 carrying `values` (32 of them) for `slot`."""
    agg = struct.pack("!HH32i", slot, 0, *values)
    udp = struct.pack("!HHHH", 5000, 0x4000, 8 + len(agg), 0)
    ip = struct.pack("!BBHHHBBHII", 0x45, 0, 28 + len(agg), 0, 0, 64, 17, 0, 0x0A000001, 0x0A000002)
    return bytes(6) + bytes(6) + b"\x08\x00" + ip + udp + agg


def agg32_case() -> Case:
    program = compile_file(PROGRAMS / "agg32.p4")

    def setup(state: rt.SwitchState) -> None:
        call = rt.ActionCall("AggIngress.forward", (2,))
        state.table("AggIngress.route").insert(rt.TableEntry((rt.exact(0x0A000002, 32),), call))

    frames = [(1, agg_frame(slot, list(range(slot, slot + 32)))) for slot in range(256)]
    return program, setup, frames


def measure_program(name: str, case: Callable[[], Case], seconds: float) -> dict[str, Any]:
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
    ]
    if args.json:
        document = {"unit": "frames/s", "load_before": load, "load_after": os.getloadavg()}
        document |= {"cores": os.cpu_count(), "rows": rows}
        print(json.dumps(document, indent=2))
    else:
        print(f"frames/s through the pipeline alone (load average before {load[0]:.2f})")
        print(table(rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
