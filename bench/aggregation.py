"""Aggregation goodput of the Mininet testbed against the shaped WAN rate (run as root).

Three islands on a triangle of WAN links, built as users run them: Mininet with one p4switch
per city running innet.p4 (SLOTS = the slot pool per bank), each WAN link shaped by the switches
(rate, one-way delay), the controller installing one round of one group of all three islands
over P4Runtime, and on every island's leader the worker library (bench/aggregation_worker.py),
all three starting at one Unix time. For slot pools above and below the window that
rate x (time from send to result) needs, it prints per island the aggregation goodput (innet
frames per second x 186 bytes, against the link rate: each WAN link direction carries exactly
one member's stream) and the values' rate, beside the planner's cost-model predictions for the
same round, with window pacing (what the worker library does: a leader keeps at most one bank
of slots unanswered) and with rate pacing.

    python bench/aggregation.py [--rate 5Mbit] [--delay 20ms] [--floats 400000]
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import selectors
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # run as a script from anywhere

from mininet.node import Host

from controller.network import MininetNetwork
from controller.planner.cost import CostModel, CostParams
from controller.planner.schedule import Round, Schedule
from controller.testbed import Testbed
from innet.exceptions import InnetError, one_line
from innet.packetformat import PacketFormat
from innet.units import format_rate, parse_duration, parse_rate
from topo.mininet_net import NetworkSpec, build_network
from topo.siteplan import SlotPool
from topo.wan import City, Wan, WanLink

REPO = Path(__file__).resolve().parent.parent
ISLANDS = (0, 1, 2)
PACKET_FORMAT = PacketFormat()  # innet.p4's default: the switches and the leaders
FRAME_BYTES = PACKET_FORMAT.frame_bytes
ROUND = Round.of([ISLANDS])  # one group of all three islands
GRPC_BASE_PORT = 20700  # away from the default (9559) and the tests' ports
NAME_PREFIX = "ag"  # ags0, agh0_1, ...: beside a testbed with the default names
READY_S = 60.0  # a leader imports numpy and computes the software sum before it is ready
START_MARGIN_S = 0.25  # the start time reaches every leader well before it comes
RUN_S = 600.0

Report = dict[str, Any]  # a leader's JSON line


class BenchError(InnetError):
    """A leader failed, or did not answer in time; the message ends with its log."""


def triangle(delay_s: float, rate_bps: float) -> Wan:
    cities = tuple(City(f"I{i}", f"I{i}", "X", 0.0, float(i)) for i in ISLANDS)
    links = tuple(WanLink(f"I{i}", f"I{(i + 1) % 3}", delay_s, rate_bps, "bench") for i in ISLANDS)
    return Wan("triangle", cities, links)


def cost_params(chunks: int, slots: int, pacing: str) -> CostParams:
    """The planner's view: update = the frames on the wire, memory = both slot banks."""
    return CostParams(
        update_bytes=chunks * FRAME_BYTES,
        memory_bytes=2 * slots * FRAME_BYTES,
        access_bps=10e9,  # the hosts' links are not shaped
        slot_bytes=FRAME_BYTES,
        pacing=pacing,
    )


def chunks_of(floats: int) -> int:
    """The chunks a leader sends: the update's, plus the exponent vote."""
    return -(-floats // PACKET_FORMAT.lanes) + 1


def predicted(wan: Wan, chunks: int, slots: int, pacing: str) -> float:
    return CostModel(wan, cost_params(chunks, slots, pacing)).round_cost(ROUND).time_s


@dataclass
class BenchLeader:
    """One island's leader process (bench/aggregation_worker.py) in its Mininet host."""

    island: int
    proc: subprocess.Popen[bytes]
    log_path: Path
    pending: bytes = b""

    def tail(self) -> str:
        text = self.log_path.read_text(errors="replace") if self.log_path.exists() else ""
        return " | ".join(text.strip().splitlines()[-5:]) or "(no output)"

    def line(self, deadline: float) -> Report:
        """The next JSON line the leader prints, by `deadline` (time.monotonic())."""
        assert self.proc.stdout is not None
        fd = self.proc.stdout.fileno()
        with selectors.DefaultSelector() as sel:
            sel.register(fd, selectors.EVENT_READ)
            while b"\n" not in self.pending:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise BenchError(f"island {self.island}: no answer in time; {self.tail()}")
                if sel.select(left):
                    data = os.read(fd, 65536)
                    if not data:
                        code = self.proc.wait()
                        raise BenchError(f"island {self.island}: exited ({code}); {self.tail()}")
                    self.pending += data
        line, _, self.pending = self.pending.partition(b"\n")
        return dict(json.loads(line))

    def send(self, text: str) -> None:
        assert self.proc.stdin is not None
        try:
            self.proc.stdin.write(text.encode() + b"\n")
            self.proc.stdin.flush()
        except OSError as err:
            raise BenchError(f"island {self.island}: gone ({err}); {self.tail()}") from err

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(5.0)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        for pipe in (self.proc.stdin, self.proc.stdout):
            if pipe is not None:
                pipe.close()


def start_leader(host: Host, argv: list[str], log_path: Path, island: int) -> BenchLeader:
    with log_path.open("wb") as err:
        proc = host.popen(
            argv, cwd=REPO, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=err, bufsize=0
        )
    return BenchLeader(island, proc, log_path)


def run_leaders(hosts: list[Host], workdir: Path, args: list[str]) -> list[Report]:
    """Every island's leader sums its update with the others, all from one Unix time."""
    leaders: list[BenchLeader] = []
    try:
        for u, host in zip(ISLANDS, hosts, strict=True):
            argv = [sys.executable, "-m", "bench.aggregation_worker", "--island", str(u), *args]
            leaders.append(start_leader(host, argv, workdir / f"leader{u}.log", u))
        ready = time.monotonic() + READY_S
        for leader in leaders:
            leader.line(ready)
        start_at = time.time() + START_MARGIN_S
        for leader in leaders:
            leader.send(repr(start_at))
        done = time.monotonic() + RUN_S
        reports = [leader.line(done) for leader in leaders]
        for leader in leaders:  # each answers NACKs for a moment, then exits
            code = leader.proc.wait(max(1.0, done - time.monotonic()))
            if code != 0:
                raise BenchError(f"island {leader.island}: exited ({code}); {leader.tail()}")
        return reports
    except subprocess.TimeoutExpired as err:
        raise BenchError(f"a leader did not exit in time: {err}") from err
    finally:
        for leader in leaders:
            leader.stop()


def run_pool(wan: Wan, slots: int, floats: int, pace_bps: float, workdir: Path) -> list[Report]:
    """Build the testbed with `slots` slots per bank, install the round, run the leaders."""
    spec = NetworkSpec(
        wan,
        hosts_per_city=1,
        slots=slots,
        scale=1.0,
        shaping="switch",
        grpc_base_port=GRPC_BASE_PORT,
        packet_format=PACKET_FORMAT,
        name_prefix=NAME_PREFIX,
    )
    net = build_network(spec, workdir / "switches")
    testbed: Testbed | None = None
    try:
        chunks = chunks_of(floats)
        schedule = Schedule("bench", wan.n, (ROUND,))
        pool, params = SlotPool(slots, 1, PACKET_FORMAT), cost_params(chunks, slots, "window")
        testbed = Testbed.start(wan, MininetNetwork(net), params, pool=pool, schedule=schedule)
        installed = testbed.advance()
        args = [
            "--members",
            ",".join(map(str, ISLANDS)),
            "--round",
            str(installed.number & 0xFFFF),
            "--floats",
            str(floats),
            "--window",
            str(slots),
            "--rate-bps",
            repr(pace_bps),
            "--lanes",
            str(PACKET_FORMAT.lanes),
        ]
        leaders = [net.hosts[u][0] for u in ISLANDS]
        return run_leaders(leaders, workdir, args)
    finally:
        if testbed is not None:
            testbed.close()  # closes the fabric, then stops the network
        net.stop()  # idempotent: the network goes even when the controller never came up


def report(
    slots: int,
    window: float,
    wan: Wan,
    reports: list[Report],
    chunks: int,
    floats: int,
    rate_bps: float,
) -> None:
    by_rate = predicted(wan, chunks, slots, "rate")
    by_window = predicted(wan, chunks, slots, "window")
    cover = "covers" if slots >= window else "below"
    for i, r in enumerate(reports):
        goodput = chunks * FRAME_BYTES * 8 / r["elapsed_s"]
        values = floats * 32 / r["elapsed_s"]  # float32 values
        print(
            f"  slots {slots:5d} ({cover} rate x RTT) island {i}: "
            f"{r['elapsed_s']:6.2f} s, goodput {format_rate(goodput)} = "
            f"{goodput / rate_bps:4.0%} of the link (values {format_rate(values)}); "
            f"planner {by_window:6.2f} s (window pacing, as the workers do) / "
            f"{by_rate:.2f} s (rate pacing); resent {r['stats']['retransmitted']}; "
            f"{'exact' if r['exact'] else 'NOT EXACT'}",
            flush=True,
        )


def pools(window: float) -> tuple[int, int]:
    """A pool above rate x RTT and one of about an eighth of it (powers of two, as SLOTS is)."""
    small = max(4, int(window) // 8)
    return 4096, 1 << (small.bit_length() - 1)


def main() -> int:
    parser = argparse.ArgumentParser(
        prog="bench/aggregation.py", description=__doc__.split("\n")[0]
    )
    parser.add_argument("--rate", default="5Mbit", help="WAN link rate (each direction)")
    parser.add_argument("--delay", default="20ms", help="WAN link one-way delay")
    parser.add_argument("--floats", type=int, default=400_000, help="floats per island")
    options = parser.parse_args()
    if options.floats < 1:
        parser.error(f"--floats {options.floats}: at least one float per island")
    if os.geteuid() != 0:
        parser.exit(2, "bench/aggregation.py: error: needs root (Mininet, network namespaces)\n")
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    try:
        rate_bps, delay_s = parse_rate(options.rate), parse_duration(options.delay)
        wan = triangle(delay_s, rate_bps)
        chunks = chunks_of(options.floats)
        window = rate_bps * (2 * delay_s) / (FRAME_BYTES * 8)  # chunks in flight over a round trip
        print(
            f"3 islands (Mininet, p4switch, switch shaping, controller over P4Runtime), WAN "
            f"{format_rate(rate_bps)} and {options.delay} one way, {options.floats:,} floats each "
            f"({chunks:,} chunks); rate x RTT = {window:.0f} chunks",
            flush=True,
        )
        inexact = 0
        for slots in pools(window):
            with tempfile.TemporaryDirectory(prefix="innet-aggbench-") as tmp:
                reports = run_pool(wan, slots, options.floats, rate_bps * 0.97, Path(tmp))
            inexact += sum(not r["exact"] for r in reports)
            report(slots, window, wan, reports, chunks, options.floats, rate_bps)
    except InnetError as err:
        print(f"bench/aggregation.py: error: {one_line(err)}", file=sys.stderr)
        return err.exit_status
    except KeyboardInterrupt:
        print("bench/aggregation.py: interrupted; what it started is stopped", file=sys.stderr)
        return 130
    if inexact:
        print(f"bench/aggregation.py: error: {inexact} sum(s) not exact", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
