"""NativeSwitch's loop driven through datagram socket pairs (no root): each port's socket is one
end, the test holds the other; the processor is a Python object or the tiny C one.

The C loop reads CLOCK_MONOTONIC (`time.monotonic`'s clock). What it shapes is asserted here
only as what no busy machine can break: exact counts and drops, orderings, and lower bounds on
elapsed time (a frame delayed by D is not out before D has passed); exact due times are the C
queue's, on a simulated clock (test_queue.py). Waits on the real clock are hang guards.
"""

from __future__ import annotations

import select
import socket
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from p4switch.dataplane import Switch
from p4switch.exceptions import UnknownPortError
from p4switch.nativeio import NativeIOError, NativeSwitch
from p4switch.pcap import read_pcap
from p4switch.ports import Port
from p4switch.shaping import ShapeSpec
from tests.tiny_l2 import CPU_PORT, TO_CPU_ETHERTYPE, TinyL2

FRAME = bytes(12) + b"\x88\xb6" + b"payload".ljust(46, b".")
HANG_S = 10.0  # seconds: the longest a test waits for what must happen (a hang guard)
TO_CPU = bytes(12) + TO_CPU_ETHERTYPE.to_bytes(2, "big") + b"to cpu".ljust(46, b".")


class Wire:
    """1 <-> 2, as a Python processor; frames of ethertype 0x88b5 go to the CPU port."""

    def process(self, ingress_port: int, data: bytes) -> list[tuple[int, bytes]]:
        if data[12:14] == TO_CPU[12:14]:
            return [(CPU_PORT, data)]
        return [(3 - ingress_port, data)]


class Failing:
    def __init__(self, emitted: object) -> None:
        self.emitted = emitted

    def process(self, ingress_port: int, data: bytes) -> object:
        if isinstance(self.emitted, Exception):
            raise self.emitted
        return self.emitted


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> TinyL2:
    return TinyL2(tmp_path_factory.mktemp("tiny"))


@pytest.fixture
def wires() -> Iterator[tuple[dict[int, Port], dict[int, socket.socket]]]:
    """Ports 1 and 2 as one end of a socket pair each, and the test's ends."""
    ports, peers = {}, {}
    for number in (1, 2):
        mine, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)
        mine.setblocking(False)
        ports[number] = Port(name=f"pair{number}", ifindex=0, sock=mine)
        peers[number] = theirs
    yield ports, peers
    for sock in (*(p.sock for p in ports.values()), *peers.values()):
        sock.close()


@pytest.fixture
def start(wires) -> Iterator[Callable[..., NativeSwitch]]:
    ports, _ = wires
    running: list[tuple[NativeSwitch, threading.Event, threading.Thread]] = []

    def start_switch(processor: object, **options: object) -> NativeSwitch:
        switch = NativeSwitch(ports, processor, cpu_port=CPU_PORT, **options)  # type: ignore[arg-type]
        stop = threading.Event()
        thread = threading.Thread(target=switch.run, args=(stop,))
        thread.start()
        running.append((switch, stop, thread))
        return switch

    yield start_switch
    for switch, stop, thread in running:
        stop.set()
        switch.wake()
        thread.join(timeout=5)
        assert not thread.is_alive()
        switch.close()


def receive(sock: socket.socket, count: int, timeout: float = HANG_S) -> list[bytes]:
    got: list[bytes] = []
    deadline = time.monotonic() + timeout
    while len(got) < count and (left := deadline - time.monotonic()) > 0:
        if select.select([sock], [], [], left)[0]:
            got.append(sock.recv(65536))
    return got


def eventually(condition: Callable[[], bool], timeout: float = HANG_S) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "condition not met in time"
        time.sleep(0.005)  # polling the condition, with a deadline


@pytest.mark.parametrize("native", [True, False], ids=["c-processor", "python-processor"])
def test_frames_cross_both_ways(wires, start, tiny, native):
    _, peers = wires
    switch = start(tiny if native else Wire())
    frames = [FRAME[:-4] + i.to_bytes(4, "big") for i in range(500)]
    for start_at in range(0, 500, 5):  # a socket pair queues few datagrams: a few at a time
        for frame in frames[start_at : start_at + 5]:
            peers[1].send(frame)
        assert receive(peers[2], 5) == frames[start_at : start_at + 5]
    peers[2].send(FRAME)
    assert receive(peers[1], 1) == [FRAME]
    eventually(lambda: switch.stats()["ports"][1]["tx_packets"] == 1)  # counted after sending
    stats = switch.stats()["ports"]
    assert stats[1]["rx_packets"] == 500 and stats[2]["tx_packets"] == 500
    assert stats[1]["rx_bytes"] == sum(map(len, frames))
    assert stats[2]["rx_packets"] == 1 and stats[1]["tx_packets"] == 1


@pytest.mark.parametrize(
    ("emitted", "reason"),
    [
        ([], "pipeline_drop"),
        (ValueError("a pipeline bug"), "pipeline_error"),
        ([(2, FRAME)] * 65, "pipeline_error"),
        ([(2, bytes(9217))], "pipeline_error"),
        ("not frames", "pipeline_error"),
        ([(7, FRAME)], "no_such_port"),
    ],
    ids=["drop", "raises", "too-many", "too-long", "not-frames", "no-such-port"],
)
def test_what_the_processor_gets_wrong_is_counted(wires, start, emitted, reason):
    _, peers = wires
    switch = start(Failing(emitted))
    peers[1].send(FRAME)
    eventually(lambda: switch.stats()["ports"][1]["drops"][reason] == 1)
    peers[2].send(FRAME)  # still forwarding: the next frame is handled too
    eventually(lambda: switch.stats()["ports"][2]["rx_packets"] == 1)


def test_cpu_frames_go_to_the_listener_and_its_failures_are_counted(wires, start):
    _, peers = wires
    got: list[bytes] = []
    switch = start(Wire(), on_cpu_packet=got.append)
    peers[1].send(TO_CPU)
    eventually(lambda: got == [TO_CPU])

    def broken(frame: bytes) -> None:
        raise RuntimeError("listener bug")

    switch.on_cpu_packet = broken
    peers[1].send(TO_CPU)
    switch_cpu = lambda: switch.stats()["cpu"]  # noqa: E731
    eventually(lambda: switch_cpu()["drops"]["cpu_listener_error"] == 1)
    switch.on_cpu_packet = None
    peers[1].send(TO_CPU)
    eventually(lambda: switch_cpu()["drops"]["no_cpu_listener"] == 1)
    assert switch_cpu()["tx_packets"] == 1 and switch_cpu()["tx_bytes"] == len(TO_CPU)


def test_a_listener_may_inject_and_swap_the_processor_from_the_loop(wires, start, tiny):
    _, peers = wires
    switch: NativeSwitch

    def answer(frame: bytes) -> None:
        switch.set_processor(tiny)  # re-enters the loop's lock on its own thread
        switch.inject(1, FRAME)

    switch = start(Wire(), on_cpu_packet=answer)
    peers[1].send(TO_CPU)
    assert receive(peers[2], 1) == [FRAME]  # the packet-out, through the tiny processor
    cpu = switch.stats()["cpu"]
    assert cpu["rx_packets"] == 1 and cpu["tx_packets"] == 1


def test_stats_while_a_python_processor_runs_do_not_deadlock(wires, start):
    _, peers = wires
    switch = start(Wire())
    done = threading.Event()

    def flood() -> None:
        for _ in range(600):
            for _ in range(5):
                peers[1].send(FRAME)
            receive(peers[2], 5)
        done.set()

    thread = threading.Thread(target=flood)
    thread.start()
    reads, counted = 0, 0
    while not done.is_set() or reads < 50:
        received = switch.stats()["ports"][1]["rx_packets"]
        assert counted <= received <= 3000  # read while the loop counts: never back, never more
        counted = received
        reads += 1
    thread.join(HANG_S)
    eventually(lambda: switch.stats()["ports"][2]["tx_packets"] == 3000)
    assert switch.stats()["ports"][1]["rx_packets"] == 3000


class Gate:
    """1 <-> 2, as a Python processor that holds the loop on a frame ending in b"gate" until
    `open` is set (saying when it has started holding)."""

    def __init__(self) -> None:
        self.holding = threading.Event()
        self.open = threading.Event()

    def process(self, ingress_port: int, data: bytes) -> list[tuple[int, bytes]]:
        if data.endswith(b"gate"):
            self.holding.set()
            assert self.open.wait(HANG_S), "the test never opened the gate"
        return [(3 - ingress_port, data)]


def test_delay_holds_frames_and_reports_its_lateness(wires, start):
    """A frame delayed 50 ms is not out before 50 ms have passed; a loop held in the processor
    past its due time releases it late and reports at least that lateness, until reset."""
    _, peers = wires
    gate = Gate()
    delayed, holder = FRAME[:-4] + b"slow", FRAME[:-4] + b"gate"
    sent = time.monotonic()
    peers[1].send(delayed)
    peers[1].send(holder)
    # both are in before the loop starts: it reads them in one batch and shapes nothing before
    # the batch is done, so it holds on `holder` with `delayed` queued
    switch = start(gate, shaping={2: ShapeSpec(delay_s=0.05)})
    assert gate.holding.wait(HANG_S)
    held = time.monotonic()  # `delayed` was queued before: due by held + 0.05 at the latest
    time.sleep(0.1)  # keep the loop in the processor past that due time
    opened = time.monotonic()
    gate.open.set()
    assert receive(peers[2], 2) == [delayed, holder]
    assert time.monotonic() >= sent + 0.05  # a lower bound: a busy machine only adds to it
    late = switch.stats(reset_peaks=True)["ports"][2]["lateness_max_s"]
    assert late >= opened - (held + 0.05) > 0  # out no earlier than the gate opened
    assert switch.stats()["ports"][2]["lateness_max_s"] == 0.0


def test_a_new_shape_reaches_the_running_loop(wires, start, tiny):
    """An hour's delay holds a frame; reshaped to no delay (reordering, so that nothing waits
    behind the held frame), the next frame goes out while the first stays held."""
    _, peers = wires
    switch = start(tiny, shaping={2: ShapeSpec(delay_s=3600.0)})
    first, second = FRAME[:-1] + b"1", FRAME[:-1] + b"2"
    peers[1].send(first)
    eventually(lambda: switch.stats()["ports"][2]["queue_held"] == 1)
    switch.shape(2, ShapeSpec(reorder=True))
    peers[1].send(second)
    assert receive(peers[2], 1) == [second]
    port2 = switch.stats()["ports"][2]
    assert (port2["queue_held"], port2["tx_packets"]) == (1, 1)  # the first keeps its hour


def test_rate_serialises(wires, start, tiny):
    _, peers = wires
    switch = start(tiny, shaping={2: ShapeSpec(rate_bps=len(FRAME) * 8 * 100)})  # 100/s
    frames = [FRAME[:-1] + bytes([i]) for i in range(10)]
    sent = time.monotonic()
    for frame in frames:
        peers[1].send(frame)
    assert receive(peers[2], 10) == frames  # in order
    # a lower bound: the tenth frame ends its serialisation ten 10 ms slots after the first
    # was read, or later (a millisecond left for the rounding of the sums)
    assert time.monotonic() - sent >= 0.099
    assert switch.stats()["ports"][2]["drops"]["queue_full"] == 0


def test_a_full_serialisation_queue_drops_the_tail(wires, start, tiny):
    _, peers = wires
    hour = ShapeSpec(rate_bps=len(FRAME) * 8 / 3600, queue_limit=10)  # a frame an hour
    switch = start(tiny, shaping={2: hour})
    for _ in range(30):
        peers[1].send(FRAME)
    eventually(lambda: switch.stats()["ports"][1]["rx_packets"] == 30)
    port2 = switch.stats()["ports"][2]
    assert port2["drops"]["queue_full"] == 20
    assert (port2["queue_depth"], port2["queue_held"], port2["tx_packets"]) == (10, 10, 0)


def test_the_stats_have_the_python_switchs_shape(wires, tiny):
    ports, _ = wires
    shaping = {2: ShapeSpec(delay_s=0.01, loss=0.1)}

    def shape_of(value: object) -> object:
        if isinstance(value, dict):
            return {key: shape_of(item) for key, item in value.items()}
        return "number" if isinstance(value, int | float) else type(value).__name__

    with NativeSwitch(ports, tiny, cpu_port=CPU_PORT, shaping=shaping) as native:
        python = Switch(ports, tiny, cpu_port=CPU_PORT, shaping=shaping)
        assert shape_of(native.stats()) == shape_of(python.stats())
        assert native.stats()["ports"][2]["shape"] == python.stats()["ports"][2]["shape"]
        assert native.ports == python.ports and native.cpu_port == CPU_PORT
        python.close()


def test_bad_arguments_are_refused(wires, tiny, tmp_path: Path):
    ports, _ = wires
    blocked = tmp_path / "blocked"
    (blocked / "1-in.pcap").mkdir(parents=True)  # a directory where a capture file should go
    with pytest.raises(NativeIOError, match="cannot write the captures of port 1"):
        NativeSwitch(ports, tiny, pcap_dir=blocked)
    with pytest.raises(ValueError, match="also a front-panel port"):
        NativeSwitch(ports, tiny, cpu_port=1)
    with pytest.raises(UnknownPortError, match=r"\[3\]"):
        NativeSwitch(ports, tiny, shaping={3: ShapeSpec()})
    with NativeSwitch(ports, tiny, cpu_port=CPU_PORT) as switch:
        with pytest.raises(UnknownPortError, match="inject on port 9"):
            switch.inject(9, FRAME)
        with pytest.raises(UnknownPortError, match="port 5"):
            switch.shape(5, ShapeSpec())

    class BadEntry:
        native_entry = (0, 0)

        def process(self, ingress_port: int, data: bytes) -> list[tuple[int, bytes]]:
            return []

    with pytest.raises(NativeIOError, match="native_entry"):
        NativeSwitch(ports, BadEntry())


def test_a_running_switch_cannot_be_closed_and_a_closed_one_cannot_run(wires, tiny):
    ports, _ = wires
    switch = NativeSwitch(ports, tiny)
    stop = threading.Event()
    thread = threading.Thread(target=switch.run, args=(stop,))
    thread.start()
    eventually(lambda: switch._running)
    with pytest.raises(NativeIOError, match="running already"):
        switch.run(stop)
    with pytest.raises(NativeIOError, match="stop the switch"):
        switch.close()
    stop.set()
    switch.wake()
    thread.join(timeout=HANG_S)
    final = switch.stats()
    switch.close()
    with pytest.raises(NativeIOError, match="closed"):
        switch.run(stop)
    with pytest.raises(NativeIOError, match="closed"):
        switch.inject(1, FRAME)
    assert switch.stats() == final  # what it had when closed, as Switch gives


def test_a_thread_holding_the_processors_lock_can_still_drive_the_switch(wires, start):
    """As P4Runtime does: commit a new pipeline while holding the running one's state lock, which
    the loop waits for inside the processor."""
    _, peers = wires

    class Locked:
        def __init__(self) -> None:
            self.lock = threading.Lock()
            self.entered = threading.Event()

        def process(self, ingress_port: int, data: bytes) -> list[tuple[int, bytes]]:
            self.entered.set()
            with self.lock:
                return [(3 - ingress_port, data)]

    locked = Locked()
    switch = start(locked)
    finished = threading.Event()

    def control_plane() -> None:
        switch.stats()
        switch.shape(2, ShapeSpec(delay_s=0.001))
        switch.inject(1, FRAME)
        switch.set_processor(Wire())
        finished.set()

    with locked.lock:
        peers[1].send(FRAME)
        assert locked.entered.wait(HANG_S)  # the loop waits for the lock inside the processor
        thread = threading.Thread(target=control_plane)
        thread.start()
        thread.join(timeout=HANG_S)
        assert finished.is_set(), "the control plane deadlocked against the loop"
    assert receive(peers[2], 2) == [FRAME, FRAME]


def test_captures_hold_what_each_port_received_and_sent(wires, tiny, tmp_path: Path):
    ports, peers = wires
    frames = [FRAME[:-1] + bytes([i]) for i in range(5)]
    started = time.time()
    with NativeSwitch(ports, tiny, pcap_dir=tmp_path / "pcap") as switch:
        stop = threading.Event()
        thread = threading.Thread(target=switch.run, args=(stop,))
        thread.start()
        for frame in frames:
            peers[1].send(frame)
        assert receive(peers[2], 5) == frames
        peers[2].send(FRAME)
        assert receive(peers[1], 1) == [FRAME]
        eventually(lambda: switch.stats()["ports"][1]["tx_packets"] == 1)
        stop.set()
        switch.wake()
        thread.join(timeout=5)
        for port, way, expected in ((1, "in", frames), (2, "out", frames), (2, "in", [FRAME])):
            capture = read_pcap(tmp_path / "pcap" / f"{port}-{way}.pcap")  # flushed by run
            assert capture.linktype == 1 and capture.snaplen == 262_144
            assert [r.data for r in capture.records] == expected
            assert all(r.orig_len == len(r.data) for r in capture.records)
            assert all(started - 1 <= r.timestamp <= time.time() + 1 for r in capture.records)
        assert [r.data for r in read_pcap(tmp_path / "pcap" / "1-out.pcap").records] == [FRAME]


def test_swapping_processors_and_shapes_under_traffic_keeps_every_frame_accounted(
    wires, start, tiny
):
    _, peers = wires
    switch = start(tiny)
    specs = [ShapeSpec(), ShapeSpec(delay_s=0.002), ShapeSpec(rate_bps=5e6, loss=0.1)]
    processors = [tiny, Wire(), Failing([]), tiny]
    received: list[bytes] = []
    done = threading.Event()

    def drain() -> None:
        while not done.is_set() or select.select([peers[2]], [], [], 0.2)[0]:
            if select.select([peers[2]], [], [], 0.05)[0]:
                received.append(peers[2].recv(65536))

    reader = threading.Thread(target=drain)
    reader.start()
    sent = [FRAME[:-4] + i.to_bytes(4, "big") for i in range(3000)]
    for i, frame in enumerate(sent):
        if i % 97 == 0:
            switch.set_processor(processors[(i // 97) % len(processors)])
        if i % 131 == 0:
            switch.shape(2, specs[(i // 131) % len(specs)])
        peers[1].send(frame)
    switch.set_processor(tiny)
    switch.shape(2, ShapeSpec())
    eventually(lambda: switch.stats()["ports"][2]["queue_held"] == 0, 5.0)
    done.set()
    reader.join(timeout=5)
    port1, port2 = (switch.stats()["ports"][n] for n in (1, 2))
    lost = sum(port2["drops"][reason] for reason in ("loss", "queue_full", "tx_error"))
    assert port1["rx_packets"] == 3000
    assert port1["rx_packets"] == port2["tx_packets"] + lost + port1["drops"]["pipeline_drop"]
    assert len(received) == port2["tx_packets"] == len(set(received))  # none twice
    assert set(received) <= set(sent)
