"""`NativeSwitch`: `p4switch.dataplane.Switch` with its I/O loop and egress shaping in C.

The loop (loop.c) waits on the port sockets and a wake-up pipe with ppoll, takes up to 64
frames per ready port from its receive ring (ring.c) or with one recvmmsg (VLAN tags put back
from the ring's slot header or PACKET_AUXDATA, kernel receive times from the slot or
SO_TIMESTAMPNS for the receive lag), runs each through the processor, batches what
leaves unshaped ports into one sendmmsg per port, and serves shaped ports from C egress queues
with the semantics of `p4switch.shaping`. It runs with the GIL released and no Python per frame
when the processor has a `native_entry` (the compiled pipeline's C entry point); any other
processor is called through a ctypes callback that takes the GIL, frame by frame. Frames for the
CPU port reach `on_cpu_packet` the same way, on the loop's thread.
"""

from __future__ import annotations

import copy
import ctypes
import logging
import os
import threading
from collections.abc import Callable, Mapping
from pathlib import Path
from types import TracebackType
from typing import Any

from p4switch.dataplane import MAX_WAIT_S, PacketProcessor
from p4switch.exceptions import UnknownPortError
from p4switch.nativeio.clib import (
    CPU_DELIVERED,
    CPU_FN,
    CPU_LISTENER_FAILED,
    CPU_NO_LISTENER,
    DATA_OFFSET,
    FRAME_MAX,
    MAX_OUT,
    PROCESS_FN,
    NioCounters,
    NioOut,
    NioPortStats,
    NioSpec,
    library,
)
from p4switch.nativeio.errors import NativeIOError, NativeSwitchArgumentError
from p4switch.pcap import capture_path
from p4switch.ports import Port, take_kernel_drops
from p4switch.readiness import WakePipe
from p4switch.shaping import ShapeSpec
from p4switch.switchports import SwitchPorts, ThrottledWarnings

log = logging.getLogger(__name__)

Entry = tuple[int, int]  # (address of a p4s_process_fn, its context)


def native_entry_of(processor: object) -> Entry | None:
    """The processor's C entry point, None if it has none; an error if it has a bad one."""
    entry = getattr(processor, "native_entry", None)
    if entry is None:
        return None
    if (
        not isinstance(entry, tuple)
        or len(entry) != 2
        or not all(isinstance(a, int) and not isinstance(a, bool) for a in entry)
        or not entry[0]
    ):
        raise NativeIOError(
            f"{type(processor).__name__}.native_entry is {entry!r}: it must be a pair of "
            "addresses (p4s_process function, its context), the function's not 0"
        )
    return entry


class NativeSwitch:
    """A software switch like `p4switch.dataplane.Switch`, forwarding in C (module docstring).

    The constructor, methods and `stats` are those of `Switch` (captures included: the C loop
    writes the files `p4switch.pcap` reads, flushed when `run` returns). The loss and jitter
    draws are seeded from `seed` and the port number, but come from a C generator: not the
    sequence `Switch` draws. The C loop reads CLOCK_MONOTONIC and CLOCK_REALTIME itself: there
    is no `clock` or `wall_clock` to give, and no `poll` or `wait_timeout`.
    With `rx_ring` (the default), a port opened by `p4switch.ports.open_port` is read from a
    receive ring shared with the kernel (PACKET_MMAP) instead of with recvmmsg; it is taken off
    the socket again by `close`.
    """

    def __init__(
        self,
        ports: Mapping[int, str | Port],
        processor: PacketProcessor,
        *,
        shaping: Mapping[int, ShapeSpec] | None = None,
        pcap_dir: Path | None = None,
        cpu_port: int | None = None,
        seed: int = 0,
        on_cpu_packet: Callable[[bytes], None] | None = None,
        rx_ring: bool = True,
    ) -> None:
        for number in ports:
            if isinstance(number, bool) or not isinstance(number, int) or not 0 <= number < 2**32:
                raise NativeSwitchArgumentError(
                    f"port numbers must be integers in [0, 2**32), got {number!r}"
                )
        if cpu_port is not None and cpu_port in ports:
            raise NativeSwitchArgumentError(
                f"CPU port {cpu_port} is also a front-panel port; choose another"
            )
        if cpu_port is not None and not 0 <= cpu_port < 2**32:
            raise NativeSwitchArgumentError(f"the CPU port must be in [0, 2**32), got {cpu_port}")
        unknown = sorted(set(shaping or {}) - set(ports))
        if unknown:
            raise UnknownPortError(f"shaping given for port(s) {unknown}, not in {sorted(ports)}")
        entry = native_entry_of(processor)
        self._lib = library()
        self._cpu_port = cpu_port
        self.on_cpu_packet = on_cpu_packet
        self._warn = ThrottledWarnings(log)
        self._port_set = SwitchPorts(ports, {}, seed, None)
        self._ports = self._port_set.by_number
        self._index = {number: i for i, number in enumerate(self._ports)}
        self._specs = {number: ShapeSpec() for number in self._ports}
        self._overruns = dict.fromkeys(self._ports, 0)
        self._lock = threading.Lock()  # guards _overruns and _running
        self._running = False
        self._closed = False
        self._final: dict[str, Any] = {}  # stats() once closed
        try:
            self._wake = WakePipe()
        except BaseException:
            self._port_set.close()
            raise
        self._handle = self._create(seed, rx_ring)
        if pcap_dir is not None:
            try:
                self._capture(pcap_dir)
            except BaseException:
                self._lib.nio_destroy(self._handle)
                self._close_files()
                raise
        self._cpu_callback = CPU_FN(self._on_cpu)
        self._lib.nio_set_cpu_listener(self._handle, self._cpu_callback)
        self._processor: object = processor
        self._binding: object = None  # what keeps the processor's entry point alive
        # bindings replaced, each with the loop's epoch when it was: the loop may still be in
        # one until its epoch has moved past that
        self._retired: list[tuple[int, object]] = []
        self._bind(processor, entry)
        for number, spec in (shaping or {}).items():
            self._set_shape(number, spec)

    def _create(self, seed: int, rx_ring: bool) -> int:
        states = list(self._ports.values())
        count = len(states)
        handle = self._lib.nio_create(
            count,
            (ctypes.c_int * count)(*(s.sock.fileno() for s in states)),
            (ctypes.c_uint32 * count)(*(s.number for s in states)),
            (ctypes.c_int * count)(*(int(s.auxdata) for s in states)),
            (ctypes.c_uint64 * count)(*(seed % 2**64 for _ in states)),
            int(self._cpu_port is not None),
            self._cpu_port or 0,
            self._wake.read_fd,
            int(rx_ring),
        )
        if not handle:
            self._close_files()
            raise NativeIOError("no memory for the native I/O loop's buffers")
        return int(handle)

    def _capture(self, directory: Path) -> None:
        """Capture every port's frames in `<port>-in.pcap` / `<port>-out.pcap` in `directory`."""
        directory.mkdir(parents=True, exist_ok=True)
        for number, index in self._index.items():
            paths = [capture_path(directory, number, way) for way in ("in", "out")]
            failure = self._lib.nio_set_capture(self._handle, index, *map(os.fsencode, paths))
            if failure:
                raise NativeIOError(
                    f"cannot write the captures of port {number} ({paths[0]}, {paths[1]}): "
                    f"{os.strerror(failure)}"
                )

    # -- public interface, safe from any thread ---------------------------------------------

    @property
    def ports(self) -> dict[int, str]:
        """Port number -> interface name."""
        return {number: state.name for number, state in self._ports.items()}

    @property
    def cpu_port(self) -> int | None:
        return self._cpu_port

    def set_processor(self, processor: PacketProcessor) -> None:
        """Use `processor` from the next frame on (e.g. after a new pipeline config)."""
        self._bind(processor, native_entry_of(processor))

    def shape(self, port: int, spec: ShapeSpec) -> None:
        """Shape egress `port` with `spec` from now on (frames already held keep their times)."""
        if port not in self._ports:
            raise UnknownPortError(
                f"port {port} is not a switch port (ports: {sorted(self._ports)})"
            )
        self._set_shape(port, spec)
        self.wake()
        log.info("port %d shaped: %s", port, spec.describe())

    def inject(self, ingress_port: int, data: bytes) -> None:
        """Run `data` through the processor as if received on `ingress_port` (packet-out)."""
        if ingress_port not in self._ports and ingress_port != self._cpu_port:
            raise UnknownPortError(
                f"cannot inject on port {ingress_port}: not a switch port or the CPU port "
                f"(ports: {sorted(self._ports)}, CPU port: {self._cpu_port})"
            )
        frame = bytes(data)
        if self._lib.nio_inject(self._live(), ingress_port, frame, len(frame)) != 0:
            raise NativeIOError(f"no memory to queue a {len(frame)}-byte packet-out")
        self.wake()

    def wake(self) -> None:
        """Make `run` look at its inputs now (e.g. right after setting its stop event)."""
        self._wake.wake()

    def stats(self, reset_peaks: bool = False) -> dict[str, Any]:
        """Counters per port and for the CPU port, shaping, queue depth and lateness (the
        dictionary `Switch.stats` returns); `reset_peaks` restarts both peaks after reading.
        After `close`, the figures the switch had when it was closed."""
        if self._closed:
            final = copy.deepcopy(self._final)
            if reset_peaks:
                for port in self._final["ports"].values():
                    port["lateness_max_s"] = port["rx_lag_max_s"] = 0.0
            return final
        handle = self._handle
        ports: dict[int, dict[str, Any]] = {}
        with self._lock:
            for number, state in self._ports.items():
                self._overruns[number] += take_kernel_drops(state.sock)
            overruns = dict(self._overruns)
        entry = NioPortStats()
        for number, state in self._ports.items():
            self._lib.nio_port_stats_of(handle, self._index[number], reset_peaks, entry)
            port = entry.counters.snapshot()
            port["drops"]["rx_overrun"] += overruns[number]
            port["interface"] = state.name
            port["queue_depth"] = entry.queue_depth
            port["queue_held"] = entry.queue_held
            port["lateness_max_s"] = entry.lateness_max_s
            port["rx_lag_max_s"] = entry.rx_lag_max_s
            port["shape"] = self._specs[number].as_dict()
            ports[number] = port
        cpu = None
        if self._cpu_port is not None:
            counters = NioCounters()
            self._lib.nio_cpu_stats(handle, counters)
            cpu = {"port": self._cpu_port, **counters.snapshot()}
        return {"ports": ports, "cpu": cpu}

    # -- the I/O loop ------------------------------------------------------------------------

    def run(self, stop: threading.Event) -> None:
        """Forward until `stop` is set; call `wake` after setting it to return at once."""
        handle = self._live()
        with self._lock:
            if self._running:
                raise NativeIOError("this switch is running already, on another thread")
            self._running = True
        for number, state in self._ports.items():
            shaping = self._specs[number]
            log.info(
                "port %d = %s%s (native I/O)",
                number,
                state.name,
                "" if shaping.is_passthrough else f" (egress {shaping.describe()})",
            )
        try:
            while not stop.is_set():
                failure = self._lib.nio_run(handle, MAX_WAIT_S)
                if failure:
                    raise NativeIOError(
                        f"the native I/O loop stopped: {os.strerror(failure)} "
                        "(a port's socket was closed while the switch ran?)"
                    )
        finally:
            self._lib.nio_flush_captures(handle)
            with self._lock:
                self._running = False
            log.info("switch stopped")

    def _live(self) -> int:
        if self._closed:
            raise NativeIOError("the switch is closed; create a new one")
        return self._handle

    def _set_shape(self, port: int, spec: ShapeSpec) -> None:
        self._lib.nio_set_shape(self._live(), self._index[port], ctypes.byref(NioSpec.of(spec)))
        self._specs[port] = spec

    def _bind(self, processor: object, entry: Entry | None) -> None:
        """Point the loop at `processor`: its C entry, or a callback into its `process`."""
        binding: object
        if entry is not None:
            function, context = entry
            binding = processor  # holds the pipeline whose function and context these are
        else:
            binding = PROCESS_FN(self._python_process(processor))
            function, context = ctypes.cast(binding, ctypes.c_void_p).value or 0, 0
        handle = self._live()
        if self._lib.nio_set_processor(handle, function, context) != 0:
            raise NativeIOError("no memory to switch the native I/O loop's processor")
        epoch = self._lib.nio_epoch(handle)
        self._retired = [(at, old) for at, old in self._retired if at >= epoch]
        if self._binding is not None:
            self._retired.append((epoch, self._binding))
        self._binding, self._processor = binding, processor

    def _python_process(self, processor: Any) -> Callable[[int, int, int, int, int], int]:
        """A p4s_process_fn calling `processor.process` (the GIL is taken for the call)."""
        warn = self._warn

        def process(context: int, ingress_port: int, data: int, length: int, out: int) -> int:
            try:
                emitted = processor.process(ingress_port, ctypes.string_at(data, length))
                if not emitted:
                    return 0
                if len(emitted) > MAX_OUT:
                    warn(
                        ingress_port,
                        "pipeline_error",
                        "%d frames from one input (most: %d)",
                        len(emitted),
                        MAX_OUT,
                    )
                    return -1
                frames = NioOut.from_address(out)
                for i, (egress_port, frame) in enumerate(emitted):
                    if len(frame) > FRAME_MAX:
                        warn(
                            ingress_port,
                            "pipeline_error",
                            "a %d-byte frame (most: %d)",
                            len(frame),
                            FRAME_MAX,
                        )
                        return -1
                    frames.port[i] = egress_port
                    frames.len[i] = len(frame)
                    ctypes.memmove(out + DATA_OFFSET + i * FRAME_MAX, frame, len(frame))
                frames.n = len(emitted)
                return 0
            except Exception:
                warn(
                    ingress_port,
                    "pipeline_error",
                    "the processor failed on a %d-byte frame from port %d; frame dropped",
                    length,
                    ingress_port,
                    exc_info=True,
                )
                return -1

        return process

    def _on_cpu(self, data: int, length: int) -> int:
        listener = self.on_cpu_packet
        if listener is None:
            return CPU_NO_LISTENER
        try:
            listener(ctypes.string_at(data, length))
        except Exception:
            self._warn(self._cpu_port or 0, "cpu", "the CPU-port listener failed", exc_info=True)
            return CPU_LISTENER_FAILED
        return CPU_DELIVERED

    # -- shutdown ----------------------------------------------------------------------------

    def close(self) -> None:
        """Free the loop, close the ports opened here and the wake-up pipe (after `run`)."""
        if self._closed:
            return
        final = self.stats()
        with self._lock:
            if self._running:
                raise NativeIOError("stop the switch (set run's stop event, wake) before close")
            self._final, self._closed = final, True
        self._lib.nio_destroy(self._handle)
        self._close_files()

    def _close_files(self) -> None:
        self._port_set.close()
        self._wake.close()

    def __enter__(self) -> NativeSwitch:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()
