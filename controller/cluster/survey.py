"""A cluster measured before anything runs on it (`innet cluster check`): its machines, each
machine's clock against the driver's, and the wire between every two machines.

Clocks: the driver probes every node's agent (controller/cluster/probe.py) and keeps, per node,
the exchange with the shortest round trip (`estimate_offset`): the node's offset from the
driver's clock within ± half that round trip. Wires: every node probes every other (each pair
once, all pairs at the same time) and the one-way delay is half the shortest round trip
(`path_delay`); a WAN link carried over that wire adds only the rest of its delay
(`crossing_delays`).
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass

from controller.cluster.agent import Agents
from controller.cluster.clocks import ClockOffset, PathDelay, estimate_offset, path_delay
from controller.cluster.nodes import NodeFacts
from controller.cluster.probe import probe
from controller.planner.report import table
from innet.jsontypes import JSONObject
from innet.units import format_duration


@dataclass(frozen=True, slots=True)
class Survey:
    """The nodes, in node order, their clocks against the driver's and the wires between them."""

    address: str  # the head's
    nodes: tuple[NodeFacts, ...]
    clocks: tuple[ClockOffset, ...]  # per node, in node order
    wires: tuple[PathDelay, ...]  # per pair of nodes, in pair order (by address)

    @property
    def physical(self) -> dict[tuple[str, str], float]:
        """One-way seconds per pair of node addresses, as `crossing_delays` takes them."""
        return {w.nodes: w.one_way_s for w in self.wires}

    @property
    def text(self) -> str:
        ray = self.nodes[0].ray if self.nodes else None
        lines = [
            f"cluster {self.address}: {len(self.nodes)} node{'s' if len(self.nodes) != 1 else ''}"
            f", Ray {ray}",
            "",
        ]
        rows = [
            (node.address, node.hostname, str(node.cores), _clock_text(clock))
            for node, clock in zip(self.nodes, self.clocks, strict=True)
        ]
        header = ("node", "host", "cores", "clock against this driver's")
        lines.append(table(header, rows, [False, False, True, False]))
        if self.wires:
            lines += ["", "wires between nodes (one way: half the shortest round trip)"]
            columns = ("nodes", "one way", "round trip min", "median", "exchanges")
            wires = [
                (
                    f"{w.nodes[0]} - {w.nodes[1]}",
                    format_duration(w.one_way_s),
                    format_duration(w.min_round_trip_s),
                    format_duration(w.median_round_trip_s),
                    str(w.samples),
                )
                for w in self.wires
            ]
            lines.append(table(columns, wires, [False, True, True, True, True]))
        return "\n".join(lines)

    def to_json(self) -> JSONObject:
        return {
            "address": self.address,
            "nodes": [
                {**node.to_json(), "clock": clock.to_json()}
                for node, clock in zip(self.nodes, self.clocks, strict=True)
            ],
            "wires": [w.to_json() for w in self.wires],
        }


def measure(address: str, nodes: Sequence[NodeFacts], cluster: Agents, exchanges: int) -> Survey:
    """Probe every node's agent from this driver, then every pair of agents (in the order of
    `nodes`)."""
    agents = cluster.agents
    targets = cluster.gather("where it answers probes", [a.responder.remote() for a in agents])
    clocks = tuple(
        estimate_offset(probe(tuple(t), exchanges, who=f"node {n.name}"), node=n.address)
        for n, t in zip(nodes, targets, strict=True)
    )
    pairs = list(itertools.combinations(range(len(nodes)), 2))
    asked = [
        agents[i].probe.remote(tuple(targets[j]), exchanges, f"node {nodes[j].name}")
        for i, j in pairs
    ]
    probers = [nodes[i].address for i, _ in pairs]
    found = cluster.gather_from(probers, "the wire to another node", asked)
    wires = tuple(
        path_delay(nodes[i].address, nodes[j].address, [s.round_trip_s for s in samples])
        for (i, j), samples in zip(pairs, found, strict=True)
    )
    return Survey(address, tuple(nodes), clocks, wires)


def _clock_text(clock: ClockOffset) -> str:
    side = "ahead by" if clock.offset_s >= 0 else "behind by"
    return (
        f"{side} {format_duration(abs(clock.offset_s))} ± "
        f"{format_duration(clock.uncertainty_s)} ({clock.samples} exchanges)"
    )
