"""Plain-text tables and JSON documents for plans and sweeps (what the CLI prints)."""

from __future__ import annotations

import math
from collections.abc import Sequence

from controller.planner.check import RoundCheck
from controller.planner.cost import RoundCost
from controller.planner.optimise import FamilyPlan, Plan
from controller.planner.sweep import Sweep
from innet.jsontypes import JSONObject, JSONValue
from innet.units import format_duration, format_rate, format_size
from topo.wan import Wan


def table(header: Sequence[str], rows: Sequence[Sequence[str]], right: Sequence[bool]) -> str:
    """Columns padded to their widest cell; `right` aligns numbers to the right."""
    widths = [max(len(str(c)) for c in col) for col in zip(header, *rows, strict=True)]

    def line(cells: Sequence[str]) -> str:
        out = [
            c.rjust(w) if r else c.ljust(w) for c, w, r in zip(cells, widths, right, strict=True)
        ]
        return "  ".join(out).rstrip()

    return "\n".join([line(header), line(["-" * w for w in widths]), *map(line, rows)])


def _time(t: float) -> str:
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
    )


def _gain(plain: Plan | None, fam: FamilyPlan) -> float | None:
    """How many times faster than the same family over a plain WAN (None: not comparable)."""
    if plain is None:
        return None
    base = plain.family(fam.family).time_s
    if math.isinf(base) or math.isinf(fam.time_s) or fam.time_s <= 0:
        return None
    return base / fam.time_s


def _plain(plans: Sequence[Plan]) -> Plan | None:
    return next((p for p in plans if p.params.network == "plain"), None)


def _fastest(plans: Sequence[Plan]) -> Plan:
    return min(plans, key=lambda p: p.best.time_s)


def networks_text(wan: Wan, plans: Sequence[Plan]) -> str:
    """Every (network, family) with its time to consensus and its gain over a plain WAN, then
    the fastest of all as a table of rounds."""
    lines = [_setting(wan, plans[0]), ""]
    plain, fastest = _plain(plans), _fastest(plans)
    rows = []
    for plan in plans:
        for f in plan.families:
            gain = _gain(plain, f)
            rows.append([
                plan.params.network,
                f.family + (" *" if plan is fastest and f is plan.best else ""),
                "-" if f.rounds is None else str(f.rounds),
                "yes" if f.exact else "no",
                _time(f.time_s),
                format_size(f.memory_bytes),
                "-" if gain is None else f"{gain:.2f}x",
            ])  # fmt: skip
    header = ["network", "family", "rounds", "exact", "time to consensus", "memory needed",
              "vs plain"]  # fmt: skip
    lines.append(table(header, rows, [False, False, True, False, True, True, True]))
    if len(plans) > 1:
        best = [f"{q.params.network} {q.best.family} {_time(q.best.time_s)}" for q in plans]
        lines += ["", "fastest per network: " + "; ".join(best)]
        if plain is not None and not math.isinf(plain.best.time_s):
            others = [q for q in plans if q is not plain and not math.isinf(q.best.time_s)]
            gains = [f"{q.params.network} {plain.best.time_s / q.best.time_s:.2f}x" for q in others]
            lines.append("best against best over a plain WAN: " + "; ".join(gains))
    lines += ["", family_text(wan, fastest.best, fastest.params.network)]
    return "\n".join(lines)


def networks_json(wan: Wan, plans: Sequence[Plan]) -> JSONObject:
    """The plans of every network, each family with its gain over a plain WAN."""
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
    }
    networks: list[JSONValue] = []
    for plan in plans:
        families: list[JSONValue] = []
        for f in plan.families:
            entry = family_json(wan, f)
            entry["gain_over_plain"] = _gain(plain, f)
            families.append(entry)
        networks.append({"network": plan.params.network, "best": plan.best.family,
                         "families": families})  # fmt: skip
    doc["networks"] = networks
    return doc


def family_text(wan: Wan, fam: FamilyPlan, network: str | None = None) -> str:
    used = fam.rounds or 0
    head = (
        f"chosen: {fam.family}, {used} round(s) to "
        f"{'the exact average' if fam.exact else 'consensus'}, predicted {_time(fam.time_s)}"
        + ("" if network is None else f", network {network}")
    )
    width = max(len(c.round.groups) for c in fam.costs)
    header = ["round", *[f"group {i + 1}" for i in range(width)], "time", "rate", "memory", "limit"]
    rows = []
    for t, cost in enumerate(fam.costs):
        groups = [_group_names(wan, g) for g in cost.round.groups]
        groups += [""] * (width - len(groups))
        mark = "" if t < used else " (cycle)"
        rows.append([f"{t + 1}{mark}", *groups, *_round_figures(cost)])
    right = [False] * (1 + width) + [True, True, True, False]
    return head + "\n\n" + table(header, rows, right)


def _round_figures(cost: RoundCost) -> list[str]:
    slow = max(cost.groups, key=lambda g: g.time_s)
    rate = min((g.rate_bps for g in cost.groups), default=math.inf)
    return [
        format_duration(cost.time_s),
        "-" if math.isinf(rate) else format_rate(rate),
        format_size(cost.memory_bytes),
        slow.limit if slow.collective in ("inna", "local") else f"{slow.limit} ({slow.collective})",
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
                "groups": [
                    {
                        "cities": [wan.names[i] for i in g.members],
                        "rate_bps": None if math.isinf(g.rate_bps) else g.rate_bps,
                        "offsets_s": list(g.offsets),
                        "skew_s": g.skew_s,
                        "span_s": g.span_s,
                        "time_s": g.time_s,
                        "memory_bytes": g.memory_bytes,
                        "limit": g.limit,
                        "collective": g.collective,
                    }
                    for g in cost.groups
                ],
            }
            for cost in fam.costs
        ],
    }


def sweep_text(wan: Wan, result: Sweep) -> str:
    families = result.families
    first = result.plans[0]
    header = ["memory", *families, "best"]
    rows = [
        [format_size(plan.params.memory_bytes)]
        + [_time(plan.family(f).time_s) for f in families]
        + [plan.best.family]
        for plan in result.plans
    ]
    body = table(header, rows, [True] * (1 + len(families)) + [False]).split("\n")
    lines = [
        f"{wan.name}: time to consensus by aggregator memory; update "
        f"{format_size(first.params.update_bytes)}, access {format_rate(first.params.access_bps)}, "
        f"epsilon {first.epsilon:g}",
        "",
        *body[:2],
    ]
    crossovers = iter(result.crossovers)
    for k, plan in enumerate(result.plans):
        if k and plan.best.family != result.plans[k - 1].best.family:
            c = next(crossovers)
            lines.append(
                f"-- crossover at {format_size(c.memory_bytes)}: {c.below} below, {c.above} above"
            )
        lines.append(body[2 + k])
    lines.append("")
    for c in result.crossovers:
        lines.append(
            f"crossover: {c.below} is fastest below {format_size(c.memory_bytes)}, {c.above} above"
        )
    if not result.crossovers:
        lines.append(f"no crossover: {first.best.family} is fastest at every memory size")
    return "\n".join(lines + _baseline_lines(result))


def _baseline_lines(result: Sweep) -> list[str]:
    """The networks that use no aggregator memory, and where inna overtakes a plain WAN."""
    if not result.baselines:
        return []
    lines = ["", "without in-line aggregation (no aggregator memory; the same at every size):"]
    for plan in result.baselines:
        times = ", ".join(f"{f.family} {_time(f.time_s)}" for f in plan.families)
        lines.append(f"  {plan.params.network}: {times}; fastest {plan.best.family}")
    plain = result.baseline("plain")
    if plain is None:
        return lines
    best = f"{plain.best.family} {_time(plain.best.time_s)}"
    if result.beats_plain_everywhere:
        lines.append(f"inna beats a plain WAN ({best}) at every memory size swept")
    elif result.inna_beats_plain_bytes is None:
        lines.append(f"inna never beats a plain WAN ({best}) in this range")
    else:
        memory = format_size(result.inna_beats_plain_bytes)
        lines.append(f"inna beats a plain WAN ({best}) from {memory} of aggregator memory")
    return lines


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


def check_text(wan: Wan, fam: FamilyPlan, checks: Sequence[RoundCheck]) -> str:
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
            f"chunk {format_size(first.sim.chunk_bytes)}, {first.sim.slots} slots per aggregator)"
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


def sweep_json(wan: Wan, result: Sweep) -> JSONObject:
    return {
        "topology": wan.name,
        "islands": list(wan.names),
        "update_bytes": result.plans[0].params.update_bytes,
        "access_bps": result.plans[0].params.access_bps,
        "epsilon": result.plans[0].epsilon,
        "points": [
            {
                "memory_bytes": plan.params.memory_bytes,
                "times_s": {
                    f.family: (None if math.isinf(f.time_s) else f.time_s) for f in plan.families
                },
                "best": plan.best.family,
                "groups": [
                    [[wan.names[i] for i in g] for g in cost.round.groups]
                    for cost in plan.best.costs[: plan.best.rounds or len(plan.best.costs)]
                ],
            }
            for plan in result.plans
        ],
        "crossovers": [
            {"memory_bytes": c.memory_bytes, "below": c.below, "above": c.above}
            for c in result.crossovers
        ],
        "baselines": [
            {
                "network": plan.params.network,
                "times_s": {
                    f.family: (None if math.isinf(f.time_s) else f.time_s) for f in plan.families
                },
                "best": plan.best.family,
            }
            for plan in result.baselines
        ],
        "inna_beats_plain_from_bytes": (
            result.plans[0].params.memory_bytes
            if result.beats_plain_everywhere
            else result.inna_beats_plain_bytes
        ),
    }
