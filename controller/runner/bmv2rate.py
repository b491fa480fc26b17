"""innet.p4's frame rate on BMv2, for the machine check of a run whose edges are BMv2.

The check of a p4switch run measures p4switch's pipeline in process; BMv2 runs only as its own
process, so here one `simple_switch_grpc` (the one the run would start: `topo.bmv2`) runs in a
namespace of its own with one veth pair per port of island 0's edge, is given innet.p4 as p4c
compiles it for the run's first memory point, and the base and all-to-all round entries the
controller installs there (over P4Runtime, as the run programs its edges). The check's frames
(`calibration.chunk_frames`: every member's contribution to one chunk after another, the own
LOCAL copy last, which completes the slot and sends the sum to the hosts) go in from the
harness's ends of the ports, a window of chunks at a time, each window's sums awaited on host
port 1. The figure is frames in per CPU second of the switch process (its threads together,
from /proc), the best of `REPEATS` spans: the same unit as p4switch's.

Needs root (a namespace) and BMv2's tools; Bmv2Error says which are missing. Everything it
starts is stopped, and the namespace deleted, on the way out.
"""

from __future__ import annotations

import logging
import os
import subprocess
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from controller.p4rt.connection import SwitchConnection
from controller.p4rt.exceptions import P4RuntimeError
from controller.p4rt.started import SwitchStartFailed, connect_started, stop_started
from controller.rounds import to_updates
from controller.runner.emulation import Emulation
from controller.runner.exceptions import ExperimentError
from controller.runner.member import member_changes
from innet.exceptions import one_line
from innet.paths import INNET_P4
from p4diff.netns import PeerPort, SwitchNamespace
from topo import siteplan as site
from topo.bmv2 import THRIFT_BASE_PORT, bmv2_command, bmv2_pipeline, require_tools
from workers.packets import PacketType

log = logging.getLogger(__name__)

DEVICE_ID = 1
ISLAND = 0
# chunks sent before their sums are awaited: BMv2 (1.15, default queues) lost some of a burst
# of 8 chunks' 80 frames into one edge, none of 4 chunks' 40
WINDOW = 4
SUM_WAIT_S = 5.0  # a window's sums that have not come by then are lost
WARM_UP_WINDOWS = 20  # windows sent before the measurement, until one comes back whole
INNET_OFFSET = 14 + 20 + 8
STARTUP_S = 60.0  # the switch's start (a busy machine is slow to start it)


def edge_ports(em: Emulation) -> list[int]:
    """Island 0's edge ports: its hosts', then one per WAN link (the site plan's numbering)."""
    wan, hosts = em.scenario.wan, em.scenario.hosts
    links = (site.wan_port(wan, ISLAND, v, hosts) for v in wan.neighbours(ISLAND))
    return sorted({*site.host_ports(hosts), *links})


def process_cpu_s(pid: int) -> float:
    """The CPU seconds process `pid` has used, all its threads (utime + stime, /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def bmv2_rate(
    em: Emulation,
    frames: Callable[[int], list[tuple[int, bytes]]],
    span_s: float,
    repeats: int,
    binary: Path | None = None,
) -> float:
    """innet.p4's frames per CPU second on simple_switch_grpc: the best of `repeats` spans of
    `span_s`, `frames(chunk)` giving each chunk's (ingress port, frame); `binary` is another
    simple_switch_grpc than the one a run starts (a benchmark's build for speed)."""
    require_tools()
    slots = em.points[0].pool.slots_per_bank
    with (
        tempfile.TemporaryDirectory(prefix="innet-bmv2-check-") as tmp,
        SwitchNamespace.create(f"innetchk{os.getpid()}", edge_ports(em)) as ns,
    ):
        pipeline = bmv2_pipeline(INNET_P4, Path(tmp), site.program_defines(em.packet_format, slots))
        address = f"unix:{tmp}/p4rt.sock"
        argv = bmv2_command(ns.interfaces, address, DEVICE_ID, THRIFT_BASE_PORT)
        if binary is not None:
            argv[0] = str(binary)
        log_path = Path(tmp) / "switch.log"
        with log_path.open("wb") as out:
            proc = subprocess.Popen(
                ns.command(argv),
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        try:
            try:
                conn = connect_started(proc, address, DEVICE_ID, log_path, STARTUP_S)
            except SwitchStartFailed as err:
                raise ExperimentError(f"calibration on BMv2: {one_line(err)}") from None
            try:
                conn.set_pipeline(pipeline.p4info, pipeline.device_config)
                _install(conn, em)
                pump = _Pump(ns.peers, frames, proc.pid)
                pump.warm_up()
                return max(pump.rate(span_s) for _ in range(repeats))
            except P4RuntimeError as err:
                raise ExperimentError(f"calibration on BMv2: {one_line(err)}") from None
            finally:
                conn.close()
        finally:
            stop_started(proc)  # waited: its CPU time is this process's children's


def _install(conn: SwitchConnection, em: Emulation) -> None:
    """The base entries and an all-to-all round at island 0's edge, as the controller writes."""
    schema = conn.schema
    assert schema is not None  # known once the pipeline is set
    for changes in member_changes(em, ISLAND):
        conn.write(to_updates(schema, changes))


class _Pump:
    """Windows of chunks in, their sums out on host port 1, the switch's CPU time counted."""

    def __init__(
        self, peers: dict[int, PeerPort], frames: Callable[[int], list[tuple[int, bytes]]], pid: int
    ) -> None:
        self.peers, self.frames, self.pid = peers, frames, pid
        self.chunk = 0

    def warm_up(self) -> None:
        """Windows until one comes back whole: a switch just programmed may still lose the
        first frames (its ports' capture starting); ExperimentError if none does."""
        for _ in range(WARM_UP_WINDOWS):
            if self._window()[1] == 0:
                return
        raise ExperimentError(
            f"calibration on BMv2: no window of {WINDOW} chunks came back whole in "
            f"{WARM_UP_WINDOWS} tries: the switch does not sum the check's frames"
        )

    def rate(self, span_s: float) -> float:
        sent, lost, windows, cpu0 = 0, 0, 0, process_cpu_s(self.pid)
        start = time.monotonic()
        while time.monotonic() - start < span_s:
            frames, missing = self._window()
            sent, lost, windows = sent + frames, lost + missing, windows + 1
        cpu = process_cpu_s(self.pid) - cpu0
        if lost > windows * WINDOW // 20 or cpu <= 0:
            raise ExperimentError(
                f"calibration on BMv2: {lost} of {windows * WINDOW} chunks came back without "
                f"a sum (the switch used {cpu:.2f} s of CPU): BMv2 dropped the check's frames"
            )
        return sent / cpu

    def _window(self) -> tuple[int, int]:
        """(frames sent, sums missing) of the next WINDOW chunks."""
        sent = 0
        for chunk in range(self.chunk, self.chunk + WINDOW):
            for port, frame in self.frames(chunk):
                self.peers[port].send(frame)
                sent += 1
        self.chunk += WINDOW
        return sent, WINDOW - self._sums(WINDOW)

    def _sums(self, expected: int) -> int:
        """How many sums arrive on host port 1 (at most `expected`, waiting SUM_WAIT_S)."""
        peer, got = self.peers[site.host_ports(1)[0]], 0
        deadline = time.monotonic() + SUM_WAIT_S
        while got < expected and time.monotonic() < deadline:
            got += sum(1 for r in peer.receive_all() if not r.stray and _is_result(r.frame))
            if got < expected:
                time.sleep(0.0005)  # polling the socket for the switch's frames, with a deadline
        return got


def _is_result(frame: bytes) -> bool:
    """An innet RESULT (a chunk's sum), not a BOUNCE: the type in the innet header's first
    byte, after Ethernet, IPv4 (no options) and UDP (docs/protocol.md)."""
    return len(frame) > INNET_OFFSET and frame[INNET_OFFSET] & 0x0F == PacketType.RESULT
