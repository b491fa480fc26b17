"""The switch process's data plane: ports, the I/O loop, egress shaping and capture.

A frame arriving on a port goes to a `PacketProcessor` (the compiled P4 pipeline, or any object
with its `process` method), which returns the frames to emit and their egress ports. Each is sent
at once, or through the port's `EgressQueue` when the port is shaped, or handed to
`Switch.on_cpu_packet` when its egress port is the CPU port.

One thread runs `Switch.run`: it waits on the port sockets and a wake-up pipe
(`p4switch.readiness`), for no longer than until the next shaped frame is due, then receives up
to `RX_BATCH` frames per ready port and sends the shaped frames whose time has come. The
processor is only ever called on that thread. Other threads (control channel, P4Runtime server)
talk to the loop through `shape`, `inject`, `set_processor` and `stats`, which are safe to call
while it runs. What the loop keeps per port (socket, egress queue, capture files, counters) is a
`p4switch.switchports.SwitchPort`.

A port is an interface (an AF_PACKET socket) or a UDP tunnel to a peer on another machine
(`p4switch.ports.UdpTunnel`): the loop reads each by its kind, and otherwise treats both alike.
On a tunnel port the kernel reports what it dropped for the socket with the next datagram it
queues (rx_overrun), and a peer refusing datagrams (ICMP port unreachable: nothing listens there
yet) with the next read or send, each report counted as a tx_error. A frame longer than a UDP
datagram carries (MAX_DATAGRAM_BYTES) is refused by the kernel: a tx_error too.

Shaping counts on the switch's `clock` (`time.monotonic` unless the caller gives another); the
kernel's receive times and the captures' timestamps are Unix times, read from `wall_clock`
(`time.time`). A test gives both as simulated clocks and drives the loop itself, one turn at a
time, with `poll`: what is held, what is released and when it is due are then exact.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import deque
from collections.abc import Callable, Mapping
from pathlib import Path
from types import TracebackType
from typing import Any, Protocol

from p4switch.exceptions import UnknownPortError
from p4switch.ports import (
    DATAGRAM_ANCILLARY_SPACE,
    MAX_FRAME_BYTES,
    PACKET_OUTGOING,
    STAMP_SPACE,
    Port,
    PortKind,
    UdpTunnel,
    arrival_time,
    datagram_arrival,
    take_kernel_drops,
)
from p4switch.readiness import Readiness
from p4switch.shaping import ShapeSpec, Verdict
from p4switch.switchports import PortCounters, SwitchPort, SwitchPorts, ThrottledWarnings
from p4switch.vlan import AUXDATA_SPACE, as_on_wire

log = logging.getLogger(__name__)

RX_BATCH = 64  # frames received from one port before looking at the others and the clock
MAX_WAIT_S = 0.25  # the longest wait: how late `run` may notice a stop without `wake`
ANCILLARY_SPACE = AUXDATA_SPACE + STAMP_SPACE  # recvmsg's room for a VLAN tag and a receive time


class PacketProcessor(Protocol):
    """What the switch runs each received frame through (the P4 pipeline)."""

    def process(self, ingress_port: int, data: bytes) -> list[tuple[int, bytes]]:
        """The (egress port, frame) pairs to emit, [] to drop; must not raise for a bad frame."""
        ...


class Switch:
    """A software switch: ports around a `PacketProcessor`, with egress shaping.

    `ports` maps port numbers to interface names or `UdpTunnel`s (opened here, closed by `close`)
    or to `Port`s opened by the caller (left open). `shaping` gives ports their initial
    `ShapeSpec`; `seed` makes the loss draws repeatable. With `pcap_dir`, every frame received
    and sent is captured in `<port>-in.pcap` / `<port>-out.pcap` there. Frames the processor
    sends to `cpu_port` go to `on_cpu_packet` (called on the I/O thread: hand the frame over,
    don't block). `clock` (monotonic seconds) is what shaping counts on, `wall_clock` the Unix
    time of kernel receive times and captures (module docstring).
    """

    def __init__(
        self,
        ports: Mapping[int, str | UdpTunnel | Port],
        processor: PacketProcessor,
        *,
        shaping: Mapping[int, ShapeSpec] | None = None,
        pcap_dir: Path | None = None,
        cpu_port: int | None = None,
        seed: int = 0,
        on_cpu_packet: Callable[[bytes], None] | None = None,
        clock: Callable[[], float] = time.monotonic,
        wall_clock: Callable[[], float] = time.time,
    ) -> None:
        for number in ports:
            if isinstance(number, bool) or not isinstance(number, int) or number < 0:
                raise ValueError(f"port numbers must be integers >= 0, got {number!r}")
        if cpu_port is not None and cpu_port in ports:
            raise ValueError(f"CPU port {cpu_port} is also a front-panel port; choose another")
        unknown = sorted(set(shaping or {}) - set(ports))
        if unknown:
            raise UnknownPortError(f"shaping given for port(s) {unknown}, not in {sorted(ports)}")
        self._processor = processor
        self._clock = clock
        self._wall_clock = wall_clock
        self._cpu_port = cpu_port
        self.on_cpu_packet = on_cpu_packet
        self._port_set = SwitchPorts(ports, shaping or {}, seed, pcap_dir)
        self._ports = self._port_set.by_number
        self._by_fd = self._port_set.by_fd
        try:
            self._readiness = Readiness(list(self._by_fd))
        except BaseException:
            self._port_set.close()
            raise
        self._cpu = PortCounters()
        self._active: set[int] = set()  # ports holding shaped frames
        self._injected: deque[tuple[int, bytes]] = deque()
        self._lock = threading.Lock()  # guards _pending and _running
        self._pending: dict[int, ShapeSpec] = {}
        self._running = False
        self._warn = ThrottledWarnings(log)
        self._closed = False

    # -- public interface, safe from any thread ---------------------------------------------

    @property
    def ports(self) -> dict[int, str]:
        """Port number -> interface name (a tunnel's "udp LOCAL->PEER")."""
        return {number: state.name for number, state in self._ports.items()}

    @property
    def cpu_port(self) -> int | None:
        return self._cpu_port

    def set_processor(self, processor: PacketProcessor) -> None:
        """Use `processor` from the next frame on (e.g. after a new pipeline config)."""
        self._processor = processor

    def shape(self, port: int, spec: ShapeSpec) -> None:
        """Shape egress `port` with `spec` from now on (frames already held keep their times)."""
        if port not in self._ports:
            raise UnknownPortError(
                f"port {port} is not a switch port (ports: {sorted(self._ports)})"
            )
        with self._lock:
            if self._running:
                self._pending[port] = spec
            else:
                self._apply_shape(port, spec)
        self.wake()
        log.info("port %d shaped: %s", port, spec.describe())

    def inject(self, ingress_port: int, data: bytes) -> None:
        """Run `data` through the processor as if received on `ingress_port` (packet-out)."""
        if ingress_port not in self._ports and ingress_port != self._cpu_port:
            raise UnknownPortError(
                f"cannot inject on port {ingress_port}: not a switch port or the CPU port "
                f"(ports: {sorted(self._ports)}, CPU port: {self._cpu_port})"
            )
        self._injected.append((ingress_port, bytes(data)))
        self.wake()

    def wake(self) -> None:
        """Make `run` look at its inputs now (e.g. right after setting its stop event)."""
        self._readiness.wake()

    def stats(self, reset_peaks: bool = False) -> dict[str, Any]:
        """Counters per port and for the CPU port, shaping, queue depth and lateness.

        `reset_peaks` restarts each port's `lateness_max_s` after reading it, so that a caller
        can measure the switch's worst processing lag over an interval (one training round).
        """
        now = self._clock()
        ports: dict[int, dict[str, Any]] = {}
        with self._lock:
            pending = dict(self._pending)
            for state in self._ports.values():  # under the lock: each read resets the kernel's
                if state.kind is PortKind.PACKET:  # a tunnel's the loop counts as it reads
                    state.counters.drops["rx_overrun"] += take_kernel_drops(state.sock)
        for number, state in self._ports.items():
            ports[number] = state.stats(now, pending.get(number, state.queue.spec), reset_peaks)
        cpu = None
        if self._cpu_port is not None:
            cpu = {"port": self._cpu_port, **self._cpu.snapshot()}
        return {"ports": ports, "cpu": cpu}

    # -- the I/O loop ------------------------------------------------------------------------

    def run(self, stop: threading.Event) -> None:
        """Forward until `stop` is set; call `wake` after setting it to return at once."""
        if self._closed:
            raise RuntimeError("the switch is closed; create a new one")
        with self._lock:
            self._running = True
            self._apply_pending()
        for number, state in self._ports.items():
            shaping = state.queue.spec
            log.info(
                "port %d = %s%s",
                number,
                state.name,
                "" if shaping.is_passthrough else f" (egress {shaping.describe()})",
            )
        try:
            while not stop.is_set():
                self._turn(self.wait_timeout())
        finally:
            with self._lock:
                self._running = False
                self._apply_pending()
            self._port_set.flush_captures()
            log.info("switch stopped")

    def poll(self, timeout: float = 0.0) -> None:
        """One turn of the loop `run` repeats, on the caller's thread: wait up to `timeout` s
        for frames (no longer than `wait_timeout`), handle those that are in, then send the
        shaped frames that are due by the clock. For driving a switch step by step, e.g. on a
        simulated clock; not while `run` runs."""
        if self._closed:
            raise RuntimeError("the switch is closed; create a new one")
        with self._lock:
            if self._running:
                raise RuntimeError("the switch's loop runs on another thread; stop it first")
        self._turn(min(timeout, self.wait_timeout()))

    def wait_timeout(self) -> float:
        """How long the loop may wait for frames now (s): until the next shaped frame is due
        by the clock (0 if one is due), and never longer than MAX_WAIT_S."""
        if not self._active:
            return MAX_WAIT_S
        return min(MAX_WAIT_S, max(0.0, self._next_due() - self._clock()))

    def _turn(self, timeout: float) -> None:
        """Wait up to `timeout` s, then: shaping changes, packet-outs, the frames of each ready
        port, and the shaped frames due by the clock, in that order."""
        ready = self._readiness.wait(timeout)
        if self._pending:  # before the frames that arrived with the wake-up
            with self._lock:
                self._apply_pending()
        if self._injected:
            self._drain_injected()
        by_fd = self._by_fd
        for fd in ready:
            self._receive(by_fd[fd])
        if self._active:
            self._release(self._clock())

    def _receive(self, state: SwitchPort) -> None:
        """Process up to RX_BATCH frames from a port, each as it was on the wire (VLAN tag) and
        from the time it arrived there (the kernel's receive time, on this loop's clock: its
        Unix time less the wall clock's offset from the loop's clock)."""
        if state.kind is PortKind.UDP:
            self._receive_datagrams(state)
            return
        recvfrom = state.sock.recvfrom
        recvmsg = state.sock.recvmsg if state.auxdata else None  # None: no tags, no times
        counters = state.counters
        pcap = state.pcap_in
        number = state.number
        clock = self._clock
        wall_clock = self._wall_clock
        realtime_offset = wall_clock() - (now := clock())  # kernel times are Unix times
        for _ in range(RX_BATCH):
            arrived = now
            try:
                if recvmsg is not None:
                    data, ancdata, _, address = recvmsg(MAX_FRAME_BYTES, ANCILLARY_SPACE)
                    data = as_on_wire(data, ancdata)
                    stamp = arrival_time(ancdata)
                    if stamp is not None:
                        arrived = stamp - realtime_offset
                        state.rx_lag_max_s = max(state.rx_lag_max_s, clock() - arrived)
                else:
                    data, address = recvfrom(MAX_FRAME_BYTES)
            except BlockingIOError:
                return
            except OSError as err:
                self._warn(number, "rx_error", "receiving on %s failed: %s", state.name, err)
                return
            if address[2] == PACKET_OUTGOING:
                continue
            counters.rx_packets += 1
            counters.rx_bytes += len(data)
            if pcap is not None:
                pcap.write(data, wall_clock())
            self._process(number, data, counters, arrived)

    def _receive_datagrams(self, state: SwitchPort) -> None:
        """`_receive` for a tunnel port: each datagram is a frame as it was on the wire (no
        packet type, no VLAN tag to restore), read with its receive time and the count of what
        the kernel dropped for the socket before it."""
        recvmsg = state.sock.recvmsg
        counters = state.counters
        pcap = state.pcap_in
        number = state.number
        clock = self._clock
        wall_clock = self._wall_clock
        realtime_offset = wall_clock() - (now := clock())
        for _ in range(RX_BATCH):
            try:
                data, ancdata, _, _ = recvmsg(MAX_FRAME_BYTES, DATAGRAM_ANCILLARY_SPACE)
            except BlockingIOError:
                return
            except ConnectionRefusedError as err:  # reported once; the socket reads on after it
                counters.drops["tx_error"] += 1
                self._warn(
                    number,
                    "tx_error",
                    "the peer of %s refused a frame (does it listen yet?): %s",
                    state.name,
                    err,
                )
                continue
            except OSError as err:
                self._warn(number, "rx_error", "receiving on %s failed: %s", state.name, err)
                return
            arrived = now
            stamp, dropped = datagram_arrival(ancdata)
            if stamp is not None:
                arrived = stamp - realtime_offset
                state.rx_lag_max_s = max(state.rx_lag_max_s, clock() - arrived)
            if dropped is not None and dropped != state.rx_drops_seen:
                counters.drops["rx_overrun"] += (dropped - state.rx_drops_seen) % 2**32
                state.rx_drops_seen = dropped
            counters.rx_packets += 1
            counters.rx_bytes += len(data)
            if pcap is not None:
                pcap.write(data, wall_clock())
            self._process(number, data, counters, arrived)

    def _process(
        self, ingress_port: int, data: bytes, counters: PortCounters, arrived: float
    ) -> None:
        """Run one frame (the kernel received it at `arrived`, monotonic) through the processor
        and emit what it returns; shaped ports shape it from now, when the switch has it."""
        try:
            emitted = self._processor.process(ingress_port, data)
            if not emitted:
                counters.drops["pipeline_drop"] += 1
                return
            for egress_port, frame in emitted:
                state = self._ports.get(egress_port)
                if state is None:
                    self._to_cpu(egress_port, frame, counters)
                elif not state.shaped:
                    self._send(state, frame)
                else:
                    verdict = state.queue.offer(frame, self._clock())
                    if verdict is Verdict.QUEUED:
                        self._active.add(egress_port)
                    elif verdict is Verdict.SEND_NOW:
                        self._send(state, frame)
                    elif verdict is Verdict.LOSS:
                        state.counters.drops["loss"] += 1
                    else:
                        state.counters.drops["queue_full"] += 1
        except Exception:
            counters.drops["pipeline_error"] += 1
            self._warn(
                ingress_port,
                "pipeline_error",
                "the processor failed on a %d-byte frame from port %d; frame dropped",
                len(data),
                ingress_port,
                exc_info=True,
            )

    def _send(self, state: SwitchPort, frame: bytes) -> None:
        try:
            state.sock.send(frame)
        except OSError as err:
            state.counters.drops["tx_error"] += 1
            self._warn(state.number, "tx_error", "sending on %s failed: %s", state.name, err)
            return
        counters = state.counters
        counters.tx_packets += 1
        counters.tx_bytes += len(frame)
        if state.pcap_out is not None:
            state.pcap_out.write(frame, self._wall_clock())

    def _to_cpu(self, egress_port: int, frame: bytes, counters: PortCounters) -> None:
        if egress_port != self._cpu_port:
            counters.drops["no_such_port"] += 1
            return
        listener = self.on_cpu_packet
        if listener is None:
            self._cpu.drops["no_cpu_listener"] += 1
            return
        try:
            listener(frame)
        except Exception:
            self._cpu.drops["cpu_listener_error"] += 1
            self._warn(egress_port, "cpu", "the CPU-port listener failed", exc_info=True)
            return
        self._cpu.tx_packets += 1
        self._cpu.tx_bytes += len(frame)

    def _drain_injected(self) -> None:
        injected = self._injected
        cpu = self._cpu
        while injected:
            ingress_port, data = injected.popleft()
            cpu.rx_packets += 1
            cpu.rx_bytes += len(data)
            self._process(ingress_port, data, cpu, self._clock())

    def _release(self, now: float) -> None:
        """Send every held frame whose time has come."""
        drained = []
        for number in self._active:
            state = self._ports[number]
            for frame in state.queue.pop_due(now):
                self._send(state, frame)
            if not len(state.queue):
                drained.append(number)
        for number in drained:
            self._active.discard(number)
            state = self._ports[number]
            if state.queue.spec.is_passthrough:
                state.shaped = False

    def _next_due(self) -> float:
        dues = (self._ports[n].queue.next_due() for n in self._active)
        return min(due for due in dues if due is not None)

    def _apply_pending(self) -> None:
        """Apply shaping changes asked for by other threads (caller holds `_lock`)."""
        for port, spec in self._pending.items():
            self._apply_shape(port, spec)
        self._pending.clear()

    def _apply_shape(self, port: int, spec: ShapeSpec) -> None:
        state = self._ports[port]
        state.queue.set_spec(spec)
        state.shaped = not spec.is_passthrough or len(state.queue) > 0

    # -- shutdown ----------------------------------------------------------------------------

    def close(self) -> None:
        """Close the ports opened here, the capture files and the wake-up pipe."""
        if self._closed:
            return
        self._closed = True
        self._port_set.close()
        self._readiness.close()

    def __enter__(self) -> Switch:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()
