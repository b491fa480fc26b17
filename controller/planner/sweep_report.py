"""Plain-text tables and JSON documents for memory sweeps (what `innet plan sweep` prints)."""

from __future__ import annotations

import math

from controller.planner.margin import Choice
from controller.planner.report import choice_json, jitter_text, table, time_text
from controller.planner.sweep import Sweep
from innet.jsontypes import JSONObject
from innet.units import format_duration, format_rate, format_size
from innet.vocabulary import NetworkMode
from topo.wan import Wan


def _banded(result: Sweep) -> bool:
    """True when the sweep was costed over a jitter band of more than one point."""
    return bool(result.choices) and len(result.choices[0].band.shifts) > 1


def _robust_cell(choice: Choice) -> str:
    return choice.winner if choice.winner is not None else "within: " + ", ".join(choice.within)


def sweep_text(wan: Wan, result: Sweep) -> str:
    """The table of times per family per memory point, the crossovers at the WAN's jitter,
    and, with a jitter margin, a column `robust`: the family fastest across the band, or the
    families within the margin."""
    families = result.families
    first = result.plans[0]
    banded = _banded(result)
    header = ["memory", *families, "best", *(["robust"] if banded else [])]
    rows = [
        [format_size(plan.params.memory_bytes)]
        + [time_text(plan.family(f).time_s) for f in families]
        + [plan.best.family]
        + ([_robust_cell(result.choices[k])] if banded else [])
        for k, plan in enumerate(result.plans)
    ]
    right = [True] * (1 + len(families)) + [False] * (2 if banded else 1)
    body = table(header, rows, right).split("\n")
    lines = [
        f"{wan.name}: time to consensus by aggregator memory; update "
        f"{format_size(first.params.update_bytes)}, access {format_rate(first.params.access_bps)}, "
        f"epsilon {first.epsilon:g}" + jitter_text(wan),
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
    return "\n".join(lines + _margin_lines(result) + _baseline_lines(result))


def _margin_lines(result: Sweep) -> list[str]:
    """Where the jitter band names no winner, as runs of neighbouring memory points."""
    if not _banded(result):
        return []
    margin = format_duration(result.choices[0].band.margin_s)
    runs: list[tuple[int, int]] = []
    for k, choice in enumerate(result.choices):
        if choice.winner is None:
            if runs and runs[-1][1] == k - 1:
                runs[-1] = (runs[-1][0], k)
            else:
                runs.append((k, k))
    if not runs:
        return [f"jitter margin ±{margin}: one family is fastest across it at every memory size"]
    lines = []
    for a, b in runs:
        low, high = (format_size(result.plans[i].params.memory_bytes) for i in (a, b))
        where = low if a == b else f"{low} to {high}"
        names = " and ".join(result.choices[a].within)
        lines.append(f"jitter margin ±{margin}: no winner at {where}: {names} are within it")
    return lines


def _baseline_lines(result: Sweep) -> list[str]:
    """The networks that use no aggregator memory, and where inna overtakes a plain WAN."""
    if not result.baselines:
        return []
    lines = ["", "without in-line aggregation (no aggregator memory; the same at every size):"]
    for plan in result.baselines:
        times = ", ".join(f"{f.family} {time_text(f.time_s)}" for f in plan.families)
        lines.append(f"  {plan.params.network}: {times}; fastest {plan.best.family}")
    plain = result.baseline(NetworkMode.PLAIN)
    if plain is None:
        return lines
    best = f"{plain.best.family} {time_text(plain.best.time_s)}"
    if result.beats_plain_everywhere:
        lines.append(f"inna beats a plain WAN ({best}) at every memory size swept")
    elif result.inna_beats_plain_bytes is None:
        lines.append(f"inna never beats a plain WAN ({best}) in this range")
    else:
        memory = format_size(result.inna_beats_plain_bytes)
        lines.append(f"inna beats a plain WAN ({best}) from {memory} of aggregator memory")
    return lines


def sweep_json(wan: Wan, result: Sweep) -> JSONObject:
    return {
        "topology": wan.name,
        "islands": list(wan.names),
        "update_bytes": result.plans[0].params.update_bytes,
        "access_bps": result.plans[0].params.access_bps,
        "epsilon": result.plans[0].epsilon,
        "jitter_s": max((link.jitter_s for link in wan.links), default=0.0),
        "points": [
            {
                "memory_bytes": plan.params.memory_bytes,
                "times_s": {
                    f.family: (None if math.isinf(f.time_s) else f.time_s) for f in plan.families
                },
                "best": plan.best.family,
                "robust": choice_json(result.choices[k]) if result.choices else None,
                "groups": [
                    [[wan.names[i] for i in g] for g in cost.round.groups]
                    for cost in plan.best.costs[: plan.best.rounds or len(plan.best.costs)]
                ],
            }
            for k, plan in enumerate(result.plans)
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
