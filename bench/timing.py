"""Real-clock figures of p4switch's shaping, each beside the machine's scheduler lateness
measured in the same run: what the tests cannot assert, because another process can move them.

The reference: a thread sleeps 1 ms, many times, and records how late it woke (p50, p99, max),
once before the switches are measured and once after. A loop that releases frames on time can
be no more punctual than that. Then, as root, in three fresh namespaces (h1 -- sw -- h2,
`bench.vethnet`), for the p4switch command in its python I/O loop and in its native one (each
forwarding with l2.p4 in its own process, as `bench/forwarding.py` starts it) and the link
emulator (`python -m p4switch.linkemu`):

- delay: 20 ms on both ports. One-way time of raw frames from h1 to h2 (sent and received by
  this process, on one clock) against 20 ms; ping's round trip against 40 ms; the switch's own
  `lateness_max_s` (how late it released a frame) and `rx_lag_max_s` (how long a frame waited
  in the kernel before the loop read it);
- rate: 10 Mb/s on the port toward h2, twice that offered. Throughput at h2 (first to last
  arrival) against 10 Mb/s, the tail drops (`queue_full`) and the switch's lateness.

A busy machine shows here as figures far from their goal beside a late reference; the tests
assert only what load cannot break (no reply sooner than the delay, no more than the rate).
`--json` prints one JSON document on stdout and the table on stderr. Without root only the
reference is measured, and a line says what was skipped. Namespaces are deleted on the way out.

    python bench/timing.py [--sleeps 1000] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import select
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Protocol, TextIO

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run as a script from anywhere

from p4switch import ControlError, control_request

from bench import forwarding_rows as rows
from bench.forwarding import Forwarder, ping_rtts, switch_ports
from bench.native_tools import ForwardingBenchError
from bench.vethnet import H1_MAC, H2_MAC, Net, build, destroy
from p4diff.netns import in_namespace

REPO = Path(__file__).resolve().parents[1]
ETHERTYPE = 0x88B6  # local experimental: only this benchmark's frames
DELAY_S = 0.02
RATE_BPS = 10e6
FRAME_BYTES = 1042  # a 1000-byte UDP payload's frame, as the tests send
ONE_WAY_FRAMES = 200
ONE_WAY_GAP_S = 0.005
RATE_SECONDS = 1.5
PINGS = 20


def spread(values: Sequence[float]) -> dict[str, float]:
    """p50, p99 and max of `values` (seconds) in ms."""
    ordered = sorted(values)
    p99 = ordered[min(len(ordered) - 1, round(0.99 * (len(ordered) - 1)))]
    return {"p50": statistics.median(ordered) * 1e3, "p99": p99 * 1e3, "max": ordered[-1] * 1e3}


def sleep_lateness(count: int, sleep_s: float = 0.001) -> dict[str, Any]:
    """How late a thread sleeping `sleep_s` wakes, `count` times: the machine's reference."""
    late: list[float] = []

    def sleeper() -> None:
        for _ in range(count):
            asleep = time.monotonic()
            time.sleep(sleep_s)  # the measurement itself: how late this wakes
            late.append(time.monotonic() - asleep - sleep_s)

    thread = threading.Thread(target=sleeper, name="reference-sleeper")
    thread.start()
    thread.join()
    return {"sleep_ms": sleep_s * 1e3, "sleeps": count, "late_ms": spread(late)}


def raw_socket(interface: str) -> socket.socket:
    sock = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETHERTYPE))
    sock.bind((interface, ETHERTYPE))
    return sock


def frame(seq: int, size: int) -> bytes:
    header = bytes.fromhex(H2_MAC.replace(":", "") + H1_MAC.replace(":", ""))
    return (header + ETHERTYPE.to_bytes(2, "big") + seq.to_bytes(4, "big")).ljust(size, b".")


class Arrivals:
    """Frames of ours arriving at h2, by sequence number, on this process's clock."""

    def __init__(self, net: Net, expected: int) -> None:
        self.sock = in_namespace(net.h2, lambda: raw_socket("h2-eth0"))
        self.expected = expected
        self.at: dict[int, float] = {}
        self.done = threading.Event()  # set by the sender after its last frame and a grace
        self.thread = threading.Thread(target=self._receive, name="arrivals")
        self.thread.start()

    def _receive(self) -> None:
        while len(self.at) < self.expected and not self.done.is_set():
            if select.select([self.sock], [], [], 0.1)[0]:  # a wake-up to see `done`
                data = self.sock.recv(2048)
                self.at[int.from_bytes(data[14:18], "big")] = time.monotonic()

    def wait(self, grace_s: float) -> dict[int, float]:
        self.thread.join(grace_s)
        self.done.set()
        self.thread.join()
        self.sock.close()
        return self.at


def send_paced(net: Net, count: int, size: int, gap_s: float) -> dict[int, float]:
    """`count` frames out of h1, one every `gap_s` (catching up when late); when each left."""
    sock = in_namespace(net.h1, lambda: raw_socket("h1-eth0"))
    frames = [frame(seq, size) for seq in range(count)]
    sent: dict[int, float] = {}
    try:
        start = time.monotonic()
        for seq, data in enumerate(frames):
            ahead = start + seq * gap_s - time.monotonic()
            if ahead > 0:
                time.sleep(ahead)  # pacing, not waiting for readiness
            sent[seq] = time.monotonic()
            sock.send(data)
    finally:
        sock.close()
    return sent


def one_way(net: Net) -> dict[str, Any]:
    arrivals = Arrivals(net, ONE_WAY_FRAMES)
    sent = send_paced(net, ONE_WAY_FRAMES, 64, ONE_WAY_GAP_S)
    at = arrivals.wait(DELAY_S + 2.0)
    times = [at[seq] - sent[seq] for seq in at]
    if not times:
        raise ForwardingBenchError("no frame came through the delayed port")
    return {"goal_ms": DELAY_S * 1e3, "frames": len(times), "sent": len(sent), **spread(times)}


def throughput(net: Net) -> dict[str, Any]:
    bits = FRAME_BYTES * 8
    count = round(RATE_SECONDS * 2 * RATE_BPS / bits)
    arrivals = Arrivals(net, count)
    send_paced(net, count, FRAME_BYTES, bits / (2 * RATE_BPS))
    at = sorted(arrivals.wait(5.0).values())  # the queue drains at the rate: under a second
    if len(at) < 2:
        raise ForwardingBenchError("fewer than two frames came through the rate-limited port")
    delivered = (len(at) - 1) * bits / (at[-1] - at[0])
    return {
        "goal_mbps": RATE_BPS / 1e6,
        "offered_mbps": 2 * RATE_BPS / 1e6,
        "delivered_mbps": delivered / 1e6,
        "frames": len(at),
        "sent": count,
    }


class Shaper(Protocol):
    def finish(self) -> dict[str, Any]:
        """Stop it and return its per-port stats (port numbers as strings)."""


class SwitchShaper:
    """The p4switch command as `bench/forwarding.py` starts it (python or native I/O loop)."""

    def __init__(self, net: Net, loop: rows.ShapingLoop, shapes: Sequence[str]) -> None:
        self.forwarder = Forwarder(net.sw, loop.command(*shapes))

    def finish(self) -> dict[str, Any]:
        return switch_ports(self.forwarder.totals())


class EmulatorShaper:
    """`p4switch.linkemu` on the switch namespace's two ports, ready once its control channel
    answers; its stats read over that channel, then stopped by its own PID."""

    def __init__(self, net: Net, shapes: Sequence[str]) -> None:
        self.dir = tempfile.TemporaryDirectory(prefix="timing-")
        self.control = Path(self.dir.name) / "linkemu.sock"
        argv = [
            *("ip", "netns", "exec", net.sw, sys.executable, "-m", "p4switch.linkemu"),
            *(f"-i{n}@{name}" for n, name in enumerate(rows.PORTS, 1)),
            *(f"--shape={shape}" for shape in shapes),
            "--control",
            str(self.control),
            "--log-level",
            "warning",
        ]
        self.proc = subprocess.Popen(
            argv,
            cwd=REPO,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        deadline = time.monotonic() + 30
        while not self._answers():
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise ForwardingBenchError(f"the link emulator did not start: {self._stop()}")
            time.sleep(0.02)  # polling the control channel, with a deadline

    def _answers(self) -> bool:
        try:
            return bool(control_request(self.control, {"cmd": "ping"})["ok"])
        except ControlError:
            return False

    def _stop(self) -> str:
        if self.proc.poll() is None:
            self.proc.terminate()
        try:
            _, err = self.proc.communicate(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            _, err = self.proc.communicate()
        self.dir.cleanup()
        return err.decode(errors="replace").strip()

    def finish(self) -> dict[str, Any]:
        try:
            reply = control_request(self.control, {"cmd": "stats"}, timeout=5.0)
        finally:
            errors = self._stop()
        if not reply.get("ok"):
            raise ForwardingBenchError(f"the link emulator gave no stats: {reply} {errors}")
        return {str(n): port for n, port in reply["stats"]["ports"].items()}


def peaks(ports: dict[str, Any]) -> dict[str, float]:
    """The switch's worst lateness and receive lag over its ports, in ms."""
    return {
        "lateness_max_ms": max(p.get("lateness_max_s", 0.0) for p in ports.values()) * 1e3,
        "rx_lag_max_ms": max(p.get("rx_lag_max_s", 0.0) for p in ports.values()) * 1e3,
    }


def measure(net: Net, start: Callable[[Sequence[str]], Shaper]) -> dict[str, Any]:
    """Delay, then rate, through a target started afresh for each."""
    target = start((f"1:delay={DELAY_S * 1e3:g}ms", f"2:delay={DELAY_S * 1e3:g}ms"))
    try:
        delay = {"one_way_ms": one_way(net)}
        rtts = [ms / 1e3 for ms in ping_rtts(net, PINGS)]
        delay["rtt_ms"] = {"goal_ms": 2 * DELAY_S * 1e3, "replies": len(rtts), "sent": PINGS}
        if rtts:
            delay["rtt_ms"] |= spread(rtts)
    finally:
        ports = target.finish()
    delay |= peaks(ports)
    target = start((f"2:rate={RATE_BPS / 1e6:g}Mbit",))
    try:
        rate = throughput(net)
    finally:
        ports = target.finish()
    rate |= peaks(ports) | {"queue_full": ports.get("2", {}).get("drops", {}).get("queue_full")}
    return {"delay": delay, "rate": rate}


def targets() -> list[tuple[str, str | None, Callable[[Net, Sequence[str]], Shaper]]]:
    """(label, why it cannot run or None, how to start it on a net with shapes)."""
    found: list[tuple[str, str | None, Callable[[Net, Sequence[str]], Shaper]]] = []
    for loop in rows.shaping_loops():
        found.append(
            (
                loop.label,
                loop.unavailable,
                lambda net, shapes, loop=loop: SwitchShaper(net, loop, shapes),
            )
        )
    found.append(("link emulator (p4switch.linkemu)", None, EmulatorShaper))
    return found


def reference_line(when: str, ref: dict[str, Any]) -> str:
    late = ref["late_ms"]
    return (
        f"reference ({when}): a thread sleeping {ref['sleep_ms']:g} ms x {ref['sleeps']} wakes "
        f"late by p50 {late['p50']:.3f} ms, p99 {late['p99']:.3f}, max {late['max']:.3f}"
    )


def target_lines(row: dict[str, Any]) -> str:
    if "unavailable" in row:
        return f"  {row['target']}: not run: {row['unavailable']}"
    if "error" in row:
        return f"  {row['target']}: failed: {row['error'].strip().splitlines()[-1]}"
    d, r = row["delay"], row["rate"]
    w, rtt = d["one_way_ms"], d["rtt_ms"]
    rtt_text = (
        f"p50 {rtt['p50']:.2f} ms, p99 {rtt['p99']:.2f}, max {rtt['max']:.2f}"
        if "p50" in rtt
        else "no replies"
    )
    return (
        f"  {row['target']}:\n"
        f"    delay {w['goal_ms']:g} ms, one way: p50 {w['p50']:.2f} ms, p99 {w['p99']:.2f}, "
        f"max {w['max']:.2f} ({w['frames']}/{w['sent']} frames); RTT against "
        f"{rtt['goal_ms']:g} ms: {rtt_text} ({rtt['replies']}/{rtt['sent']} replies)\n"
        f"      switch: lateness max {d['lateness_max_ms']:.3f} ms, receive lag max "
        f"{d['rx_lag_max_ms']:.3f} ms\n"
        f"    rate {r['goal_mbps']:g} Mb/s, {r['offered_mbps']:g} offered: "
        f"{r['delivered_mbps']:.2f} Mb/s delivered ({r['frames']}/{r['sent']} frames, "
        f"queue_full {r['queue_full']}); lateness max {r['lateness_max_ms']:.3f} ms"
    )


def bench(sleeps: int, table: TextIO) -> dict[str, Any]:
    report: dict[str, Any] = {"machine": rows.machine()}
    m = report["machine"]
    print(
        f"{m['cores']} cores ({m['cpu']}), Linux {m['kernel']}, load average before: "
        f"{rows.load_text(m['load_before'])}",
        file=table,
        flush=True,
    )
    report["reference_before"] = sleep_lateness(sleeps)
    print(reference_line("before", report["reference_before"]), file=table, flush=True)
    report["targets"] = []
    if os.geteuid() != 0:
        skipped = "switches and link emulator skipped: they need root (namespaces, raw sockets)"
        print(f"  {skipped}; run as root for the delay, lateness and rate figures", file=table)
        return report
    created: list[str] = []
    try:
        net = build(f"tm{os.getpid()}", created)
        for label, unavailable, start in targets():
            row: dict[str, Any] = {"target": label}
            if unavailable is not None:
                row["unavailable"] = unavailable
            else:
                try:
                    row |= measure(net, lambda shapes, start=start: start(net, shapes))
                except ForwardingBenchError as err:
                    row["error"] = str(err)
            report["targets"].append(row)
            print(target_lines(row), file=table, flush=True)
    finally:
        destroy(created)
    report["reference_after"] = sleep_lateness(sleeps)
    print(reference_line("after", report["reference_after"]), file=table)
    report["machine"]["load_after"] = list(os.getloadavg())
    print(f"load average after: {rows.load_text(report['machine']['load_after'])}", file=table)
    return report


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="bench/timing.py", description=__doc__.splitlines()[0])
    parser.add_argument("--sleeps", type=int, default=1000, help="1 ms sleeps of the reference")
    parser.add_argument("--json", action="store_true", help="JSON on stdout, the table on stderr")
    options = parser.parse_args(argv)
    if options.sleeps < 1:
        parser.error("--sleeps must be at least 1")
    report = bench(options.sleeps, sys.stderr if options.json else sys.stdout)
    if options.json:
        json.dump(report, sys.stdout, indent=2)
        print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
