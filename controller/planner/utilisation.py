"""Compute utilisation against bandwidth: what rate into the WAN keeps the accelerators busy.

A round is C = H x step_time of compute, then the exchange E_r the planner predicts; in the
steady state the compute utilisation is C / (C + mean E) without overlap and C / mean max(C, E)
with it (`compute.steady_utilisation`). The reference is the same islands in one building
(`Wan.in_one_building`): 10 us between any two, a non-blocking fabric of n x the access rate,
and plain ring all-reduce of all-to-all, what one building runs.

`innet plan bandwidth` asks, for each network and target (50, 90, 99%), the least access rate
at which the best family (the one of highest steady-state utilisation at that rate) reaches the
target; by default among the families that average every island within a cycle (all-to-all
and cliques; `--family ring-pairs` adds the pairs). The swept quantity is each island's access
rate b; every WAN link's capacity is scaled by the same factor, b over the `--bandwidth` given,
so the topology's backbone-to-access ratio is kept (the nine cities: 100 Gb/s links at 10 Gb/s
access). Utilisation does not fall as b grows
(every rate bound but the aggregator's memory grows with it), so the least rate is found by
bisection in log space between 1 Mb/s and 10 Tb/s, to within 1%. A target the delays (or the
memory) keep out of reach even at 10 Tb/s is unreachable, with the utilisation reached there.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace

from controller.planner.compute import Compute, steady_utilisation
from controller.planner.cost import CostParams
from controller.planner.optimise import FamilyPlan, Planner
from controller.planner.report import jitter_text, percent, table
from innet.jsontypes import JSONObject, JSONValue
from innet.units import format_duration, format_rate, format_size
from innet.vocabulary import PLANNED_NETWORKS, NetworkMode
from topo.wan import BUILDING_DELAY_S, Wan

LOW_BPS = 1e6  # 1 Mb/s: the search's lower end
HIGH_BPS = 1e13  # 10 Tb/s: its upper end, where only delays (and memory) still cost
TOLERANCE = 0.01  # the bisection stops when its bracket is within 1%
REFERENCE_FAMILY = "all-to-all"  # one building exchanges among all its islands at once
DEFAULT_TARGETS = (0.5, 0.9, 0.99)
PAIRS = ("ring-pairs", "exponential-pairs")  # families whose rounds average two islands


def one_building(wan: Wan, access_bps: float) -> Wan:
    """The same islands in one data centre, its fabric non-blocking: n x the access rate."""
    return wan.in_one_building(wan.n * access_bps)


def one_dc_family(building: Wan, params: CostParams, epsilon: float) -> FamilyPlan:
    """Plain all-to-all (ring all-reduce) among the islands of `building`."""
    plain = replace(params, network=NetworkMode.PLAIN)
    plan = Planner(building).plan(plain, epsilon, [REFERENCE_FAMILY])
    return plan.best


@dataclass(frozen=True)
class RoundCompute:
    """`innet plan --compute`: a round's compute, H inner steps at the full-scale step time,
    and the reference to compare with: plain all-to-all among the same islands in one building
    (`building`, one link of its fabric per pair)."""

    compute: Compute
    inner_steps: int
    building: Wan
    one_dc: FamilyPlan

    @classmethod
    def of(
        cls, compute: Compute, inner_steps: int, wan: Wan, params: CostParams, epsilon: float
    ) -> RoundCompute:
        """H inner steps of `compute`, and the reference for `wan`'s islands at `params`."""
        building = one_building(wan, params.access_bps)
        return cls(compute, inner_steps, building, one_dc_family(building, params, epsilon))

    @property
    def round_s(self) -> float:
        return self.compute.round_s(self.inner_steps)

    def utilisation(self, fam: FamilyPlan) -> tuple[float, float]:
        """The steady-state compute utilisation of `fam`'s cycle, without and with overlap."""
        return utilisations(self.round_s, [cost.time_s for cost in fam.costs])

    def describe(self) -> str:
        """What the utilisation columns count and what the reference is, for above a table."""
        link = self.building.links[0]
        return (
            f"{self.compute_text()}\none-dc: the same islands in one building (plain ring "
            f"all-reduce, {format_duration(link.delay_s)} between islands, a non-blocking fabric "
            f"of {format_rate(link.capacity_bps)})"
        )

    def compute_text(self) -> str:
        step = format_duration(self.compute.step_time_s)
        return (
            f"compute: {self.inner_steps} inner steps of {step}, {format_duration(self.round_s)}"
            " a round; utilisation: compute over wall-clock in the steady state, without and with"
            " overlap (the outer update one round late)"
        )

    def json(self) -> JSONObject:
        return {
            "step_time_s": self.compute.step_time_s,
            "inner_steps": self.inner_steps,
            "round_s": self.round_s,
            "source": self.compute.source,
        }

    def building_json(self) -> JSONObject:
        """How the reference is built: plain ring all-reduce over the building's fabric."""
        link = self.building.links[0]
        return {
            "network": NetworkMode.PLAIN,
            "delay_s": link.delay_s,
            "fabric_bps": link.capacity_bps,
        }


def utilisations(compute_s: float, exchanges: Sequence[float]) -> tuple[float, float]:
    """Steady-state utilisation of a cycle of exchanges, without and with overlap."""
    return (
        steady_utilisation(compute_s, exchanges, overlap=False),
        steady_utilisation(compute_s, exchanges, overlap=True),
    )


def scaled(wan: Wan, factor: float) -> Wan:
    """A copy with every link's capacity multiplied by `factor`."""
    links = tuple(replace(link, capacity_bps=link.capacity_bps * factor) for link in wan.links)
    return replace(wan, links=links)


@dataclass
class RatePlans:
    """Every family's round times at any access rate, for one setting (`base` at the rate
    given): one Planner per scaled WAN, shared by the networks, and each rate's costs kept."""

    wan: Wan
    base: CostParams
    compute_s: float
    families: Sequence[str]
    _planners: dict[float, Planner] = field(default_factory=dict)
    _times: dict[tuple[str, float], dict[str, list[float]]] = field(default_factory=dict)

    def round_times(self, network: NetworkMode, bps: float) -> dict[str, list[float]]:
        """Each family's round times over `network` (or the one-building reference, ONE_DC) when
        every island has `bps` into the WAN."""
        key = (network, bps)
        if key not in self._times:
            if network == NetworkMode.ONE_DC:
                planner = Planner(one_building(self.wan, bps))
                params = replace(self.base, access_bps=bps, network=NetworkMode.PLAIN)
                names = [REFERENCE_FAMILY]
            else:
                params = replace(self.base, access_bps=bps, network=network)
                if bps not in self._planners:
                    self._planners[bps] = Planner(scaled(self.wan, bps / self.base.access_bps))
                planner, names = self._planners[bps], list(self.families)
            model = planner.model(params)
            self._times[key] = {
                name: [c.time_s for c in model.schedule_costs(planner.schedule_for(name, model))]
                for name in names
            }
        return self._times[key]

    def best(self, network: NetworkMode, bps: float, overlap: bool) -> tuple[float, str]:
        """The highest steady-state utilisation of any family at `bps`, and that family (the
        first asked for, on a tie)."""
        times = self.round_times(network, bps)
        scored = [(steady_utilisation(self.compute_s, t, overlap), f) for f, t in times.items()]
        return max(scored, key=lambda uf: uf[0])


@dataclass(frozen=True)
class Reached:
    """The least access rate at which a target utilisation is reached (None: not even at
    HIGH_BPS), the family that reaches it, and the utilisation there (at HIGH_BPS if none)."""

    target: float
    bandwidth_bps: float | None
    family: str
    utilisation: float

    def text(self) -> str:
        if self.bandwidth_bps is None:
            return f"unreachable ({percent(self.utilisation)} at most)"
        rate = format_rate(self.bandwidth_bps)
        return f"{'<= ' if self.bandwidth_bps <= LOW_BPS else ''}{rate} {self.family}"

    def json(self) -> JSONObject:
        return {
            "target": self.target,
            "bandwidth_bps": self.bandwidth_bps,
            "reachable": self.bandwidth_bps is not None,
            "family": self.family,
            "utilisation": self.utilisation,
        }


def least_rate(curve: Callable[[float], tuple[float, str]], target: float) -> Reached:
    """Bisection in log space over a non-decreasing utilisation curve: the least rate in
    [LOW_BPS, HIGH_BPS] reaching `target`, to within TOLERANCE above the true one."""
    top = curve(HIGH_BPS)
    if top[0] < target:
        return Reached(target, None, top[1], top[0])
    bottom = curve(LOW_BPS)
    if bottom[0] >= target:
        return Reached(target, LOW_BPS, bottom[1], bottom[0])
    low, high = LOW_BPS, HIGH_BPS
    reached, family = top
    while high > low * (1 + TOLERANCE):
        mid = math.sqrt(low * high)
        u, f = curve(mid)
        if u >= target:
            high, reached, family = mid, u, f
        else:
            low = mid
    return Reached(target, high, family, reached)


@dataclass(frozen=True)
class Line:
    """One network (or the reference) without or with overlap: the utilisation at the rate
    given, and each target's least rate."""

    network: NetworkMode
    overlap: bool
    given: tuple[float, str]  # utilisation and family at the --bandwidth given
    reached: tuple[Reached, ...]


@dataclass(frozen=True)
class BandwidthSearch:
    wan: Wan
    base: CostParams
    compute: RoundCompute
    families: tuple[str, ...]
    targets: tuple[float, ...]
    lines: tuple[Line, ...]


def search_bandwidth(
    wan: Wan,
    base: CostParams,
    compute: RoundCompute,
    targets: Sequence[float] = DEFAULT_TARGETS,
    families: Sequence[str] | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> BandwidthSearch:
    """The least access rate reaching each target, per network and overlap (module docstring);
    `progress(done, total)` after each network and overlap."""
    # by default the families that average every island within a cycle: pairs exchange with one
    # neighbour a round, need no network help, and take a hundred rounds to agree
    names = tuple(families or [f for f in Planner(wan).default_families() if f not in PAIRS])
    rates = RatePlans(wan, base, compute.round_s, names)
    lines = []
    todo = [(n, o) for n in (NetworkMode.ONE_DC, *PLANNED_NETWORKS) for o in (False, True)]
    for done, (network, overlap) in enumerate(todo, 1):

        def curve(
            bps: float, network: NetworkMode = network, overlap: bool = overlap
        ) -> tuple[float, str]:
            return rates.best(network, bps, overlap)

        given = curve(base.access_bps)
        lines.append(Line(network, overlap, given, tuple(least_rate(curve, t) for t in targets)))
        if progress is not None:
            progress(done, len(todo))
    return BandwidthSearch(wan, base, compute, names, tuple(targets), tuple(lines))


def _ratio_text(wan: Wan, access_bps: float) -> str:
    low = min(link.capacity_bps for link in wan.links)
    high = max(link.capacity_bps for link in wan.links)
    links = format_rate(low) if low == high else f"{format_rate(low)} to {format_rate(high)}"
    ratio = (
        f"{low / access_bps:.3g}x"
        if low == high
        else (f"{low / access_bps:.3g}x to {high / access_bps:.3g}x")
    )
    return f"{links} links at {format_rate(access_bps)} access, {ratio} the access rate"


def bandwidth_text(result: BandwidthSearch) -> str:
    """The least access rate per target, network and overlap, the reference first."""
    wan, p, given = result.wan, result.base, format_rate(result.base.access_bps)
    lines = [
        f"{wan.name}: {wan.n} islands; update {format_size(p.update_bytes)}, aggregator memory "
        f"{format_size(p.memory_bytes)}, send offsets {'on' if p.align else 'off'}, {p.pacing} "
        f"pacing{jitter_text(wan)}",
        result.compute.compute_text(),
        f"swept: each island's access rate into the WAN, {format_rate(LOW_BPS)} to "
        f"{format_rate(HIGH_BPS)} to within {TOLERANCE:.0%}, every WAN link's capacity scaled "
        f"with it ({_ratio_text(wan, p.access_bps)})",
        f"one-dc: the same islands in one building (plain ring all-reduce of {REFERENCE_FAMILY}, "
        f"{format_duration(BUILDING_DELAY_S)} between islands, a non-blocking fabric of {wan.n}x "
        "the access rate)",
        f"family: the one of highest utilisation at each rate, of {', '.join(result.families)}",
        "",
    ]
    header = ["network", "overlap", f"at {given}", *(f"{t:.0%}" for t in result.targets)]
    rows = [
        [
            line.network,
            "yes" if line.overlap else "no",
            percent(line.given[0]),
            *(r.text() for r in line.reached),
        ]
        for line in result.lines
    ]
    lines.append(table(header, rows, [False, False, True, *(False for _ in result.targets)]))
    pairs = sorted({r.family for line in result.lines for r in line.reached} & set(PAIRS))
    if pairs:
        lines += [
            "",
            f"{', '.join(pairs)}: each round averages pairs of islands only, and consensus takes "
            "many rounds; --family all-to-all (or cliques-K) compares the networks on exchanges "
            "that average every island within a cycle",
        ]
    if any(r.bandwidth_bps is None for line in result.lines for r in line.reached):
        lines += [
            "",
            f"unreachable: even at {format_rate(HIGH_BPS)} the delays (or the aggregator's "
            "memory) keep the exchange too long; with overlap an exchange no longer than the "
            "round's compute costs nothing",
        ]
    return "\n".join(lines)


def _line_json(line: Line, access_bps: float) -> JSONObject:
    utilisation, family = line.given
    return {
        "given": {"access_bps": access_bps, "utilisation": utilisation, "family": family},
        "targets": [r.json() for r in line.reached],
    }


def bandwidth_json(result: BandwidthSearch) -> JSONObject:
    """The search's setting and, per network and the one-dc reference, `without_overlap` and
    `with_overlap`: the utilisation at the rate given and each target's least rate (null:
    unreachable, `utilisation` then the highest reached)."""
    p = result.base
    by_network: dict[str, JSONObject] = {}
    for line in result.lines:
        key = "with_overlap" if line.overlap else "without_overlap"
        by_network.setdefault(line.network, {})[key] = _line_json(line, p.access_bps)
    one_dc: JSONObject = {"network": NetworkMode.PLAIN, "family": REFERENCE_FAMILY}
    one_dc |= {"delay_s": BUILDING_DELAY_S, "fabric_per_access": result.wan.n}
    networks: list[JSONValue] = []
    for network, doc in by_network.items():
        if network != NetworkMode.ONE_DC:
            entry: JSONObject = {"network": network}
            networks.append(entry | doc)
    return {
        "topology": result.wan.name,
        "islands": list(result.wan.names),
        "update_bytes": p.update_bytes,
        "memory_bytes": p.memory_bytes,
        "align": p.align,
        "pacing": p.pacing,
        "jitter_s": max((link.jitter_s for link in result.wan.links), default=0.0),
        "compute": result.compute.json(),
        "swept": "access_bps, every WAN link's capacity scaled by the same factor",
        "given_access_bps": p.access_bps,
        "link_capacity_bps": [link.capacity_bps for link in result.wan.links],
        "search": {"low_bps": LOW_BPS, "high_bps": HIGH_BPS, "tolerance": TOLERANCE},
        "families": list(result.families),
        "targets": list(result.targets),
        "one_dc": one_dc | by_network[NetworkMode.ONE_DC],
        "networks": networks,
    }
