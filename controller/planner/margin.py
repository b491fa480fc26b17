"""How robust the planner's choice is to jitter: the band of jitters it is costed at, and the
choice that band allows (docs/cost-model.md, "Jitter").

A plan is made at the WAN's jitter j and again at j - margin (floored at 0) and j + margin: the
band. A candidate (a schedule family, or a network and a family) is the winner only when it is
fastest, by time to consensus, at every point of the band. Otherwise no winner is named: the
candidates fastest at some point of the band are within the margin, and the report says so.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

from controller.planner.exceptions import PlanError
from controller.planner.optimise import Plan
from innet.units import format_duration
from topo.wan import Wan


@dataclass(frozen=True)
class Band:
    """The jitters a choice is checked at: `jitter_s` less and plus `margin_s` (seconds)."""

    jitter_s: float
    margin_s: float

    def __post_init__(self) -> None:
        for name, value in (("jitter", self.jitter_s), ("margin", self.margin_s)):
            if not (math.isfinite(value) and value >= 0):
                raise PlanError(f"{name} must be a finite number of seconds >= 0, got {value!r}")

    @property
    def shifts(self) -> tuple[float, ...]:
        """What each point adds to every link's jitter, lowest first, each once: (-margin, 0,
        +margin), the first floored so that no jitter falls below 0 (one point for no margin)."""
        if self.margin_s == 0:
            return (0.0,)
        low = -min(self.margin_s, self.jitter_s)
        return tuple(dict.fromkeys((low, 0.0, self.margin_s)))

    @property
    def points_s(self) -> tuple[float, ...]:
        """The band's jitters: the shifts applied to `jitter_s`."""
        return tuple(self.jitter_s + s for s in self.shifts)

    def describe(self) -> str:
        """'±2.00 ms around 2.00 ms of jitter', for reports."""
        return (
            f"±{format_duration(self.margin_s)} around {format_duration(self.jitter_s)} of jitter"
        )


@dataclass(frozen=True)
class Choice:
    """What the band allows: one `winner` fastest at every point, or none, and then the
    candidates `within` the margin (each fastest at some point), fastest at `jitter_s` first."""

    winner: str | None
    within: tuple[str, ...]
    band: Band

    def describe(self) -> str:
        """One line for reports."""
        if len(self.band.shifts) == 1:
            return f"{self.winner} is fastest (no jitter margin)"
        margin = format_duration(self.band.margin_s)
        if self.winner is not None:
            return f"{self.winner} is fastest at every point of the ±{margin} jitter margin"
        names = ", ".join(self.within[:-1]) + f" and {self.within[-1]}"
        return f"no winner: {names} are within the ±{margin} jitter margin"


def shifted(wan: Wan, shift_s: float) -> Wan:
    """The WAN with every link's jitter moved by `shift_s` seconds (never below 0)."""
    if shift_s == 0:
        return wan
    links = tuple(replace(ln, jitter_s=max(0.0, ln.jitter_s + shift_s)) for ln in wan.links)
    return replace(wan, links=links)


def band_wans(wan: Wan, band: Band) -> tuple[Wan, ...]:
    """The WAN at each of the band's points, in `band.shifts` order (`wan` itself at 0)."""
    return tuple(shifted(wan, s) for s in band.shifts)


def band_of(wan: Wan, margin_s: float | None = None) -> Band:
    """The band around this WAN's largest link jitter; the margin defaults to that jitter."""
    jitter = max((link.jitter_s for link in wan.links), default=0.0)
    return Band(jitter, jitter if margin_s is None else margin_s)


def robust_choice(times: Mapping[str, Sequence[float]], band: Band) -> Choice:
    """The choice from each candidate's time at each point of the band (in `band.shifts`
    order). Ties at a point go to the candidate listed first."""
    names = list(times)
    if not names:
        raise PlanError("no candidates to choose from: plan at least one family")
    count = len(band.shifts)
    for name, row in times.items():
        if len(row) != count:
            raise PlanError(f"{name}: {len(row)} times for a band of {count} points")
    fastest: set[str] = set()
    for p in range(count):
        fastest.add(min(names, key=lambda n: times[n][p]))
    centre = band.shifts.index(0.0)
    within = tuple(sorted(fastest, key=lambda n: (times[n][centre], names.index(n))))
    winner = within[0] if len(within) == 1 else None
    return Choice(winner, within, band)


def plans_choice(points: Sequence[Sequence[Plan]], band: Band) -> Choice:
    """The choice among every family of every plan, one sequence of plans per band point (the
    same networks and families at each). Candidates are named by family, or by network and
    family when the plans are of more than one network."""
    networks = {p.params.network for p in points[0]}
    times: dict[str, list[float]] = {}
    for plans in points:
        for plan in plans:
            for fam in plan.families:
                name = fam.family if len(networks) == 1 else f"{plan.params.network} {fam.family}"
                times.setdefault(name, []).append(fam.time_s)
    return robust_choice(times, band)
