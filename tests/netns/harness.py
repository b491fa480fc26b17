"""Processes the netns tests start inside namespaces: the `p4switch` command, helpers as modules.

Every process is started with an argument list and remembered by its Popen; tests stop exactly
those. `ip netns exec` execs the command in place, so the PID is the command's own.
"""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from p4switch import ControlError, control_request

REPO = Path(__file__).resolve().parents[2]


def ns_python(namespace: str, module: str, *args: str) -> list[str]:
    return ["ip", "netns", "exec", namespace, sys.executable, "-m", module, *args]


@dataclass
class P4Switch:
    """A `p4switch` process in a namespace and its control socket."""

    proc: subprocess.Popen[bytes]
    control: Path
    log: Path

    def stats(self) -> dict[str, Any]:
        reply = control_request(self.control, {"cmd": "stats"}, timeout=5.0)
        assert reply["ok"], reply
        return reply["stats"]

    def log_text(self) -> str:
        return self.log.read_text(errors="replace") if self.log.exists() else ""

    def stop(self, timeout: float = 10.0) -> int:
        """SIGTERM this process (and no other), then SIGKILL after `timeout` (a hang guard:
        the kill's status fails a test); its exit status."""
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        return self.proc.returncode


def launch_p4switch(
    namespace: str, ports: dict[int, str], control: Path, log: Path, *args: str
) -> P4Switch:
    """`p4switch -iN@IFACE... --control SOCKET ARGS` started in `namespace` (not yet ready:
    `wait_ready`), its output in `log`."""
    argv = [f"-i{n}@{name}" for n, name in ports.items()]
    argv += ["--control", str(control), *args]
    with log.open("wb") as out:
        proc = subprocess.Popen(
            ["ip", "netns", "exec", namespace, sys.executable, "-m", "p4switch", *argv],
            cwd=REPO,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    return P4Switch(proc, control, log)


def wait_ready(switch: P4Switch, deadline: float) -> None:
    """Poll until the switch's control channel answers; AssertionError (the switch stopped) if
    it exits first or `deadline` (time.monotonic) passes."""
    while True:
        if switch.proc.poll() is not None:
            raise AssertionError(
                f"p4switch exited with {switch.proc.returncode}:\n{switch.log_text()}"
            )
        try:
            if control_request(switch.control, {"cmd": "ping"}, timeout=1.0)["ok"]:
                return
        except ControlError:
            pass
        if time.monotonic() > deadline:
            switch.stop()
            raise AssertionError(f"p4switch not ready in time:\n{switch.log_text()}")
        time.sleep(0.05)


def start_p4switch(
    namespace: str, ports: dict[int, str], workdir: Path, *args: str, timeout: float = 20.0
) -> P4Switch:
    """`launch_p4switch` with its socket and log in `workdir`, once its control socket
    answers."""
    control, log = workdir / "p4switch.sock", workdir / "p4switch.log"
    switch = launch_p4switch(namespace, ports, control, log, *args)
    wait_ready(switch, time.monotonic() + timeout)
    return switch


def api_port(grpc_base: int, switches: int = 256) -> int:
    """A free TCP port on loopback for a service's API, outside the P4Runtime ports its
    switches will take (grpc_base and up): the kernel's free ports include those."""
    while True:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = int(s.getsockname()[1])
        if not grpc_base <= port < grpc_base + switches:
            return port
