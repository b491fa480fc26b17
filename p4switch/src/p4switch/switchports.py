"""The switch's ports as its I/O loop sees them: socket, egress queue, captures and counters.

`SwitchPorts` opens the ports given by interface name or as a `UdpTunnel` (and only those are
closed again), gives each port its `EgressQueue` with a loss generator seeded per port, and with
a capture directory opens `<port>-in.pcap` / `<port>-out.pcap` for each. The loop in
`p4switch.dataplane` looks a port up once per frame, by number or by socket descriptor, and
finds everything in one object.
"""

from __future__ import annotations

import logging
import random
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from p4switch.pcap import PcapWriter, capture_path
from p4switch.ports import Port, UdpTunnel, open_port, open_tunnel
from p4switch.shaping import EgressQueue, ShapeSpec

DROP_REASONS = (
    "pipeline_drop",  # the processor emitted nothing: the P4 program dropped the frame
    "pipeline_error",  # the processor raised or returned something that is not frames
    "no_such_port",  # the processor chose an egress port the switch does not have
    "loss",  # random loss of a shaped port
    "queue_full",  # a shaped port's serialisation queue was full (drop tail)
    "tx_error",  # the kernel refused to send the frame
    "rx_overrun",  # the kernel dropped it: the switch did not read the port fast enough
    "no_cpu_listener",  # a frame for the CPU port while nobody listens
    "cpu_listener_error",  # the CPU listener raised
)


class PortCounters:
    """Traffic counters of one port (hot path: plain attributes)."""

    __slots__ = ("drops", "rx_bytes", "rx_packets", "tx_bytes", "tx_packets")

    def __init__(self) -> None:
        self.rx_packets = 0
        self.rx_bytes = 0
        self.tx_packets = 0
        self.tx_bytes = 0
        self.drops = dict.fromkeys(DROP_REASONS, 0)

    def snapshot(self) -> dict[str, Any]:
        return {
            "rx_packets": self.rx_packets,
            "rx_bytes": self.rx_bytes,
            "tx_packets": self.tx_packets,
            "tx_bytes": self.tx_bytes,
            "drops": dict(self.drops),
        }


class SwitchPort:
    """Everything the loop needs about one port, looked up once per frame."""

    __slots__ = (
        "auxdata",
        "counters",
        "kind",
        "name",
        "number",
        "pcap_in",
        "pcap_out",
        "queue",
        "rx_drops_seen",
        "rx_lag_max_s",
        "shaped",
        "sock",
    )

    def __init__(self, number: int, port: Port, queue: EgressQueue) -> None:
        self.number = number
        self.name = port.name
        self.sock = port.sock
        self.auxdata = port.auxdata  # True: receive with recvmsg and restore VLAN tags
        self.kind = port.kind
        self.queue = queue
        self.shaped = not queue.spec.is_passthrough  # False: send at once, skip the queue
        self.counters = PortCounters()
        self.pcap_in: PcapWriter | None = None
        self.pcap_out: PcapWriter | None = None
        self.rx_lag_max_s = 0.0  # the longest a frame waited in the kernel before being read
        self.rx_drops_seen = 0  # a tunnel port: the kernel's drop count the loop has counted

    def stats(self, now: float, shape: ShapeSpec, reset_peaks: bool) -> dict[str, Any]:
        """Counters, queue depth, lateness and receive lag (both peaks restarted with
        `reset_peaks`), and `shape`."""
        entry = self.counters.snapshot()
        entry["interface"] = self.name
        entry["queue_depth"] = self.queue.backlog(now)
        entry["queue_held"] = len(self.queue)
        entry["lateness_max_s"] = self.queue.lateness_max_s
        entry["rx_lag_max_s"] = self.rx_lag_max_s
        if reset_peaks:
            self.queue.lateness_max_s = 0.0
            self.rx_lag_max_s = 0.0
        entry["shape"] = shape.as_dict()
        return entry


class SwitchPorts:
    """The ports of one switch, by number and by socket descriptor.

    `ports` maps port numbers to interface names or `UdpTunnel`s (opened here, closed by `close`)
    or to `Port`s opened by the caller (left open). If opening anything fails, what was opened is
    closed again before the error is raised.
    """

    def __init__(
        self,
        ports: Mapping[int, str | UdpTunnel | Port],
        shaping: Mapping[int, ShapeSpec],
        seed: int,
        pcap_dir: Path | None,
    ) -> None:
        self._owned: list[Port] = []
        self.by_number: dict[int, SwitchPort] = {}
        self.by_fd: dict[int, SwitchPort] = {}
        try:
            for number, port in sorted(ports.items()):
                if isinstance(port, str):
                    port = open_port(port)
                    self._owned.append(port)
                elif isinstance(port, UdpTunnel):
                    port = open_tunnel(port)
                    self._owned.append(port)
                spec = shaping.get(number, ShapeSpec())
                queue = EgressQueue(spec, random.Random(f"{seed}:{number}"))
                state = SwitchPort(number, port, queue)
                self.by_number[number] = state
                self.by_fd[port.sock.fileno()] = state
            if pcap_dir is not None:
                pcap_dir.mkdir(parents=True, exist_ok=True)
                for number, state in self.by_number.items():
                    state.pcap_in = PcapWriter(capture_path(pcap_dir, number, "in"))
                    state.pcap_out = PcapWriter(capture_path(pcap_dir, number, "out"))
        except BaseException:
            self.close()
            raise

    def flush_captures(self) -> None:
        for state in self.by_number.values():
            for writer in (state.pcap_in, state.pcap_out):
                if writer is not None:
                    writer.flush()

    def close(self) -> None:
        """Close the capture files and the ports opened here."""
        for state in self.by_number.values():
            for writer in (state.pcap_in, state.pcap_out):
                if writer is not None:
                    writer.close()
        for port in self._owned:
            port.close()
        self._owned.clear()


LOG_INTERVAL_S = 10.0  # the same kind of error on the same port is logged at most this often


class ThrottledWarnings:
    """Warnings of an I/O loop: the same kind on the same port at most every LOG_INTERVAL_S
    (the loop counts every one; the log says so)."""

    def __init__(self, logger: logging.Logger) -> None:
        self._log = logger
        self._next: dict[tuple[int, str], float] = {}

    def __call__(
        self, port: int, kind: str, message: str, *args: Any, exc_info: bool = False
    ) -> None:
        now = time.monotonic()
        key = (port, kind)
        if now < self._next.get(key, 0.0):
            return
        self._next[key] = now + LOG_INTERVAL_S
        self._log.warning(
            message + " (further ones counted, logged at most every %.0f s)",
            *args,
            LOG_INTERVAL_S,
            exc_info=exc_info,
        )
