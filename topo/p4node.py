"""A Mininet switch that is one `p4switch` process running a P4 program (`P4Switch`), on
`SwitchProcess`: a node in the root namespace backed by one process it starts and stops.

The switch node lives in the root network namespace, like Mininet's other user-space switches:
its interfaces (`s3-eth5`: switch s3, port 5) are veth ends there, the p4switch process binds
each port to its interface with AF_PACKET, and its P4Runtime server listens on a loopback
address every controller in the root namespace reaches. Each switch has a control socket and a
log file in the run directory it is given.

The node remembers the one process it started and stops exactly that one (SIGTERM, then SIGKILL
after a grace period); nothing is ever looked up or killed by name. What the controller cannot
ask over P4Runtime (port counters, processing lag, whether the process answers) it gets from the
node (`port_counters`, `control_alive`), which asks p4switch's control channel; the pipeline the
controller pushes comes from `pipeline()`.
"""

from __future__ import annotations

import json
import logging
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from mininet.node import Switch
from p4.config.v1 import p4info_pb2
from p4switch import ControlError, PortStats, compile_file, read_stats

from innet.stopping import held
from topo.exceptions import SwitchControlError, SwitchStartError, from_p4switch

log = logging.getLogger(__name__)

STOP_GRACE_S = 5.0
STARTUP_TIMEOUT_S = 60.0
UNIX_PATH_MAX = 107  # sun_path holds 108 bytes, the last one a NUL
IFNAMSIZ = 15


# port -> what the switch counts there, as it reports it (interface, rx/tx packets and bytes,
# drops, lateness_max_s, ...; p4switch/docs/p4switch-process.md)
PortCounters = dict[int, PortStats]  # port number -> its statistics


@dataclass(frozen=True, slots=True)
class SwitchPipeline:
    """What a controller's SetForwardingPipelineConfig carries to a switch of this kind."""

    p4info: p4info_pb2.P4Info
    device_config: bytes  # p4switch: the P4 source; BMv2: p4c's JSON


def _log_tail(path: Path, lines: int = 20) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log)"


def control_ping(path: Path, timeout: float = 1.0) -> bool:
    """True when a p4switch answers `ping` on its control socket
    (p4switch/docs/p4switch-process.md)."""
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
            sock.settimeout(timeout)
            sock.connect(os.fspath(path))
            sock.sendall(b'{"cmd": "ping"}\n')
            with sock.makefile("rb") as replies:
                reply = json.loads(replies.readline(4096) or b"null")
    except (OSError, ValueError):
        return False
    return isinstance(reply, dict) and reply.get("ok") is True


class SwitchProcess(Switch):  # type: ignore[misc]  # Mininet has no type information
    """A Mininet switch in the root namespace backed by one process it starts and stops, with a
    control socket and a log file in `rundir`. Subclasses give the command line (`command`)."""

    kind = "switch"  # what the process is, in messages

    def __init__(
        self,
        name: str,
        *,
        rundir: Path,
        startup_timeout: float = STARTUP_TIMEOUT_S,
        **params: object,
    ) -> None:
        params.setdefault("inNamespace", False)
        super().__init__(name, **params)
        self.rundir = Path(rundir)
        self.startup_timeout = startup_timeout
        self.control_path = self.rundir / f"{name}.sock"
        self.log_path = self.rundir / f"{name}.log"
        if len(os.fsencode(self.control_path)) > UNIX_PATH_MAX:
            raise SwitchStartError(
                f"control socket path {self.control_path} is longer than {UNIX_PATH_MAX} bytes; "
                "give the testbed a shorter run directory"
            )
        self.process: subprocess.Popen[bytes] | None = None

    # --- ports ------------------------------------------------------------------------------

    def port_interfaces(self) -> dict[int, str]:
        """Switch port number -> interface name (port 0, Mininet's control `lo`, left out)."""
        return {port: intf.name for intf, port in self.ports.items() if port > 0}

    def port_counters(self, reset_peaks: bool = False) -> PortCounters:
        """Every port's counters from the control channel; with `reset_peaks`, each port's
        lateness peak restarts after the reading (so the next one covers the interval)."""
        try:
            return dict(read_stats(self.control_path, reset_peaks).ports)
        except (ControlError, OSError) as err:
            raise SwitchControlError(f"{self.name}: control channel: {err}") from err

    def engine(self) -> str:
        """What runs the program and moves the frames, as the switch reports it: "back end/I/O
        loop" (e.g. "native/native", "python/python"), or "unknown" when it does not say."""
        try:
            return read_stats(self.control_path).engine
        except (ControlError, OSError):
            return "unknown"

    def control_alive(self) -> bool | None:
        """Whether the control channel answers (None: this kind of switch has none)."""
        return control_ping(self.control_path)

    def command(self) -> list[str]:
        """The process's command line (an argument list, never a shell string)."""
        raise NotImplementedError

    # --- life cycle -------------------------------------------------------------------------

    def start(self, controllers: Sequence[object]) -> None:
        """Start the process (no waiting: `wait_ready` or `batchStartup` does that)."""
        if self.process is not None and self.process.poll() is None:
            return
        for ifname in self.port_interfaces().values():
            _disable_ipv6(ifname)  # the root namespace would otherwise send ND/MLD out of it
        self.rundir.mkdir(parents=True, exist_ok=True)
        argv = self.command()
        log.info("%s: starting %s", self.name, " ".join(argv))
        # held: a stop signal inside Popen (it waits for the exec) would lose the PID of a
        # process already started, which nothing would then stop (innet/stopping.py)
        with self.log_path.open("ab") as out, held():
            self.process = subprocess.Popen(
                argv,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,  # a Ctrl-C in Mininet's CLI is not meant for it
            )

    @property
    def switch_pid(self) -> int | None:
        """PID of the process this node started (None before start)."""
        return self.process.pid if self.process is not None else None

    def ready(self) -> bool:
        """True once the process answers on its control socket; raises if it has exited."""
        if self.process is None:
            raise SwitchStartError(f"{self.name}: {self.kind} was never started")
        code = self.process.poll()
        if code is not None:
            raise SwitchStartError(
                f"{self.name}: {self.kind} exited with status {code} "
                f"(log {self.log_path}):\n{_log_tail(self.log_path)}"
            )
        return control_ping(self.control_path)

    def wait_ready(self, deadline: float) -> None:
        """Poll until ready or until `deadline` (a time.monotonic() value)."""
        wait_all_ready([self], deadline)

    @classmethod
    def batchStartup(cls, switches: Sequence[SwitchProcess]) -> Sequence[SwitchProcess]:
        """Mininet's hook after every switch's start(): wait for them all, together."""
        timeout = max((s.startup_timeout for s in switches), default=0.0)
        wait_all_ready(switches, time.monotonic() + timeout)
        return switches

    def stop_process(self, grace: float = STOP_GRACE_S) -> int | None:
        """Stop the process this node started (idempotent); returns its exit status."""
        proc = self.process
        if proc is None:
            return None
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(grace)
            except subprocess.TimeoutExpired:
                log.warning(
                    "%s: %s %d ignored SIGTERM for %g s, killing it",
                    self.name,
                    self.kind,
                    proc.pid,
                    grace,
                )
                proc.kill()
                proc.wait()
        return proc.returncode

    def stop(self, deleteIntfs: bool = True) -> None:
        self.stop_process()
        super().stop(deleteIntfs)

    @classmethod
    def batchShutdown(cls, switches: Sequence[SwitchProcess]) -> Sequence[SwitchProcess]:
        """Mininet's hook at net.stop(): signal every process first, then wait for each."""
        for sw in switches:
            if sw.process is not None and sw.process.poll() is None:
                sw.process.send_signal(signal.SIGTERM)
        for sw in switches:
            sw.stop()
        return switches


class P4Switch(SwitchProcess):
    """Mininet switch backed by one p4switch process.

    Parameters (given to `Mininet.addSwitch`): `program` (P4 source), `rundir` (control socket
    and log), `grpc_addr`, `device_id`, `defines` (preprocessor `-D`), `shapes` (port -> egress
    spec text, p4switch's `--shape` syntax), `startup_timeout`, `backend` (p4switch's
    `--backend`: native or python; None lets p4switch choose).
    """

    kind = "p4switch"

    def __init__(
        self,
        name: str,
        *,
        program: Path,
        rundir: Path,
        grpc_addr: str,
        device_id: int,
        defines: Mapping[str, str] | None = None,
        shapes: Mapping[int, str] | None = None,
        startup_timeout: float = STARTUP_TIMEOUT_S,
        backend: str | None = None,
        **params: object,
    ) -> None:
        super().__init__(name, rundir=rundir, startup_timeout=startup_timeout, **params)
        self.backend = backend
        self.program = Path(program)
        self.grpc_addr = grpc_addr
        self.device_id = device_id
        self.defines = dict(defines or {})
        self.shapes = dict(shapes or {})

    # --- what the controller asks of the node -----------------------------------------------

    def pipeline(self, build_dir: Path) -> SwitchPipeline:
        """The program compiled with this switch's defines: P4Info and the P4 source.

        `build_dir` is unused here (p4switch compiles the source itself); BMv2 writes p4c's
        output there."""
        with from_p4switch():
            compiled = compile_file(self.program, defines=self.defines)
        return SwitchPipeline(compiled.p4info, self.program.read_bytes())

    def command(self) -> list[str]:
        """The p4switch command line (an argument list, never a shell string)."""
        argv = [sys.executable, "-m", "p4switch", "--p4", str(self.program)]
        for name, value in sorted(self.defines.items()):
            argv += ["-D", f"{name}={value}"]
        for port, ifname in sorted(self.port_interfaces().items()):
            argv += ["-i", f"{port}@{ifname}"]
        for port, spec in sorted(self.shapes.items()):
            argv += ["--shape", f"{port}:{spec}"]
        argv += ["--grpc-addr", self.grpc_addr, "--device-id", str(self.device_id)]
        argv += ["--control", str(self.control_path), "--log-level", "info"]
        if self.backend is not None:
            argv += ["--backend", self.backend]
        return argv


def wait_all_ready(switches: Sequence[SwitchProcess], deadline: float) -> None:
    """Poll every switch until all answer, or raise naming those that did not by `deadline`."""
    waiting = list(switches)
    while waiting:
        waiting = [sw for sw in waiting if not sw.ready()]
        if not waiting:
            return
        if time.monotonic() > deadline:
            names = ", ".join(sw.name for sw in waiting)
            tails = "\n".join(f"--- {sw.log_path}\n{_log_tail(sw.log_path)}" for sw in waiting)
            raise SwitchStartError(f"{names} not ready before the deadline:\n{tails}")
        time.sleep(0.1)  # polling interval between readiness checks


def _disable_ipv6(ifname: str) -> None:
    path = Path("/proc/sys/net/ipv6/conf") / ifname / "disable_ipv6"
    if path.exists():
        path.write_text("1\n")
