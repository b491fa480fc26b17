"""Direct and multicast exchanges on an in-memory host network: exact wrapping sums whatever the
network does, receiver-driven recovery, deadlines, pacing, serving after the sum; UdpPeers."""

from __future__ import annotations

import socket
import threading
from collections.abc import Callable

import numpy as np
import pytest

from tests.unit.workers.hostnet import (
    PACKET_FORMAT,
    HostFaults,
    HostNet,
    TickingClock,
    build,
    contributions,
    policy,
    run_collective,
    run_members,
    spec,
    wrapping_sum,
)
from tests.unit.workers.network import FakeClock, expected_int_sum
from workers.aggregate import GroupSum
from workers.exceptions import AggregationError, AggregationTimeout, QuantiseError, TransportError
from workers.exchange import DirectExchange, HostCollective
from workers.packets import Flag, InnetPacket, PacketType
from workers.unicast import UdpPeers, leader_address

N_VALUES = 3000  # 93.75 chunks: the last one padded
N_CHUNKS = 94
KINDS = [("direct", (4, 9)), ("direct", (2, 5, 7)), ("multicast", (2, 5, 7))]
FAULTS = {
    "clean": HostFaults(),
    "loss": HostFaults(seed=11, loss=0.05),
    "dup-reorder": HostFaults(seed=12, duplicate=0.05, reorder=0.2),
    "everything": HostFaults(seed=13, loss=0.05, duplicate=0.05, reorder=0.2),
}


def packet(
    kind: PacketType,
    src: int,
    chunk: int,
    *,
    rnd: int = 2,
    bitmap: int = 0,
    flags: int = 0,
    value: int = 0,
) -> bytes:
    """An innet packet of the test group (round `rnd`) from `src`."""
    values = (value,) * PACKET_FORMAT.lanes
    return InnetPacket.of(
        kind, Flag(flags), 7, rnd, 1, src, chunk, bitmap, values, PACKET_FORMAT
    ).encode()


def assert_exact(members: dict, values: dict) -> None:
    expected = wrapping_sum(values)
    for i, member in members.items():
        got = member.result()
        assert got.dtype == np.int32 and got.shape == (N_VALUES,)
        assert np.array_equal(got, expected), f"island {i}"


@pytest.mark.parametrize("fault", FAULTS)
@pytest.mark.parametrize(("kind", "members"), KINDS)
def test_sums_are_exact_whatever_the_network_does(kind: str, members: tuple, fault: str) -> None:
    net = HostNet(members, FakeClock(), FAULTS[fault])
    values = contributions(members, N_VALUES)
    wide = np.sum(np.stack(list(values.values())), axis=0, dtype=np.int64)
    assert not np.array_equal(wrapping_sum(values), wide)  # the data wraps around
    exchanges, finish = run_collective(kind, net, values)
    assert finish.errors == {}
    assert_exact(exchanges, values)
    stats = [e.stats for e in exchanges.values()]
    frames = N_CHUNKS * (len(members) - 1 if kind == "direct" else 1)
    assert all(s.sent == frames and s.results == N_CHUNKS for s in stats)
    if fault in ("clean", "dup-reorder"):  # reordering within a tick needs no NACK either
        assert all(s.nacks_sent == s.retransmitted == s.recovers_sent == 0 for s in stats)
    if fault == "clean":
        assert all(s.duplicates_ignored == 0 for s in stats) and net.lost == 0
    if FAULTS[fault].loss:
        assert net.lost > 0 and sum(s.retransmitted for s in stats) > 0
        assert sum(s.nacks_sent for s in stats) > 0
    if FAULTS[fault].duplicate:
        assert net.duplicated > 0 and sum(s.duplicates_ignored for s in stats) > 0


def first_copies(test) -> object:
    """A drop predicate losing the first copy of each packet `test(src, dst, packet)` picks."""
    seen: set[tuple] = set()

    def drop(src: int, dst: int, p: InnetPacket) -> bool:
        key = (src, dst, p.type, p.chunk, p.bitmap, p.flags)
        if not test(src, dst, p) or key in seen:
            return False
        seen.add(key)
        return True

    return drop


@pytest.mark.parametrize(("kind", "members"), KINDS)
def test_a_lost_tail_is_found_by_silence(kind: str, members: tuple) -> None:
    tail = {N_CHUNKS - 2, N_CHUNKS - 1}

    def fresh_tail(_s: int, _d: int, p: InnetPacket) -> bool:
        fresh = not p.flags & Flag.RETRANSMIT
        return p.type == PacketType.CONTRIBUTION and p.chunk in tail and fresh

    drop = first_copies(fresh_tail)
    net = HostNet(members, FakeClock(), HostFaults(drop=drop))
    values = contributions(members, N_VALUES, seed=3)
    exchanges, finish = run_collective(kind, net, values)
    assert finish.errors == {}
    assert_exact(exchanges, values)
    assert net.lost == len(tail) * len(members) * (len(members) - 1)
    nacks = [s.packet for s in net.log if s.packet.type == PacketType.NACK]
    assert {p.chunk for p in nacks} == tail
    if kind == "multicast":  # a NACK's bitmap names missing sources; together, all of them
        named: dict[tuple[int, int], int] = {}
        for s in (s for s in net.log if s.packet.type == PacketType.NACK):
            others = sum(1 << m for m in members if m != s.src)
            assert s.packet.flags == Flag.WAN and s.packet.bitmap & ~others == 0
            named[s.src, s.packet.chunk] = named.get((s.src, s.packet.chunk), 0) | s.packet.bitmap
        assert named == {
            (m, c): sum(1 << o for o in members if o != m) for m in members for c in tail
        }


@pytest.mark.parametrize(("kind", "members"), KINDS)
def test_lost_nacks_and_lost_answers_are_nacked_again(kind: str, members: tuple) -> None:
    answer = PacketType.RECOVER if kind == "multicast" else PacketType.CONTRIBUTION

    def pick(_s: int, _d: int, p: InnetPacket) -> bool:
        if p.type == PacketType.CONTRIBUTION and not p.flags & Flag.RETRANSMIT:
            return p.chunk == 10
        return p.type == PacketType.NACK or (p.type == answer and p.chunk == 10)

    net = HostNet(members, FakeClock(), HostFaults(drop=first_copies(pick)))
    values = contributions(members, N_VALUES, seed=4)
    exchanges, finish = run_collective(kind, net, values)
    assert finish.errors == {}
    assert_exact(exchanges, values)
    for i, e in exchanges.items():
        assert e.stats.nacks_sent >= 2 * (1 if kind == "multicast" else len(members) - 1), i


@pytest.mark.parametrize(("kind", "members"), [("direct", (0, 1, 2)), ("multicast", (0, 1, 2))])
def test_a_silent_member_is_named_within_the_deadline(kind: str, members: tuple) -> None:
    clock = FakeClock()
    net = HostNet(members, clock)
    exchanges = build(kind, net, policy(deadline_s=0.3), running=(0, 1))  # island 2 never runs
    values = contributions(members, N_VALUES)
    for i, e in exchanges.items():
        e.begin(values[i])
    finish = run_members(exchanges, clock)
    assert set(finish.errors) == {0, 1} and 0.3 < clock.now <= 0.302
    for i, error in finish.errors.items():
        assert isinstance(error, AggregationTimeout)
        assert error.members == (2,)
        assert error.chunks == tuple(range(N_CHUNKS))
        assert f"island {i} gave up" in str(error) and "island(s) 2" in str(error)
        assert 0 < exchanges[i].stats.nacks_sent < 10 * N_CHUNKS  # probed, not flooded
    nacks = [s for s in net.log if s.packet.type == PacketType.NACK]
    assert nacks
    if kind == "direct":  # unicast to the silent source
        assert {s.dst for s in nacks} == {2}
    else:  # multicast, naming the silent source only
        assert {s.packet.bitmap for s in nacks} == {1 << 2}


def test_foreign_and_malformed_packets_are_counted_never_summed() -> None:
    members = (0, 1, 2)
    net = HostNet(members, FakeClock())
    bad = [
        b"garbage",
        packet(PacketType.CONTRIBUTION, 1, 0, value=5)[:100],  # truncated
        packet(PacketType.CONTRIBUTION, 1, 0, rnd=3, value=5),  # another round
        packet(PacketType.CONTRIBUTION, 9, 0, value=5),  # not a member
        packet(PacketType.CONTRIBUTION, 0, 0, value=5),  # claims to be island 0 itself
        packet(PacketType.RESULT, 1, 0, value=5),  # only switches send those
        packet(PacketType.RECOVER, 1, 0, value=5),  # not part of a direct exchange
    ]
    for data in bad:
        net.inject(0, data)
    values = contributions(members, N_VALUES, seed=5)
    exchanges, finish = run_collective("direct", net, values)
    assert finish.errors == {}
    assert_exact(exchanges, values)
    s = exchanges[0].stats
    assert (s.malformed, s.foreign, s.duplicates_ignored) == (2, 5, 0)


def send_times(net: HostNet, island: int, dst: int | None = None) -> np.ndarray:
    return np.array([s.at for s in net.sent_by(island) if dst is None or s.dst == dst])


@pytest.mark.parametrize(("kind", "streams"), [("multicast", 1), ("direct", 2)])
def test_sends_are_spaced_by_the_frame_time_per_stream(kind: str, streams: int) -> None:
    delta, tick, n = 0.001, 0.0001, 50
    members = (0, 1, 2)
    net = HostNet(members, FakeClock())
    values = contributions(members, n * 32)
    paced = policy(rate_bps=PACKET_FORMAT.frame_bits / delta, start_s=0.005)
    exchanges, finish = run_collective(kind, net, values, paced, tick_s=tick)
    assert finish.errors == {}
    times = send_times(net, 0)
    assert len(times) == n * streams and times[0] >= 0.005 - 1e-9
    assert np.diff(times).min() >= delta / streams - tick - 1e-9  # k - 1 streams interleave
    assert (times[-1] - times[0]) == pytest.approx((n * streams - 1) * delta / streams, abs=tick)
    for dst in (1, 2) if kind == "direct" else ():  # each stream at the rate
        per_dst = send_times(net, 0, dst)
        assert len(per_dst) == n and np.diff(per_dst).min() >= delta - tick - 1e-9
    assert exchanges[0].pacing_lag_s <= tick + 1e-9


def test_unpaced_members_send_a_window_per_step() -> None:
    members = (0, 1, 2)
    net = HostNet(members, FakeClock())
    _, finish = run_collective("direct", net, contributions(members, 3000), policy(window=16))
    assert finish.errors == {}
    _, per_step = np.unique(send_times(net, 0), return_counts=True)
    assert per_step.max() == 16 and per_step.sum() == 2 * N_CHUNKS


def test_a_finished_member_keeps_answering_nacks() -> None:
    members = (0, 1, 2)
    clock = FakeClock()
    net = HostNet(members, clock)
    values = contributions(members, N_VALUES, seed=6)
    exchanges, finish = run_collective("direct", net, values)
    member = exchanges[0]
    assert finish.errors == {} and member.done
    before = len(net.log)
    net.inject(0, packet(PacketType.NACK, 1, 5))
    net.inject(0, packet(PacketType.NACK, 2, N_CHUNKS + 3))  # not begun: nothing to send
    assert member.step(0.02)  # the island leader steps the last round like this
    (answer,) = net.log[before:]
    assert (answer.dst, answer.packet.type, answer.packet.flags) == (
        1,
        PacketType.CONTRIBUTION,
        Flag.RETRANSMIT,
    )
    assert answer.packet.chunk == 5 and answer.packet.src == 0
    assert np.array_equal(answer.packet.array(), values[0][5 * 32 : 6 * 32])
    member.clock = TickingClock(0.001, start=clock.now)  # serve blocks: a clock that moves
    net.inject(0, packet(PacketType.NACK, 2, 7))
    member.serve(quiet_s=0.05)
    assert net.log[-1].dst == 2 and net.log[-1].packet.chunk == 7
    assert member.stats.recovers_sent == member.stats.retransmitted == 2


def test_multicast_answers_only_nacks_that_name_it() -> None:
    members = (0, 1, 2)
    net = HostNet(members, FakeClock())
    values = contributions(members, N_VALUES, seed=7)
    exchanges, _ = run_collective("multicast", net, values)
    before = len(net.log)
    net.inject(0, packet(PacketType.NACK, 2, 9, bitmap=1 << 1, flags=Flag.WAN))  # not island 0
    net.inject(0, packet(PacketType.NACK, 2, 9, bitmap=1 << 0 | 1 << 1, flags=Flag.WAN))
    net.inject(0, packet(PacketType.NACK, 1, 9, bitmap=1 << 0, flags=Flag.WAN))  # same answer
    exchanges[0].step(0.0)
    (recover,) = net.log[before:]
    assert recover.packet.type == PacketType.RECOVER and recover.packet.flags == Flag.WAN
    assert (recover.packet.src, recover.packet.chunk) == (0, 9)
    assert np.array_equal(recover.packet.array(), values[0][9 * 32 : 10 * 32])
    assert net.take(1) is not None and net.take(2) is not None  # the edge gave both a copy


def test_int32_only_and_one_collective_at_a_time() -> None:
    net = HostNet((0, 1), FakeClock())
    exchange = DirectExchange(net.peer(0), spec(0, (0, 1)), policy(), net.clock)
    with pytest.raises(QuantiseError, match="int32"):
        exchange.begin(np.zeros(4, dtype=np.float32))
    with pytest.raises(QuantiseError, match="scale"):
        exchange.allreduce_sum(np.zeros(4, dtype=np.int32), 0.0)
    with pytest.raises(AggregationError, match="no finished"):
        exchange.result()
    exchange.begin(np.zeros(4, dtype=np.int32))
    with pytest.raises(AggregationError, match="unfinished"):
        exchange.begin(np.zeros(4, dtype=np.int32))


@pytest.mark.parametrize("kind", ["direct", "multicast"])
def test_the_float_api_runs_on_a_host_exchange(kind: str) -> None:
    """GroupSum's exponent vote (chunk 0), then the update: two collectives on one exchange."""
    members = (0, 1, 2)
    clock = FakeClock()
    net = HostNet(members, clock, HostFaults(seed=2, loss=0.02))
    rng = np.random.default_rng(8)
    ups = (rng.standard_normal((3, 5000)) * 0.01).astype(np.float32)
    exchanges = build(kind, net, policy())
    sessions = {i: GroupSum(e, ups[i]) for i, e in exchanges.items()}  # type: ignore[arg-type]
    finish = run_members(sessions, clock)  # type: ignore[arg-type]
    assert finish.errors == {}
    expected, scale = expected_int_sum(ups)
    for session in sessions.values():
        assert session.scale == scale and np.array_equal(session.int_sum(), expected)


# --- UdpPeers on loopback


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def loopback(island: int) -> str:
    return f"127.0.0.{island + 1}"


def test_udp_peers_send_to_a_peer_and_receive_with_a_timeout() -> None:
    port = free_port()
    data = [packet(PacketType.CONTRIBUTION, 0, c, value=c) for c in range(100)]
    with UdpPeers(loopback(0), loopback, port) as a, UdpPeers(loopback(1), loopback, port) as b:
        assert b.recv(0.0) is None and b.recv(0.01) is None
        for d in data:
            a.send_to(1, d)
        assert [b.recv(1.0) for _ in data] == data
        b.send_to(0, data[5])
        assert a.recv(1.0) == data[5]
    assert leader_address(3) == "10.0.3.1"


def test_udp_peers_refuse_a_busy_port_and_say_when_closed() -> None:
    port = free_port()
    with UdpPeers(loopback(0), loopback, port), pytest.raises(TransportError, match="bound"):
        UdpPeers(loopback(0), loopback, port)
    peers = UdpPeers(loopback(0), loopback, port)
    peers.close()
    with pytest.raises(TransportError, match="closed"):
        peers.send_to(1, b"x")
    with pytest.raises(TransportError, match="closed"):
        peers.recv(0.0)


def blocking_over_loopback(
    make: Callable[[UdpPeers, int], HostCollective], members: tuple[int, ...], seed: int
) -> None:
    """Every member's blocking allreduce in a thread of its own, over real UDP on loopback
    (127.0.0.x per island, one port), paced; each sum must be the wrapping int32 sum."""
    port = free_port()
    values = contributions(members, 20_000, seed=seed)
    out: dict[int, np.ndarray] = {}
    errors: dict[int, BaseException] = {}
    ports = {i: UdpPeers(loopback(i), loopback, port) for i in members}

    def island(i: int) -> None:
        try:
            exchange = make(ports[i], i)
            out[i] = exchange.allreduce_sum(values[i], scale=1.0)
            exchange.serve(quiet_s=0.2)
        except BaseException as exc:
            errors[i] = exc

    threads = [threading.Thread(target=island, args=(i,)) for i in members]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=30)
    for p in ports.values():
        p.close()
    assert errors == {} and not any(t.is_alive() for t in threads)
    expected = wrapping_sum(values)
    assert all(np.array_equal(out[i], expected) for i in members)


LOOPBACK_PACED = {
    "rate_bps": PACKET_FORMAT.frame_bits * 20_000,
    "timeout_s": 0.05,
    "max_timeout_s": 0.2,
    "deadline_s": 20.0,
}


def test_direct_exchange_blocking_over_loopback_udp() -> None:
    members = (0, 1, 2)
    blocking_over_loopback(
        lambda peers, i: DirectExchange(peers, spec(i, members), policy(**LOOPBACK_PACED)),
        members,
        seed=9,
    )
