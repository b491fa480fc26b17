"""An in-memory host network for the host-side collectives: per-island inboxes, no sockets.

`HostNet` delivers what the members send, on a `FakeClock`:

- `peer(i)` is island i's `UnicastTransport`: `send_to(j, ...)` lands in j's inbox;
- `edge(i)` is island i's `Transport` to its edge as `MulticastExchange` uses it: the edge (with
  merging off) copies a CONTRIBUTION, NACK or RECOVER flagged WAN, unchanged, to the inbox of
  every other member island, and drops anything else (counted in `edge_dropped`).

Faults strike each delivery (one sender, one receiver), drawn from one seeded generator: loss
(a probability, or a predicate on (from, to, packet) such as "the last chunk" or "the first
NACK"), duplication, and reordering (a packet overtakes up to `window` packets queued before it
for the same time). `delay(a, b)` delays deliveries from a to b, in fake-clock seconds.
Every send is logged with its time (`log`), for pacing and link-load checks.

`run_members` steps every member in turn and advances the clock a tick per round of steps, as
`tests.unit.workers.network.run_round_robin` does, and records when each member finished.
"""

from __future__ import annotations

import heapq
import random
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from innet.packetformat import PacketFormat
from tests.unit.workers.network import FakeClock
from workers.exchange import DirectExchange, HostCollective, MulticastExchange
from workers.group import GroupSpec, SendPolicy
from workers.packets import Flag, InnetPacket, PacketType
from workers.ring import RingAllReduce

JOB, ROUND, GROUP = 7, 2, 1
REPLICATED = (PacketType.CONTRIBUTION, PacketType.NACK, PacketType.RECOVER)
PACKET_FORMAT = PacketFormat()  # what the members send and read, unless a test gives another


@dataclass
class HostFaults:
    """What the network does wrong to each delivery."""

    seed: int = 0
    loss: float = 0.0
    drop: Callable[[int, int, InnetPacket], bool] | None = None  # (from, to, packet): lose it
    duplicate: float = 0.0
    reorder: float = 0.0
    window: int = 4  # a reordered packet overtakes up to this many


@dataclass(frozen=True)
class Sent:
    at: float
    src: int
    dst: int | None  # None: to the edge (multicast)
    packet: InnetPacket


@dataclass
class HostNet:
    members: tuple[int, ...]
    clock: FakeClock
    faults: HostFaults = field(default_factory=HostFaults)
    delay: Callable[[int, int], float] | None = None
    packet_format: PacketFormat = PACKET_FORMAT  # the members' (see `build`): what is decoded
    log: list[Sent] = field(default_factory=list)
    lost: int = 0
    duplicated: int = 0
    reordered: int = 0
    delivered: int = 0
    edge_dropped: int = 0

    def __post_init__(self) -> None:
        self._rng = random.Random(self.faults.seed)
        self._inbox: dict[int, list[tuple[float, float, bytes]]] = {m: [] for m in self.members}
        self._order = 0.0

    def peer(self, island: int) -> PeerPort:
        return PeerPort(self, island)

    def edge(self, island: int) -> EdgePort:
        return EdgePort(self, island)

    def _chance(self, p: float) -> bool:
        return p > 0 and self._rng.random() < p

    def deliver(self, src: int, dst: int, payload: bytes) -> None:
        """One copy from src's leader to dst's, through the faults."""
        f = self.faults
        packet = InnetPacket.decode(payload, self.packet_format)
        if (f.drop is not None and f.drop(src, dst, packet)) or self._chance(f.loss):
            self.lost += 1
            return
        copies = 2 if self._chance(f.duplicate) else 1
        self.duplicated += copies - 1
        at = self.clock.now + (self.delay(src, dst) if self.delay else 0.0)
        for _ in range(copies):
            self._order += 1
            order = self._order
            if self._chance(f.reorder):
                self.reordered += 1
                order -= self._rng.randint(1, f.window) + 0.5
            heapq.heappush(self._inbox[dst], (at, order, payload))

    def inject(self, island: int, payload: bytes) -> None:
        """Bytes for island's leader, now, without faults (foreign or malformed packets)."""
        self._order += 1
        heapq.heappush(self._inbox[island], (self.clock.now, self._order, payload))

    def take(self, island: int) -> bytes | None:
        inbox = self._inbox[island]
        if not inbox or inbox[0][0] > self.clock.now:
            return None
        self.delivered += 1
        return heapq.heappop(inbox)[2]

    def sent_by(self, island: int) -> list[Sent]:
        return [s for s in self.log if s.src == island]


@dataclass
class PeerPort:
    """One leader's unicast port (the `UnicastTransport` protocol)."""

    net: HostNet
    island: int

    def send_to(self, island: int, payload: bytes) -> None:
        packet = InnetPacket.decode(payload, self.net.packet_format)
        self.net.log.append(Sent(self.net.clock.now, self.island, island, packet))
        if island in self.net.members:
            self.net.deliver(self.island, island, payload)

    def recv(self, timeout: float) -> bytes | None:
        return self.net.take(self.island)

    def close(self) -> None:
        pass


@dataclass
class EdgePort:
    """One leader's port to its edge, which replicates without merging (the `Transport`)."""

    net: HostNet
    island: int

    def send(self, frame_payload: bytes) -> None:
        packet = InnetPacket.decode(frame_payload, self.net.packet_format)
        self.net.log.append(Sent(self.net.clock.now, self.island, None, packet))
        if packet.type not in REPLICATED or not packet.flags & Flag.WAN:
            self.net.edge_dropped += 1
            return
        for other in self.net.members:
            if other != self.island:
                self.net.deliver(self.island, other, frame_payload)

    def recv(self, timeout: float) -> bytes | None:
        return self.net.take(self.island)

    def close(self) -> None:
        pass


class TickingClock(FakeClock):
    """A fake clock that moves `tick_s` every time it is read (for blocking loops)."""

    def __init__(self, tick_s: float, start: float = 0.0) -> None:
        super().__init__(start)
        self.tick_s = tick_s

    def __call__(self) -> float:
        self.now += self.tick_s
        return self.now


# --- running members


@dataclass(frozen=True)
class Finish:
    steps: int
    done_at: dict[int, float]  # the clock when each member's `step` first returned True
    errors: dict[int, Exception]


def run_members(
    members: Mapping[int, HostCollective],
    clock: FakeClock,
    tick_s: float = 0.001,
    max_steps: int = 200_000,
) -> Finish:
    """Step every member in turn until all are done or have failed; a member that is done
    keeps being stepped (it answers NACKs and sends what it still has)."""
    done_at: dict[int, float] = {}
    errors: dict[int, Exception] = {}
    for steps in range(1, max_steps + 1):
        for island, member in members.items():
            if island in errors:
                continue
            try:
                if member.step(0.0) and island not in done_at:
                    done_at[island] = clock.now
            except Exception as exc:  # the test inspects what each member raised
                errors[island] = exc
        if len(set(done_at) | set(errors)) == len(members):
            return Finish(steps, done_at, errors)
        clock.advance(tick_s)
    raise AssertionError(f"no end after {max_steps} steps: done {sorted(done_at)}")


def policy(**changes: object) -> SendPolicy:
    """Timeouts in fake-clock seconds, above the few milliseconds of the test paths."""
    fields: dict[str, object] = dict(window=64, timeout_s=0.01, max_timeout_s=0.08, deadline_s=30.0)
    return SendPolicy(**(fields | changes))  # type: ignore[arg-type]


def spec(
    island: int, members: Sequence[int], packet_format: PacketFormat = PACKET_FORMAT
) -> GroupSpec:
    return GroupSpec(JOB, ROUND, GROUP, island, tuple(members), packet_format)


def build(
    kind: str,
    net: HostNet,
    send_policy: SendPolicy,
    running: Sequence[int] | None = None,
    order: Sequence[int] | None = None,
) -> dict[int, HostCollective]:
    """A collective of `kind` ('direct', 'multicast' or 'ring') for every running member."""
    out: dict[int, HostCollective] = {}
    for i in net.members if running is None else running:
        g, clock = spec(i, net.members, net.packet_format), net.clock
        if kind == "direct":
            out[i] = DirectExchange(net.peer(i), g, send_policy, clock)
        elif kind == "multicast":
            out[i] = MulticastExchange(net.edge(i), g, send_policy, clock)
        else:
            out[i] = RingAllReduce(net.peer(i), g, send_policy, clock, order=order)
    return out


def contributions(members: Sequence[int], n: int, seed: int = 1) -> dict[int, np.ndarray]:
    """Random int32 values over the whole range: sums wrap around."""
    rng = np.random.default_rng(seed)
    return {m: rng.integers(-(2**31), 2**31, size=n, dtype=np.int32) for m in members}


def wrapping_sum(values: Mapping[int, np.ndarray]) -> np.ndarray:
    return np.sum(np.stack(list(values.values())), axis=0, dtype=np.int32)


def run_collective(
    kind: str,
    net: HostNet,
    values: Mapping[int, np.ndarray],
    send_policy: SendPolicy | None = None,
    order: Sequence[int] | None = None,
    tick_s: float = 0.001,
) -> tuple[dict[int, HostCollective], Finish]:
    """Every member begins with its values and is stepped to the end."""
    members = build(kind, net, send_policy or policy(), values.keys(), order)
    for i, member in members.items():
        member.begin(values[i])
    return members, run_members(members, net.clock, tick_s)
