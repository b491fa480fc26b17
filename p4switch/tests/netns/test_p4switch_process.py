"""The `p4switch` command between namespaces: a real P4 program, programmed over P4Runtime by
p4runtime-shell, forwarding real packets.

    h1 -- s1-eth1 [p4switch: p4switch/src/p4switch/examples/l2.p4] s1-eth2 -- h2
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from p4switch import EXAMPLES
from p4switch.pcap import read_pcap
from tests.netns.harness import (
    PROJECT,
    Receiver,
    SwitchProcess,
    ping_rtts,
    send_garbage,
    send_udp,
    start_controlled,
)
from tests.netns.topology import TwoHostNet

pytestmark = pytest.mark.netns

L2_P4 = EXAMPLES / "l2.p4"
GRPC = "127.0.0.1:50051"  # the switch namespace's own loopback
UDP_PORT = 4790


def start(
    net: TwoHostNet,
    workdir: Path,
    started: list[SwitchProcess],
    *extra: str,
    timeout: float = 20.0,
) -> SwitchProcess:
    control, log = workdir / "p4switch.sock", workdir / "p4switch.log"
    args = [f"-i{n}@{name}" for n, name in net.switch_ports.items()]
    args += ["--grpc-addr", GRPC, "--device-id", "1", "--cpu-port", "255"]
    args += ["--control", str(control), *extra]
    return start_controlled(
        net.switch_namespace, "p4switch", args, control, log, started, timeout=timeout
    )


def stop(switch: SwitchProcess) -> int:
    """SIGTERM, then SIGKILL after 10 s (a hang guard: the kill's status fails a test)."""
    return switch.terminate(timeout=10.0)


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
def l2_switch(
    net: TwoHostNet, started: list[SwitchProcess], tmp_path: Path
) -> Iterator[SwitchProcess]:
    switch = start(net, tmp_path, started, "--p4", str(L2_P4))
    try:
        yield switch
    finally:
        stop(switch)


def program_both_hosts(net: TwoHostNet, *extra: str) -> dict:
    return p4rt(net, *extra, f"--dmac={net.h1.mac}=1", f"--dmac={net.h2.mac}=2")


def test_forwards_only_what_the_controller_installed(net: TwoHostNet, l2_switch: SwitchProcess):
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


def test_garbage_does_not_stop_forwarding(net: TwoHostNet, l2_switch: SwitchProcess):
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


def test_a_controller_can_load_the_program(
    net: TwoHostNet, started: list[SwitchProcess], tmp_path: Path
):
    """Started without a program, the switch drops everything until SetForwardingPipelineConfig
    brings one (p4switch takes the P4 source as the device config)."""
    p4info = l2_p4info(tmp_path)
    switch = start(net, tmp_path, started)
    try:
        assert ping_rtts(net.h1, net.h2, count=2) == []
        program_both_hosts(net, "--config", str(p4info), str(L2_P4))
        assert len(ping_rtts(net.h1, net.h2, count=3)) == 3
    finally:
        assert stop(switch) == 0


def test_the_started_program_pushed_again_is_not_compiled_again(
    net: TwoHostNet, l2_switch: SwitchProcess, tmp_path: Path
):
    """A controller pushes the program the switch started with, as a testbed does: the switch
    takes it without compiling it again, with empty tables, and forwards what is installed."""
    program_both_hosts(net, "--config", str(l2_p4info(tmp_path)), str(L2_P4))
    assert "the one the switch started with, not compiled again" in l2_switch.log_text()
    assert len(ping_rtts(net.h1, net.h2, count=3)) == 3


def test_shaping_and_capture_from_the_command_line(
    net: TwoHostNet, started: list[SwitchProcess], tmp_path: Path
):
    captures = tmp_path / "pcap"
    switch = start(
        net,
        tmp_path,
        started,
        *("--p4", str(L2_P4), "--shape", "2:delay=30ms", "--pcap", str(captures)),
    )
    try:
        program_both_hosts(net)
        rtts = ping_rtts(net.h1, net.h2, count=5)
        assert len(rtts) == 5 and min(rtts) >= 30  # the delay held each one; load only adds
    finally:
        assert stop(switch) == 0
    echo_requests = [r for r in read_pcap(captures / "2-out.pcap").records if len(r.data) == 98]
    assert len(echo_requests) >= 5  # 64-byte pings: 14 + 20 + 64 bytes on the wire


def test_sigterm_stops_cleanly(net: TwoHostNet, started: list[SwitchProcess], tmp_path: Path):
    switch = start(net, tmp_path, started, "--p4", str(L2_P4))
    assert stop(switch) == 0
    assert not switch.control.exists()
