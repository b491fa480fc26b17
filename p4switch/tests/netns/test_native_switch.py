"""NativeSwitch between two hosts in namespaces: forwarding, tags, shaping, CPU port, run-time
changes, and a clean stop (root; the namespaces of conftest's `net`)."""

from __future__ import annotations

import os
import struct
import threading
import time
from collections.abc import Iterator

import pytest

from p4switch.cli import Unprogrammed
from p4switch.dataplane import Switch
from p4switch.nativeio import NativeSwitch, available
from p4switch.pcap import read_pcap
from p4switch.ports import Port
from p4switch.shaping import ShapeSpec
from tests.netns import topology
from tests.netns.forwarder import TwoPortForwarder
from tests.netns.harness import Receiver, ping_rtts, send_udp
from tests.netns.native_netns import in_netns, open_in, receive_raw
from tests.tiny_l2 import CPU_PORT, DROP_ETHERTYPE, TO_CPU_ETHERTYPE, TinyL2

pytestmark = pytest.mark.netns

UDP_PORT = 5002
ETH_IP_UDP_HEADERS = 14 + 20 + 8


@pytest.fixture(scope="module", autouse=True)
def native_available(netns_available: None) -> None:
    """Skips the module, before its namespaces are built, where the native loop cannot run."""
    reason = available()
    if reason is not None:
        pytest.skip(f"native I/O loop unavailable: {reason}")


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> TinyL2:
    return TinyL2(tmp_path_factory.mktemp("tiny"))


@pytest.fixture
def began() -> float:
    """The clock before the test's ports open: no frame they receive is older than this."""
    return time.monotonic()


@pytest.fixture
def ports(net: topology.TwoHostNet, began: float) -> Iterator[dict[int, Port]]:
    opened = {n: open_in(net.switch_namespace, name) for n, name in net.switch_ports.items()}
    yield opened
    for port in opened.values():
        port.close()


class Running:
    """A NativeSwitch running on its own thread until `stop`."""

    def __init__(self, switch: NativeSwitch) -> None:
        self.switch = switch
        self.event = threading.Event()
        self.thread = threading.Thread(target=switch.run, args=(self.event,), name="nio-switch")
        self.thread.start()

    def stop(self) -> None:
        self.event.set()
        self.switch.wake()
        self.thread.join(timeout=5)
        assert not self.thread.is_alive()


@pytest.fixture
def start(ports: dict[int, Port], tiny: TinyL2) -> Iterator:
    running: list[Running] = []

    def start_switch(processor: object = tiny, **options: object) -> NativeSwitch:
        switch = NativeSwitch(ports, processor, cpu_port=CPU_PORT, **options)  # type: ignore[arg-type]
        running.append(Running(switch))
        return switch

    yield start_switch
    for run in running:
        run.stop()
        run.switch.close()


def raw_frame(net: topology.TwoHostNet, ethertype: int, body: bytes = b"native") -> bytes:
    macs = bytes.fromhex(net.h2.mac.replace(":", "")) + bytes.fromhex(net.h1.mac.replace(":", ""))
    return macs + struct.pack("!H", ethertype) + body.ljust(46, b".")


def tagged(frame: bytes, tpid: int, tci: int) -> bytes:
    return frame[:12] + struct.pack("!HH", tpid, tci) + frame[12:]


def send_raw(net: topology.TwoHostNet, frames: list[bytes]) -> None:
    def send() -> None:
        port = open_in(net.h1.namespace, net.h1.interface)
        try:
            for frame in frames:
                port.sock.send(frame)
        finally:
            port.close()

    send()


@pytest.mark.parametrize("rx_ring", [True, False], ids=["rx-ring", "recvmmsg"])
def test_udp_crosses_both_ways_through_the_c_processor(net, began, start, tiny, rx_ring):
    switch = start(rx_ring=rx_ring)
    calls = tiny.calls
    for src, dst in ((net.h1, net.h2), (net.h2, net.h1)):
        with Receiver(dst, UDP_PORT, 1000, count=300) as receiver:
            send_udp(src, dst, UDP_PORT, 300, 1000, pps=5000)
            result = receiver.result()
        assert result["corrupt"] == 0
        assert result["intact"] == result["distinct"] == 300
    stats = switch.stats()["ports"]
    assert stats[1]["rx_packets"] >= 300 and stats[2]["tx_packets"] >= 300
    assert stats[2]["rx_packets"] >= 300 and stats[1]["tx_packets"] >= 300
    assert tiny.calls - calls >= 600  # through native_entry, not `process`
    # kernel receive times on the loop's clock: no frame waited longer than the sockets were
    # open (how long it waited on this machine is bench/timing.py's figure, not a test's)
    assert 0 < stats[1]["rx_lag_max_s"] < time.monotonic() - began


def test_a_python_processor_forwards_the_same(net, start):
    switch = start(TwoPortForwarder())
    with Receiver(net.h2, UDP_PORT, 500, count=200) as receiver:
        send_udp(net.h1, net.h2, UDP_PORT, 200, 500, pps=5000)
        assert receiver.result()["intact"] == 200
    send_raw(net, [raw_frame(net, 0x88B5)])  # the forwarder raises on it
    deadline = time.monotonic() + 3
    while switch.stats()["ports"][1]["drops"]["pipeline_error"] == 0:
        assert time.monotonic() < deadline, "the failing frame was not counted"
        time.sleep(0.01)  # polling the counter, with a deadline


@pytest.mark.parametrize("rx_ring", [True, False], ids=["rx-ring", "recvmmsg"])
def test_vlan_tags_are_seen_and_forwarded_as_on_the_wire(net, start, rx_ring):
    switch = start(rx_ring=rx_ring)
    plain = raw_frame(net, 0x88B6, b"tagged")
    frames = [tagged(plain, 0x8100, 5), tagged(plain, 0x8100, 0x6000), tagged(plain, 0x88A8, 7)]
    sink = open_in(net.h2.namespace, net.h2.interface)
    try:
        before = switch.stats()["ports"][1]["rx_bytes"]
        send_raw(net, frames)
        assert receive_raw(sink, 0x88B6, 3) == frames
    finally:
        sink.close()
    assert switch.stats()["ports"][1]["rx_bytes"] - before == sum(len(f) for f in frames)


@pytest.fixture
def mtu_3000(net: topology.TwoHostNet) -> Iterator[None]:
    links = [
        (net.h1.namespace, net.h1.interface),
        (net.h2.namespace, net.h2.interface),
        *((net.switch_namespace, name) for name in net.switch_ports.values()),
    ]
    for namespace, interface in links:
        topology.run(["ip", "-n", namespace, "link", "set", interface, "mtu", "3000"])
    yield
    for namespace, interface in links:
        topology.run(["ip", "-n", namespace, "link", "set", interface, "mtu", "1500"])


@pytest.mark.parametrize("rx_ring", [True, False], ids=["rx-ring", "recvmmsg"])
def test_frames_longer_than_a_ring_slot_arrive_whole_and_in_order(
    net, ports, tiny, mtu_3000, rx_ring
):
    sizes = [60, 2500, 1500, 2990, 1983, 100, 2014]  # around the 1982 bytes a slot holds
    frames = [raw_frame(net, 0x88B6, bytes([i]) * (size - 14)) for i, size in enumerate(sizes)]
    frames.append(tagged(raw_frame(net, 0x88B6, b"t" * 2400), 0x8100, 9))
    sink = open_in(net.h2.namespace, net.h2.interface)
    with NativeSwitch(ports, tiny, rx_ring=rx_ring) as switch:
        send_raw(net, frames * 3)  # before the loop runs: it finds them all waiting, in one batch
        run = Running(switch)
        try:
            assert receive_raw(sink, 0x88B6, 3 * len(frames)) == frames * 3
        finally:
            run.stop()
            sink.close()
        assert switch.stats()["ports"][1]["rx_bytes"] == 3 * sum(len(f) for f in frames)


def test_delay_gives_the_round_trip(net, start):
    """20 ms each way: no reply comes back sooner than 40 ms. A busy machine only makes replies
    later, so this holds under any load; how close to 40 ms they come is bench/timing.py's."""
    start(shaping={1: ShapeSpec(delay_s=0.02), 2: ShapeSpec(delay_s=0.02)})
    rtts = ping_rtts(net.h1, net.h2, count=15, interval=0.05)
    assert len(rtts) >= 13
    assert min(rtts) >= 40.0


def test_rate_limits_throughput_under_twice_the_load(net, start):
    """Offered twice the shaped rate, the port drops at its tail and passes no more than the
    rate allows: the n-th frame's serialisation ends n x 8.3 ms after the first arrived, which
    was after `sent_from`. Both bounds hold under any load (load only delays frames); the
    throughput achieved and the lateness on this machine are bench/timing.py's figures."""
    switch = start(shaping={2: ShapeSpec(rate_bps=10e6)})
    size = 1000
    frame_bits = (size + ETH_IP_UDP_HEADERS) * 8
    pps = 2 * 10e6 / frame_bits
    sent_from = time.monotonic()
    with Receiver(net.h2, UDP_PORT, size, idle=1.0) as receiver:
        send_udp(net.h1, net.h2, UDP_PORT, int(2.0 * pps), size, pps=pps)
        result = receiver.result()
    assert result["corrupt"] == 0 and result["received"] > 0
    assert result["received"] * frame_bits <= 10e6 * (result["last"] - sent_from)
    port = switch.stats()["ports"][2]
    assert port["drops"]["queue_full"] > 0
    assert 0 <= port["lateness_max_s"] < time.monotonic() - sent_from


def test_loss_is_counted(net, start):
    """Loss is drawn per frame from the seeded generator, so load cannot change how many."""
    switch = start(shaping={2: ShapeSpec(loss=0.2)}, seed=3)
    with Receiver(net.h2, UDP_PORT, 100, idle=1.0) as receiver:
        send_udp(net.h1, net.h2, UDP_PORT, 1000, 100, pps=5000)
        result = receiver.result()
    lost = switch.stats()["ports"][2]["drops"]["loss"]
    assert lost == 1000 - result["received"]
    assert lost == pytest.approx(200, abs=60)


def test_cpu_port_frames_reach_the_listener_and_inject_reaches_the_wire(net, start):
    got: list[bytes] = []
    switch = start(on_cpu_packet=got.append)
    to_cpu = raw_frame(net, TO_CPU_ETHERTYPE, b"packet-in")
    send_raw(net, [to_cpu, to_cpu])
    deadline = time.monotonic() + 3
    while len(got) < 2 and time.monotonic() < deadline:
        time.sleep(0.01)  # polling the listener's list, with a deadline
    assert got == [to_cpu, to_cpu]
    switch.on_cpu_packet = None
    send_raw(net, [to_cpu])
    out = raw_frame(net, 0x88B6, b"packet-out")
    sink = open_in(net.h2.namespace, net.h2.interface)
    try:
        switch.inject(CPU_PORT, out)
        assert receive_raw(sink, 0x88B6, 1) == [out]
    finally:
        sink.close()
    cpu = switch.stats()["cpu"]
    assert cpu["port"] == CPU_PORT
    assert cpu["tx_packets"] == 2 and cpu["tx_bytes"] == 2 * len(to_cpu)
    assert cpu["drops"]["no_cpu_listener"] == 1
    assert cpu["rx_packets"] == 1 and cpu["rx_bytes"] == len(out)


def test_set_processor_while_running_switches_paths(net, start, tiny):
    switch = start()
    assert len(ping_rtts(net.h1, net.h2, count=3)) == 3
    switch.set_processor(Unprogrammed())
    assert ping_rtts(net.h1, net.h2, count=3) == []
    assert switch.stats()["ports"][1]["drops"]["pipeline_drop"] >= 3
    switch.set_processor(TwoPortForwarder())
    assert len(ping_rtts(net.h1, net.h2, count=3)) == 3
    calls = tiny.calls
    switch.set_processor(tiny)
    send_raw(net, [raw_frame(net, DROP_ETHERTYPE)])
    assert len(ping_rtts(net.h1, net.h2, count=3)) == 3
    assert tiny.calls - calls >= 7


def test_shape_while_running_changes_the_delay(net, start):
    """A delay set while running holds every echo request back at least that long, and
    removing it empties the delay line. No upper bound on a round trip: load can break one."""
    switch = start()
    assert len(ping_rtts(net.h1, net.h2, count=5)) == 5
    switch.shape(2, ShapeSpec(delay_s=0.03))
    rtts = ping_rtts(net.h1, net.h2, count=8)
    assert len(rtts) == 8 and min(rtts) >= 30
    assert switch.stats()["ports"][2]["shape"]["delay_s"] == pytest.approx(0.03)
    switch.shape(2, ShapeSpec())
    assert len(ping_rtts(net.h1, net.h2, count=5)) == 5
    port = switch.stats()["ports"][2]
    assert port["shape"]["delay_s"] == 0 and port["queue_held"] == 0


def test_stats_have_the_keys_of_the_python_switch(net, ports, start, tiny):
    native = start().stats(reset_peaks=True)
    python = Switch(ports, tiny, cpu_port=CPU_PORT).stats()

    def shape_of(value: object) -> object:
        if isinstance(value, dict):
            return {key: shape_of(item) for key, item in value.items()}
        return type(value).__name__ if not isinstance(value, int | float) else "number"

    assert shape_of(native) == shape_of(python)


def test_stop_and_close_leave_no_descriptor_or_thread_behind(net, tiny):
    fds = set(os.listdir("/proc/self/fd"))
    threads = threading.active_count()
    for _ in range(2):
        switch = in_netns(
            net.switch_namespace,
            lambda: NativeSwitch(net.switch_ports, tiny, cpu_port=CPU_PORT),
        )
        run = Running(switch)
        assert len(ping_rtts(net.h1, net.h2, count=2)) == 2
        run.stop()  # the loop's thread has ended within the join's hang guard
        switch.close()
        switch.close()  # twice is harmless
    assert set(os.listdir("/proc/self/fd")) == fds
    assert threading.active_count() == threads


def test_ports_given_by_the_caller_work_as_before_once_closed(net, ports, tiny):
    with NativeSwitch(ports, tiny) as native:
        run = Running(native)
        assert len(ping_rtts(net.h1, net.h2, count=2)) == 2
        run.stop()
    python = Switch(ports, TwoPortForwarder())  # reads the same sockets with recvmsg
    stop = threading.Event()
    thread = threading.Thread(target=python.run, args=(stop,))
    thread.start()
    try:
        assert len(ping_rtts(net.h1, net.h2, count=2)) == 2
    finally:
        stop.set()
        python.wake()
        thread.join(timeout=5)
        python.close()
    assert python.stats()["ports"][1]["rx_packets"] >= 2


def test_captures_hold_the_frames_as_on_the_wire(net, ports, tiny, tmp_path):
    plain = raw_frame(net, 0x88B6, b"captured")
    frames = [plain, tagged(plain, 0x8100, 5)]
    with NativeSwitch(ports, tiny, pcap_dir=tmp_path) as switch:
        run = Running(switch)
        sink = open_in(net.h2.namespace, net.h2.interface)
        try:
            send_raw(net, frames)
            assert receive_raw(sink, 0x88B6, 2) == frames
        finally:
            sink.close()
            run.stop()
    received = [r.data for r in read_pcap(tmp_path / "1-in.pcap").records]
    sent = [r.data for r in read_pcap(tmp_path / "2-out.pcap").records]
    assert [f for f in received if f[12:14] != b"\x08\x00"] == frames  # the hosts' own aside
    assert [f for f in sent if f[12:14] != b"\x08\x00"] == frames
