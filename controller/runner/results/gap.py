"""The gap to one data centre: compute utilisation and time to target, per (network, memory,
schedule), measured and predicted, against the islands in one building.

A scenario with `compute` gives each round C = H x step_time of full-scale compute. A row's
timeline (controller/planner/compute.py) runs its rounds' exchange times after, or with
`training.overlap` beside, that compute: measured from the rounds' measured times, predicted
from the planner's. Utilisation is compute time over that wall-clock. Time to target is the
full-scale wall-clock at the end of the first round whose test accuracy reached
`training.target_accuracy` (or whose test loss fell to `target_loss`); its predicted figure is
the planner's timeline at that same round. `vs one DC` is a row's time to target over the
one-building reference's (or, when either never reached it, its wall-clock over the
reference's), so 1.00x means the WAN costs nothing.

The local steps run on this machine's CPU (`local_s` in rounds.jsonl); that time is another
clock, never part of these figures.
"""

from __future__ import annotations

import csv
import dataclasses
import io
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from matplotlib.figure import Figure

from controller.planner.compute import first_reaching, timeline
from controller.runner.records import RoundRecord
from innet.units import format_duration, format_size
from innet.vocabulary import NetworkMode

MAX_LOSS = 700.0  # exp() of a larger test loss overflows a float: a diverged model


@dataclass(frozen=True, slots=True)
class TrainingTarget:
    """What a run trains towards: a test accuracy to reach, or a test loss to fall to."""

    accuracy: float | None = None
    loss: float | None = None

    @property
    def text(self) -> str:
        if self.accuracy is not None:
            return f"accuracy {100 * self.accuracy:.4g}%"
        return "" if self.loss is None else f"test loss {self.loss:g}"

    def figures(self, recs: Sequence[RoundRecord]) -> tuple[list[float], float, bool] | None:
        """Each round's figure, the target and whether higher is better (None: no target)."""
        if self.accuracy is not None:
            return (
                [r.accuracy if r.accuracy is not None else -1.0 for r in recs],
                self.accuracy,
                True,
            )
        if self.loss is not None:
            inf = float("inf")
            return [r.test_loss if r.test_loss is not None else inf for r in recs], self.loss, False
        return None


@dataclass(frozen=True, slots=True)
class GapRow:
    network: str
    memory: int
    schedule: str
    per_memory: bool
    rounds: int
    compute_s: float  # C: one round's full-scale compute
    overlap: bool
    utilisation: float | None  # measured; None when a round did not finish
    utilisation_predicted: float
    wall_s: float | None  # full-scale wall-clock of the rounds played, measured
    wall_predicted_s: float
    target: str  # "accuracy 90%", or "" without a target
    target_round: int | None  # the first round that reached it (None: none did)
    target_s: float | None  # full-scale wall-clock when it did, measured
    target_predicted_s: float | None  # the planner's timeline at that round
    flagged_rounds: int
    final_accuracy: float | None = None  # after the last round that finished
    final_perplexity: float | None = None  # exp(test loss) after it: a language model's figure
    vs_one_dc: float | None = None  # time to target (else wall-clock) over one building's

    def to_json(self) -> dict[str, object]:
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}


def gap_rows(
    records: Iterable[RoundRecord], compute_s: float, overlap: bool, target: TrainingTarget
) -> list[GapRow]:
    """One row per (network, memory, schedule) in the order first played; the one-building
    reference's row first, and every row's `vs_one_dc` against it."""
    rows = [_row(recs, compute_s, overlap, target) for recs in _by_row(records).values()]
    rows.sort(key=lambda row: row.network != NetworkMode.ONE_DC)  # stable: the reference first
    ref = next((row for row in rows if row.network == NetworkMode.ONE_DC), None)
    return [dataclasses.replace(row, vs_one_dc=_against(row, ref)) for row in rows]


def _row(
    recs: list[RoundRecord], compute_s: float, overlap: bool, target: TrainingTarget
) -> GapRow:
    finished = all(r.ok for r in recs)
    measured = timeline(compute_s, [r.time_s or 0.0 for r in recs], overlap)
    predicted = timeline(compute_s, [r.predicted_s for r in recs], overlap)
    reached = None
    figures = target.figures(recs)
    if figures is not None:
        values, goal, higher = figures
        reached = first_reaching(measured, values, goal, higher)
    first = recs[0]
    last = next((r for r in reversed(recs) if r.ok), None)
    loss = None if last is None else last.test_loss
    return GapRow(
        network=first.network,
        memory=first.memory,
        schedule=first.schedule,
        per_memory=first.network == NetworkMode.INNA,
        rounds=len(recs),
        compute_s=compute_s,
        overlap=overlap,
        utilisation=measured.utilisation if finished else None,
        utilisation_predicted=predicted.utilisation,
        wall_s=measured.wall_s if finished else None,
        wall_predicted_s=predicted.wall_s,
        target=target.text,
        target_round=None if reached is None else reached[0],
        target_s=None if reached is None or not finished else reached[1],
        target_predicted_s=None if reached is None else predicted.ends_s[reached[0]],
        flagged_rounds=sum(1 for r in recs if r.ok and r.flagged),
        final_accuracy=None if last is None else last.accuracy,
        final_perplexity=None if loss is None or loss > MAX_LOSS else math.exp(loss),
    )


def _against(row: GapRow, ref: GapRow | None) -> float | None:
    if ref is None:
        return None
    if row.target_s is not None and ref.target_s:
        return row.target_s / ref.target_s
    if row.target or row.wall_s is None or not ref.wall_s:
        return None  # a target one of them never reached: no time to compare
    return row.wall_s / ref.wall_s


def gap_table(rows: Sequence[GapRow]) -> str:
    """The terminal table: one line per row, the reference first."""
    target = next((row.target for row in rows if row.target), "")
    header = (
        "network",
        "memory",
        "schedule",
        "utilisation",
        "predicted",
        "wall-clock",
        f"to {target}" if target else "to target",
        "predicted",
        "vs one DC",
        "accuracy",
        "perplexity",
    )
    lines = [header]
    for row in rows:
        lines.append(
            (
                "one building" if row.network == NetworkMode.ONE_DC else row.network,
                format_size(row.memory) if row.per_memory else "any memory",
                row.schedule,
                _pct(row.utilisation),
                _pct(row.utilisation_predicted),
                _dur(row.wall_s),
                _reached(row),
                _dur(row.target_predicted_s),
                "-" if row.vs_one_dc is None else f"{row.vs_one_dc:.2f}x",
                _pct(row.final_accuracy),
                "-" if row.final_perplexity is None else f"{row.final_perplexity:.3g}",
            )
        )
    right = {3, 4, 5, 6, 7, 8, 9, 10}
    widths = [max(len(line[i]) for line in lines) for i in range(len(header))]
    text = [
        "  ".join(
            c.rjust(widths[i]) if i in right else c.ljust(widths[i]) for i, c in enumerate(line)
        ).rstrip()
        for line in lines
    ]
    first = rows[0] if rows else None
    if first is not None:
        how = "overlapping the next round's compute" if first.overlap else "after the compute"
        text.append(
            f"each round: {format_duration(first.compute_s)} of compute at full "
            f"scale, the exchange {how}; times are full-scale wall-clock"
        )
    flagged = [row for row in rows if row.flagged_rounds]
    if flagged:
        text.append(
            "flagged rounds are in these figures: "
            + "; ".join(f"{row.network} {row.schedule} {row.flagged_rounds}" for row in flagged)
        )
    return "\n".join(text)


def gap_csv(rows: Iterable[GapRow]) -> str:
    out = io.StringIO()
    names = [f.name for f in dataclasses.fields(GapRow)]
    writer = csv.DictWriter(out, names, lineterminator="\n")
    writer.writeheader()
    for row in rows:
        writer.writerow({k: "" if v is None else v for k, v in row.to_json().items()})
    return out.getvalue()


def plot_accuracy_time(records: Iterable[RoundRecord], compute_s: float, overlap: bool) -> Figure:
    """Test accuracy against full-scale wall-clock, one line per (network, memory, schedule)."""
    runs = _by_row(r for r in records if r.ok)
    fig = Figure(figsize=(8, 5))
    ax = fig.add_subplot()
    for (network, memory, schedule), recs in runs.items():
        line = timeline(compute_s, [r.time_s or 0.0 for r in recs], overlap)
        label = "one building" if network == NetworkMode.ONE_DC else f"{network} {schedule}"
        if network == NetworkMode.INNA:
            label += f" @ {format_size(memory)}"
        ax.plot(
            line.ends_s,
            [100 * (r.accuracy or 0.0) for r in recs],
            marker="o",
            markersize=3,
            label=label,
            color="black" if network == NetworkMode.ONE_DC else None,
            linewidth=2.5 if network == NetworkMode.ONE_DC else 1.5,
        )
    ax.set_xlabel("full-scale wall-clock (s): compute and exchange")
    ax.set_ylabel("test accuracy (%)")
    ax.set_title("Accuracy against wall-clock" + (" (overlap)" if overlap else ""))
    ax.grid(True, alpha=0.3)
    if runs:
        ax.legend(fontsize=7)
    return fig


def _by_row(records: Iterable[RoundRecord]) -> dict[tuple[str, int, str], list[RoundRecord]]:
    """The records of each (network, memory, schedule), in the order first played, by round."""
    runs: dict[tuple[str, int, str], list[RoundRecord]] = {}
    for rec in records:
        runs.setdefault((rec.network, rec.memory, rec.schedule), []).append(rec)
    for recs in runs.values():
        recs.sort(key=lambda r: r.round)
    return runs


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{100 * x:.1f}%"


def _dur(x: float | None) -> str:
    return "-" if x is None else format_duration(x)


def _reached(row: GapRow) -> str:
    if not row.target:
        return "-"
    if row.target_round is None:
        return "never"
    return f"{_dur(row.target_s)} (round {row.target_round})"
