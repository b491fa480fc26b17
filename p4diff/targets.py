"""The P4 targets a case runs on, each one switch process in a namespace of its own.

    kind = target_kind("p4switch")
    pipeline = kind.pipeline(case, workdir)  # compiled once, for every target of this kind
    with Target("p4switch", kind, pipeline, case, "p4d4242t0", workdir, sockets) as target:
        target.program()                     # connected, the pipeline pushed
        target.peers[1].send(frame)          # into switch port 1
        target.write(batch)                  # "applied" or "refused"
        target.read_counter("InnetIngress.stats")

A target starts its namespace (`p4diff.netns`), then the switch inside it, bound to the switch
ends of the veths; its P4Runtime server listens on a unix-domain socket (`unix:PATH`), which
the harness reaches from the root namespace because a path is not bound to a network
namespace. The harness connects with the controller's own client (`SwitchConnection`) and
pushes the pipeline with SetForwardingPipelineConfig: the P4 source to p4switch, p4c's JSON to
BMv2. Leaving the `with` stops the process it started (by its PID: SIGTERM, then SIGKILL) and
deletes the namespace, whatever went wrong.
"""

from __future__ import annotations

import contextlib
import logging
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from p4.config.v1 import p4info_pb2
from p4switch import compile_file, load_p4info

from controller.p4rt.connection import PacketIn, SwitchConnection
from controller.p4rt.exceptions import ConnectionLost, P4RuntimeError, SwitchUnreachable
from controller.p4rt.schema import Schema
from innet.exceptions import one_line
from innet.vocabulary import P4Target
from p4diff.case import Case
from p4diff.exceptions import TargetError, TargetUnavailable
from p4diff.netns import PeerPort, SwitchNamespace
from p4diff.recording import Cells
from p4diff.writes import Batch, updates
from topo.bmv2 import CPU_PORT, THRIFT_BASE_PORT, bmv2_command, compile_bmv2, missing_tools
from topo.exceptions import from_p4switch

log = logging.getLogger(__name__)

DEVICE_ID = 1
STARTUP_S = 60.0  # the switch's start and the pipeline's compilation
STOP_GRACE_S = 5.0
LOG_TAIL = 15


@dataclass(frozen=True)
class TargetPipeline:
    """What SetForwardingPipelineConfig carries to one kind of target."""

    p4info: p4info_pb2.P4Info
    device_config: bytes


class Kind(Protocol):
    """How one kind of target is compiled for and started."""

    name: str

    def pipeline(self, case: Case, build_dir: Path) -> TargetPipeline: ...

    def command(self, case: Case, interfaces: dict[int, str], grpc_addr: str) -> list[str]: ...


class P4switchKind:
    """innet's own target: `python -m p4switch`, the P4 source as the device config."""

    name = "p4switch"

    def pipeline(self, case: Case, build_dir: Path) -> TargetPipeline:
        with from_p4switch():
            compiled = compile_file(case.program, [case.program.parent], case.defines)
        return TargetPipeline(compiled.p4info, case.program.read_bytes())

    def command(self, case: Case, interfaces: dict[int, str], grpc_addr: str) -> list[str]:
        # includes and defines on the command line: the source it is sent compiles with them
        argv = [sys.executable, "-m", "p4switch", "-I", str(case.program.parent)]
        for name, value in sorted(case.defines.items()):
            argv += ["-D", f"{name}={value}"]
        for port, ifname in sorted(interfaces.items()):
            argv += ["-i", f"{port}@{ifname}"]
        argv += ["--grpc-addr", grpc_addr, "--device-id", str(DEVICE_ID)]
        if case.cpu_port is not None:
            argv += ["--cpu-port", str(case.cpu_port)]
        return [*argv, "--log-level", "info"]


class Bmv2Kind:
    """BMv2's simple_switch_grpc, started with --no-p4; p4c-bm2-ss's JSON and P4Info pushed."""

    name = "bmv2"

    def pipeline(self, case: Case, build_dir: Path) -> TargetPipeline:
        compiled = compile_bmv2(case.program, build_dir / "bmv2", dict(case.defines))
        return TargetPipeline(load_p4info(compiled.p4info), compiled.json.read_bytes())

    def command(self, case: Case, interfaces: dict[int, str], grpc_addr: str) -> list[str]:
        cpu_port = case.cpu_port if case.cpu_port is not None else CPU_PORT
        if cpu_port in interfaces:
            raise TargetUnavailable(
                f"bmv2 needs a CPU port outside the case's ports; {cpu_port} is one of them: "
                "give the case a cpu_port"
            )
        # the thrift port is the namespace's own: two BMv2 targets never clash
        return bmv2_command(interfaces, grpc_addr, DEVICE_ID, THRIFT_BASE_PORT, cpu_port)


KINDS: dict[P4Target, type[P4switchKind] | type[Bmv2Kind]] = {
    P4Target.P4SWITCH: P4switchKind,
    P4Target.BMV2: Bmv2Kind,
}


def target_kind(name: str) -> Kind:
    """The kind of target `name` names, if it can run on this machine."""
    target = next((t for t in KINDS if t == name), None)
    if target is None:
        raise TargetUnavailable(f"unknown target {name!r} (known: {', '.join(KINDS)})")
    if target == P4Target.BMV2 and missing_tools():
        raise TargetUnavailable(
            f"target bmv2: {', '.join(missing_tools())} not installed here (the Vagrant VM "
            "has them); compare against a recording with --expect instead"
        )
    return KINDS[target]()


class Target:
    """One running switch of some kind, in its own namespace, programmed over P4Runtime."""

    def __init__(
        self,
        name: str,
        kind: Kind,
        pipeline: TargetPipeline,
        case: Case,
        namespace: str,
        workdir: Path,
        socket_dir: Path,
    ) -> None:
        self.name, self.kind, self.pipeline, self.case = name, kind, pipeline, case
        self.namespace = namespace
        self.workdir, self.address = workdir, f"unix:{socket_dir / f'{namespace}.sock'}"
        self.log_path = workdir / f"{name}.log"
        self.process: subprocess.Popen[bytes] | None = None
        self.conn: SwitchConnection | None = None
        self.peers: dict[int, PeerPort] = {}
        self._stack = contextlib.ExitStack()

    # --- life cycle -------------------------------------------------------------------------

    def __enter__(self) -> Target:
        """Build the namespace and start the process (`program` connects and programs it:
        several targets start at once, then each is programmed)."""
        try:
            self._launch()
        except BaseException:
            self._stack.close()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self._stack.close()

    def _launch(self) -> None:
        ns = self._stack.enter_context(SwitchNamespace.create(self.namespace, self.case.ports))
        self.peers = ns.peers
        argv = ns.command(self.kind.command(self.case, ns.interfaces, self.address))
        log.info("%s: starting %s", self.name, " ".join(argv))
        with self.log_path.open("wb") as out:
            self.process = subprocess.Popen(
                argv,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        self._stack.callback(self._stop_process)

    def program(self) -> None:
        """Connect over P4Runtime once the switch answers and push the pipeline."""
        self.conn = self._connect(time.monotonic() + STARTUP_S)
        self._stack.callback(self.conn.close)
        try:
            self.conn.set_pipeline(self.pipeline.p4info, self.pipeline.device_config)
        except P4RuntimeError as err:
            raise self._failed(f"refused the pipeline: {one_line(err)}") from None

    def _connect(self, deadline: float) -> SwitchConnection:
        """Connect once the switch answers; raise if it exits or does not answer in time."""
        path = Path(self.address.removeprefix("unix:"))
        while not path.exists():  # the server's socket: a gRPC channel would back off a second
            self.check_alive()
            if time.monotonic() > deadline:
                raise self._failed(f"no P4Runtime socket at {path}")
            time.sleep(0.02)  # polling the condition, with a deadline
        while True:
            self.check_alive()
            conn = SwitchConnection(self.name, self.address, DEVICE_ID)
            try:
                conn.connect(min(deadline, time.monotonic() + 1.0))
                return conn
            except SwitchUnreachable:
                if time.monotonic() > deadline:
                    raise self._failed(f"no P4Runtime answer at {self.address}") from None
            except P4RuntimeError as err:
                raise self._failed(f"P4Runtime connection: {one_line(err)}") from None

    def check_alive(self) -> None:
        if self.process is not None and self.process.poll() is not None:
            raise self._failed(f"exited with status {self.process.returncode}")

    def _failed(self, what: str) -> TargetError:
        try:
            lines = self.log_path.read_text(errors="replace").splitlines()[-LOG_TAIL:]
        except OSError:
            lines = ["(no log)"]
        tail = "\n".join(f"  | {line}" for line in lines)
        return TargetError(f"target {self.name}: {what} (log {self.log_path}):\n{tail}")

    def _stop_process(self) -> None:
        proc = self.process
        if proc is None or proc.poll() is not None:
            return
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(STOP_GRACE_S)
        except subprocess.TimeoutExpired:
            log.warning("%s: process %d ignored SIGTERM, killing it", self.name, proc.pid)
            proc.kill()
            proc.wait()

    # --- what the steps ask ---------------------------------------------------------------

    @property
    def schema(self) -> Schema:
        if self.conn is None or self.conn.schema is None:
            raise TargetError(f"target {self.name}: not started")
        return self.conn.schema

    def write(self, batch: Batch) -> tuple[str, str]:
        """("applied", "") or ("refused", why): what the target did with the batch."""
        assert self.conn is not None
        try:
            self.conn.write(updates(self.schema, batch), atomic=batch.atomic)
        except ConnectionLost as err:
            raise self._failed(f"lost during a write: {one_line(err)}") from None
        except P4RuntimeError as err:
            return "refused", one_line(err)
        return "applied", ""

    def read_counter(self, counter: str) -> Cells:
        assert self.conn is not None
        try:
            entities = self.conn.read([self.schema.counter_entry(counter)])
        except P4RuntimeError as err:
            raise self._failed(f"reading counter {counter}: {one_line(err)}") from None
        cells = [
            (
                e.counter_entry.index.index,
                e.counter_entry.data.packet_count,
                e.counter_entry.data.byte_count,
            )
            for e in entities
        ]
        return tuple(sorted(cells))

    def packet_ins(self) -> list[PacketIn]:
        assert self.conn is not None
        out = []
        while not self.conn.packet_ins.empty():
            out.append(self.conn.packet_ins.get_nowait())
        return out
