"""Forwarding benchmark for the p4switch process: prints figures, not a pass/fail test (root).

In three fresh network namespaces (h1 -- switch -- h2, veth pairs, `bench.vethnet`), in one run:

- frames/s through the `p4switch` command for each program (`--program`: l2, agg32) on the
  native back end and on the python one, each in the native I/O loop and in the python one,
  programmed over P4Runtime (`bench.p4switch_forwarder`); beside them the limits: the sender
  into a sink that only counts, a minimal C forwarder with batched I/O
  (bench/native/forwarder.c), the native I/O loop around a C port swap with no P4 (run by
  p4switch's own benchmark, p4switch/bench/io_loop.py), a plain Python AF_PACKET forwarder,
  and, where installed, BMv2's simple_switch_grpc, its default build and its build for speed,
  programmed over P4Runtime with the same program and entries (`bench.bmv2_forwarder`), each
  with how many times faster p4switch's native back end is. A row that cannot run says why
  instead of giving a figure (`bench.forwarding_rows`);
- shaping accuracy of the p4switch command in each loop: 50 ms one-way delay on both switch
  ports -> ping RTT against 100 ms, and a 10 Mb/s rate on the port toward h2 -> throughput
  measured at h2 under twice that offered load.

Traffic comes from a C sender in h1 (bench/native/sender.c: sendmmsg of pre-built frames) so the
sender is not the bottleneck; with `--size` 132 and more the frames carry agg32.p4's header on
1024 slots, so the aggregation program aggregates every one of them. Delivered frames are counted
by h2's kernel interface counter over a steady-state window, so no receiver competes for the CPU.
`--processor module:callable` adds a row for any PacketProcessor factory in p4switch's python
I/O loop (p4switch/bench/io_loop.py; the module is looked for beside it, then in this folder).
`--json` prints one JSON document (every figure, its unit, the machine) on stdout and the table
on stderr. The namespaces are deleted on the way out.

    python bench/forwarding.py [--duration 3] [--size 132] [--program l2] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import select
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from types import FrameType
from typing import Any, TextIO

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run as a script from anywhere

from p4switch import ETH_P_ALL, PACKET_OUTGOING

from bench import forwarding_rows as rows
from bench.native_tools import (
    ForwardingBenchError,
    Traffic,
    build_tool,
    last_json_line,
    sender_command,
)
from bench.vethnet import H1_IP, H1_MAC, H2_IP, H2_MAC, Net, build, destroy, run, rx_packets

REPO = Path(__file__).resolve().parents[1]
WARMUP_S = 0.5
AGG_SLOTS = 1024  # agg32.p4's SLOTS


SO_SNDBUFFORCE, SO_RCVBUFFORCE = 32, 33  # linux/asm-generic/socket.h: above the sysctl cap
SOCKET_BUFFER_BYTES = 4 * 2**20  # as p4switch's ports ask for


def open_raw(interface: str) -> socket.socket:
    """A non-blocking AF_PACKET socket on `interface`, every protocol, buffers as a switch's."""
    sock = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ALL))
    for force, plain in ((SO_RCVBUFFORCE, socket.SO_RCVBUF), (SO_SNDBUFFORCE, socket.SO_SNDBUF)):
        try:
            sock.setsockopt(socket.SOL_SOCKET, force, SOCKET_BUFFER_BYTES)
        except PermissionError:
            sock.setsockopt(socket.SOL_SOCKET, plain, SOCKET_BUFFER_BYTES)
    sock.bind((interface, ETH_P_ALL))
    sock.setblocking(False)
    return sock


# -- roles run inside the switch namespace -------------------------------------------------------


def role_plain(if1: str, if2: str) -> None:
    """The reference: receive on one port, send on the other, nothing else."""
    a, b = open_raw(if1), open_raw(if2)
    other = {a.fileno(): (a, b), b.fileno(): (b, a)}
    wake_r, wake_w = os.pipe2(os.O_NONBLOCK)
    stop = threading.Event()

    def handler(signum: int, frame: FrameType | None) -> None:
        stop.set()
        os.write(wake_w, b"\0")

    signal.signal(signal.SIGTERM, handler)
    signal.signal(signal.SIGINT, handler)
    poller = select.poll()
    for fd in (a.fileno(), b.fileno(), wake_r):
        poller.register(fd, select.POLLIN)
    forwarded = 0
    print("ready", flush=True)
    while not stop.is_set():
        for fd, _ in poller.poll():
            if fd == wake_r:
                break
            rx, tx = other[fd]
            for _ in range(64):
                try:
                    data, address = rx.recvfrom(65600)
                except BlockingIOError:
                    break
                if address[2] == PACKET_OUTGOING:
                    continue
                try:
                    tx.send(data)
                    forwarded += 1
                except OSError:
                    pass
    print(json.dumps({"forwarded": forwarded}), flush=True)


# -- the orchestrator ---------------------------------------------------------------------------


class Forwarder:
    """A forwarder process in the switch namespace, ready once it prints "ready"; stopped by
    its own PID with SIGTERM, after which it prints its totals (one JSON line)."""

    def __init__(self, ns: str, command: Sequence[str]) -> None:
        args = ["ip", "netns", "exec", ns, *command]
        # stderr to a file, not a pipe, so logging never blocks it; closed by stop()
        self.errors = tempfile.TemporaryFile()  # noqa: SIM115
        self.proc = subprocess.Popen(
            args,
            cwd=REPO,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=self.errors,
        )
        assert self.proc.stdout is not None
        deadline = time.monotonic() + 30
        while True:
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise ForwardingBenchError(f"the forwarder did not start: {self.stop()}")
            ready, _, _ = select.select([self.proc.stdout], [], [], 0.05)  # readiness, polled
            if ready and self.proc.stdout.readline().strip() == b"ready":
                return

    def stop(self) -> str:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            out, _ = self.proc.communicate(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            out, _ = self.proc.communicate()
        self.errors.seek(0)
        err = self.errors.read()
        self.errors.close()
        return (out + err).decode(errors="replace")

    def totals(self) -> dict[str, Any]:
        """Stop the forwarder and return the totals it printed."""
        return last_json_line(self.stop(), "the forwarder")


def blast_rate(
    net: Net, traffic: Traffic, seconds: float, count_at: tuple[str, str], rate: float | None
) -> tuple[float, float]:
    """(offered, delivered) frames/s: delivered counted at `count_at` (namespace, interface)
    over the middle of the sender's run, offered as the sender reports it."""
    sender = build_tool("sender")
    command = sender_command(sender, traffic, "h1-eth0", seconds + 2 * WARMUP_S, rate)
    pipe = subprocess.PIPE
    proc = subprocess.Popen(["ip", "netns", "exec", net.h1, *command], stdout=pipe, stderr=pipe)
    try:
        time.sleep(WARMUP_S)  # measurement window, not readiness
        t0, c0 = rx_packets(*count_at)
        time.sleep(seconds)
        t1, c1 = rx_packets(*count_at)
        out, err = proc.communicate(timeout=seconds + 30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    if proc.returncode != 0:
        raise ForwardingBenchError(f"the sender failed: {err.decode(errors='replace').strip()}")
    sent = last_json_line(out.decode(), "the sender")
    return sent["sent"] / sent["seconds"], (c1 - c0) / (t1 - t0)


def measure(
    net: Net, plan: rows.ForwardingRow, traffic: Traffic, seconds: float, rate: float | None
) -> dict[str, Any]:
    """One row's figures: the forwarder started, traffic blasted through it, then stopped."""
    if plan.command is None:  # the sink: nothing forwards, s1-eth1's counter counts
        offered, delivered = blast_rate(net, traffic, seconds, (net.sw, "s1-eth1"), rate)
        return rows.figures(offered, delivered, None)
    forwarder = Forwarder(net.sw, plan.command)
    try:
        offered, delivered = blast_rate(net, traffic, seconds, (net.h2, "h2-eth0"), rate)
    finally:
        totals = forwarder.totals()
    return rows.figures(offered, delivered, totals)


def ping_rtts(net: Net, count: int) -> list[float]:
    ping = ("ping", "-n", "-c", str(count), "-i", "0.05", H2_IP)
    out = run(["ip", "netns", "exec", net.h1, *ping], timeout=60)
    return [float(part.split("=")[1]) for part in out.split() if part.startswith("time=")]


def switch_ports(totals: dict[str, Any]) -> dict[str, Any]:
    """The per-port stats a stopped switch printed (port numbers as strings)."""
    ports = totals.get("stats", {}).get("ports")
    if not isinstance(ports, dict):
        raise ForwardingBenchError(f"the switch printed no per-port stats: {totals}")
    return ports


def shaping_accuracy(net: Net, loop: rows.ShapingLoop, seconds: float) -> dict[str, Any]:
    """Delay (ping RTT against 100 ms) and rate (Mb/s at h2 against 10) through `loop`."""
    switch = Forwarder(net.sw, loop.command("1:delay=50ms", "2:delay=50ms"))
    try:
        rtts = ping_rtts(net, 40)
    finally:
        ports = switch_ports(switch.totals())
    if not rtts:
        raise ForwardingBenchError("no ping replies came back through the delayed switch")
    late = max(port.get("lateness_max_s", 0.0) for port in ports.values())
    size = 1000
    traffic = Traffic(H1_MAC, H2_MAC, H1_IP, H2_IP, payload=size)
    frame_bits = traffic.frame_bytes * 8
    switch = Forwarder(net.sw, loop.command("2:rate=10Mbit"))
    try:
        count_at = (net.h2, "h2-eth0")
        _, fps = blast_rate(net, traffic, seconds, count_at, rate=2 * 10e6 / frame_bits)
    finally:
        port2 = switch_ports(switch.totals()).get("2", {})
    queue_full = port2.get("drops", {}).get("queue_full")
    return {
        "loop": loop.label,
        "delay_rtt_ms": {
            "goal": 100.0,
            "median": statistics.median(rtts),
            "mean": statistics.mean(rtts),
            "min": min(rtts),
            "max": max(rtts),
            "replies": len(rtts),
            "sent": 40,
            "worst_lateness_ms": late * 1e3,
            "unit": "ms",
        },
        "rate_mbps": {
            "goal": 10.0,
            "delivered": fps * frame_bits / 1e6,
            "offered": 20.0,
            "frame_bytes": traffic.frame_bytes,
            "queue_full_drops": queue_full,
            "unit": "Mb/s",
        },
    }


def bench(options: argparse.Namespace, table: TextIO) -> dict[str, Any]:
    agg_slots = AGG_SLOTS if options.size >= rows.AGG_PAYLOAD else 0
    if "agg32" in options.program and not agg_slots:
        raise ForwardingBenchError(
            f"agg32 needs aggregation frames: use --size {rows.AGG_PAYLOAD} or more"
        )
    traffic = Traffic(H1_MAC, H2_MAC, H1_IP, H2_IP, payload=options.size, agg_slots=agg_slots)
    build_tool("sender")
    forwarder = build_tool("forwarder")
    report: dict[str, Any] = {"machine": rows.machine(), "frame_bytes": traffic.frame_bytes}
    report |= {"window_s": options.duration, "aggregation_frames": bool(agg_slots)}
    report |= {"sender_cap_fps": options.rate, "rows": []}
    print(rows.heading(report), file=table, flush=True)
    created: list[str] = []
    try:
        net = build(options.netns_prefix or f"p4b{os.getpid()}", created)
        for plan in rows.planned(options.program, options.processor or [], forwarder):
            row = plan.describe()
            if plan.unavailable is None:
                try:
                    row |= measure(net, plan, traffic, options.duration, options.rate)
                except ForwardingBenchError as err:
                    row["error"] = str(err)
            print(rows.table_row(row, report["rows"]), file=table, flush=True)
            report["rows"].append(row)
        report["shaping"] = []
        if not options.skip_shaping:
            for loop in rows.shaping_loops():
                if loop.unavailable:
                    shaped = {"loop": loop.label, "unavailable": loop.unavailable}
                else:
                    try:
                        shaped = shaping_accuracy(net, loop, options.duration)
                    except ForwardingBenchError as err:
                        shaped = {"loop": loop.label, "error": str(err)}
                report["shaping"].append(shaped)
                print(rows.shaping_lines(shaped), file=table, flush=True)
    finally:
        destroy(created)
    report["machine"]["load_after"] = list(os.getloadavg())
    print(f"load average after: {rows.load_text(report['machine']['load_after'])}", file=table)
    return report


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] == "_plain":
        role_plain(argv[1], argv[2])
        return 0
    parser = argparse.ArgumentParser(
        prog="bench/forwarding.py", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--duration", type=float, default=3.0, help="seconds per measurement")
    parser.add_argument(
        "--size",
        type=int,
        default=rows.AGG_PAYLOAD,
        help=f"UDP payload bytes ({rows.AGG_PAYLOAD}: agg32 frames of 174 B; 18: 60 B frames)",
    )
    parser.add_argument(
        "--program",
        action="append",
        choices=rows.PROGRAMS,
        help="a program measured on each back end and loop (repeatable; default: all)",
    )
    parser.add_argument(
        "--processor",
        action="append",
        help="module:callable returning a PacketProcessor: one more row, in p4switch's python "
        "I/O loop (repeatable)",
    )
    parser.add_argument(
        "--rate", type=float, help="cap the sender at RATE frames/s (default: as fast as it can)"
    )
    parser.add_argument("--skip-shaping", action="store_true", help="forwarding rate only")
    parser.add_argument("--json", action="store_true", help="JSON on stdout, the table on stderr")
    parser.add_argument("--netns-prefix", help="name the namespaces PREFIX-h1, -h2, -sw")
    options = parser.parse_args(argv)
    options.program = options.program or list(rows.PROGRAMS)
    if options.duration <= 0 or (options.rate is not None and options.rate < 1):
        parser.error("--duration must be above 0 s and --rate at least 1 frame/s")
    if os.geteuid() != 0:
        parser.exit(2, "bench/forwarding.py: error: needs root (network namespaces, raw sockets)\n")
    try:
        report = bench(options, sys.stderr if options.json else sys.stdout)
    except ForwardingBenchError as err:
        parser.exit(1, f"bench/forwarding.py: error: {err}\n")
    if options.json:
        json.dump(report, sys.stdout, indent=2)
        print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
