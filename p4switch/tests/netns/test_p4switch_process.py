"""The `p4switch` command between namespaces: a real P4 program, programmed over P4Runtime by
p4runtime-shell, forwarding real packets.

    h1 -- s1-eth1 [p4switch: p4switch/src/p4switch/examples/l2.p4] s1-eth2 -- h2
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from p4switch import EXAMPLES
from p4switch.control import control_request
from p4switch.exceptions import ControlError
from p4switch.pcap import read_pcap
from tests.netns.harness import PROJECT, Receiver, ping_rtts, send_garbage, send_udp
from tests.netns.topology import TwoHostNet

pytestmark = pytest.mark.netns

L2_P4 = EXAMPLES / "l2.p4"
GRPC = "127.0.0.1:50051"  # the switch namespace's own loopback
UDP_PORT = 4790


@dataclass
class P4Switch:
    proc: subprocess.Popen[bytes]
    control: Path
    log: Path

    def stats(self) -> dict:
        reply = control_request(self.control, {"cmd": "stats"}, timeout=5.0)
        assert reply["ok"], reply
        return reply["stats"]

    def log_text(self) -> str:
        return self.log.read_text(errors="replace")


def start(net: TwoHostNet, workdir: Path, *extra: str, timeout: float = 20.0) -> P4Switch:
    control, log = workdir / "p4switch.sock", workdir / "p4switch.log"
    args = [f"-i{n}@{name}" for n, name in net.switch_ports.items()]
    args += ["--grpc-addr", GRPC, "--device-id", "1", "--cpu-port", "255"]
    args += ["--control", str(control), *extra]
    with log.open("wb") as out:
        proc = subprocess.Popen(
            ["ip", "netns", "exec", net.switch_namespace, sys.executable, "-m", "p4switch", *args],
            cwd=PROJECT,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    switch = P4Switch(proc, control, log)
    deadline = time.monotonic() + timeout
    while True:  # poll readiness (the control channel answers) with a deadline
        if proc.poll() is not None:
            raise AssertionError(f"p4switch exited with {proc.returncode}:\n{switch.log_text()}")
        try:
            if control_request(control, {"cmd": "ping"}, timeout=1.0)["ok"]:
                return switch
        except ControlError:
            pass
        if time.monotonic() > deadline:
            proc.kill()
            raise AssertionError(f"p4switch not ready in {timeout} s:\n{switch.log_text()}")
        time.sleep(0.05)


def stop(switch: P4Switch, timeout: float = 10.0) -> int:
    """SIGTERM, then SIGKILL after `timeout` (a hang guard: the kill's status fails a test)."""
    if switch.proc.poll() is None:
        switch.proc.terminate()
        try:
            switch.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            switch.proc.kill()
            switch.proc.wait()
    return switch.proc.returncode


def p4rt(net: TwoHostNet, *args: str) -> dict:
    """Run one p4runtime-shell session in the switch namespace; its JSON summary."""
    done = subprocess.run(
        [
            "ip",
            "netns",
            "exec",
            net.switch_namespace,
            sys.executable,
            "-m",
            "tests.netns.p4rt_client",
            GRPC,
            *args,
        ],
        cwd=PROJECT,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.fixture
def l2_switch(net: TwoHostNet, tmp_path: Path) -> Iterator[P4Switch]:
    switch = start(net, tmp_path, "--p4", str(L2_P4))
    try:
        yield switch
    finally:
        stop(switch)


def program_both_hosts(net: TwoHostNet, *extra: str) -> dict:
    return p4rt(net, *extra, f"--dmac={net.h1.mac}=1", f"--dmac={net.h2.mac}=2")


def test_forwards_only_what_the_controller_installed(net: TwoHostNet, l2_switch: P4Switch):
    assert ping_rtts(net.h1, net.h2, count=3) == []  # the table is empty: default drop
    dropped = l2_switch.stats()["ports"]["1"]["drops"]["pipeline_drop"]
    assert dropped >= 3
    result = program_both_hosts(net)
    assert result["installed"] == 2
    assert sorted(r["port"] for r in result["read"]) == [1, 2]
    assert len(ping_rtts(net.h1, net.h2, count=5)) == 5
    size = 900
    with Receiver(net.h2, UDP_PORT, size, count=300) as receiver:
        send_udp(net.h1, net.h2, UDP_PORT, 300, size)
        got = receiver.result()
    assert got["corrupt"] == 0 and got["intact"] == got["distinct"] == 300


def test_garbage_does_not_stop_forwarding(net: TwoHostNet, l2_switch: P4Switch):
    program_both_hosts(net)
    send_garbage(net.h1, 300)
    assert len(ping_rtts(net.h1, net.h2, count=3)) == 3
    assert l2_switch.proc.poll() is None


def l2_p4info(tmp_path: Path) -> Path:
    """l2.p4's P4Info, as p4switch --check --p4info-out writes it."""
    p4info = tmp_path / "l2.p4info.txt"
    check = subprocess.run(
        [
            sys.executable,
            "-m",
            "p4switch",
            "--p4",
            str(L2_P4),
            "--check",
            "--p4info-out",
            str(p4info),
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert check.returncode == 0, check.stderr
    return p4info


def test_a_controller_can_load_the_program(net: TwoHostNet, tmp_path: Path):
    """Started without a program, the switch drops everything until SetForwardingPipelineConfig
    brings one (p4switch takes the P4 source as the device config)."""
    p4info = l2_p4info(tmp_path)
    switch = start(net, tmp_path)
    try:
        assert ping_rtts(net.h1, net.h2, count=2) == []
        program_both_hosts(net, "--config", str(p4info), str(L2_P4))
        assert len(ping_rtts(net.h1, net.h2, count=3)) == 3
    finally:
        assert stop(switch) == 0


def test_the_started_program_pushed_again_is_not_compiled_again(
    net: TwoHostNet, l2_switch: P4Switch, tmp_path: Path
):
    """A controller pushes the program the switch started with, as a testbed does: the switch
    takes it without compiling it again, with empty tables, and forwards what is installed."""
    program_both_hosts(net, "--config", str(l2_p4info(tmp_path)), str(L2_P4))
    assert "the one the switch started with, not compiled again" in l2_switch.log_text()
    assert len(ping_rtts(net.h1, net.h2, count=3)) == 3


def test_shaping_and_capture_from_the_command_line(net: TwoHostNet, tmp_path: Path):
    captures = tmp_path / "pcap"
    switch = start(
        net, tmp_path, "--p4", str(L2_P4), "--shape", "2:delay=30ms", "--pcap", str(captures)
    )
    try:
        program_both_hosts(net)
        rtts = ping_rtts(net.h1, net.h2, count=5)
        assert len(rtts) == 5 and min(rtts) >= 30  # the delay held each one; load only adds
    finally:
        assert stop(switch) == 0
    echo_requests = [r for r in read_pcap(captures / "2-out.pcap").records if len(r.data) == 98]
    assert len(echo_requests) >= 5  # 64-byte pings: 14 + 20 + 64 bytes on the wire


def test_sigterm_stops_cleanly(net: TwoHostNet, tmp_path: Path):
    switch = start(net, tmp_path, "--p4", str(L2_P4))
    assert stop(switch) == 0
    assert not switch.control.exists()
