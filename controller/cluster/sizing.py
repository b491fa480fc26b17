"""How many machines a scenario's islands need at each scale factor (`innet plan machines`).

Each island's busiest load over every play of the scenario (`placement.island_loads`, at the
scenario's own scale) is rescaled to each scale factor asked about (every rate falls as 1 /
scale) and packed on the fewest machines of one kind, each within `TIGHT_SHARE` of its cores and
no switch over that share of a core, which the machine check calls "fits"
(`placement.machines_needed`); among the placements on that many machines, the one crossing
the fewest and slowest WAN links. A scale at which one island alone does not fit on a machine
gets no number: more machines do not help.

    >>> from topo.wan import City, Wan, WanLink
    >>> cities = [City(n, n[:3].upper(), "", 0, 0) for n in ("Tokyo", "Osaka", "Paris", "Lyon")]
    >>> wan = Wan("ring", tuple(cities), tuple(WanLink(a, b, ms / 1e3, 1e10, "") for a, b, ms in
    ...     [("Tokyo", "Osaka", 5), ("Paris", "Lyon", 4), ("Tokyo", "Paris", 110),
    ...      ("Osaka", "Lyon", 120)]))
    >>> loads = tuple(IslandLoad(i, name, 1_000_000, 0, scale=1_000)
    ...               for i, name in enumerate(wan.names))
    >>> machine = Node(MACHINE, cores=1, frames_per_cpu_s=2_000_000, leader_frames_per_cpu_s=1e6)
    >>> print(sizing_text(size("ring", wan, loads, machine, [500, 2_000, 4_000])))
    ... # doctest: +NORMALIZE_WHITESPACE
    ring: 4 islands; at its scale, 1000, the busiest switch processes 1,000,000 frames/s
    (Tokyo), the busiest leader 0
    machine: 1 core; one core processes 2,000,000 frames/s of the switch pipeline and 1,000,000
    of a leader (as given)
    fits: a machine's islands need at most 50% of its cores, no switch over 50% of a core (the
    machine check's "fits")
    <BLANKLINE>
    scale  machines  busiest machine  crossing WAN links
    -----  --------  ---------------  ----------------------------------
      500      none                -  -
     2000         2            50.0%  2, the shortest Tokyo-Paris 110 ms
     4000         1            50.0%  none
    <BLANKLINE>
    scale 500: no number of machines: Tokyo alone needs 1.00 cores at scale 500 (its switch
    2,000,000 frames/s, 1.00 of a core): more than 50% of the 1.00 free cores of machine, or a
    switch over 50% of one core; only a larger scale fits it
    scale 2000: machine-1 Tokyo, Osaka (50.0%); machine-2 Paris, Lyon (50.0%); crossing:
    Tokyo-Paris 110 ms, Osaka-Lyon 120 ms
    scale 4000: machine-1 Tokyo, Osaka, Paris, Lyon (50.0%); crossing: none

The machine is this one as the machine check measures it (`measured_machine`: about a second;
the table counts it idle, whatever else held its CPU meanwhile) or one described by its cores
and the frames per second one core processes (`given_machine`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from controller.cluster.placement import (
    IslandLoad,
    MachineCount,
    Node,
    island_loads,
    machines_needed,
)
from controller.exceptions import CommandLineError
from controller.planner.report import percent, table
from controller.runner.calibration import TIGHT_SHARE, Machine, measure
from controller.runner.emulation import Emulation, resolve
from controller.runner.need import plan_need
from controller.runner.scenario import load_scenario
from innet.jsontypes import JSONObject, JSONValue
from topo.wan import Wan, WanLink

MACHINE = "machine"  # the machines are called machine-1, machine-2, ...
MACHINE_FLAGS = ("--cores", "--switch-fps", "--leader-fps")


@dataclass(frozen=True, slots=True)
class Sizing:
    """A scenario's islands, the machine they are to run on, and the machines each scale needs."""

    scenario: str
    wan: Wan
    loads: tuple[IslandLoad, ...]  # at the scenario's own scale
    machine: Node  # one machine of the kind, idle
    rows: tuple[MachineCount, ...]  # one per scale asked about, in that order
    measured: Machine | None = None  # the machine check's figures, when measured here

    @property
    def scale(self) -> float:
        """The scenario's own scale, which the loads hold at."""
        return self.loads[0].scale if self.loads else 1.0


# --- the machine ----------------------------------------------------------------------------------


def given_machine(
    cores: int | None, switch_fps: float | None, leader_fps: float | None
) -> Node | None:
    """The machine the three flags describe; None when none is given (measure this one);
    CommandLineError naming the flags missing when only some are."""
    values = (cores, switch_fps, leader_fps)
    if all(value is None for value in values):
        return None
    missing = [flag for flag, value in zip(MACHINE_FLAGS, values, strict=True) if value is None]
    if missing:
        raise CommandLineError(
            f"{', '.join(MACHINE_FLAGS)} describe another machine together: give "
            f"{' and '.join(missing)} too, or none of them to measure this machine"
        )
    assert cores is not None and switch_fps is not None and leader_fps is not None
    return Node(MACHINE, cores, switch_fps, leader_fps)


def measured_machine(em: Emulation) -> tuple[Node, Machine]:
    """This machine as the machine check measures it for `em` (about a second: the switches'
    back end, a leader paced at the busiest leader's rate), counted idle: a machine of the
    cluster runs the islands alone."""
    machine = measure(em, leader_fps=plan_need(em).leader_peak_fps)
    node = Node(MACHINE, machine.cores, machine.frames_per_cpu_s, machine.leader_frames_per_cpu_s)
    return node, machine


# --- the sizing -----------------------------------------------------------------------------------


def size(
    scenario: str,
    wan: Wan,
    loads: Sequence[IslandLoad],
    machine: Node,
    scales: Sequence[float],
    measured: Machine | None = None,
) -> Sizing:
    """For each scale, the machines like `machine` the islands need (pure)."""
    rows = machines_needed(wan, loads, machine, scales, TIGHT_SHARE)
    return Sizing(scenario, wan, tuple(loads), machine, rows, measured)


def plan_machines(path: Path, scales: Sequence[float], machine: Node | None = None) -> Sizing:
    """The scenario in `path` read and resolved (as `innet run --check` does), each island's
    busiest load, and the machines each scale needs: of `machine`'s kind, or of this one's,
    measured (None)."""
    em = resolve(load_scenario(path))
    measured = None
    if machine is None:
        machine, measured = measured_machine(em)
    return size(em.scenario.name, em.scenario.wan, island_loads(em), machine, scales, measured)


# --- the report -----------------------------------------------------------------------------------


def machine_text(sizing: Sizing) -> str:
    """One line: the machine's cores and rates, and where they come from."""
    node, measured = sizing.machine, sizing.measured
    pipeline = f" ({measured.backend})" if measured is not None else ""
    leader = node.leader_frames_per_cpu_s
    of_leader = (
        f" and {leader:,.0f} of a leader"
        if math.isfinite(leader)
        else "; a leader's not measured (no leader traffic)"
    )
    cores = f"{node.cores} core{'' if node.cores == 1 else 's'}"
    line = (
        f"machine: {cores}; one core processes {node.frames_per_cpu_s:,.0f} frames/s of the "
        f"switch pipeline{pipeline}{of_leader}"
    )
    if measured is None:
        return f"{line} (as given)"
    busy = measured.cpu_share < 0.95 or measured.others_cores >= 0.05
    meanwhile = (
        f"; CPU share {measured.cpu_share:.2f}, other work {measured.others_cores:.2f} cores "
        "meanwhile, counted idle"
        if busy
        else ""
    )
    return f"{line} (measured on this machine{meanwhile})"


def sizing_text(sizing: Sizing) -> str:
    """The scenario's busiest island, the machine, and a row per scale: machines, the busiest
    machine's share, the WAN links that cross; then each scale's machines and their islands."""
    lines = [_scenario_line(sizing), machine_text(sizing), _fits_line(), ""]
    header = ["scale", "machines", "busiest machine", "crossing WAN links"]
    rows = [
        [
            f"{row.scale:g}",
            str(row.machines) if row.machines is not None else "none",
            percent(_busiest_share(row)) if row.placement is not None else "-",
            _crossing_text(row) if row.placement is not None else "-",
        ]
        for row in sizing.rows
    ]
    lines += [table(header, rows, [True, True, True, False]), ""]
    lines += [_machines_line(sizing, row) for row in sizing.rows]
    return "\n".join(lines)


def sizing_json(sizing: Sizing) -> JSONObject:
    """The same as one JSON document (null for a figure that has none)."""
    node, measured = sizing.machine, sizing.measured
    machine: JSONObject = {
        "cores": node.cores,
        "switch_fps_per_core": node.frames_per_cpu_s,
        "leader_fps_per_core": _finite(node.leader_frames_per_cpu_s),
        "measured": measured is not None,
        "backend": measured.backend if measured is not None else None,
        "summary": machine_text(sizing),
    }
    if measured is not None:
        machine.update(cpu_share=measured.cpu_share, others_cores=measured.others_cores)
    islands: list[JSONValue] = [
        {"name": load.name, "switch_fps": load.switch_fps, "leader_fps": load.leader_fps}
        for load in sizing.loads
    ]
    return {
        "scenario": sizing.scenario,
        "scale": sizing.scale,
        "islands": islands,
        "machine": machine,
        "margin": TIGHT_SHARE,
        "rows": [_row_json(sizing.wan, row) for row in sizing.rows],
    }


def _row_json(wan: Wan, row: MachineCount) -> JSONObject:
    placement = row.placement
    if placement is None:
        return {
            "scale": row.scale,
            "machines": None,
            "why": row.why,
            "busiest_share": None,
            "crossing": [],
            "nodes": [],
            "optimal": None,
        }
    crossing: list[JSONValue] = [
        {"a": link.a, "b": link.b, "delay_ms": link.delay_s * 1e3} for link in placement.crossing
    ]
    nodes: list[JSONValue] = [
        {
            "name": load.node.name,
            "islands": [wan.names[i] for i in load.islands],
            "cores_needed": load.cores_needed,
            "share": load.share,
        }
        for load in placement.loads
        if load.islands
    ]
    return {
        "scale": row.scale,
        "machines": row.machines,
        "why": None,
        "busiest_share": _busiest_share(row),
        "crossing": crossing,
        "nodes": nodes,
        "optimal": placement.optimal,
    }


def _scenario_line(sizing: Sizing) -> str:
    loads = sizing.loads
    count = f"{len(loads)} island{'' if len(loads) == 1 else 's'}"
    if not loads:
        return f"{sizing.scenario}: {count}"
    busiest = max(loads, key=lambda load: load.switch_fps)
    leader = max(load.leader_fps for load in loads)
    return (
        f"{sizing.scenario}: {count}; at its scale, {sizing.scale:g}, the busiest switch "
        f"processes {busiest.switch_fps:,.0f} frames/s ({busiest.name}), the busiest leader "
        f"{leader:,.0f}"
    )


def _fits_line() -> str:
    return (
        f"fits: a machine's islands need at most {TIGHT_SHARE:.0%} of its cores, no switch over "
        f'{TIGHT_SHARE:.0%} of a core (the machine check\'s "fits")'
    )


def _busiest_share(row: MachineCount) -> float:
    assert row.placement is not None
    return max(load.share for load in row.placement.loads)


def _crossing_text(row: MachineCount) -> str:
    """How many links cross, and the shortest delay among them (the machines' own network
    delay is taken off each: the shortest leaves the least room)."""
    crossing = row.crossing
    if not crossing:
        return "none"
    shortest = min(crossing, key=lambda link: link.delay_s)
    return f"{len(crossing)}, the shortest {_link_text(shortest)}"


def _link_text(link: WanLink) -> str:
    return f"{link.a}-{link.b} {link.delay_s * 1e3:.3g} ms"


def _machines_line(sizing: Sizing, row: MachineCount) -> str:
    if row.placement is None:
        return row.summary  # "scale S: no number of machines: ISLAND alone needs ..."
    machines = "; ".join(
        f"{load.node.name} {', '.join(sizing.wan.names[i] for i in load.islands)} "
        f"({percent(load.share)})"
        for load in row.placement.loads
        if load.islands
    )
    links = ", ".join(_link_text(link) for link in row.crossing) or "none"
    found = "" if row.placement.optimal else " (the best placement found, not proved best)"
    return f"scale {row.scale:g}: {machines}; crossing: {links}{found}"


def _finite(value: float) -> float | None:
    return value if math.isfinite(value) else None
