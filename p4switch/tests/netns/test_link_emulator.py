"""The link emulator process (p4switch.linkemu) as a WAN link between two hosts in namespaces:
delay both ways, rate and loss in one direction, counters on its control channel, clean stop.

    h1 -- port 1 [link emulator, switch namespace] port 2 -- h2

Port 2's shape is the h1 -> h2 direction, port 1's the h2 -> h1 direction.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.netns.harness import Receiver, SwitchProcess, ping_rtts, send_udp, start_controlled
from tests.netns.topology import TwoHostNet

pytestmark = pytest.mark.netns

UDP_PORT = 5002
ETH_IP_UDP_HEADERS = 14 + 20 + 8


class Emulators:
    """Starts link emulators in the switch namespace for one test; stops exactly those."""

    def __init__(self, net: TwoHostNet, workdir: Path) -> None:
        self.net, self.workdir = net, workdir
        self.started: list[SwitchProcess] = []

    def start(self, *shapes: str, seed: int = 0, timeout: float = 10.0) -> SwitchProcess:
        index = len(self.started)
        control, log = self.workdir / f"l{index}.sock", self.workdir / f"l{index}.log"
        args = [f"-i{n}@{name}" for n, name in self.net.switch_ports.items()]
        args += [f"--shape={shape}" for shape in shapes]
        args += ["--control", str(control), "--seed", str(seed)]
        return start_controlled(
            self.net.switch_namespace,
            "p4switch.linkemu",
            args,
            control,
            log,
            self.started,
            timeout=timeout,
        )

    def stop_all(self) -> None:
        for emulator in self.started:
            emulator.terminate()


@pytest.fixture
def emulators(net: TwoHostNet, tmp_path: Path) -> Iterator[Emulators]:
    launcher = Emulators(net, tmp_path)
    try:
        yield launcher
    finally:
        launcher.stop_all()


def test_the_link_delays_each_direction_once(net: TwoHostNet, emulators: Emulators) -> None:
    """30 ms each way: no reply sooner than 60 ms, whatever the load (it only delays); how
    close to 60 ms replies come on this machine is bench/timing.py's figure."""
    emulator = emulators.start("1:delay=30ms", "2:delay=30ms")
    rtts = ping_rtts(net.h1, net.h2, count=15, interval=0.05)
    assert len(rtts) >= 13
    assert min(rtts) >= 60.0
    ports = emulator.stats()["ports"]
    assert ports["1"]["rx_packets"] >= 13 and ports["2"]["tx_packets"] >= 13


def test_the_rate_and_loss_of_one_direction(net: TwoHostNet, emulators: Emulators) -> None:
    """Twice the rate offered: no more than the rate passes (the n-th frame's serialisation
    ends n x 8.3 ms after the first arrived, after `sent_from`), the queue drops at its tail,
    and the loss, drawn per frame from the seeded generator before the queue, is about a
    tenth of what was sent. Load only delays frames: every bound here holds on a busy
    machine; the rate achieved is bench/timing.py's figure."""
    emulator = emulators.start("2:rate=10Mbit,loss=0.1", seed=3)
    size = 1000
    frame_bits = (size + ETH_IP_UDP_HEADERS) * 8
    pps = 2 * 10e6 / frame_bits  # twice the rate: the queue fills, then drains at the rate
    sent = int(2.0 * pps)
    sent_from = time.monotonic()
    with Receiver(net.h2, UDP_PORT, size, idle=1.5) as receiver:
        send_udp(net.h1, net.h2, UDP_PORT, sent, size, pps=pps)
        result = receiver.result()
    assert result["corrupt"] == 0 and result["received"] > 0
    assert result["received"] * frame_bits <= 10e6 * (result["last"] - sent_from)
    drops = emulator.stats()["ports"]["2"]["drops"]
    assert drops["loss"] > 0 and drops["queue_full"] > 0
    assert drops["loss"] / sent == pytest.approx(0.1, abs=0.04)


def test_sigterm_stops_it_with_status_0(emulators: Emulators) -> None:
    emulator = emulators.start("1:delay=5ms")
    assert emulator.terminate() == 0
    assert "link emulator stopped" in emulator.log_text()
