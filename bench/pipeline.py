"""p4switch pipeline benchmarks: packets/s of `Pipeline.process`, in process (no sockets).

- (a) L2 forwarding: parse Ethernet, one exact-match table, deparse.
- (b) The aggregation shape: Ethernet/IPv4/UDP plus a header of 32 int32 values, each added
  into its own register lane, the sums written back, a contribution count and a counter.
  Goal: well over 50k packets/s, so that the switch keeps up with a ~90k packets/s socket
  forwarder at half its rate or better.

Also the one-off costs: compiling each program, and building a pipeline from it.
Figures vary with the machine's load; they are not pass/fail tests.
"""

from __future__ import annotations

import struct
import time
from collections.abc import Callable
from pathlib import Path

from p4switch import runtime as rt
from p4switch.program import CompiledProgram, compile_file

PROGRAMS = Path(__file__).resolve().parent.parent / "tests" / "unit" / "p4switch" / "programs"
SECONDS = 2.0


def rate(process: Callable[[int, bytes], list], frames: list[bytes]) -> float:
    """Packets per second over about SECONDS of back-to-back calls."""
    for f in frames[:100]:
        process(1, f)  # warm up
    count, start = 0, time.perf_counter()
    while True:
        for f in frames:
            process(1, f)
        count += len(frames)
        elapsed = time.perf_counter() - start
        if elapsed >= SECONDS:
            return count / elapsed


def compiled(name: str) -> tuple[float, CompiledProgram]:
    start = time.perf_counter()
    program = compile_file(PROGRAMS / name)
    return time.perf_counter() - start, program


def bench_l2() -> None:
    secs, program = compiled("l2.p4")
    state = program.new_state()
    table = state.table("L2Ingress.dmac")
    for host in range(64):
        entry = rt.TableEntry((rt.exact(host, 48),), rt.ActionCall("L2Ingress.forward", (host,)))
        table.insert(entry)
    pipe = program.pipeline(state)
    frames = [host.to_bytes(6, "big") + bytes(6) + b"\x08\x00" + bytes(50) for host in range(64)]
    assert pipe.process(1, frames[5])[0][0] == 5
    print(f"(a) L2 forwarding, 64-byte frames   {rate(pipe.process, frames):10,.0f} packets/s")
    print(f"    compile {secs * 1000:.0f} ms")


def agg_frame(slot: int, values: list[int]) -> bytes:
    agg = struct.pack("!HH32i", slot, 0, *values)
    udp = struct.pack("!HHHH", 5000, 0x4000, 8 + len(agg), 0)
    ip = struct.pack("!BBHHHBBHII", 0x45, 0, 28 + len(agg), 0, 0, 64, 17, 0, 0x0A000001, 0x0A000002)
    return bytes(6) + bytes(6) + b"\x08\x00" + ip + udp + agg


def bench_aggregation() -> None:
    secs, program = compiled("agg32.p4")
    state = program.new_state()
    route = rt.TableEntry((rt.exact(0x0A000002, 32),), rt.ActionCall("AggIngress.forward", (2,)))
    state.table("AggIngress.route").insert(route)
    start = time.perf_counter()
    pipe = program.pipeline(state)
    build = time.perf_counter() - start
    frames = [agg_frame(slot, list(range(slot, slot + 32))) for slot in range(256)]
    assert pipe.process(1, frames[0])[0][0] == 2
    pps = rate(pipe.process, frames)
    print(f"(b) 32 x int32 register add, {len(frames[0])} B  {pps:10,.0f} packets/s (goal > 50k)")
    print(f"    compile {secs * 1000:.0f} ms, pipeline built in {build * 1000:.1f} ms")


def main() -> None:
    bench_l2()
    bench_aggregation()


if __name__ == "__main__":
    main()
