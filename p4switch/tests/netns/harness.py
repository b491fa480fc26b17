"""Processes the netns tests start inside namespaces: the switch, traffic, ping.

Every process is started with an argument list and remembered by its Popen; tests stop exactly
those. `ip netns exec` execs the command in place, so the PID is the command's own.
"""

from __future__ import annotations

import json
import re
import select
import signal
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from p4switch.control import control_request
from p4switch.exceptions import ControlError
from tests.netns.topology import Host, TwoHostNet

PROJECT = Path(__file__).resolve().parents[2]  # p4switch's folder: `tests` is its package
_RTT = re.compile(r"time=([\d.]+) ms")


def ns_python(namespace: str, module: str, *args: str) -> list[str]:
    return ["ip", "netns", "exec", namespace, sys.executable, "-m", module, *args]


def ns_run(
    namespace: str, module: str, *args: str, timeout: float = 30.0
) -> subprocess.CompletedProcess[str]:
    """Run `python -m module args` in `namespace` to its end: its status and its text output."""
    return subprocess.run(
        ns_python(namespace, module, *args),
        cwd=PROJECT,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


@dataclass
class SwitchProcess:
    """A forwarder subprocess in the switch namespace and its control socket."""

    proc: subprocess.Popen[bytes]
    control: Path
    log: Path

    def request(self, request: dict[str, Any]) -> dict[str, Any]:
        return control_request(self.control, request, timeout=5.0)

    def stats(self) -> dict[str, Any]:
        reply = self.request({"cmd": "stats"})
        assert reply["ok"], reply
        return reply["stats"]

    def log_text(self) -> str:
        return self.log.read_text(errors="replace") if self.log.exists() else ""

    def terminate(self, timeout: float = 5.0) -> int:
        """SIGTERM this process (and no other); SIGKILL it if it does not exit in time."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        return self.proc.returncode


@dataclass
class SwitchLauncher:
    """Starts forwarder processes for one test and stops all of them afterwards."""

    net: TwoHostNet
    workdir: Path
    started: list[SwitchProcess] = field(default_factory=list)

    def start(
        self, *shapes: str, pcap_dir: Path | None = None, seed: int = 0, timeout: float = 10.0
    ) -> SwitchProcess:
        index = len(self.started)
        control = self.workdir / f"sw{index}.sock"
        log = self.workdir / f"sw{index}.log"
        args = [f"--port={n}={name}" for n, name in self.net.switch_ports.items()]
        args += [f"--shape={shape}" for shape in shapes]
        args += ["--control", str(control), "--seed", str(seed)]
        if pcap_dir is not None:
            args += ["--pcap-dir", str(pcap_dir)]
        return start_controlled(
            self.net.switch_namespace,
            "tests.netns.forwarder",
            args,
            control,
            log,
            self.started,
            timeout=timeout,
        )

    def stop_all(self) -> None:
        for switch in self.started:
            switch.terminate()


def start_controlled(
    namespace: str,
    module: str,
    args: Sequence[str],
    control: Path,
    log: Path,
    started: list[SwitchProcess],
    *,
    timeout: float = 10.0,
) -> SwitchProcess:
    """Start `python -m module args` in `namespace` (output to `log`), remember it in `started`
    (so that the caller stops it, whatever happens next), and return it once its control
    channel at `control` answers; an AssertionError with its log if it exits or does not answer
    within `timeout` s."""
    with log.open("wb") as log_file:
        proc = subprocess.Popen(
            ns_python(namespace, module, *args),
            cwd=PROJECT,
            stdin=subprocess.DEVNULL,
            stdout=log_file,
            stderr=subprocess.STDOUT,
        )
    process = SwitchProcess(proc, control, log)
    started.append(process)
    deadline = time.monotonic() + timeout
    while True:
        if proc.poll() is not None:
            raise AssertionError(f"{module} exited with {proc.returncode}:\n{process.log_text()}")
        try:
            if process.request({"cmd": "ping"})["ok"]:
                return process
        except ControlError:
            pass
        if time.monotonic() > deadline:
            raise AssertionError(f"{module} not ready in {timeout} s:\n{process.log_text()}")
        time.sleep(0.02)  # polling the readiness condition, with a deadline


def ping_rtts(src: Host, dst: Host, count: int = 10, interval: float = 0.05) -> list[float]:
    """Round-trip times in ms of the echo replies that came back."""
    out = subprocess.run(
        [
            *("ip", "netns", "exec", src.namespace),
            *("ping", "-n", "-c", str(count), "-i", str(interval), "-W", "2", dst.ip),
        ],
        capture_output=True,
        text=True,
        timeout=count * interval + 10,
        check=False,
    ).stdout
    return [float(ms) for ms in _RTT.findall(out)]


class Receiver:
    """A UDP receiver in a host namespace; `result()` waits for its JSON summary.

    It stops after `count` datagrams, or `idle` seconds after the last one.
    """

    def __init__(
        self,
        host: Host,
        port: int,
        size: int,
        *,
        count: int | None = None,
        idle: float = 1.0,
        timeout: float = 10.0,
    ) -> None:
        args = ["--port", str(port), "--size", str(size), "--idle", str(idle)]
        if count is not None:
            args += ["--count", str(count)]
        self.proc = subprocess.Popen(
            ns_python(host.namespace, "tests.netns.traffic", "recv", *args),
            cwd=PROJECT,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        assert self.proc.stdout is not None
        ready, _, _ = select.select([self.proc.stdout], [], [], timeout)
        line = self.proc.stdout.readline() if ready else b""
        if line.strip() != b"ready":
            self.stop()
            raise AssertionError(f"receiver not ready: {line!r}")

    def result(self, timeout: float = 30.0) -> dict[str, Any]:
        out, err = self.proc.communicate(timeout=timeout)
        assert self.proc.returncode == 0, err.decode(errors="replace")
        return json.loads(out)

    def stop(self) -> None:
        """Kill this receiver if it still runs (teardown after a failure)."""
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.communicate()

    def __enter__(self) -> Receiver:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()


def send_udp(
    src: Host,
    dst: Host,
    port: int,
    count: int,
    size: int,
    *,
    pps: float | None = None,
    timeout: float = 60.0,
) -> dict[str, Any]:
    """Send `count` checkable UDP payloads of `size` bytes from `src` to `dst` (paced at `pps`)."""
    args = ["--dest", dst.ip, "--port", str(port), "--count", str(count), "--size", str(size)]
    if pps is not None:
        args += ["--pps", f"{pps:.3f}"]
    done = ns_run(src.namespace, "tests.netns.traffic", "send", *args, timeout=timeout)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def send_garbage(src: Host, count: int, seed: int = 1) -> dict[str, Any]:
    """Random raw frames (and poison frames) out of `src`'s interface; the JSON summary."""
    args = ["--iface", src.interface, "--count", str(count), "--seed", str(seed)]
    done = ns_run(src.namespace, "tests.netns.traffic", "garbage", *args, timeout=30)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)
