"""Digests (v1model `digest<T>`): the data the ingress control learned, batched into lists for
the controller as P4Runtime's DigestEntry configures them.

A digest the control plane has not configured is counted and dropped: nothing is queued for a
controller that did not ask (PI's P4Runtime server on BMv2 does the same). A configured digest
queues each new value; a list is ready when the oldest queued value has waited
`max_timeout_ns`, or when `max_list_size` values are queued (0: no size limit). A list holds
at most `max_list_size` values. Until a list is acknowledged (`ack`), or `ack_timeout_ns` has
passed since it was taken, a value equal to one of its values, or to one still queued, is not
queued again: the controller hears of each value once. With `ack_timeout_ns` 0 nothing waits
for an acknowledgement: a value may be reported again as soon as its list is taken.

`take_ready` hands out the lists that are ready; the P4Runtime server's digest thread calls it
and sleeps in `wait` until the next list can be ready. Everything runs on `clock` (nanoseconds;
a test may give its own) under the engine's own lock, so the packet path (`learn`) never waits
for the control plane's lock.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from p4switch.exceptions import InvalidArgument, NotFound

Values = tuple[int, ...]  # a digest's fields, in declaration order (bool as 0 or 1)


@dataclass(frozen=True)
class DigestSpec:
    name: str  # the struct type's name, as P4Info names the digest
    # (dotted field name, width in bits; 0 for an error or a plain enum), in order
    fields: tuple[tuple[str, int], ...]


@dataclass(frozen=True)
class DigestConfig:
    max_timeout_ns: int = 0  # a queued value waits at most this long
    max_list_size: int = 1  # values per list (0: no limit but the timeout)
    ack_timeout_ns: int = 0  # a list's values are not reported again for this long unless acked

    def check(self, what: str) -> None:
        if min(self.max_timeout_ns, self.max_list_size, self.ack_timeout_ns) < 0:
            raise InvalidArgument(f"{what}: digest timeouts and list size cannot be negative")


@dataclass(frozen=True)
class DigestList:
    digest: str
    list_id: int  # 1, 2, ... per digest; what the controller acknowledges
    values: tuple[Values, ...]


@dataclass
class DigestCounts:
    learned: int = 0  # digests the ingress control produced
    unconfigured: int = 0  # dropped: the control plane has not configured this digest
    suppressed: int = 0  # dropped: the same value is queued or waits for an acknowledgement
    lists: int = 0  # lists taken
    acked: int = 0  # lists acknowledged
    expired: int = 0  # lists whose acknowledgement did not come in ack_timeout_ns


@dataclass
class _Queue:
    config: DigestConfig
    queued: list[tuple[int, Values]] = field(default_factory=list)  # (time queued, value)
    unacked: dict[int, tuple[int, tuple[Values, ...]]] = field(default_factory=dict)
    held: set[Values] = field(default_factory=set)  # queued or unacknowledged values

    def ready(self, now: int) -> bool:
        c = self.config
        if not self.queued:
            return False
        full = c.max_list_size > 0 and len(self.queued) >= c.max_list_size
        return full or now - self.queued[0][0] >= c.max_timeout_ns

    def release(self, values: Iterable[Values]) -> None:
        self.held.difference_update(values)


class DigestEngine:
    def __init__(
        self, specs: Iterable[DigestSpec], clock: Callable[[], int] = time.monotonic_ns
    ) -> None:
        self.specs = {d.name: d for d in specs}
        self.clock = clock
        self.counts = {name: DigestCounts() for name in self.specs}
        self._queues: dict[str, _Queue] = {}
        self._next_list: dict[str, int] = {name: 1 for name in self.specs}
        self._lock = threading.Lock()
        self._changed = threading.Condition(self._lock)

    # --- the packet path --------------------------------------------------------------------

    def learn(self, name: str, values: Values) -> None:
        """A digest from the ingress control (the packet path; never blocks for long)."""
        with self._lock:
            counts = self.counts[name]
            counts.learned += 1
            q = self._queues.get(name)
            if q is None:
                counts.unconfigured += 1
                return
            if values in q.held:
                counts.suppressed += 1
                return
            q.held.add(values)
            q.queued.append((self.clock(), values))
            self._changed.notify_all()

    # --- the control plane --------------------------------------------------------------------

    def spec(self, name: str) -> DigestSpec:
        try:
            return self.specs[name]
        except KeyError:
            raise NotFound(f"no digest {name!r}") from None

    def config(self, name: str) -> DigestConfig | None:
        self.spec(name)
        with self._lock:
            q = self._queues.get(name)
            return q.config if q is not None else None

    def configure(self, name: str, config: DigestConfig | None) -> None:
        """Set how `name`'s lists are made (None: stop, dropping what is queued or unacked).
        A new configuration applies to what is already queued."""
        self.spec(name)
        if config is not None:
            config.check(name)
        with self._lock:
            q = self._queues.get(name)
            if config is None:
                self._queues.pop(name, None)
            elif q is None:
                self._queues[name] = _Queue(config)
            else:
                q.config = config
            self._changed.notify_all()

    def take_ready(self) -> list[DigestList]:
        """The lists ready now, oldest values first; expired acknowledgements are let go."""
        now = self.clock()
        out: list[DigestList] = []
        with self._lock:
            for name, q in self._queues.items():
                self._expire(name, q, now)
                while q.ready(now):
                    size = q.config.max_list_size or len(q.queued)
                    values = tuple(v for _, v in q.queued[:size])
                    del q.queued[:size]
                    list_id = self._next_list[name]
                    self._next_list[name] = list_id + 1
                    if q.config.ack_timeout_ns > 0:
                        q.unacked[list_id] = (now, values)
                    else:
                        q.release(values)
                    self.counts[name].lists += 1
                    out.append(DigestList(name, list_id, values))
        return out

    def ack(self, name: str, list_id: int) -> None:
        """The controller has the list: its values may be reported again. A list that was
        acknowledged already, or whose acknowledgement timed out, is ignored."""
        self.spec(name)
        with self._lock:
            if not 0 < list_id < self._next_list[name]:
                raise InvalidArgument(f"digest {name}: no list {list_id} was sent")
            q = self._queues.get(name)
            sent = q.unacked.pop(list_id, None) if q is not None else None
            if q is not None and sent is not None:
                q.release(sent[1])
                self.counts[name].acked += 1

    def wait(self, timeout_s: float) -> None:
        """Sleep until a list may be ready, or `timeout_s` seconds at most."""
        with self._lock:
            now = self.clock()
            due = [
                q.queued[0][0] + q.config.max_timeout_ns for q in self._queues.values() if q.queued
            ]
            due += [
                sent + q.config.ack_timeout_ns
                for q in self._queues.values()
                for sent, _ in q.unacked.values()
            ]
            if any(q.ready(now) for q in self._queues.values()):
                return
            if due:
                timeout_s = min(timeout_s, max(0.0, (min(due) - now) / 1e9))
            self._changed.wait(timeout_s)

    def wake(self) -> None:
        """End a `wait` now (the digest thread is stopping)."""
        with self._lock:
            self._changed.notify_all()

    def _expire(self, name: str, q: _Queue, now: int) -> None:
        late = [i for i, (sent, _) in q.unacked.items() if now - sent >= q.config.ack_timeout_ns]
        for list_id in late:
            q.release(q.unacked.pop(list_id)[1])
            self.counts[name].expired += 1
