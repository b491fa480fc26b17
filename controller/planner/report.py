"""Plain-text tables and JSON documents for plans and sweeps (what the CLI prints)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING

from controller.planner.check import RoundCheck
from controller.planner.cost import RoundCost
from controller.planner.margin import Choice
from controller.planner.optimise import FamilyPlan, Plan
from innet.jsontypes import JSONObject, JSONValue
from innet.units import format_duration, format_rate, format_size
from innet.vocabulary import Collective, NetworkMode
from topo.wan import Wan

if TYPE_CHECKING:  # utilisation.py prints with this module's tables
    from controller.planner.utilisation import RoundCompute


def percent(share: float) -> str:
    """'86.4%' ('100%' for all of it, '-' for no figure)."""
    if math.isnan(share):
        return "-"
    return "100%" if share >= 1 else f"{share:.1%}"


def table(header: Sequence[str], rows: Sequence[Sequence[str]], right: Sequence[bool]) -> str:
    """Columns padded to their widest cell; `right` aligns numbers to the right."""
    widths = [max(len(str(c)) for c in col) for col in zip(header, *rows, strict=True)]

    def line(cells: Sequence[str]) -> str:
        out = [
            c.rjust(w) if r else c.ljust(w) for c, w, r in zip(cells, widths, right, strict=True)
        ]
        return "  ".join(out).rstrip()

    return "\n".join([line(header), line(["-" * w for w in widths]), *map(line, rows)])


def _finite(x: float) -> float | None:
    """JSON has no infinity: None stands for it."""
    return None if math.isinf(x) else x


def time_text(t: float) -> str:
    return "never" if math.isinf(t) else format_duration(t)


def _group_names(wan: Wan, group: Sequence[int]) -> str:
    return ", ".join(wan.names[i] for i in group)


def _setting(wan: Wan, plan: Plan) -> str:
    """The first line of a plan: the WAN and every parameter the plans share."""
    p = plan.params
    return (
        f"{wan.name}: {wan.n} islands; update {format_size(p.update_bytes)}, aggregator memory "
        f"{format_size(p.memory_bytes)}, access {format_rate(p.access_bps)}, send offsets "
        f"{'on' if p.align else 'off'}, {p.pacing} pacing, consensus to epsilon {plan.epsilon:g}"
        + jitter_text(wan)
    )


def jitter_text(wan: Wan) -> str:
    """', jitter 2.00 ms per link' (the largest, where links differ); empty without jitter."""
    if not wan.has_jitter:
        return ""
    values = {link.jitter_s for link in wan.links}
    most = format_duration(max(values))
    return f", jitter {most} per link" if len(values) == 1 else f", jitter up to {most} per link"


def _starred(plan: Plan, fastest: Plan, fam: FamilyPlan, choice: Choice | None, label: str) -> bool:
    """The family the plan names: the fastest, unless the jitter band names no winner (or
    another one)."""
    if choice is not None and len(choice.band.shifts) > 1:
        return choice.winner == label
    return plan is fastest and fam is plan.best


def choice_json(choice: Choice | None) -> JSONValue:
    """What a jitter band allows, for JSON documents (None: no band was costed)."""
    if choice is None:
        return None
    return {
        "winner": choice.winner,
        "within": list(choice.within),
        "jitter_s": choice.band.jitter_s,
        "margin_s": choice.band.margin_s,
        "band_s": list(choice.band.points_s),
    }


def _gain(plain: Plan | None, fam: FamilyPlan) -> float | None:
    """How many times faster than the same family over a plain WAN (None: not comparable)."""
    if plain is None:
        return None
    base = plain.family(fam.family).time_s
    if math.isinf(base) or math.isinf(fam.time_s) or fam.time_s <= 0:
        return None
    return base / fam.time_s


def _plain(plans: Sequence[Plan]) -> Plan | None:
    return next((p for p in plans if p.params.network == NetworkMode.PLAIN), None)


def _fastest(plans: Sequence[Plan]) -> Plan:
    return min(plans, key=lambda p: p.best.time_s)


def networks_text(
    wan: Wan,
    plans: Sequence[Plan],
    choice: Choice | None = None,
    compute: RoundCompute | None = None,
) -> str:
    """Every (network, family) with its time to consensus and its gain over a plain WAN, then
    the fastest of all as a table of rounds. With a jitter band (`choice`), the star marks
    only a family fastest across it, and a line says what the band allows. With `compute`,
    each family's steady-state utilisation too, and the one-building reference above them."""
    lines = [_setting(wan, plans[0]), *([] if compute is None else [compute.describe()]), ""]
    plain, fastest = _plain(plans), _fastest(plans)
    rows = []
    if compute is not None:
        rows.append(_family_row(NetworkMode.ONE_DC, compute.one_dc, None, False, compute))
    for plan in plans:
        for f in plan.families:
            label = f.family if len(plans) == 1 else f"{plan.params.network} {f.family}"
            star = _starred(plan, fastest, f, choice, label)
            rows.append(_family_row(plan.params.network, f, _gain(plain, f), star, compute))
    header = [
        "network",
        "family",
        "rounds",
        "exact",
        "time to consensus",
        "memory needed",
        "vs plain",
    ]
    right = [False, False, True, False, True, True, True]
    if compute is not None:
        header += ["utilisation", "with overlap"]
        right += [True, True]
    lines.append(table(header, rows, right))
    if len(plans) > 1:
        best = [f"{q.params.network} {q.best.family} {time_text(q.best.time_s)}" for q in plans]
        lines += ["", "fastest per network: " + "; ".join(best)]
        if plain is not None and not math.isinf(plain.best.time_s):
            others = [q for q in plans if q is not plain and not math.isinf(q.best.time_s)]
            gains = [f"{q.params.network} {plain.best.time_s / q.best.time_s:.2f}x" for q in others]
            lines.append("best against best over a plain WAN: " + "; ".join(gains))
    if compute is not None:
        lines += ([] if len(plans) > 1 else [""]) + [_utilisation_line(plans, compute)]
    if choice is not None and len(choice.band.shifts) > 1:
        band = ", ".join(format_duration(j) for j in choice.band.points_s)
        lines += ["", f"jitter margin (costed at {band}): {choice.describe()}"]
    lines += ["", family_text(wan, fastest.best, fastest.params.network)]
    return "\n".join(lines)


def _family_row(
    network: NetworkMode,
    f: FamilyPlan,
    gain: float | None,
    star: bool,
    compute: RoundCompute | None,
) -> list[str]:
    row = [
        network,
        f.family + (" *" if star else ""),
        "-" if f.rounds is None else str(f.rounds),
        "yes" if f.exact else "no",
        time_text(f.time_s),
        format_size(f.memory_bytes),
        "-" if gain is None else f"{gain:.2f}x",
    ]
    if compute is not None:
        row += [percent(u) for u in compute.utilisation(f)]
    return row


def _utilisation_line(plans: Sequence[Plan], compute: RoundCompute) -> str:
    """The utilisation of each network's fastest family, and of the one-building reference."""
    parts = [(q.params.network, q.best) for q in plans] + [(NetworkMode.ONE_DC, compute.one_dc)]
    figures = [
        f"{network} {fam.family} " + " / ".join(percent(u) for u in compute.utilisation(fam))
        for network, fam in parts
    ]
    return "utilisation of the fastest per network, without / with overlap: " + "; ".join(figures)


def networks_json(
    wan: Wan,
    plans: Sequence[Plan],
    choice: Choice | None = None,
    compute: RoundCompute | None = None,
) -> JSONObject:
    """The plans of every network, each family with its gain over a plain WAN; `robust` says
    what the jitter band allows (`winner` null: the families `within` the margin). With
    `compute`, each family's steady-state utilisation without and with overlap, and `one_dc`,
    the one-building reference."""
    plain, fastest = _plain(plans), _fastest(plans)
    p = plans[0].params
    doc: JSONObject = {
        "topology": wan.name,
        "islands": list(wan.names),
        "update_bytes": p.update_bytes,
        "memory_bytes": p.memory_bytes,
        "access_bps": p.access_bps,
        "align": p.align,
        "pacing": p.pacing,
        "epsilon": plans[0].epsilon,
        "best": {"network": fastest.params.network, "family": fastest.best.family},
        "jitter_s": max((link.jitter_s for link in wan.links), default=0.0),
        "robust": choice_json(choice),
    }
    if compute is not None:
        doc["compute"] = compute.json()
        doc["one_dc"] = _utilised(wan, compute.one_dc, compute) | compute.building_json()
    networks: list[JSONValue] = []
    for plan in plans:
        families: list[JSONValue] = []
        for f in plan.families:
            entry = family_json(wan, f) if compute is None else _utilised(wan, f, compute)
            entry["gain_over_plain"] = _gain(plain, f)
            families.append(entry)
        networks.append(
            {"network": plan.params.network, "best": plan.best.family, "families": families}
        )
    doc["networks"] = networks
    return doc


def _utilised(wan: Wan, fam: FamilyPlan, compute: RoundCompute) -> JSONObject:
    without, overlap = compute.utilisation(fam)
    return family_json(wan, fam) | {"utilisation": without, "utilisation_overlap": overlap}


def family_text(wan: Wan, fam: FamilyPlan, network: NetworkMode | None = None) -> str:
    used = fam.rounds or 0
    head = (
        f"chosen: {fam.family}, {used} round(s) to "
        f"{'the exact average' if fam.exact else 'consensus'}, predicted {time_text(fam.time_s)}"
        + ("" if network is None else f", network {network}")
    )
    width = max(len(c.round.groups) for c in fam.costs)
    header = [
        "round",
        *[f"group {i + 1}" for i in range(width)],
        "time",
        "rate",
        "memory",
        "headroom",
        "limit",
    ]
    rows = []
    for t, cost in enumerate(fam.costs):
        groups = [_group_names(wan, g) for g in cost.round.groups]
        groups += [""] * (width - len(groups))
        mark = "" if t < used else " (cycle)"
        rows.append([f"{t + 1}{mark}", *groups, *_round_figures(cost)])
    right = [False] * (1 + width) + [True, True, True, True, False]
    return head + "\n\n" + table(header, rows, right)


def _round_figures(cost: RoundCost) -> list[str]:
    slow = max(cost.groups, key=lambda g: g.time_s)
    rate = min((g.rate_bps for g in cost.groups), default=math.inf)
    return [
        format_duration(cost.time_s),
        "-" if math.isinf(rate) else format_rate(rate),
        format_size(cost.memory_bytes),
        "-" if math.isinf(cost.headroom_s) else format_duration(cost.headroom_s),
        slow.limit
        if slow.collective in (Collective.INNA, Collective.LOCAL)
        else f"{slow.limit} ({slow.collective})",
    ]


def family_json(wan: Wan, fam: FamilyPlan) -> JSONObject:
    return {
        "family": fam.family,
        "rounds_to_consensus": fam.rounds,
        "exact": fam.exact,
        "time_s": None if math.isinf(fam.time_s) else fam.time_s,
        "memory_bytes": fam.memory_bytes,
        "rounds": [
            {
                "time_s": cost.time_s,
                "memory_bytes": cost.memory_bytes,
                "headroom_s": _finite(cost.headroom_s),
                "groups": [
                    {
                        "cities": [wan.names[i] for i in g.members],
                        "rate_bps": None if math.isinf(g.rate_bps) else g.rate_bps,
                        "offsets_s": list(g.offsets),
                        "skew_s": g.skew_s,
                        "span_s": g.span_s,
                        "time_s": g.time_s,
                        "memory_bytes": g.memory_bytes,
                        "headroom_s": _finite(g.headroom_s),
                        "limit": g.limit,
                        "collective": g.collective,
                    }
                    for g in cost.groups
                ],
            }
            for cost in fam.costs
        ],
    }


def topo_text(wan: Wan) -> str:
    lines = [f"{wan.name}: {wan.n} cities, {len(wan.links)} links", ""]
    rows = [
        [
            f"{link.a} - {link.b}",
            format_duration(link.delay_s),
            format_rate(link.capacity_bps),
            link.source,
        ]
        for link in wan.links
    ]
    lines.append(
        table(["link", "one-way delay", "capacity", "source"], rows, [False, True, True, False])
    )
    if wan.measured_rtt_s:
        fit = wan.rtt_fit()
        worst = fit.worst
        lines += [
            "",
            f"shortest-path RTT against measured ({wan.measured_source}), largest errors first:",
            table(
                ["pair", "measured", "model", "error"],
                [
                    [
                        f"{r.a} - {r.b}",
                        format_duration(r.measured_s),
                        format_duration(r.model_s),
                        f"{r.rel_error:+.1%}",
                    ]
                    for r in fit.ranked()[:8]
                ],
                [False, True, True, True],
            ),
            f"largest relative RTT error: {abs(worst.rel_error):.1%} ({worst.a} - {worst.b})",
        ]
    return "\n".join(lines)


def _played(wan: Wan, seed: int | None) -> str:
    """', jitter 2.00 ms per link, seed 0' for a simulation with jitter (else empty)."""
    if not wan.has_jitter:
        return ""
    return jitter_text(wan) + ("" if seed is None else f", seed {seed}")


def check_text(
    wan: Wan, fam: FamilyPlan, checks: Sequence[RoundCheck], seed: int | None = None
) -> str:
    """The model's and the simulation's figures per round (with the jitter played, and the
    seed of its draws)."""
    header = [
        "round",
        "model time",
        "simulated",
        "difference",
        "model memory",
        "peak memory",
        "exhausted",
        "resent",
    ]
    rows = [
        [
            str(c.index + 1),
            format_duration(c.model.time_s),
            format_duration(c.sim.time_s),
            f"{c.time_error:+.1%}",
            format_size(c.model.memory_bytes),
            format_size(c.sim.peak_memory_bytes),
            str(c.sim.exhausted),
            str(c.sim.resent),
        ]
        for c in checks
    ]
    first = checks[0] if checks else None
    head = f"{fam.family}: cost model against chunk-level simulation"
    if first is not None:
        head += (
            f" (update {format_size(first.update_bytes)}, "
            f"chunk {format_size(first.sim.chunk_bytes)}, {first.sim.slots} slots per aggregator"
            + _played(wan, seed)
            + ")"
        )
    worst = max((abs(c.time_error) for c in checks), default=0.0)
    return "\n".join(
        [
            head,
            "",
            table(header, rows, [False] + [True] * 7),
            "",
            f"largest round-time difference: {worst:.1%}",
        ]
    )
