"""The cost model per network mode, against cases computed by hand (docs/cost-model.md,
"Network modes")."""

from dataclasses import replace

import pytest

from controller.planner.collectives import ring_order
from controller.planner.cost import CostModel, CostParams
from controller.planner.exceptions import PlanError
from controller.planner.optimise import Planner
from controller.planner.schedule import Round
from controller.planner.sweep import memory_points, sweep
from tests.unit.planner.wans import line_wan
from topo.loader import default_wan

GB = 10**9


def group_cost(wan, members, network, **params):
    p = dict(update_bytes=GB, memory_bytes=10**15, access_bps=10e9, network=network) | params
    return CostModel(wan, CostParams(**p)).round_cost(Round.of([members])).groups[0]


# A - B - C - D on a line, 10, 20 and 30 ms, 100 Gb/s links, 10 Gb/s access, 1 GB updates.
# Ring orders from A: A B C D has hops 10, 20, 30 and 60 ms (D back to A); A B D C has 10, 50,
# 30, 30: the slowest hop is 50 ms, the least of any order (A C D B ties and comes later).
# Each directed link carries one ring stream, so the ring runs at the access rate, 10 Gb/s:
# 2 (k - 1) = 6 segments of 1 GB / 4 = 2 Gbit each, 0.2 s, back to back on a member's link
# (the chunks are pipelined), and the last arrives a hop later: 6 x 0.2 s + 50 ms = 1.25 s.
# The other bound, one segment and then 6 consecutive hops (twice round the ring, 240 ms, but
# for the two hops before the start, 40 ms at least: 200 ms), is 0.4 s. Direct exchange and
# multicast carry k - 1 = 3 streams on the access link: 10/3 Gb/s, 8 Gbit / (10/3 Gb/s) = 2.4 s,
# plus the group's span (A to D, 60 ms): 2.46 s. In-line aggregation receives one merged
# stream: 0.8 s + 60 ms = 0.86 s.
LINE = [10, 20, 30]


def test_ring_all_reduce_by_hand() -> None:
    wan = line_wan(LINE, capacity_bps=100e9)
    assert ring_order(wan.delay, (0, 1, 2, 3)) == (0, 1, 3, 2)
    g = group_cost(wan, [0, 1, 2, 3], "plain")
    assert g.collective == "ring"
    assert g.rate_bps == pytest.approx(10e9) and g.limit == "access"
    assert g.time_s == pytest.approx(6 * 2e9 / 10e9 + 0.050)
    assert g.order == (0, 1, 3, 2)  # what the leaders are told
    assert g.memory_bytes == 0.0  # the hosts sum: no aggregator memory


def test_direct_exchange_multicast_and_inna_by_hand() -> None:
    wan = line_wan(LINE, capacity_bps=100e9)
    m = group_cost(wan, [0, 1, 2, 3], "multicast")
    assert m.collective == "multicast" and m.rate_bps == pytest.approx(10e9 / 3)
    assert m.time_s == pytest.approx(8e9 / (10e9 / 3) + 0.060)
    inna = group_cost(wan, [0, 1, 2, 3], "inna")
    assert inna.collective == "inna" and inna.time_s == pytest.approx(0.8 + 0.060)
    pair = group_cost(wan, [0, 1], "plain")  # a ring of two: two halves, the same time
    assert pair.collective == "direct" and pair.order == ()
    assert pair.time_s == pytest.approx(0.8 + 0.010)


def test_ring_streams_share_a_wan_link() -> None:
    """1 Gb/s links: every directed link carries one of the ring's streams (B->D crosses B->C,
    C->A crosses C->B), so the links, not access, bound it at 1 Gb/s. Direct exchange would put
    four streams on B->C: 32 s against the ring's 6 x 2 s + 50 ms."""
    wan = line_wan(LINE, capacity_bps=1e9)
    g = group_cost(wan, [0, 1, 2, 3], "plain")
    assert g.collective == "ring" and g.limit.startswith("link")
    assert g.rate_bps == pytest.approx(1e9)
    assert g.time_s == pytest.approx(6 * 2e9 / 1e9 + 0.050)


def test_a_ring_whose_hops_outlast_its_segments_pays_the_chain() -> None:
    """100 MB over the same line: a segment is 20 ms, so the chain of six hops (200 ms, see
    above) bounds the ring, not its link (6 x 20 ms + 50 ms): 20 ms + 200 ms. Direct exchange
    takes 3 x 80 ms + 60 ms."""
    wan = line_wan(LINE, capacity_bps=100e9)
    g = group_cost(wan, [0, 1, 2, 3], "plain", update_bytes=10**8)
    assert g.collective == "ring"
    assert g.time_s == pytest.approx(0.020 + 0.200)


def test_inna_is_never_slower_than_multicast_on_the_nine_cities() -> None:
    wan = default_wan()
    planner = Planner(wan)
    for memory in (25_600_000, 1_600_000_000):
        params = dict(update_bytes=GB, memory_bytes=memory, access_bps=10e9)
        inna = planner.plan(CostParams(**params))
        mcast = planner.plan(CostParams(**params, network="multicast"))
        for f in inna.families:
            assert f.time_s <= mcast.family(f.family).time_s * (1 + 1e-9), f.family
    big = dict(update_bytes=GB, memory_bytes=1_600_000_000, access_bps=10e9)
    plain = planner.plan(CostParams(**big, network="plain"))
    inna = planner.plan(CostParams(**big))
    # all-to-all merged in line, D / B + span, against the pipelined ring's 2 (k - 1) / k D / B:
    # 0.93 s against 1.52 s
    assert 1.5 < plain.best.time_s / inna.best.time_s < 2 * 8 / 9


def test_an_unknown_network_is_refused() -> None:
    with pytest.raises(PlanError, match="unknown network 'ecmp'; known: plain, multicast, inna"):
        CostParams(GB, 10**9, 10e9, network="ecmp")


def test_the_sweep_finds_where_inna_overtakes_a_plain_wan() -> None:
    """inna's fastest below ~80 MB is rotating triples (1.82 s), slower than a plain WAN's one
    pipelined ring of nine (1.52 s); all-to-all merged in line needs memory for its skew, and
    send offsets that align arrivals need less. Just above the memory the sweep names, inna is
    faster; just below, it is not."""
    planner = Planner(default_wan())
    base = CostParams(GB, 10**6, 10e9, align=False)
    result = sweep(planner, base, memory_points(10**6, 8 * GB, 12))
    plain, multicast = result.baseline("plain"), result.baseline("multicast")
    assert plain is not None and multicast is not None
    assert [p.params.network for p in result.plans] == ["inna"] * 12
    mark = result.inna_beats_plain_bytes
    assert mark is not None and 10**6 < mark < 8 * GB
    below = planner.plan(replace(base, memory_bytes=round(mark * 0.95))).best.time_s
    above = planner.plan(replace(base, memory_bytes=round(mark * 1.05))).best.time_s
    assert below >= plain.best.time_s > above
    aligned = sweep(planner, replace(base, align=True), memory_points(10**6, 8 * GB, 12))
    assert aligned.inna_beats_plain_bytes is not None and aligned.inna_beats_plain_bytes < mark
    everywhere = sweep(planner, base, [GB, 2 * GB])
    assert everywhere.beats_plain_everywhere  # no crossing inside the range: faster throughout
    none = sweep(planner, base, [10**6, 2 * 10**6])
    assert none.inna_beats_plain_bytes is None and not none.beats_plain_everywhere
