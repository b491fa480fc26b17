"""A test network for the aggregation client: the real innet.p4 data plane, without sockets.

`HarnessNetwork` wraps `tests.unit.dataplane.harness.Triangle`: three p4switch pipelines
running p4src/innet.p4 (the real P4 program: slots, bitmaps, multicast trees, RESULTs), with the
group installed as the controller would. This is the network, not a fake of the client: every
packet an Aggregator sends is an Ethernet/IPv4/UDP frame injected at its island's edge, and every
packet it receives is what that edge delivered to the island's host port.

Faults are the network's: WAN hops lost (a predicate on `Hop`, or a seeded probability), host
deliveries lost (a predicate, or a seeded probability), frames duplicated on the host links
(seeded). Delivery is instantaneous (the Triangle runs to quiescence on every send).

Islands run concurrently in one of two ways:

- `run_round_robin`: one thread steps every island's session in turn and advances a
  `FakeClock` by one tick per round of steps: deterministic, and timeouts cost no wall time;
- threads calling the blocking API: `HarnessTransport` serialises the pipelines with one
  condition variable and `recv(timeout)` waits on it.
"""

from __future__ import annotations

import random
import struct
import threading
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Protocol

import numpy as np

from tests.unit.clock import FakeClock
from tests.unit.dataplane.harness import (
    ISLANDS,
    PACKET_FORMAT,  # what the harness compiles innet.p4 with (32 lanes), re-exported
    UDP_PORT,
    Hop,
    Triangle,
    host_ip,
    ipv4_frame,
)
from workers.aggregate import Aggregator, GroupSpec, GroupSum, SendPolicy
from workers.quantise import exponent_of, quantise, scale_for

JOB, ROUND, GROUP = 7, 1, 3
MEMBERS = ISLANDS
GATEWAY = bytes((10, 0, 255, 254))  # any destination: the edge does not route innet packets
_UDP = struct.Struct("!HHHH")
_PAYLOAD_AT = 14 + 20 + _UDP.size


@dataclass
class Faults:
    """What the network does wrong; probabilities are drawn from one seeded generator."""

    seed: int = 0
    wan_loss: float = 0.0  # each WAN hop of any innet frame
    lose_wan: Callable[[Hop], bool] | None = None
    delivery_loss: float = 0.0  # each frame an edge delivers to its host
    lose_delivery: Callable[[int, bytes], bool] | None = None  # (island, UDP payload)
    duplicate: float = 0.0  # each frame on a host link (either way) arrives twice


@dataclass
class LinkCounts:
    sent: dict[int, int] = field(default_factory=lambda: dict.fromkeys(ISLANDS, 0))
    delivered: dict[int, int] = field(default_factory=lambda: dict.fromkeys(ISLANDS, 0))
    lost_delivery: int = 0
    duplicated: int = 0


class HarnessNetwork:
    """Three islands' edges with one group installed, and a transport per island."""

    def __init__(
        self,
        slots: int,
        job: int,
        rnd: int,
        group: int,
        members: tuple[int, ...] = ISLANDS,
        faults: Faults | None = None,
    ) -> None:
        self.triangle = Triangle(slots)
        self.triangle.install_group(job, rnd, group, members)
        self.faults = faults or Faults()
        self.counts = LinkCounts()
        self.cond = threading.Condition()
        self._rng = random.Random(self.faults.seed)
        self._inbox: dict[int, deque[bytes]] = {i: deque() for i in ISLANDS}

    def transport(self, island: int) -> HarnessTransport:
        return HarnessTransport(self, island)

    def stats(self, island: int) -> dict[str, int]:
        with self.cond:
            return self.triangle.stats(island)

    def _chance(self, p: float) -> bool:
        return p > 0 and self._rng.random() < p

    def _lose_wan(self, hop: Hop) -> bool:
        f = self.faults
        return (f.lose_wan is not None and f.lose_wan(hop)) or self._chance(f.wan_loss)

    def inject(self, island: int, payload: bytes) -> None:
        """island's host sends one innet packet to its edge (twice if the link duplicates)."""
        udp = _UDP.pack(UDP_PORT, UDP_PORT, _UDP.size + len(payload), 0) + payload
        frame = ipv4_frame(host_ip(island), GATEWAY, 17, udp)
        with self.cond:
            self.counts.sent[island] += 1
            copies = 2 if self._chance(self.faults.duplicate) else 1
            self.counts.duplicated += copies - 1
            for _ in range(copies):
                self.triangle.send(island, frame, lose=self._lose_wan)
            self._deliver()
            self.cond.notify_all()

    def _deliver(self) -> None:
        f = self.faults
        for island in ISLANDS:
            frames = self.triangle.hosts[island]
            self.triangle.hosts[island] = []
            for frame in frames:
                payload = _udp_payload(frame)
                if (f.lose_delivery is not None and f.lose_delivery(island, payload)) or (
                    self._chance(f.delivery_loss)
                ):
                    self.counts.lost_delivery += 1
                    continue
                copies = 2 if self._chance(f.duplicate) else 1
                self.counts.duplicated += copies - 1
                self._inbox[island].extend([payload] * copies)

    def take(self, island: int, timeout: float) -> bytes | None:
        with self.cond:
            inbox = self._inbox[island]
            if not inbox and timeout > 0:
                self.cond.wait_for(lambda: bool(inbox), timeout)
            if not inbox:
                return None
            self.counts.delivered[island] += 1
            return inbox.popleft()


def _udp_payload(frame: bytes) -> bytes:
    ethertype = struct.unpack_from("!H", frame, 12)[0]
    if ethertype != 0x0800 or frame[14] != 0x45 or frame[23] != 17:
        raise AssertionError(f"the edge delivered a frame that is not IPv4/UDP: {frame[:34].hex()}")
    if _UDP.unpack_from(frame, 34)[1] != UDP_PORT:
        raise AssertionError("the edge delivered a UDP frame for another port")
    return frame[_PAYLOAD_AT:]


class HarnessTransport:
    """One island's host port on the harness network (the `Transport` protocol)."""

    def __init__(self, network: HarnessNetwork, island: int) -> None:
        self.network = network
        self.island = island
        self.closed = False

    @property
    def sent(self) -> int:
        return self.network.counts.sent[self.island]

    def send(self, frame_payload: bytes) -> None:
        if self.closed:
            raise OSError(f"transport of island {self.island} is closed")
        self.network.inject(self.island, frame_payload)

    def recv(self, timeout: float) -> bytes | None:
        return self.network.take(self.island, timeout)

    def close(self) -> None:
        self.closed = True


class Session(Protocol):
    def step(self, wait: float = 0.0) -> bool: ...


@dataclass(frozen=True)
class RoundRobinRun:
    steps: int  # rounds of steps (one tick of the fake clock each)
    errors: dict[int, Exception]


def run_round_robin(
    sessions: Mapping[int, Session],
    clock: FakeClock,
    tick_s: float = 0.001,
    max_steps: int = 1_000_000,
) -> RoundRobinRun:
    """Step every island's session in turn until all are done or have failed.

    A finished session keeps being stepped while others run: it still answers their NACKs.
    """
    done: set[int] = set()
    errors: dict[int, Exception] = {}
    for step in range(1, max_steps + 1):
        for island, session in sessions.items():
            if island in errors:
                continue
            try:
                if session.step(0.0):
                    done.add(island)
            except Exception as exc:  # the test inspects what each island raised
                errors[island] = exc
        if len(done | set(errors)) == len(sessions):
            return RoundRobinRun(step, errors)
        clock.advance(tick_s)
    raise AssertionError(f"no end after {max_steps} steps: done {sorted(done)}")


# --- three islands summing their updates


def fast_policy(window: int, **changes: object) -> SendPolicy:
    """Timeouts in fake-clock seconds: results arrive within one 1 ms tick."""
    fields: dict[str, object] = dict(
        window=window, timeout_s=0.005, max_timeout_s=0.04, deadline_s=30.0
    )
    return SendPolicy(**(fields | changes))  # type: ignore[arg-type]


def updates(n: int, seed: int = 2024) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return (rng.standard_normal((len(MEMBERS), n)) * 0.01).astype(np.float32)


def expected_int_sum(ups: np.ndarray) -> tuple[np.ndarray, float]:
    """numpy's int32 sum of the quantised inputs, at the scale the group must agree on."""
    k = ups.shape[0]
    scale = scale_for(max(exponent_of(u, PACKET_FORMAT.lanes) for u in ups), k)
    total = sum(quantise(u, scale, k).astype(np.int64) for u in ups)
    return np.asarray(total).astype(np.int32), scale


@dataclass
class Islands:
    net: HarnessNetwork
    clock: FakeClock
    aggregators: dict[int, Aggregator]
    sessions: dict[int, GroupSum]
    run: RoundRobinRun


def group_spec(island: int, members: tuple[int, ...] = MEMBERS) -> GroupSpec:
    """The test group as island `island` takes part in it, in the harness's packet format."""
    return GroupSpec(JOB, ROUND, GROUP, island, members, PACKET_FORMAT)


def group_sum_on_triangle(
    net: HarnessNetwork, policy: SendPolicy, ups: np.ndarray, running: tuple[int, ...] = MEMBERS
) -> Islands:
    """Every running island's GroupSum, stepped round-robin on a fake clock to the end."""
    clock = FakeClock()
    aggregators = {i: Aggregator(net.transport(i), group_spec(i), policy, clock) for i in running}
    sessions = {i: GroupSum(aggregators[i], ups[i]) for i in running}
    run = run_round_robin(sessions, clock)
    return Islands(net, clock, aggregators, sessions, run)
