"""The summary as the terminal table `innet run` prints at the end."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TypeVar

from controller.runner.flags import FLAGS, TIMING_TOLERANCE, flag_text
from controller.runner.results.summary import SummaryRow
from innet.units import format_duration, format_size
from innet.vocabulary import NetworkMode

T = TypeVar("T")


def format_table(rows: Iterable[SummaryRow]) -> str:
    """One line per (network, memory, schedule). '*' marks, per memory point, the schedule whose
    measured time to consensus was shortest among those played at that memory, when none of
    its rounds was flagged (a flagged row is never starred: its time is not the network's).
    Rows are compared by their unflagged rounds, so a row slowed by flagged rounds does not
    hand the star to a slower one: when the fastest row is flagged, or another row there has only
    flagged rounds to compare, nothing at that memory is starred. With a plain
    WAN in the run, `vs plain` gives each row's gain over the fastest plain row (measured, and
    predicted), and a last line the fastest of each network against it."""
    rows = list(rows)
    networks = list(dict.fromkeys(row.network for row in rows))
    fastest: dict[int, SummaryRow] = {}  # by the time its unflagged rounds give
    for row in rows:
        best = fastest.get(row.memory)
        if row.per_memory and _faster_unflagged(row, best):
            fastest[row.memory] = row
    first = {
        m: row
        for m, row in fastest.items()
        if row.measures_network and not any(_may_beat(other, row) for other in rows)
    }
    plain = _fastest(r for r in rows if r.network == NetworkMode.PLAIN)
    header = ["memory", "schedule", "consensus", "predicted", "ratio"]
    right = {2, 3, 4}
    if len(networks) > 1:
        header.insert(0, "network")
        right = {i + 1 for i in right}
    if plain is not None:
        header.append("vs plain")
        right.add(len(header) - 1)
    header += ["accuracy", "", "status"]
    right.add(len(header) - 3)
    lines = [tuple(header)]
    for row in rows:
        cells = [
            _memory(row),
            row.schedule,
            _shown(row.consensus_s, format_duration),
            _shown(row.consensus_predicted_s, format_duration),
            _shown(row.ratio, lambda x: f"{x:.2f}"),
        ]
        if len(networks) > 1:
            cells.insert(0, row.network)
        if plain is not None:
            cells.append(_gain(plain, row))
        cells += [
            _shown(row.final_accuracy, lambda x: f"{100 * x:.1f}%"),
            "*" if first.get(row.memory) is row else "",
            _status(row),
        ]
        lines.append(tuple(cells))
    widths = [max(len(line[i]) for line in lines) for i in range(len(header))]
    text = [
        "  ".join(
            cell.rjust(widths[i]) if i in right else cell.ljust(widths[i])
            for i, cell in enumerate(line)
        ).rstrip()
        for line in lines
    ]
    text.append("* reached consensus first at this memory (measured; never a flagged row)")
    for m in sorted(m for m in fastest if m not in first):
        why = "the fastest row there has flagged rounds"
        if fastest[m].measures_network:  # unstarred for another row's want of a measurement
            unknown = ", ".join(r.schedule for r in rows if _may_beat(r, fastest[m]))
            why = f"{unknown} there has only flagged rounds to compare"
        text.append(f"no star at {format_size(m)}: {why}")
    text += _footnotes(rows, networks, plain)
    return "\n".join(text)


def _footnotes(rows: list[SummaryRow], networks: list[str], plain: SummaryRow | None) -> list[str]:
    text = []
    if any(not row.per_memory for row in rows):
        text.append(
            "any memory: the edges hold no partial sums, so the network was played once "
            "(at the first memory point)"
        )
    if plain is not None:
        text.append(
            "vs plain: the fastest plain-WAN row's time to consensus over this row's, "
            "measured (predicted)"
        )
        gains = []
        for network in networks:
            if network == NetworkMode.PLAIN:
                continue
            best = _fastest(r for r in rows if r.network == network)
            if best is not None:
                where = f" at {format_size(best.memory)}" if best.per_memory else ""
                gains.append(f"{network} {best.schedule}{where} {_gain(plain, best)}")
        if gains:
            text.append(
                f"fastest against the fastest over a plain WAN ({plain.schedule}): "
                + "; ".join(gains)
            )
    flagged = sum(row.flagged_rounds for row in rows)
    if flagged:
        total = sum(row.rounds for row in rows)
        text.append(
            f"flagged: {flagged} of {total} rounds do not measure the network "
            f"({_all_flags(rows)}); the reasons are in rounds.jsonl (flags)"
        )
        text += [f"  {name}: {FLAG_MEANINGS[name]}" for name in _flag_names(rows)]
    return text


FLAG_MEANINGS = {
    "timing": f"more than {TIMING_TOLERANCE:.0%} off its prediction, with slot conflicts or "
    "retransmissions the plan does not explain (or none seen)",
    "cpu_bound": "a switch or a leader fell behind its schedule by more than 5% of the "
    "predicted round (cpu_lag_ms): the round measures the CPU",
    "loss": "the scenario loses frames on the WAN, which the plan does not model",
    "jitter": "timing noise beyond the headroom the plan left in the slot pools",
    "clocks": "the machines' clocks are known more loosely than the plan's smallest headroom",
}


def _flag_names(rows: list[SummaryRow]) -> list[str]:
    seen = {part.split()[0] for row in rows for part in row.flags.split(", ") if part}
    return [name for name in FLAGS if name in seen]


def _all_flags(rows: list[SummaryRow]) -> str:
    counts: dict[str, int] = {}
    for row in rows:
        for part in filter(None, row.flags.split(", ")):
            name, n = part.rsplit(" ", 1)
            counts[name] = counts.get(name, 0) + int(n)
    return flag_text({name: counts[name] for name in FLAGS if name in counts})


def _faster(row: SummaryRow, than: SummaryRow | None) -> bool:
    if row.consensus_s is None:
        return False
    return than is None or than.consensus_s is None or row.consensus_s < than.consensus_s


def _faster_unflagged(row: SummaryRow, than: SummaryRow | None) -> bool:
    """`row` is faster than `than` by their unflagged rounds: a row slowed by flagged rounds
    does not hand the star to a slower one."""
    mine = row.consensus_unflagged_s
    if mine is None:
        return False
    return than is None or than.consensus_unflagged_s is None or mine < than.consensus_unflagged_s


def _may_beat(other: SummaryRow, winner: SummaryRow) -> bool:
    """`other`, at the winner's memory, has a time but no unflagged one to compare: the winner
    cannot be named. Its flagged time says nothing of the network either way (a busy CPU or
    timing noise made it; the network alone could be faster than the winner)."""
    if other is winner or not other.per_memory or other.memory != winner.memory:
        return False
    return other.consensus_unflagged_s is None and other.consensus_s is not None


def _fastest(rows: Iterable[SummaryRow]) -> SummaryRow | None:
    best: SummaryRow | None = None
    for row in rows:
        if _faster(row, best):
            best = row
    return best


def _gain(plain: SummaryRow, row: SummaryRow) -> str:
    measured = _ratio(plain.consensus_s, row.consensus_s)
    predicted = _ratio(plain.consensus_predicted_s, row.consensus_predicted_s)
    return f"{_shown(measured, _times)} ({_shown(predicted, _times)})"


def _ratio(a: float | None, b: float | None) -> float | None:
    return a / b if a is not None and b else None


def _times(x: float) -> str:
    return f"{x:.2f}x"


def _memory(row: SummaryRow) -> str:
    if not row.per_memory:
        return "any memory"
    plural = "s" if row.slots != 1 else ""
    return f"{format_size(row.memory)} ({row.slots} slot{plural}/bank)"


def _status(row: SummaryRow) -> str:
    if not row.flagged_rounds:
        return row.status
    return f"{row.status}; flagged {row.flagged_rounds} of {row.rounds}: {row.flags}"


def _shown(value: T | None, form: Callable[[T], str]) -> str:
    return "-" if value is None else form(value)
