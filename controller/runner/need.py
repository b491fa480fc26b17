"""What a plan asks of the machine: the frames the switches and the leaders handle (pure).

`plan_need` gives the frames per second the switches must process in the busiest round of any
(network, schedule, memory) the run plays, and the leaders beside them. A stream at the group's rate
is `Emulation.frame_rate_bps(rate) / frame_bits` frames/s, counted once at each switch it enters:
its source's edge (an inna leader sends two copies, WAN|REMOTE and the just-in-time LOCAL one;
direct exchange k - 1 streams) and every switch on its multicast tree or unicast path. A leader
handles what it sends and what it is delivered: the sums (in-line aggregation), the other
members' streams (multicast, direct exchange) or its ring predecessor's.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass

from controller.planner.collectives import direct, ring
from controller.planner.cost import GroupCost, RoundCost
from controller.runner.emulation import Emulation
from innet.vocabulary import Collective
from topo.wan import Wan


@dataclass(frozen=True, slots=True)
class Need:
    """What the plan asks of the switches and the leaders at its busiest."""

    switch_fps: float  # the busiest switch of any round
    total_fps: float  # all switches together, in the busiest round
    headroom_s: float  # the smallest planned timing headroom of any round (inf: none planned)
    busiest: str  # where the busiest switch is: "inna all-to-all at 1.6 GB, round 0, Tokyo"
    tightest: str = ""  # the round with the least headroom: "inna cliques-3 at 25.6 MB, round 1"
    leader_fps: float = 0.0  # frames all leaders send and are delivered, in the busiest round
    leader_peak_fps: float = 0.0  # ... one leader, at its busiest: what `measure` paces at
    scale: float = 0.0  # the emulation's scale factor (0: not known); every rate above is / scale


def group_streams(wan: Wan, group: GroupCost) -> tuple[Counter[int], Counter[tuple[int, int]]]:
    """The streams of one group's exchange at the group's rate: how many each member sends into
    its edge, and how many cross each directed WAN link (u, v), entering v's switch."""
    members = tuple(group.members)
    sent: Counter[int] = Counter()
    links: Counter[tuple[int, int]] = Counter()
    if len(members) < 2 or group.collective == Collective.LOCAL:
        return sent, links
    if group.collective == Collective.RING:
        links.update(ring(wan, members).loads)
        sent.update(members)
    elif group.collective == Collective.DIRECT:
        links.update(direct(wan, members).loads)
        sent.update({m: len(members) - 1 for m in members})
    else:  # inna, multicast: one stream per member down its multicast tree
        for src in members:
            links.update(wan.tree(src, [d for d in members if d != src]))
        copies = 2 if group.collective == Collective.INNA else 1  # inna: WAN|REMOTE, then LOCAL
        sent.update({m: copies for m in members})
    return sent, links


def leader_rates(em: Emulation, wan: Wan, cost: RoundCost) -> dict[int, float]:
    """Frames per second each island's leader sends and is delivered in this round."""
    rates: dict[int, float] = {}
    for group in cost.groups:
        k = len(group.members)
        if not math.isfinite(group.rate_bps) or k < 2 or group.collective == Collective.LOCAL:
            continue
        fps = em.frame_rate_bps(group.rate_bps) / em.packet_format.frame_bits
        sent, _ = group_streams(wan, group)
        received = 1 if group.collective in (Collective.INNA, Collective.RING) else k - 1
        for m in group.members:
            rates[m] = rates.get(m, 0.0) + (sent[m] + received) * fps
    return rates


def round_rates(em: Emulation, wan: Wan, cost: RoundCost) -> dict[int, float]:
    """Frames per second entering each city's switch in this round."""
    rates: dict[int, float] = dict.fromkeys(range(wan.n), 0.0)
    for group in cost.groups:
        if not math.isfinite(group.rate_bps):
            continue  # a group of one: nothing on the wire
        fps = em.frame_rate_bps(group.rate_bps) / em.packet_format.frame_bits
        sent, links = group_streams(wan, group)
        for m, streams in sent.items():
            rates[m] += streams * fps
        for (_, v), streams in links.items():
            rates[v] += streams * fps
    return rates


def plan_need(em: Emulation) -> Need:
    """The busiest switch and the busiest round of every play at every memory point."""
    switch, total, headroom, busiest, tightest = 0.0, 0.0, math.inf, "no round", ""
    leaders, leader_peak = 0.0, 0.0
    for point in em.played:
        wan = em.wan_of(point)
        for play in point.plays:
            for r, cost in enumerate(play.plan.costs):
                per_leader = leader_rates(em, wan, cost)
                leaders = max(leaders, sum(per_leader.values()))
                leader_peak = max([leader_peak, *per_leader.values()])
                rates = round_rates(em, wan, cost)
                city = max(rates, key=rates.__getitem__)
                if rates[city] > switch:
                    switch = rates[city]
                    busiest = f"{play.label} at {point.label}, round {r}, {wan.names[city]}"
                total = max(total, sum(rates.values()))
                # RoundCost.headroom_s is the planner's; a plan without it claims none
                least = float(getattr(cost, "headroom_s", math.inf))
                if 0 < least < headroom:
                    headroom, tightest = least, f"{play.label} at {point.label}, round {r}"
    return Need(switch, total, headroom, busiest, tightest, leaders, leader_peak, em.scenario.scale)
