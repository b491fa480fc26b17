"""Idle-timeout notifications: the entries of tables with support_timeout that have been idle
for their idle_timeout_ns, sent to the primary client as IdleTimeoutNotification messages.

`IdleNotifier` sweeps one pipeline's state (runtime.ageing says which entries a sweep reports:
as BMv2, an entry that stays idle every second sweep) and sends one notification per sweep that
finds some, with every such entry's key (match and priority), controller_metadata, metadata and
idle_timeout_ns, as PI does. A thread sweeps every `interval` seconds (BMv2's ageing monitor:
every second); whether an entry is idle is decided on the state's clock, which the data plane
stamps hits with, so a test moves that clock and calls `sweep` itself. Entries are not
deleted: that is the controller's to do.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence

from p4.v1 import p4runtime_pb2

from p4switch.p4rt.arbitration import Arbiter
from p4switch.p4rt.codec import InstalledPipeline, encode_match
from p4switch.runtime import AgeingMonitor, IdleEntries

log = logging.getLogger(__name__)

SWEEP_INTERVAL_S = 1.0  # BMv2's ageing monitor sweeps every 1000 ms


def idle_notification(
    pipeline: InstalledPipeline, found: Sequence[IdleEntries], timestamp_ns: int
) -> p4runtime_pb2.StreamMessageResponse:
    """The IdleTimeoutNotification telling `found` (tables the P4Info leaves out are left out)."""
    by_name = {info.name: info for info in pipeline.schema.tables.values()}
    msg = p4runtime_pb2.IdleTimeoutNotification(timestamp=timestamp_ns)
    for idle in found:
        info = by_name.get(idle.table)
        if info is None:
            continue
        for e in idle.entries:
            entry = msg.table_entry.add(
                table_id=info.id,
                priority=e.priority,
                controller_metadata=e.controller_metadata,
                metadata=e.metadata,
                idle_timeout_ns=e.idle_timeout_ns,
            )
            entry.match.extend(encode_match(info, e.match))
    return p4runtime_pb2.StreamMessageResponse(idle_timeout_notification=msg)


class IdleNotifier:
    """Sweeps one pipeline's ageing tables and sends what it finds through `send` (False: not
    sent; the notification is dropped and counted in `dropped`)."""

    def __init__(
        self,
        pipeline: InstalledPipeline,
        send: Callable[[p4runtime_pb2.StreamMessageResponse], bool],
        interval: float | None = SWEEP_INTERVAL_S,
        wall_clock: Callable[[], int] = time.time_ns,
    ) -> None:
        """`interval`: seconds between the thread's sweeps (None: no thread, `sweep` is called
        by hand); `wall_clock` (nanoseconds since the epoch) stamps the notifications."""
        self._pipeline = pipeline
        self._monitor = AgeingMonitor(pipeline.state)
        self._send = send
        self._interval = interval
        self._wall_clock = wall_clock
        self._lock = threading.Lock()  # one sweep at a time
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="p4rt-idle", daemon=True)
        self.dropped = 0

    def start(self) -> None:
        if self._interval is not None and self._monitor.tables:
            self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=5.0)

    def sweep(self) -> int:
        """Sweep now and send what is found; the number of entries reported."""
        with self._lock:
            found = self._monitor.sweep()
            if not found:
                return 0
            msg = idle_notification(self._pipeline, found, self._wall_clock())
            if not self._send(msg):
                self.dropped += 1
            return len(msg.idle_timeout_notification.table_entry)

    def _run(self) -> None:
        assert self._interval is not None
        while not self._stop.wait(self._interval):
            try:
                self.sweep()
            except Exception:  # a bug must not end idle timeouts for good: log it and go on
                log.exception("sweeping for idle entries failed")


class IdleChannel:
    """The P4Runtime server's idle timeouts: an `IdleNotifier` for the running pipeline,
    sending to the primary client."""

    def __init__(self, arbiter: Arbiter, interval: float | None = SWEEP_INTERVAL_S) -> None:
        self._arbiter = arbiter
        self._interval = interval
        self._notifier: IdleNotifier | None = None
        self._lock = threading.Lock()

    def run(self, pipeline: InstalledPipeline | None) -> None:
        """Sweep `pipeline`'s tables from now on (None: nobody's)."""
        with self._lock:
            if self._notifier is not None:
                self._notifier.stop()
            self._notifier = None
            if pipeline is not None:
                self._notifier = IdleNotifier(pipeline, self._to_primary, self._interval)
                self._notifier.start()

    def stop(self) -> None:
        self.run(None)

    def sweep(self) -> int:
        """Sweep the running pipeline now; the number of entries reported."""
        notifier = self._notifier
        return notifier.sweep() if notifier is not None else 0

    def _to_primary(self, msg: p4runtime_pb2.StreamMessageResponse) -> bool:
        primary = self._arbiter.primary()
        return primary is not None and primary.send_packet_in(msg)
