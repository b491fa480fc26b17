"""Forwarding benchmark for the p4switch process: prints figures, not a pass/fail test (root).

In three fresh network namespaces (h1 -- switch -- h2, veth pairs), in one run:

- packets/s through a plain Python AF_PACKET forwarder (a minimal recv->send loop: the
  reference) and through `p4switch.dataplane.Switch` with a processor, under the same traffic: a
  UDP sender in h1 blasting small frames as fast as it can. Delivered packets are counted by h2's
  kernel interface counter over a steady-state window, so no receiver competes for the CPU;
- shaping accuracy: 50 ms one-way delay on both switch ports -> ping RTT against 100 ms, and a
  10 Mb/s rate on the port toward h2 -> throughput measured at h2 under twice that offered load.

The processor is pluggable: `--processor module:callable` names a callable that takes no
arguments and returns a PacketProcessor for ports 1 (toward h1) and 2 (toward h2); by default a
two-port forwarder (1 <-> 2) defined here. The namespaces are deleted on the way out.

    python bench/forwarding.py [--duration 3] [--size 18] [--processor pkg.mod:make]
"""

from __future__ import annotations

import argparse
import importlib
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
from dataclasses import dataclass
from pathlib import Path
from types import FrameType
from typing import Any

from p4switch.control import ControlServer, control_request
from p4switch.dataplane import PacketProcessor, Switch
from p4switch.exceptions import ControlError
from p4switch.ports import PACKET_OUTGOING, open_port
from p4switch.shaping import parse_shape

SCRIPT = Path(__file__).resolve()
REPO = SCRIPT.parents[1]
H1_IP, H2_IP = "10.0.0.1", "10.0.0.2"
H1_MAC, H2_MAC = "02:00:0a:00:00:01", "02:00:0a:00:00:02"
UDP_PORT = 0x4000  # the aggregation program's port (p4_processors.agg32 parses it)
HEADERS = 14 + 20 + 8  # Ethernet, IPv4, UDP


class TwoPortForwarder:
    """The default processor: frames from port 1 leave on port 2 and the other way round."""

    def process(self, ingress_port: int, data: bytes) -> list[tuple[int, bytes]]:
        return [(3 - ingress_port, data)]


def load_processor(spec: str | None) -> PacketProcessor:
    if not spec:
        return TwoPortForwarder()
    module, sep, name = spec.partition(":")
    if not sep:
        raise SystemExit(f"--processor {spec!r}: write module:callable")
    sys.path.insert(0, os.getcwd())
    factory = getattr(importlib.import_module(module), name)
    return factory()


# -- roles run inside the namespaces ------------------------------------------------------------


def _stop_on_signals(stop: threading.Event, wake_fd: int | None = None) -> None:
    def handler(signum: int, frame: FrameType | None) -> None:
        stop.set()
        if wake_fd is not None:
            os.write(wake_fd, b"\0")

    signal.signal(signal.SIGTERM, handler)
    signal.signal(signal.SIGINT, handler)


def role_plain(if1: str, if2: str) -> None:
    """The reference: receive on one port, send on the other, nothing else."""
    a, b = open_port(if1).sock, open_port(if2).sock
    other = {a.fileno(): (a, b), b.fileno(): (b, a)}
    wake_r, wake_w = os.pipe2(os.O_NONBLOCK)
    stop = threading.Event()
    _stop_on_signals(stop, wake_w)
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


def role_switch(
    if1: str, if2: str, control: Path, processor: str | None, shapes: list[str]
) -> None:
    shaping = dict(parse_shape(text) for text in shapes)
    stop = threading.Event()
    with Switch({1: if1, 2: if2}, load_processor(processor), shaping=shaping) as switch:

        def handler(signum: int, frame: FrameType | None) -> None:
            stop.set()
            switch.wake()

        signal.signal(signal.SIGTERM, handler)
        signal.signal(signal.SIGINT, handler)
        with ControlServer(control, switch):
            switch.run(stop)


def role_blast(dest: str, size: int, seconds: float, pps: float | None) -> None:
    """UDP to `dest` for `seconds`: as fast as possible, or paced at `pps`."""
    data = bytes(size)
    sent = 0
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        target = (dest, UDP_PORT)  # not connected: h2's port-unreachable replies are ignored
        sendto = sock.sendto
        start = time.monotonic()
        end = start + seconds
        if pps is None:
            while time.monotonic() < end:
                for _ in range(256):
                    sendto(data, target)
                sent += 256
        else:
            while True:
                now = time.monotonic()
                if now >= end:
                    break
                due = start + sent / pps
                if due > now:
                    time.sleep(due - now)  # pacing
                sendto(data, target)
                sent += 1
        elapsed = time.monotonic() - start
    print(json.dumps({"sent": sent, "seconds": elapsed}), flush=True)


# -- the orchestrator ---------------------------------------------------------------------------


def run(args: Sequence[str], timeout: float = 15.0) -> str:
    done = subprocess.run(list(args), capture_output=True, text=True, timeout=timeout, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(args)}: {done.stderr.strip()}")
    return done.stdout


@dataclass(frozen=True)
class Net:
    h1: str
    h2: str
    sw: str

    @property
    def namespaces(self) -> tuple[str, str, str]:
        return (self.h1, self.h2, self.sw)


def build(prefix: str, created: list[str]) -> Net:
    net = Net(f"{prefix}-h1", f"{prefix}-h2", f"{prefix}-sw")
    for ns in net.namespaces:
        run(["ip", "netns", "add", ns])
        created.append(ns)
        for key in ("all", "default"):
            run(["ip", "netns", "exec", ns, "sysctl", "-qw", f"net.ipv6.conf.{key}.disable_ipv6=1"])
        run(["ip", "-n", ns, "link", "set", "lo", "up"])
    hosts = (
        (net.h1, "h1-eth0", H1_IP, H1_MAC, "s1-eth1"),
        (net.h2, "h2-eth0", H2_IP, H2_MAC, "s1-eth2"),
    )
    for ns, ifname, ip, mac, port in hosts:
        veth = ("type", "veth", "peer", "name", port, "netns", net.sw)
        run(["ip", "link", "add", ifname, "netns", ns, "address", mac, *veth])
        run(["ip", "-n", net.sw, "link", "set", port, "up"])
        run(["ip", "-n", ns, "link", "set", ifname, "up"])
        run(["ip", "-n", ns, "addr", "add", f"{ip}/24", "dev", ifname])
        run(["ip", "netns", "exec", ns, "ethtool", "-K", ifname, "tx", "off", "rx", "off"])
    for ns, ifname, ip, mac in (
        (net.h1, "h1-eth0", H2_IP, H2_MAC),
        (net.h2, "h2-eth0", H1_IP, H1_MAC),
    ):
        static = ("lladdr", mac, "dev", ifname, "nud", "permanent")
        run(["ip", "-n", ns, "neigh", "replace", ip, *static])
    return net


def destroy(created: list[str]) -> None:
    for ns in created:
        subprocess.run(["ip", "netns", "delete", ns], capture_output=True, check=False)


def in_ns(ns: str, *args: str) -> list[str]:
    return ["ip", "netns", "exec", ns, sys.executable, str(SCRIPT), *args]


def rx_packets(ns: str, ifname: str) -> tuple[float, int]:
    """(when, count) of the kernel's receive counter; `when` is the middle of the reading."""
    before = time.monotonic()
    counter = f"/sys/class/net/{ifname}/statistics/rx_packets"
    count = int(run(["ip", "netns", "exec", ns, "cat", counter]))
    return (before + time.monotonic()) / 2, count


class Forwarder:
    """A forwarder process in the switch namespace; stopped by its own PID with SIGTERM."""

    def __init__(self, args: list[str], control: Path | None) -> None:
        self.control = control
        pipe = subprocess.PIPE
        self.proc = subprocess.Popen(
            args, cwd=REPO, stdin=subprocess.DEVNULL, stdout=pipe, stderr=pipe
        )
        deadline = time.monotonic() + 15
        while not self._ready():
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"forwarder did not start: {self.stop()}")
            time.sleep(0.02)  # polling readiness with a deadline

    def _ready(self) -> bool:
        if self.control is None:
            assert self.proc.stdout is not None
            ready, _, _ = select.select([self.proc.stdout], [], [], 0.05)
            return bool(ready) and self.proc.stdout.readline().strip() == b"ready"
        try:
            return bool(control_request(self.control, {"cmd": "ping"})["ok"])
        except ControlError:
            return False

    def stats(self) -> dict[str, Any]:
        assert self.control is not None
        return control_request(self.control, {"cmd": "stats"})["stats"]

    def stop(self) -> str:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            out, err = self.proc.communicate(timeout=5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            out, err = self.proc.communicate()
        return (out + err).decode(errors="replace")


def blast_rate(
    net: Net, size: int, seconds: float, pps: float | None = None
) -> tuple[float, float]:
    """(offered, delivered) packets/s: delivered counted at h2 over the middle of the blast."""
    warmup = 0.5
    sender = subprocess.Popen(
        in_ns(net.h1, "_blast", H2_IP, str(size), str(seconds + 2 * warmup), str(pps or 0)),
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        time.sleep(warmup)  # measurement window, not readiness
        t0, c0 = rx_packets(net.h2, "h2-eth0")
        time.sleep(seconds)
        t1, c1 = rx_packets(net.h2, "h2-eth0")
        out, err = sender.communicate(timeout=seconds + 30)
        if sender.returncode != 0:
            raise RuntimeError(f"sender failed: {err.decode(errors='replace')}")
    finally:
        if sender.poll() is None:
            sender.kill()
            sender.communicate()
    sent = json.loads(out)
    return sent["sent"] / sent["seconds"], (c1 - c0) / (t1 - t0)


def ping_rtts(net: Net, count: int) -> list[float]:
    ping = ("ping", "-n", "-c", str(count), "-i", "0.05", H2_IP)
    out = run(["ip", "netns", "exec", net.h1, *ping], timeout=60)
    return [float(part.split("=")[1]) for part in out.split() if part.startswith("time=")]


def bench(options: argparse.Namespace) -> None:
    created: list[str] = []
    workdir = Path(tempfile.mkdtemp(prefix="p4b"))
    control = workdir / "ctl.sock"
    try:
        net = build(f"p4b{os.getpid()}", created)

        def start_switch(*shapes: str, processor: str | None = None) -> Forwarder:
            chosen = ["--processor", processor] if processor else []
            role = ("_switch", "s1-eth1", "s1-eth2", str(control), *chosen, *shapes)
            return Forwarder(in_ns(net.sw, *role), control)

        print(f"frames of {options.size + HEADERS} B, {options.duration:g} s windows")
        plain = Forwarder(in_ns(net.sw, "_plain", "s1-eth1", "s1-eth2"), None)
        try:
            offered, plain_pps = blast_rate(net, options.size, options.duration)
        finally:
            plain.stop()
        print(
            f"  plain AF_PACKET forwarder (reference): {plain_pps:10,.0f} packets/s "
            f"(offered {offered:,.0f})"
        )
        for processor in options.processor or [None]:
            switch = start_switch(processor=processor)
            try:
                offered2, switch_pps = blast_rate(net, options.size, options.duration)
                drops = {k: v for k, v in switch.stats()["ports"]["1"]["drops"].items() if v}
            finally:
                switch.stop()
            name = processor or "two-port forwarder"
            print(
                f"  Switch, {name}: {switch_pps:10,.0f} packets/s (offered {offered2:,.0f}), "
                f"{switch_pps / plain_pps:.0%} of plain; drops {drops}"
            )
        if options.skip_shaping:
            return
        switch = start_switch("1:delay=50ms", "2:delay=50ms")
        try:
            rtts = ping_rtts(net, 40)
            late = max(p["lateness_max_s"] for p in switch.stats()["ports"].values())
        finally:
            switch.stop()
        print(
            f"  delay 50 ms each way      : RTT median {statistics.median(rtts):.2f} ms, "
            f"mean {statistics.mean(rtts):.2f}, min {min(rtts):.2f}, max {max(rtts):.2f} "
            f"(goal 100; {len(rtts)}/40 replies; worst lateness {late * 1e3:.2f} ms)"
        )
        size = 1000
        frame_bits = (size + HEADERS) * 8
        switch = start_switch("2:rate=10Mbit")
        try:
            _, pps = blast_rate(net, size, options.duration, pps=2 * 10e6 / frame_bits)
            port2 = switch.stats()["ports"]["2"]
        finally:
            switch.stop()
        print(
            f"  rate 10 Mb/s              : {pps * frame_bits / 1e6:.2f} Mb/s delivered "
            f"({size + HEADERS} B frames offered at 20 Mb/s; "
            f"queue_full drops {port2['drops']['queue_full']})"
        )
    finally:
        destroy(created)
        control.unlink(missing_ok=True)
        workdir.rmdir()


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] == "_plain":
        role_plain(argv[1], argv[2])
        return 0
    if argv and argv[0] == "_switch":
        processor = None
        rest = argv[4:]
        if rest[:1] == ["--processor"]:
            processor, rest = rest[1], rest[2:]
        role_switch(argv[1], argv[2], Path(argv[3]), processor, rest)
        return 0
    if argv and argv[0] == "_blast":
        pps = float(argv[4]) or None
        role_blast(argv[1], int(argv[2]), float(argv[3]), pps)
        return 0
    parser = argparse.ArgumentParser(
        prog="bench/forwarding.py", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--duration", type=float, default=3.0, help="seconds per measurement")
    parser.add_argument("--size", type=int, default=18, help="UDP payload bytes (18: 60 B frames)")
    parser.add_argument(
        "--processor",
        action="append",
        help="module:callable returning a PacketProcessor (repeatable: each is measured)",
    )
    parser.add_argument("--skip-shaping", action="store_true", help="forwarding rate only")
    options = parser.parse_args(argv)
    if os.geteuid() != 0:
        parser.exit(2, "bench/forwarding.py: error: needs root (network namespaces, raw sockets)\n")
    bench(options)
    return 0


if __name__ == "__main__":
    sys.exit(main())
