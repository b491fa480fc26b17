"""controller/cluster/runs.py with a stand-in cluster already measured: the islands placed as the
scenario says or chosen, and every refusal made before anything starts (a machine the cluster
does not have, a crossing link shorter than its wire, a clock known too loosely)."""

from __future__ import annotations

import dataclasses
import functools
from dataclasses import dataclass
from typing import Any

import pytest

from controller.cluster.clocks import ClockOffset, ClockRefused, PathDelay, WanDelayRefused
from controller.cluster.nodes import NodeFacts
from controller.cluster.placement import PlacementError
from controller.cluster.runs import prepare
from controller.cluster.survey import Survey
from controller.runner import calibration
from controller.runner.emulation import Emulation, resolve
from controller.runner.flags import RoundSeen, flag_round
from controller.runner.scenario import parse_scenario
from tests.unit.cluster.fakes import StandIn, StandInCluster
from topo.loader import default_wan

A, B, C = "10.250.0.1", "10.250.0.2", "10.250.0.3"
THIRDS = (A, A, A, B, B, B, C, C, C)


def facts(address: str) -> NodeFacts:
    return NodeFacts(address, address, 2, 0, None, None, "2.60.0", "3.11.2", "0.1.0", "0.1.0")


def survey(wire_s: float = 2e-5, uncertainty_s: float = 2e-5) -> Survey:
    nodes = tuple(facts(m) for m in (A, B, C))
    clocks = tuple(ClockOffset(0.0, uncertainty_s, 10, 2 * uncertainty_s, 1e-4) for _ in nodes)
    pairs = ((A, B), (A, C), (B, C))
    wires = tuple(PathDelay(p, wire_s, 10, 2 * wire_s, 1e-4) for p in pairs)
    return Survey(f"{A}:6379", nodes, clocks, wires)


@dataclass
class Machine(StandIn):
    """A machine's agent measuring its frame rates: two cores of this kind, one busy."""

    busy: float = 0.0

    def on_measure_machine(self, em: Emulation) -> calibration.Machine:
        return calibration.Machine(0, 0, 0, 1.0, 250_000.0, 2, "native", 14_000.0, self.busy)


class Measured(StandInCluster):
    """A cluster whose survey is already made; `busy` the cores other work holds per machine."""

    def __init__(self, measured: Survey, busy: dict[str, float] | None = None) -> None:
        held = busy or {}
        super().__init__(
            {n.address: Machine(n.address, busy=held.get(n.address, 0.0)) for n in measured.nodes}
        )
        self.measured = measured

    def survey(self, exchanges: int) -> Survey:
        return self.measured


@functools.cache
def emulation(placed: bool) -> Emulation:
    text = "name: c\nhosts: 1\nmemory: [1.6GB]\nschedules: [all-to-all]\n"
    if placed:
        pairs = zip(default_wan().names, THIRDS, strict=True)
        text += "placement: {" + ", ".join(f"{n}: {m}" for n, m in pairs) + "}\n"
    return resolve(parse_scenario(text))


def test_the_scenario_s_placement_is_kept_and_its_crossing_links_given_their_delays() -> None:
    em = emulation(placed=True)
    prepared = prepare(Measured(survey()), em)  # type: ignore[arg-type]
    assert prepared.node_of == THIRDS and not prepared.chosen
    wan = em.scenario.wan
    node_of = dict(zip(wan.names, THIRDS, strict=True))
    cut = {(link.a, link.b) for link in wan.links if node_of[link.a] != node_of[link.b]}
    assert {(x.a, x.b) for x in prepared.crossing.links} == cut
    assert all(x.emulated_s == pytest.approx(x.target_s - 2e-5) for x in prepared.crossing.links)
    recorded: dict[str, Any] = prepared.to_json()
    assert recorded["placement"]["Tokyo"] == A and recorded["clocks"]["loose_nodes"] == []


def test_a_placement_naming_a_machine_the_cluster_lacks_is_refused() -> None:
    em = emulation(placed=True)
    missing = dataclasses.replace(survey(), nodes=survey().nodes[:2], clocks=survey().clocks[:2])
    cluster = Measured(missing)
    with pytest.raises(PlacementError, match=rf"on node '{C}', which the cluster does not have"):
        prepare(cluster, em)  # type: ignore[arg-type]
    assert all(a.calls == [] for a in cluster.agents)  # refused before any machine measured


def test_the_scenario_s_placement_is_judged_at_every_machine_s_measured_rates() -> None:
    """Each machine's load in cores from its own measured rates (before, a placement given was
    judged by cores alone and every machine's load read 0.00 cores); a machine other work holds
    is said not to fit, and the run is still placed as given."""
    cluster = Measured(survey(), busy={A: 1.98})
    prepared = prepare(cluster, emulation(placed=True))  # type: ignore[arg-type]
    assert prepared.node_of == THIRDS
    loads = {load.node.name: load for load in prepared.placement.loads}
    assert all(load.cores_needed > 0 for load in loads.values())
    assert loads[A].node.free_cores == pytest.approx(0.02)
    assert loads[A].verdict != loads[B].verdict == "fits"


def test_a_crossing_link_shorter_than_its_wire_is_refused_naming_it() -> None:
    with pytest.raises(WanDelayRefused, match=r"link .+: its delay .+ is below the 200 ms"):
        prepare(Measured(survey(wire_s=0.2)), emulation(placed=True))  # type: ignore[arg-type]


def test_a_clock_known_too_loosely_is_refused_naming_the_machine() -> None:
    with pytest.raises(ClockRefused, match=rf"on nodes '{A}' \(± 5.00 s\), '{B}'"):
        prepare(Measured(survey(uncertainty_s=5.0)), emulation(placed=True))  # type: ignore[arg-type]


def test_a_placement_chosen_crosses_no_link_where_one_machine_holds_every_island() -> None:
    cluster = Measured(survey())
    prepared = prepare(cluster, emulation(placed=False))  # type: ignore[arg-type]
    assert prepared.chosen and len(set(prepared.node_of)) == 1
    assert prepared.crossing.links == ()
    assert all(("measure_machine", (emulation(placed=False),)) in a.calls for a in cluster.agents)


def test_a_placement_chosen_keeps_off_a_machine_other_work_holds() -> None:
    cluster = Measured(survey(), busy={A: 2.0})  # machine A's two cores held by other work
    prepared = prepare(cluster, emulation(placed=False))  # type: ignore[arg-type]
    assert A not in prepared.node_of and len(set(prepared.node_of)) == 1


def test_in_the_flag_mode_loose_clocks_run_and_say_why_every_round_is_flagged() -> None:
    loose = Measured(survey(uncertainty_s=5.0))
    prepared = prepare(loose, emulation(placed=True), "flag")  # type: ignore[arg-type]
    assert prepared.clocks.flag_rounds
    assert f"'{A}' (± 5.00 s)" in prepared.clocks.reason
    seen = RoundSeen(time_s=1.0, predicted_s=1.0, clocks=prepared.clocks.reason)
    assert flag_round(seen) == {"clocks": prepared.clocks.reason}
    assert flag_round(RoundSeen(time_s=1.0, predicted_s=1.0)) == {}
