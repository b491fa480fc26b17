"""Loss and duplicates injected by the network (the real innet.p4 data plane): sums stay exact."""

from __future__ import annotations

import numpy as np

from tests.unit.dataplane.harness import CONTRIBUTION, Hop
from tests.unit.workers.network import (
    GROUP,
    JOB,
    MEMBERS,
    PACKET_FORMAT,
    ROUND,
    Faults,
    HarnessNetwork,
    expected_int_sum,
    fast_policy,
    group_sum_on_triangle,
    updates,
)
from workers.packets import InnetPacket, PacketType

N_FLOATS = 100_000


def assert_exact(islands, ups: np.ndarray) -> None:
    assert islands.run.errors == {}
    expected, scale = expected_int_sum(ups)
    for i, session in islands.sessions.items():
        assert np.array_equal(session.int_sum(), expected), f"island {i}"
        assert session.scale == scale


def test_random_wan_loss_and_lost_results_are_recovered_exactly() -> None:
    ups = updates(N_FLOATS, seed=11)
    faults = Faults(seed=42, wan_loss=0.02, delivery_loss=0.005)
    net = HarnessNetwork(1024, JOB, ROUND, GROUP, faults=faults)
    islands = group_sum_on_triangle(net, fast_policy(window=1024), ups)
    assert_exact(islands, ups)
    delivered = sum(net.counts.delivered.values())  # the faults did strike: about 2% and 0.5%
    assert len(net.triangle.lost) > 500 and net.counts.lost_delivery > 0.003 * delivered
    stats = [islands.aggregators[i].stats for i in MEMBERS]
    assert all(s.retransmitted > 0 and s.nacks_sent > 0 for s in stats)
    assert all(s.recovers_sent > 0 and s.recovered_chunks > 0 for s in stats)
    assert all(s.heals_sent >= 3 * s.recovered_chunks for s in stats)  # own + two others each
    for i in MEMBERS:
        edge = net.stats(i)
        assert edge["slot_conflict"] == 0  # healing kept every slot reusable
        assert edge["result_resent"] > 0  # lost RESULTs were emitted again for resends
        assert edge["malformed"] == edge["unknown"] == edge["not_member"] == 0


def test_lost_results_are_emitted_again_by_the_edge() -> None:
    ups = updates(20_000, seed=3)
    dropped: set[tuple[int, int]] = set()

    def first_result_of_every_50th_chunk(island: int, payload: bytes) -> bool:
        p = InnetPacket.decode(payload, PACKET_FORMAT)
        if p.type != PacketType.RESULT or p.chunk % 50 != 7 or (island, p.chunk) in dropped:
            return False
        dropped.add((island, p.chunk))
        return True

    faults = Faults(lose_delivery=first_result_of_every_50th_chunk)
    net = HarnessNetwork(256, JOB, ROUND, GROUP, faults=faults)
    islands = group_sum_on_triangle(net, fast_policy(window=256), ups)
    assert_exact(islands, ups)
    per_island = len(dropped) // 3
    assert per_island == len(range(7, 1 + 20_000 // PACKET_FORMAT.lanes, 50))
    for i in MEMBERS:
        s = islands.aggregators[i].stats
        assert s.retransmitted == per_island and s.nacks_sent == 0
        assert s.recovered_chunks == 0
        assert net.stats(i)["result_resent"] == per_island


def test_one_lost_copy_is_nacked_recovered_and_the_slot_healed() -> None:
    ups = updates(4_000, seed=4)
    slots = 8  # chunk 10 + 2 * 8 reuses chunk 10's cell: healing must have completed it

    def a_chunk_10_to_c(hop: Hop) -> bool:
        m = hop.msg
        return m.type == CONTRIBUTION and hop.island == 0 and hop.to == 2 and m.chunk == 10

    net = HarnessNetwork(slots, JOB, ROUND, GROUP, faults=Faults(lose_wan=a_chunk_10_to_c))
    islands = group_sum_on_triangle(net, fast_policy(window=slots), ups)
    assert_exact(islands, ups)
    c = islands.aggregators[2].stats
    assert c.recovered_chunks == 1 and c.nacks_sent >= 1 and c.heals_sent == 3
    assert c.retransmitted == 2  # nack_after resends first, each a duplicate
    assert islands.aggregators[0].stats.recovers_sent >= 1
    assert islands.aggregators[1].stats.recovers_sent >= 1
    assert net.stats(2)["slot_conflict"] == 0
    # the healed slot completed too
    assert net.stats(2)["completed"] == 1 + 4_000 // PACKET_FORMAT.lanes


def test_network_duplicates_are_counted_once() -> None:
    ups = updates(N_FLOATS, seed=8)
    net = HarnessNetwork(1024, JOB, ROUND, GROUP, faults=Faults(seed=1, duplicate=0.05))
    islands = group_sum_on_triangle(net, fast_policy(window=1024), ups)
    assert_exact(islands, ups)
    assert net.counts.duplicated > 500  # of ~19k frames on the host links
    assert all(islands.aggregators[i].stats.duplicates_ignored > 0 for i in MEMBERS)
    assert all(net.stats(i)["duplicate"] > 0 for i in MEMBERS)
