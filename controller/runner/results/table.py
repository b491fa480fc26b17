"""The summary as the terminal table `innet run` prints at the end."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TypeVar

from controller.runner.results.summary import SummaryRow
from innet.units import format_duration, format_size

T = TypeVar("T")
RIGHT = {2, 3, 4, 5}  # the columns of numbers line up on the right


def format_table(rows: Iterable[SummaryRow]) -> str:
    """One line per (memory, schedule); '*' marks, per memory point, the schedule whose measured
    time to consensus was shortest."""
    rows = list(rows)
    first: dict[int, SummaryRow] = {}
    for row in rows:
        best = first.get(row.memory)
        if row.consensus_s is not None and (
            best is None or best.consensus_s is None or row.consensus_s < best.consensus_s
        ):
            first[row.memory] = row
    header = ("memory", "schedule", "consensus", "predicted", "ratio", "accuracy", "", "status")
    lines = [header]
    for row in rows:
        lines.append(
            (
                _memory(row),
                row.schedule,
                _shown(row.consensus_s, format_duration),
                _shown(row.consensus_predicted_s, format_duration),
                _shown(row.ratio, lambda x: f"{x:.2f}"),
                _shown(row.final_accuracy, lambda x: f"{100 * x:.1f}%"),
                "*" if first.get(row.memory) is row else "",
                _status(row),
            )
        )
    widths = [max(len(line[i]) for line in lines) for i in range(len(header))]
    text = [
        "  ".join(
            cell.rjust(widths[i]) if i in RIGHT else cell.ljust(widths[i])
            for i, cell in enumerate(line)
        ).rstrip()
        for line in lines
    ]
    text.append("* reached consensus first at this memory (measured)")
    if any(row.cpu_bound_rounds for row in rows):
        text.append(
            "CPU-bound: a switch or a leader fell behind its schedule by more than 5% of the "
            "predicted round (cpu_lag_ms in rounds.jsonl); those rounds measure the CPU, not "
            "the network"
        )
    return "\n".join(text)


def _memory(row: SummaryRow) -> str:
    plural = "s" if row.slots != 1 else ""
    return f"{format_size(row.memory)} ({row.slots} slot{plural}/bank)"


def _status(row: SummaryRow) -> str:
    bound = row.cpu_bound_rounds
    return f"{row.status}, {bound} CPU-bound round(s)" if bound else row.status


def _shown(value: T | None, form: Callable[[T], str]) -> str:
    return "-" if value is None else form(value)
