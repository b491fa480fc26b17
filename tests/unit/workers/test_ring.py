"""The pipelined ring all-reduce on an in-memory host network: exact wrapping sums whatever the
network does, recovery from its predecessor, deadlines, pacing, and the timing the planner
models."""

from __future__ import annotations

import numpy as np
import pytest

from tests.unit.workers.hostnet import (
    PACKET_FORMAT,
    HostFaults,
    HostNet,
    build,
    contributions,
    policy,
    run_collective,
    run_members,
    spec,
    wrapping_sum,
)
from tests.unit.workers.network import FakeClock
from tests.unit.workers.test_exchange import (
    LOOPBACK_PACED,
    blocking_over_loopback,
    first_copies,
    packet,
)
from workers.exceptions import AggregationTimeout, PolicyError
from workers.packets import Flag, InnetPacket, PacketType
from workers.ring import RingAllReduce

N_VALUES = 3000
N_CHUNKS = 94
ORDERS = [(9, 4), (2, 0, 1), (3, 0, 4, 1, 2)]  # none sorted
FAULTS = {
    "clean": HostFaults(),
    "loss": HostFaults(seed=21, loss=0.05),
    "dup-reorder": HostFaults(seed=22, duplicate=0.05, reorder=0.2),
    "everything": HostFaults(seed=23, loss=0.05, duplicate=0.05, reorder=0.2),
}


def segments(n: int, k: int) -> list[range]:
    return [range(g * n // k, (g + 1) * n // k) for g in range(k)]


def frames_sent(order: tuple[int, ...], island: int, n: int) -> int:
    """What a member sends: at step s, position p sends segment (p - s) mod k."""
    k, p = len(order), order.index(island)
    return sum(len(segments(n, k)[(p - s) % k]) for s in range(2 * (k - 1)))


def ring_net(order: tuple[int, ...], faults: HostFaults | None = None, **kw: object) -> HostNet:
    return HostNet(tuple(sorted(order)), FakeClock(), faults or HostFaults(), **kw)  # type: ignore[arg-type]


@pytest.mark.parametrize("fault", FAULTS)
@pytest.mark.parametrize("order", ORDERS)
def test_ring_sums_are_exact_whatever_the_network_does(order: tuple, fault: str) -> None:
    net = ring_net(order, FAULTS[fault])
    values = contributions(net.members, N_VALUES, seed=len(order))
    rings, finish = run_collective("ring", net, values, order=order)
    assert finish.errors == {}
    expected = wrapping_sum(values)
    assert not np.array_equal(expected, np.sum(list(values.values()), axis=0, dtype=np.int64))
    for i, ring in rings.items():
        assert np.array_equal(ring.result(), expected), f"island {i}"
        s = ring.stats
        assert s.sent == frames_sent(order, i, N_CHUNKS) and s.results == N_CHUNKS
    stats = [r.stats for r in rings.values()]
    if fault in ("clean", "dup-reorder"):
        assert all(s.nacks_sent == s.retransmitted == s.recovers_sent == 0 for s in stats)
    if FAULTS[fault].loss:
        assert net.lost > 0 and sum(s.retransmitted for s in stats) > 0
    if FAULTS[fault].duplicate:
        assert sum(s.duplicates_ignored for s in stats) > 0
    # every packet is a CONTRIBUTION or a NACK to a ring neighbour, its step in the bitmap
    k = len(order)
    for sent in net.log:
        p, src = sent.packet, order.index(sent.src)
        if p.type == PacketType.CONTRIBUTION:
            assert sent.dst == order[(src + 1) % k] and p.bitmap < 2 * (k - 1)
        else:
            assert p.type == PacketType.NACK and sent.dst == order[src - 1]


@pytest.mark.parametrize("n_values", [1, 40, 32 * 5])
def test_fewer_chunks_than_members_leave_segments_empty(n_values: int) -> None:
    order = (3, 0, 4, 1, 2)
    net = ring_net(order, HostFaults(seed=5, loss=0.1))
    values = contributions(net.members, n_values, seed=n_values)
    rings, finish = run_collective("ring", net, values, order=order)
    assert finish.errors == {}
    assert all(np.array_equal(r.result(), wrapping_sum(values)) for r in rings.values())


def test_a_lost_final_step_is_found_by_silence() -> None:
    """The last step's chunks are forwarded by nobody: only silence can show them lost."""
    order = (3, 0, 4, 1, 2)
    last = 2 * (len(order) - 1) - 1

    def last_step(_s: int, _d: int, p: InnetPacket) -> bool:
        fresh = not p.flags & Flag.RETRANSMIT
        return p.type == PacketType.CONTRIBUTION and p.bitmap == last and fresh

    net = ring_net(order, HostFaults(drop=first_copies(last_step)))
    values = contributions(net.members, N_VALUES, seed=6)
    rings, finish = run_collective("ring", net, values, order=order)
    assert finish.errors == {}
    assert all(np.array_equal(r.result(), wrapping_sum(values)) for r in rings.values())
    assert net.lost == N_CHUNKS  # every chunk's final copy once
    for ring in rings.values():
        assert ring.stats.retransmitted > 0 and ring.stats.nacks_sent > 0
    nacks = [s.packet for s in net.log if s.packet.type == PacketType.NACK]
    assert {p.bitmap for p in nacks} == {last}


def test_lost_nacks_and_lost_resends_are_nacked_again() -> None:
    order = (2, 0, 1)

    def pick(_s: int, _d: int, p: InnetPacket) -> bool:
        return p.chunk == 40 and p.type in (PacketType.CONTRIBUTION, PacketType.NACK)

    net = ring_net(order, HostFaults(drop=first_copies(pick)))
    values = contributions(net.members, N_VALUES, seed=7)
    rings, finish = run_collective("ring", net, values, order=order)
    assert finish.errors == {}
    assert all(np.array_equal(r.result(), wrapping_sum(values)) for r in rings.values())
    nacks = [s for s in net.log if s.packet.type == PacketType.NACK]
    assert len(nacks) >= 2 * 2 * (len(order) - 1)  # every step of chunk 40: NACK, NACK again


def test_a_silent_member_is_named_nearest_first_within_the_deadline() -> None:
    order = (3, 0, 4, 1, 2)
    net = ring_net(order)
    rings = build("ring", net, policy(deadline_s=0.3), running=(0, 1, 2, 3), order=order)
    values = contributions(net.members, N_VALUES)
    for i, ring in rings.items():
        ring.begin(values[i])
    finish = run_members(rings, net.clock)
    assert set(finish.errors) == {0, 1, 2, 3} and 0.3 < net.clock.now <= 0.302
    for i, error in finish.errors.items():
        assert isinstance(error, AggregationTimeout)
        assert error.members[0] == 4 and error.chunks == tuple(range(N_CHUNKS))
        assert f"island {i} gave up" in str(error) and "island(s) 4" in str(error)
    # island 1 follows 4 and heard nothing; island 0 got steps 0-2, which 4 does not feed
    assert set(finish.errors[1].members) == {4, 0, 3, 2}  # type: ignore[attr-defined]
    assert finish.errors[0].members == (4,)  # type: ignore[attr-defined]
    assert 0 < rings[1].stats.nacks_sent < 10 * N_CHUNKS


def test_foreign_packets_are_counted_never_summed() -> None:
    order = (2, 0, 1)  # island 0's predecessor is 2, its successor 1
    net = ring_net(order)
    for data in [
        packet(PacketType.CONTRIBUTION, 1, 0, value=5),  # not the predecessor
        packet(PacketType.CONTRIBUTION, 2, 0, bitmap=9, value=5),  # no such step
        packet(PacketType.CONTRIBUTION, 2, 0, bitmap=1, value=5),  # not what 2 sends at step 1
        packet(PacketType.NACK, 2, 0),  # NACKs come from the successor
        packet(PacketType.RECOVER, 2, 0, value=5),
        b"\x10" * 10,
    ]:
        net.inject(0, data)
    values = contributions(net.members, N_VALUES, seed=8)
    rings, finish = run_collective("ring", net, values, order=order)
    assert finish.errors == {}
    assert all(np.array_equal(r.result(), wrapping_sum(values)) for r in rings.values())
    s = rings[0].stats
    assert (s.foreign, s.malformed, s.retransmitted) == (5, 1, 0)


def test_one_paced_stream_per_member() -> None:
    delta, tick = 0.001, 0.0001
    order = (2, 0, 1)
    net = ring_net(order)
    values = contributions(net.members, 60 * 32)
    paced = policy(rate_bps=PACKET_FORMAT.frame_bits / delta, start_s=0.003)
    rings, finish = run_collective("ring", net, values, paced, order=order, tick_s=tick)
    assert finish.errors == {}
    times = np.array([s.at for s in net.sent_by(0)])
    assert len(times) == frames_sent(order, 0, 60) and times[0] >= 0.003 - 1e-9
    assert np.diff(times).min() >= delta - tick - 1e-9
    assert (times[-1] - times[0]) == pytest.approx((len(times) - 1) * delta, abs=tick)
    assert rings[0].pacing_lag_s <= tick + 1e-9


def predicted(n: int, hops_ms: list[float], delta_ms: float) -> float:
    """The module's formula: max(2(k-1)·seg + max h, max_g (L_g·δ + 2(k-1) hops from g))."""
    k = len(hops_ms)
    lengths = [len(s) for s in segments(n, k)]
    bandwidth = 2 * (k - 1) * max(lengths) * delta_ms + max(hops_ms)
    chains = [
        L * delta_ms + sum(hops_ms[(g + t) % k] for t in range(2 * (k - 1)))
        for g, L in enumerate(lengths)
    ]
    return max(bandwidth, max(chains))


@pytest.mark.parametrize(
    ("n", "hops_ms"),
    [
        (400, [2, 5, 1, 3]),  # bandwidth: 6 segments of 10 ms back to back
        (8, [2, 5, 1, 3]),  # delay: the chain of 6 hops
        (120, [3, 3, 3, 3]),  # where they cross
        (80, [1, 1, 10, 1]),  # crossing, with very unequal hops: the worst case seen
    ],
)
def test_the_pipelined_ring_takes_the_time_the_planner_models(n: int, hops_ms: list) -> None:
    delta_ms, order = 0.1, (3, 1, 0, 2)
    k = len(order)

    def delay(a: int, b: int) -> float:  # ring hop i: position i to i + 1
        i = order.index(a)
        return (hops_ms[i] if order[(i + 1) % k] == b else max(hops_ms)) / 1000

    net = ring_net(order, delay=delay)
    values = contributions(net.members, n * 32)
    paced = policy(
        rate_bps=PACKET_FORMAT.frame_bits / (delta_ms / 1000),
        timeout_s=2 * max(hops_ms) / 1000 + 0.001,
        max_timeout_s=0.5,
    )
    rings, finish = run_collective("ring", net, values, paced, order=order, tick_s=2e-5)
    assert finish.errors == {}
    assert sum(r.stats.nacks_sent for r in rings.values()) == 0
    took_ms = max(finish.done_at.values()) * 1000
    assert 0.99 <= took_ms / predicted(n, hops_ms, delta_ms) <= 1.07


def test_a_finished_member_resends_what_it_sent() -> None:
    order = (2, 0, 1)  # island 0 is at position 1: it sends segment 1 at step 0, 2 at step 2
    net = ring_net(order)
    values = contributions(net.members, N_VALUES, seed=9)
    rings, _ = run_collective("ring", net, values, order=order)
    ring = rings[0]
    before = len(net.log)
    own, final = segments(N_CHUNKS, 3)[1][0], segments(N_CHUNKS, 3)[2][0]
    net.inject(0, packet(PacketType.NACK, 1, own, bitmap=0))
    net.inject(0, packet(PacketType.NACK, 1, final, bitmap=2))
    assert ring.step(0.02)
    step0, step2 = (s.packet for s in net.log[before:])
    assert (step0.type, step0.flags, step0.bitmap, step0.chunk) == (
        PacketType.CONTRIBUTION,
        Flag.RETRANSMIT,
        0,
        own,
    )
    assert np.array_equal(step0.array(), values[0][own * 32 : own * 32 + 32])
    assert (step2.bitmap, step2.chunk) == (2, final)
    assert np.array_equal(step2.array(), wrapping_sum(values)[final * 32 : final * 32 + 32])
    assert all(s.dst == 1 for s in net.log[before:]) and ring.stats.recovers_sent == 2


def test_a_ring_order_must_name_the_members() -> None:
    net = ring_net((0, 1, 2))
    with pytest.raises(PolicyError, match="ring order"):
        RingAllReduce(net.peer(0), spec(0, (0, 1, 2)), policy(), order=(0, 1))
    with pytest.raises(PolicyError, match="ring order"):
        RingAllReduce(net.peer(0), spec(0, (0, 1, 2)), policy(), order=(0, 1, 1))


def test_ring_blocking_over_loopback_udp() -> None:
    order, members = (2, 0, 1), (0, 1, 2)
    blocking_over_loopback(
        lambda peers, i: RingAllReduce(
            peers, spec(i, members), policy(**LOOPBACK_PACED), order=order
        ),
        members,
        seed=10,
    )
