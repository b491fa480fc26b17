"""The switch's I/O loop, with datagram socket pairs standing in for AF_PACKET ports (no root).

What shaping decides is tested on a simulated clock (`FakeClock`): either the test turns the
loop itself with `Switch.poll`, or the loop runs on its thread and the test moves the clock and
wakes it. Waits on the real clock are hang guards (`HANG_S`), never timing bounds.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable, Iterator

import pytest

from p4switch import dataplane
from p4switch.dataplane import MAX_WAIT_S, Switch
from p4switch.exceptions import PortError, UnknownPortError
from p4switch.pcap import read_pcap
from p4switch.ports import open_port
from p4switch.shaping import ShapeSpec
from tests.clock import FakeClock
from tests.fakeports import HANG_S, Wire

CPU = 64


class Crossover:
    """Test double for the P4 pipeline: 1 <-> 2, b"cpu" frames to the CPU port, b"boom" raises."""

    def process(self, ingress_port: int, data: bytes) -> list[tuple[int, bytes]]:
        if data.startswith(b"boom"):
            raise ValueError("simulated pipeline bug")
        if data.startswith(b"drop"):
            return []
        if data.startswith(b"cpu"):
            return [(CPU, data)]
        if data.startswith(b"lost"):
            return [(99, data)]
        if data.startswith(b"junk"):
            return [1]  # type: ignore[list-item]
        return [(2 if ingress_port != 2 else 1, data)]


class Running:
    def __init__(self, switch: Switch, wires: dict[int, Wire]) -> None:
        self.switch = switch
        self.wires = wires


def wait_for(condition, timeout: float = HANG_S) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.005)
    return condition()


@pytest.fixture
def make_switch(tmp_path) -> Iterator:
    started: list[tuple[Switch, threading.Event, threading.Thread, list[Wire]]] = []

    def make(**kwargs) -> Running:
        wires = {1: Wire("p1"), 2: Wire("p2")}
        switch = Switch({n: w.port for n, w in wires.items()}, Crossover(), **kwargs)
        stop = threading.Event()
        thread = threading.Thread(target=switch.run, args=(stop,), daemon=True)
        thread.start()
        started.append((switch, stop, thread, list(wires.values())))
        return Running(switch, wires)

    yield make
    for switch, stop, thread, wires in started:
        stop.set()
        switch.wake()
        thread.join(HANG_S)
        switch.close()
        for wire in wires:
            wire.host.close()
            wire.port.close()


Stepped = Callable[..., tuple[Switch, dict[int, Wire]]]


@pytest.fixture
def stepped() -> Iterator[Stepped]:
    """A switch on ports 1 and 2 whose loop nothing runs: the test turns it with `poll`."""
    made: list[tuple[Switch, dict[int, Wire]]] = []

    def make(**kwargs) -> tuple[Switch, dict[int, Wire]]:
        wires = {1: Wire("p1"), 2: Wire("p2")}
        switch = Switch({n: w.port for n, w in wires.items()}, Crossover(), **kwargs)
        made.append((switch, wires))
        return switch, wires

    yield make
    for switch, wires in made:
        switch.close()
        for wire in wires.values():
            wire.host.close()
            wire.port.close()


def test_forwards_and_counts(make_switch):
    running = make_switch()
    running.wires[1].host.send(b"hello" * 20)
    assert running.wires[2].recv() == b"hello" * 20
    running.wires[2].host.send(b"back")
    assert running.wires[1].recv() == b"back"
    assert wait_for(lambda: running.switch.stats()["ports"][1]["tx_packets"] == 1)
    stats = running.switch.stats()["ports"]
    assert (stats[1]["rx_packets"], stats[1]["rx_bytes"]) == (1, 100)
    assert (stats[2]["tx_packets"], stats[2]["tx_bytes"]) == (1, 100)
    assert stats[1]["tx_packets"] == 1
    assert stats[1]["interface"] == "p1"


def test_outgoing_frames_are_ignored(make_switch):
    running = make_switch()
    running.wires[1].host.send(b"OUT: my own frame")
    running.wires[1].host.send(b"in")
    assert running.wires[2].recv() == b"in"
    assert running.switch.stats()["ports"][1]["rx_packets"] == 1


def test_processor_failures_are_counted_and_forwarding_goes_on(make_switch):
    running = make_switch()
    for data in (b"boom", b"junk", b"drop", b"lost"):
        running.wires[1].host.send(data)
    running.wires[1].host.send(b"fine")
    assert running.wires[2].recv() == b"fine"
    drops = running.switch.stats()["ports"][1]["drops"]
    assert drops["pipeline_error"] == 2
    assert drops["pipeline_drop"] == 1
    assert drops["no_such_port"] == 1


def test_cpu_port_packet_in_and_packet_out(make_switch):
    received: list[bytes] = []
    running = make_switch(cpu_port=CPU, on_cpu_packet=received.append)
    running.wires[1].host.send(b"cpu please")
    assert wait_for(lambda: received == [b"cpu please"])
    running.switch.inject(CPU, b"from the controller")  # Crossover sends it to port 2
    assert running.wires[2].recv() == b"from the controller"
    cpu = running.switch.stats()["cpu"]
    assert (cpu["port"], cpu["rx_packets"], cpu["tx_packets"]) == (CPU, 1, 1)


def test_cpu_frames_without_listener_are_counted(make_switch):
    running = make_switch(cpu_port=CPU)
    running.wires[1].host.send(b"cpu nobody")
    assert wait_for(lambda: running.switch.stats()["cpu"]["drops"]["no_cpu_listener"] == 1)


def test_injecting_on_an_unknown_port_is_refused(make_switch):
    running = make_switch()
    with pytest.raises(UnknownPortError, match="port 7"):
        running.switch.inject(7, b"x")
    with pytest.raises(UnknownPortError, match="port 7"):
        running.switch.shape(7, ShapeSpec())


def test_initial_delay_holds_frames_until_the_clock_reaches_their_due_time(stepped):
    clock = FakeClock(10.0)
    switch, wires = stepped(shaping={2: ShapeSpec(delay_s=0.08)}, clock=clock)
    assert switch.wait_timeout() == MAX_WAIT_S  # nothing held: the longest wait
    wires[1].host.send(b"slow")
    switch.poll()
    due = 10.0 + 0.08  # the arrival on the switch's clock, plus the delay
    assert wires[2].pending() == []
    assert switch.stats()["ports"][2]["queue_held"] == 1
    assert switch.wait_timeout() == due - 10.0  # the loop waits until the frame is due
    clock.now = math.nextafter(due, 0.0)  # the last instant before it is due
    switch.poll()
    assert wires[2].pending() == []
    assert switch.wait_timeout() == due - clock.now
    clock.now = due
    assert switch.wait_timeout() == 0.0
    switch.poll()
    assert wires[2].pending() == [b"slow"]
    assert switch.stats()["ports"][2]["queue_held"] == 0
    assert switch.stats()["ports"][2]["lateness_max_s"] == 0.0  # released at its due time
    wires[2].host.send(b"fast")  # port 1 is not shaped: out in the same turn, clock unmoved
    switch.poll()
    assert wires[1].pending() == [b"fast"]


def test_a_delayed_frame_never_leaves_before_its_delay_on_the_real_clock(make_switch):
    running = make_switch(shaping={2: ShapeSpec(delay_s=0.08)})
    sent = time.monotonic()
    running.wires[1].host.send(b"slow")
    assert running.wires[2].recv() == b"slow"
    assert time.monotonic() >= sent + 0.08  # a lower bound: a busy machine only adds to it


def test_shaping_changes_while_running(make_switch):
    clock = FakeClock(5.0)
    running = make_switch(clock=clock)
    running.switch.shape(2, ShapeSpec(delay_s=0.1))  # from the test's thread, while it runs
    assert running.switch.stats()["ports"][2]["shape"]["delay_s"] == 0.1
    running.wires[1].host.send(b"held")
    assert wait_for(lambda: running.switch.stats()["ports"][2]["queue_held"] == 1)
    assert running.wires[2].pending() == []  # the clock has not moved: held
    clock.advance(0.1)
    running.switch.wake()
    assert running.wires[2].recv() == b"held"
    running.switch.shape(2, ShapeSpec())
    running.wires[1].host.send(b"free")
    assert running.wires[2].recv() == b"free"  # the clock still stands: not delayed at all
    assert running.switch.stats()["ports"][2]["queue_held"] == 0


def test_poll_is_refused_while_the_loop_runs(make_switch):
    running = make_switch()
    assert wait_for(lambda: running.switch._running)
    with pytest.raises(RuntimeError, match="another thread"):
        running.switch.poll()


def test_loss_and_queue_limit_are_counted(make_switch):
    running = make_switch(shaping={2: ShapeSpec(loss=0.5)}, seed=3)
    for i in range(200):
        running.wires[1].host.send(b"p%d" % i)
    assert wait_for(lambda: running.switch.stats()["ports"][1]["rx_packets"] == 200)
    port2 = running.switch.stats()["ports"][2]
    assert port2["drops"]["loss"] + port2["tx_packets"] == 200
    assert 60 < port2["drops"]["loss"] < 140


def test_rate_serialises_and_queue_full_drops(stepped):
    clock = FakeClock()
    spec = ShapeSpec(rate_bps=8000.0, queue_limit=2)  # 1 s per 1000-byte frame
    switch, wires = stepped(shaping={2: spec}, clock=clock)
    frames = [bytes([i]) * 1000 for i in range(5)]
    for frame in frames:
        wires[1].host.send(frame)
    switch.poll()
    port2 = switch.stats()["ports"][2]
    assert (port2["drops"]["queue_full"], port2["queue_depth"]) == (3, 2)
    assert wires[2].pending() == []
    clock.now = 1.0  # the first frame's serialisation ends
    switch.poll()
    assert wires[2].pending() == [frames[0]]
    assert switch.stats()["ports"][2]["queue_depth"] == 1
    clock.now = math.nextafter(2.0, 0.0)
    switch.poll()
    assert wires[2].pending() == []
    clock.now = 2.0
    switch.poll()
    assert wires[2].pending() == [frames[1]]
    assert switch.stats()["ports"][2]["tx_packets"] == 2


def test_set_processor_swaps_pipelines(make_switch):
    class Mirror:
        def process(self, ingress_port: int, data: bytes) -> list[tuple[int, bytes]]:
            return [(ingress_port, data[::-1])]

    running = make_switch()
    running.switch.set_processor(Mirror())
    running.wires[1].host.send(b"abc")
    assert running.wires[1].recv() == b"cba"


def test_stop_returns_and_flushes_captures_stamped_by_the_wall_clock(tmp_path):
    wires = {1: Wire("p1"), 2: Wire("p2")}
    wall_clock = FakeClock(1_700_000_000.25)
    ports = {n: w.port for n, w in wires.items()}
    switch = Switch(ports, Crossover(), pcap_dir=tmp_path / "cap", wall_clock=wall_clock)
    stop = threading.Event()
    thread = threading.Thread(target=switch.run, args=(stop,), daemon=True)
    thread.start()
    try:
        wires[1].host.send(b"captured frame")
        assert wires[2].recv() == b"captured frame"
        stop.set()
        switch.wake()
        thread.join(HANG_S)
        assert not thread.is_alive()
        for path in ("1-in.pcap", "2-out.pcap"):
            records = read_pcap(tmp_path / "cap" / path).records
            assert [(r.data, r.timestamp) for r in records] == [
                (b"captured frame", 1_700_000_000.25)
            ]
        assert read_pcap(tmp_path / "cap" / "2-in.pcap").records == ()
    finally:
        stop.set()
        switch.close()
        for wire in wires.values():
            wire.host.close()
            wire.port.close()


def test_stop_without_wake_is_noticed():
    wires = {1: Wire("p1")}
    switch = Switch({1: wires[1].port}, Crossover())
    stop = threading.Event()
    thread = threading.Thread(target=switch.run, args=(stop,), daemon=True)
    thread.start()
    stop.set()
    thread.join(HANG_S)  # MAX_WAIT_S is 0.25 s: the loop looks at `stop` well before
    assert not thread.is_alive()
    switch.close()
    wires[1].host.close()
    wires[1].port.close()


def test_wake_ends_the_wait_at_once(monkeypatch):
    monkeypatch.setattr(dataplane, "MAX_WAIT_S", 3600.0)  # without the wake, an hour's wait
    wires = {1: Wire("p1")}
    switch = Switch({1: wires[1].port}, Crossover())
    stop = threading.Event()
    thread = threading.Thread(target=switch.run, args=(stop,), daemon=True)
    thread.start()
    try:
        assert wait_for(lambda: switch._running)
        stop.set()
        switch.wake()
        thread.join(HANG_S)
        assert not thread.is_alive()
    finally:
        if not thread.is_alive():
            switch.close()
            wires[1].host.close()
            wires[1].port.close()


@pytest.mark.parametrize(
    ("kwargs", "error"),
    [
        ({"cpu_port": 1}, ValueError),
        ({"shaping": {5: ShapeSpec()}}, UnknownPortError),
    ],
)
def test_bad_configuration_is_refused(kwargs, error):
    wire = Wire("p1")
    try:
        with pytest.raises(error):
            Switch({1: wire.port}, Crossover(), **kwargs)
    finally:
        wire.host.close()
        wire.port.close()


def test_missing_interface_is_a_port_error():
    with pytest.raises(PortError, match="does not exist"):
        open_port("p4nosuchif0")
    with pytest.raises(PortError, match="not a valid interface name"):
        open_port("a-name-far-too-long")
