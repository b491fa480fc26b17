"""BMv2 as a target of p4c's STF packet tests (bench/stf.py), beside p4switch: p4c-bm2-ss
compiles the program (its JSON and its P4Info), simple_switch_grpc runs it, and the test's
commands reach it the way they reach p4switch: entries, defaults, multicast groups and clone
sessions as the same P4Runtime writes (against p4c's P4Info), counters as P4Runtime reads.

Frames go in and out as p4c's BMv2 runner (p4c's backends/bmv2/bmv2stf.py) feeds and collects
them: BMv2's `--use-files`, one pcap file in and one out per port named by a `packet` or
`expect` line. A port that receives frames reads a FIFO, written as the test goes, one frame
per `packet` line with increasing timestamps; BMv2's reader hands frames to the switch in
timestamp order across ports, and only once every port still open has one queued (its
head-of-line rule; p4c's runner is subject to it too). Before a write or a counter read that
follows frames, the run waits until BMv2 has finished every frame its reader can hand over,
read from BMv2's debug log: each copy of a packet (an input frame, a clone, a multicast replica,
a resubmitted or recirculated one) is counted from where it is made to where it leaves
(transmitted or dropped). At the end every FIFO is closed, BMv2 finishes every frame, and each
port's output file is read.

Every BMv2 process is started with an argument list, remembered by its PID and stopped in a
`finally`; its files live in a temporary folder removed at the end.
"""

from __future__ import annotations

import os
import queue
import re
import shutil
import signal
import socket
import struct
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import grpc
from google.protobuf import text_format
from p4.config.v1 import p4info_pb2
from p4.v1 import p4runtime_pb2, p4runtime_pb2_grpc

TOOL_DIRS = (Path("/usr/local/bin"), Path("/opt/p4/bin"))  # where BMv2 and p4c are installed
PCAP_HEADER = struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1)  # Ethernet frames
RECORD = struct.Struct("<IIII")  # seconds, microseconds, captured length, length
START_TIMEOUT = 60.0  # seconds for BMv2 to take its pipeline
SETTLE_TIMEOUT = 60.0  # seconds for BMv2 to finish the frames given to it


class Bmv2Error(RuntimeError):
    """BMv2 did not start, died, or did not finish its frames in time."""


@dataclass(frozen=True)
class Bmv2Tools:
    compiler: Path  # p4c-bm2-ss
    switch: Path  # simple_switch_grpc

    @property
    def includes(self) -> Path:
        return self.compiler.parents[1] / "share" / "p4c" / "p4include"


def find_tools() -> Bmv2Tools | None:
    """p4c-bm2-ss and simple_switch_grpc, on PATH or in the usual install folders."""

    def find(name: str) -> Path | None:
        found = shutil.which(name)
        if found is not None:
            return Path(found)
        return next((d / name for d in TOOL_DIRS if (d / name).is_file()), None)

    compiler, switch = find("p4c-bm2-ss"), find("simple_switch_grpc")
    if compiler is None or switch is None:
        return None
    return Bmv2Tools(compiler, switch)


@dataclass(frozen=True)
class Bmv2Program:
    json: Path
    p4info: p4info_pb2.P4Info


class Bmv2CompileError(Exception):
    """p4c-bm2-ss refused the program: its first error line."""


def compile_program(tools: Bmv2Tools, source: Path, folder: Path) -> Bmv2Program:
    """The BMv2 JSON and P4Info p4c-bm2-ss writes for `source`, into `folder`."""
    json_path, p4info_path = folder / "program.json", folder / "program.p4info.txtpb"
    run = subprocess.run(
        [
            str(tools.compiler),
            "--p4runtime-files",
            str(p4info_path),
            "-o",
            str(json_path),
            str(source),
        ],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "P4C_16_INCLUDE_PATH": str(tools.includes)},
    )
    if run.returncode != 0 or not json_path.exists():
        errors = (ln for ln in run.stderr.splitlines() if re.search(r"\berror:", ln))
        first = next(errors, run.stderr.strip() or f"exit {run.returncode}")
        raise Bmv2CompileError(" ".join(first.split())[:300])
    p4info = text_format.Parse(p4info_path.read_text(), p4info_pb2.P4Info())
    return Bmv2Program(json_path, p4info)


# --- what BMv2's pcap reader hands over --------------------------------------------------------


@dataclass
class FrameQueue:
    """The frames written to each input port, as sequence numbers (their timestamps)."""

    ports: dict[int, list[int]]  # every input port, from the start
    count: int = 0

    def add(self, port: int) -> None:
        self.ports[port].append(self.count)
        self.count += 1

    def handed_over(self, closed: bool) -> int:
        """How many frames BMv2's reader hands to the switch: the earliest head of all the
        ports' queues goes next, but only while no port that is still open has an empty queue
        (the reader blocks reading it). With every file `closed`, all of them."""
        if closed:
            return self.count
        heads = {port: list(frames) for port, frames in self.ports.items()}
        handed = 0
        while heads and all(heads.values()):
            port = min(heads, key=lambda p: heads[p][0])
            heads[port].pop(0)
            handed += 1
        return handed


# --- BMv2's log: when the switch is done ---------------------------------------------------------

# Each copy of a packet is made (an input frame is counted when written) and leaves once.
_MADE = re.compile(r"Replicating packet on port|Cloning packet to egress port")
_LEFT = re.compile(
    r"Transmitting packet of size|Dropping packet at the end of (?:ingress|egress)"
    r"|Multicast requested for packet|Priority out of range, dropping packet"
)
_RECEIVED = re.compile(r"Processing packet received on port")
_TRANSMIT = re.compile(r"Transmitting packet of size \d+ out of port (\d+)")


@dataclass
class LogWatch:
    """BMv2's log file read as it grows: copies made and left, frames transmitted per port."""

    path: Path
    made: int = 0
    left: int = 0
    received: int = 0  # ingress passes: input frames, resubmitted and recirculated copies
    again: int = 0  # resubmitted or recirculated: an ingress pass that is no new input frame
    transmitted: dict[int, int] = field(default_factory=dict)
    _offset: int = 0
    _partial: str = ""

    def read(self) -> None:
        if not self.path.exists():
            return
        with self.path.open("rb") as log:
            log.seek(self._offset)
            data = log.read()
        self._offset += len(data)
        text = self._partial + data.decode(errors="replace")
        lines = text.split("\n")
        self._partial = lines.pop()
        for line in lines:
            if _MADE.search(line):
                self.made += 1
            elif _LEFT.search(line):
                self.left += 1
                transmit = _TRANSMIT.search(line)
                if transmit:
                    port = int(transmit.group(1))
                    self.transmitted[port] = self.transmitted.get(port, 0) + 1
            elif _RECEIVED.search(line):
                self.received += 1
            elif "Resubmitting packet" in line or "Recirculating packet" in line:
                self.again += 1

    def settled(self, frames: int) -> bool:
        """Every one of `frames` input frames taken in, and every copy of them gone."""
        return self.received - self.again >= frames and frames + self.made == self.left


# --- the switch ----------------------------------------------------------------------------------


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _stop(process: subprocess.Popen[bytes]) -> None:
    """Stop the one process started, by its PID: SIGTERM, then SIGKILL."""
    if process.poll() is None:
        os.kill(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            os.kill(process.pid, signal.SIGKILL)
            process.wait()


class Bmv2Switch:
    """A running simple_switch_grpc with pcap files per port, as bench/stf.py's target."""

    def __init__(
        self,
        program: Bmv2Program,
        process: subprocess.Popen[bytes],
        channel: grpc.Channel,
        folder: Path,
        fifos: dict[int, int],
    ) -> None:
        self.p4info = program.p4info
        self._process = process
        self._channel = channel
        self._stub = p4runtime_pb2_grpc.P4RuntimeStub(channel)
        self._folder = folder
        self._fifos = fifos  # input port -> the FIFO's file descriptor
        self._queue = FrameQueue({port: [] for port in fifos})
        self._log = LogWatch(folder / "switch.txt")  # `--log-file switch`: BMv2 adds .txt
        self._closed = False
        self.mastership: object = None  # the open stream channel

    # what bench/stf.py calls

    def write(self, updates: Sequence[p4runtime_pb2.Update]) -> None:
        self._settle()
        request = p4runtime_pb2.WriteRequest(device_id=0, election_id=_ELECTION)
        request.updates.extend(updates)
        self._stub.Write(request, timeout=30)

    def send(self, port: int, frame: bytes) -> None:
        if port not in self._fifos:
            raise Bmv2Error(f"port {port} has no input file")
        record = RECORD.pack(self._queue.count, 0, len(frame), len(frame))
        os.write(self._fifos[port], record + frame)
        self._queue.add(port)

    def counter(self, name: str) -> list[int]:
        self._settle()
        counter = next(c for c in self.p4info.counters if c.preamble.name == name)
        request = p4runtime_pb2.ReadRequest(device_id=0)
        request.entities.add().counter_entry.counter_id = counter.preamble.id
        cells = [0] * counter.size
        for response in self._stub.Read(request, timeout=30):
            for entity in response.entities:
                entry = entity.counter_entry
                if 0 <= entry.index.index < counter.size:
                    cells[entry.index.index] = entry.data.packet_count
        return cells

    def frames(self) -> list[tuple[int, bytes]]:
        """Close every input, let BMv2 finish, and read what came out of each port."""
        self._close_inputs()
        self._settle()
        out = {port: _read_pcap(self._out_file(port)) for port in self._ports()}
        deadline = time.monotonic() + SETTLE_TIMEOUT
        while any(len(out[p]) < self._log.transmitted.get(p, 0) for p in out):
            if time.monotonic() > deadline:
                raise Bmv2Error("BMv2 logged frames it did not write to its pcap files")
            time.sleep(0.01)
            out = {port: _read_pcap(self._out_file(port)) for port in out}
        return [(port, frame) for port, frames in sorted(out.items()) for frame in frames]

    # inside

    def _ports(self) -> list[int]:
        return sorted(
            int(p.name[4 : -len("_out.pcap")]) for p in self._folder.glob("port*_out.pcap")
        )

    def _out_file(self, port: int) -> Path:
        return self._folder / f"port{port}_out.pcap"

    def _close_inputs(self) -> None:
        if not self._closed:
            for fd in self._fifos.values():
                os.close(fd)
            self._closed = True

    def _settle(self) -> None:
        """Wait until BMv2 has finished every frame its reader can hand over."""
        frames = self._queue.handed_over(self._closed)
        deadline = time.monotonic() + SETTLE_TIMEOUT
        while True:
            self._log.read()
            if self._log.settled(frames):
                return
            if self._process.poll() is not None:
                raise Bmv2Error(f"BMv2 ended (exit status {self._process.returncode})")
            if time.monotonic() > deadline:
                raise Bmv2Error(
                    f"BMv2 did not finish {frames} frame(s) in {SETTLE_TIMEOUT:.0f} s "
                    f"({self._log.received} ingress passes, "
                    f"{self._log.made} copies made, {self._log.left} gone)"
                )
            time.sleep(0.005)

    def close(self) -> None:
        self._close_inputs()
        self._channel.close()


_ELECTION = p4runtime_pb2.Uint128(high=0, low=1)


def _read_pcap(path: Path) -> list[bytes]:
    data = path.read_bytes() if path.exists() else b""
    frames, offset = [], len(PCAP_HEADER)
    while offset + RECORD.size <= len(data):
        _, _, captured, _ = RECORD.unpack_from(data, offset)
        offset += RECORD.size
        if offset + captured > len(data):
            break  # a record being written
        frames.append(data[offset : offset + captured])
        offset += captured
    return frames


@contextmanager
def running(
    tools: Bmv2Tools,
    program: Bmv2Program,
    inputs: set[int],
    outputs: set[int],
    started: Callable[[int], None] = lambda pid: None,
    stopped: Callable[[int], None] = lambda pid: None,
    under: Path | None = None,
) -> Iterator[Bmv2Switch]:
    """simple_switch_grpc running `program` with a pcap file pair for each port of `inputs`
    (written as FIFOs) and `outputs`; stopped by its PID on the way out, whatever happens.
    `started` is told the PID, `stopped` the PID once it is stopped (for a parent that may have
    to kill this process when this one is killed before its `finally`); its files go to a
    temporary folder `under` that folder if given."""
    with tempfile.TemporaryDirectory(prefix="bmv2-", dir=under) as tmp:
        folder = Path(tmp)
        fifos: dict[int, int] = {}
        process: subprocess.Popen[bytes] | None = None
        switch: Bmv2Switch | None = None
        stream: queue.Queue[p4runtime_pb2.StreamMessageRequest | None] = queue.Queue()
        try:
            for port in sorted(inputs | outputs):
                path = folder / f"port{port}_in.pcap"
                if port in inputs:
                    os.mkfifo(path)
                    fifos[port] = os.open(path, os.O_RDWR)  # no wait for BMv2 to open it
                    os.write(fifos[port], PCAP_HEADER)
                else:
                    path.write_bytes(PCAP_HEADER)  # no frames: at its end at once
            grpc_port, thrift_port = _free_port(), _free_port()
            command = [
                str(tools.switch),
                "--use-files",
                "0",
                "--log-file",
                str(folder / "switch"),
                "--log-flush",
                "--log-level",
                "debug",
                "--thrift-port",
                str(thrift_port),
                "--notifications-addr",
                f"ipc://{folder / 'notifications.ipc'}",
                "--device-id",
                "0",
            ]
            for port in sorted(inputs | outputs):
                command += ["-i", f"{port}@{folder / f'port{port}'}"]
            command += [
                "--no-p4",
                "--",
                "--grpc-server-addr",
                f"127.0.0.1:{grpc_port}",
            ]
            with (folder / "stderr.txt").open("wb") as stderr:
                process = subprocess.Popen(
                    command,
                    cwd=folder,
                    stdout=subprocess.DEVNULL,
                    stderr=stderr,
                    start_new_session=True,
                )
            started(process.pid)
            channel = grpc.insecure_channel(f"127.0.0.1:{grpc_port}")
            switch = Bmv2Switch(program, process, channel, folder, fifos)
            switch.mastership = _set_pipeline(channel, program, process, stream)
            yield switch
        finally:
            stream.put(None)  # ends the stream channel
            if switch is not None:
                switch.close()
            else:
                for fd in fifos.values():
                    os.close(fd)
            if process is not None:
                _stop(process)
                stopped(process.pid)


def _set_pipeline(
    channel: grpc.Channel,
    program: Bmv2Program,
    process: subprocess.Popen[bytes],
    requests: queue.Queue[p4runtime_pb2.StreamMessageRequest | None],
) -> object:
    """Take mastership and push the JSON and P4Info, once the server answers."""
    stub = p4runtime_pb2_grpc.P4RuntimeStub(channel)
    deadline = time.monotonic() + START_TIMEOUT
    ready = grpc.channel_ready_future(channel)
    try:
        while True:
            if process.poll() is not None:
                raise Bmv2Error(f"simple_switch_grpc ended (exit status {process.returncode})")
            try:
                ready.result(timeout=0.5)
                break
            except grpc.FutureTimeoutError:
                if time.monotonic() > deadline:
                    raise Bmv2Error(
                        f"simple_switch_grpc not answering in {START_TIMEOUT:.0f} s"
                    ) from None
    finally:
        ready.cancel()  # no thread left polling a channel closed later
    arbitration = p4runtime_pb2.StreamMessageRequest()
    arbitration.arbitration.device_id = 0
    arbitration.arbitration.election_id.CopyFrom(_ELECTION)
    requests.put(arbitration)
    stream = stub.StreamChannel(iter(requests.get, None))
    next(stream)  # the arbitration answer; the stream stays open: mastership lasts with it
    request = p4runtime_pb2.SetForwardingPipelineConfigRequest(
        device_id=0,
        election_id=_ELECTION,
        action=p4runtime_pb2.SetForwardingPipelineConfigRequest.VERIFY_AND_COMMIT,
    )
    request.config.p4info.CopyFrom(program.p4info)
    request.config.p4_device_config = program.json.read_bytes()
    stub.SetForwardingPipelineConfig(request, timeout=START_TIMEOUT)
    return stream  # kept by the caller: the channel ends when it is collected
