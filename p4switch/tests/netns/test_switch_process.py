"""The switch process forwarding between two hosts in namespaces, shaped and controlled live."""

from __future__ import annotations

import signal
import time

import pytest

from p4switch.pcap import read_pcap
from tests.netns.harness import Receiver, ping_rtts, send_garbage, send_udp

pytestmark = pytest.mark.netns

UDP_PORT = 5001
ETH_IP_UDP_HEADERS = 14 + 20 + 8


def test_ping_crosses_the_switch(net, switches):
    switch = switches.start()
    rtts = ping_rtts(net.h1, net.h2, count=5)
    assert len(rtts) == 5
    stats = switch.stats()["ports"]
    assert stats["1"]["rx_packets"] >= 5
    assert stats["2"]["tx_packets"] >= 5


@pytest.mark.parametrize("size", [18, 1000, 1472])
def test_udp_payloads_arrive_intact(net, switches, size):
    switches.start()
    with Receiver(net.h2, UDP_PORT, size, count=200) as receiver:
        send_udp(net.h1, net.h2, UDP_PORT, 200, size)
        result = receiver.result()
    assert result["corrupt"] == 0
    assert result["intact"] == result["distinct"] == 200


def test_delay_on_both_ports_gives_the_round_trip(net, switches):
    """50 ms each way: no reply sooner than 100 ms, which load cannot break (it only delays);
    how close to 100 ms replies come on this machine is bench/timing.py's figure."""
    switches.start("1:delay=50ms", "2:delay=50ms")
    rtts = ping_rtts(net.h1, net.h2, count=15, interval=0.05)
    assert len(rtts) >= 13
    assert min(rtts) >= 100.0


def test_rate_limits_udp_throughput(net, switches):
    """Twice the shaped rate offered: the queue fills and drops at its tail, and no more than
    the rate passes (the n-th frame's serialisation ends n x 8.3 ms after the first arrived,
    after `sent_from`). Load only delays frames, so both hold on a busy machine; the rate
    achieved is bench/timing.py's figure."""
    switch = switches.start("2:rate=10Mbit")
    size = 1000
    frame_bits = (size + ETH_IP_UDP_HEADERS) * 8
    pps = 2 * 10e6 / frame_bits  # twice the shaped rate: the queue fills, then drains at the rate
    sent_from = time.monotonic()
    with Receiver(net.h2, UDP_PORT, size, idle=1.5) as receiver:
        send_udp(net.h1, net.h2, UDP_PORT, int(2.0 * pps), size, pps=pps)
        result = receiver.result()
    assert result["corrupt"] == 0 and result["received"] > 0
    assert result["received"] * frame_bits <= 10e6 * (result["last"] - sent_from)
    assert switch.stats()["ports"]["2"]["drops"]["queue_full"] > 0


def test_loss_drops_about_a_fifth(net, switches):
    """Each frame's loss is drawn from the seeded generator as it is queued, so load cannot
    change how many are lost; a frame the receiver missed for another reason fails the count."""
    switch = switches.start("2:loss=0.2", seed=11)
    with Receiver(net.h2, UDP_PORT, 100, idle=1.0) as receiver:
        send_udp(net.h1, net.h2, UDP_PORT, 500, 100, pps=5000)
        result = receiver.result()
    lost = 1 - result["received"] / 500
    assert lost == pytest.approx(0.2, abs=0.08)
    assert result["corrupt"] == 0
    assert switch.stats()["ports"]["2"]["drops"]["loss"] == 500 - result["received"]


def test_control_channel_changes_delay_while_running(net, switches):
    """A delay set over the control channel holds every echo request back at least that long;
    removing it empties the delay line. No upper bound on a round trip: load can break one."""
    switch = switches.start()
    assert len(ping_rtts(net.h1, net.h2, count=5)) == 5
    reply = switch.request({"cmd": "shape", "port": 2, "spec": "delay=80ms"})
    assert reply["ok"], reply
    rtts = ping_rtts(net.h1, net.h2, count=8)
    assert len(rtts) == 8 and min(rtts) >= 80
    bad = switch.request({"cmd": "shape", "port": 2, "spec": "delay=soon"})
    assert bad["ok"] is False
    assert "delay=" in bad["error"]
    assert switch.stats()["ports"]["2"]["shape"]["delay_s"] == pytest.approx(0.08)
    assert switch.request({"cmd": "shape", "port": 2, "spec": "none"})["ok"]
    assert len(ping_rtts(net.h1, net.h2, count=5)) == 5
    port = switch.stats()["ports"]["2"]
    assert port["shape"]["delay_s"] == 0 and port["queue_held"] == 0


def test_garbage_frames_do_not_stop_forwarding(net, switches):
    switch = switches.start()
    sent = send_garbage(net.h1, count=300)
    rtts = ping_rtts(net.h1, net.h2, count=3)
    assert len(rtts) == 3
    port1 = switch.stats()["ports"]["1"]
    assert port1["rx_packets"] >= sent["sent"]
    assert port1["drops"]["pipeline_error"] >= sent["poison"] > 0
    assert switch.proc.poll() is None


def test_sigterm_stops_cleanly_and_flushes_captures(net, switches, tmp_path):
    captures = tmp_path / "pcap"
    switch = switches.start(pcap_dir=captures)
    assert len(ping_rtts(net.h1, net.h2, count=3)) == 3
    assert switch.control.exists()
    switch.proc.send_signal(signal.SIGTERM)
    assert switch.proc.wait(timeout=10) == 0, switch.log_text()  # a hang guard, not a bound
    assert not switch.control.exists()
    received = read_pcap(captures / "1-in.pcap").records
    sent = read_pcap(captures / "2-out.pcap").records
    assert len(received) >= 3
    assert [r.data for r in sent] == [r.data for r in received]
