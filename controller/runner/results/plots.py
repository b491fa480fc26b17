"""The plots of a run's results folder, from its round records (the writer saves them as PNG).

    round-time.png              time per round per schedule, a panel per memory point
    loss.png                    training loss against wall-clock seconds
    predicted-vs-measured.png   each round's measured time against the planner's

A flagged round (controller/runner/flags.py: its time is not the network's) is drawn with a
hollow marker and crossed out, so a plot never shows it as a measurement of the network.

No pyplot: each plot is its own `Figure` (no global figure state; the Agg canvas by default).
"""

from __future__ import annotations

import itertools
import math

from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.ticker import FuncFormatter, LogLocator, MaxNLocator, NullFormatter

from controller.runner.records import Baseline, RoundRecord
from innet.units import format_size
from innet.vocabulary import NetworkMode

BAND = 0.2  # the predicted-vs-measured plot shades +-20% around y = x
PANELS_PER_ROW = 3  # round-time.png
LINE_STYLES = ("-", "--", "-.", ":")  # loss.png: one per memory point, colours per schedule


def plot_round_times(records: list[RoundRecord]) -> Figure:
    """Time per round per (network, schedule), one panel per memory point; predicted dashed.
    A network that does not depend on memory (all but inna) is drawn in every panel."""
    memories = sorted({r.memory for r in records if r.network == NetworkMode.INNA}) or sorted(
        {r.memory for r in records}
    )
    fig, axes = _figure(max(1, len(memories)))
    for ax, memory in zip(axes, memories, strict=False):
        for colour, schedule in _colours(records):
            recs = sorted(_of(records, memory, schedule), key=lambda r: r.round)
            if not recs:
                continue
            done = [(r.round, r.time_s) for r in recs if r.ok and r.time_s is not None]
            if done:
                ax.plot(
                    [n for n, _ in done],
                    [t for _, t in done],
                    marker="o",
                    color=colour,
                    label=f"{schedule} measured",
                )
            flagged = [
                (r.round, r.time_s) for r in recs if r.ok and r.time_s is not None and r.flagged
            ]
            if flagged:
                ax.scatter(
                    [n for n, _ in flagged],
                    [t for _, t in flagged],
                    marker="X",
                    s=60,
                    color="white",
                    edgecolors=colour,
                    zorder=3,
                    label=f"{schedule} flagged",
                )
            ax.plot(
                [r.round for r in recs],
                [r.predicted_s for r in recs],
                linestyle="--",
                color=colour,
                label=f"{schedule} predicted",
            )
        ax.set_title(f"{format_size(memory)} ({_slots_text(records, memory)})")
        ax.set_xlabel("round")
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax.grid(True, alpha=0.3)
        _legend(ax)
    for ax in axes[::PANELS_PER_ROW]:
        ax.set_ylabel("round time (s)")
    _finish(fig, empty=not records)
    return fig


def plot_loss(records: list[RoundRecord], baseline: Baseline | None) -> Figure:
    """Training loss against wall-clock seconds, one line per (network, schedule) x memory."""
    fig, (ax,) = _figure(1)
    memories = sorted({r.memory for r in records})
    for style, memory in zip(itertools.cycle(LINE_STYLES), memories, strict=False):
        for colour, schedule in _colours(records):
            recs = [r for r in records if r.series == schedule and r.memory == memory]
            points = [
                (r.wall_s, r.train_loss)
                for r in sorted(recs, key=lambda r: r.round)
                if r.train_loss is not None
            ]
            where = (
                f", {format_size(memory)}" if recs and recs[0].network == NetworkMode.INNA else ""
            )
            if points:
                ax.plot(
                    *zip(*points, strict=True),
                    marker=".",
                    color=colour,
                    linestyle=style,
                    label=f"{schedule}{where}",
                )
    if baseline is not None and math.isfinite(baseline.train_loss):
        ax.axhline(
            baseline.train_loss, color="grey", linewidth=3, alpha=0.4, label="baseline, final"
        )
    ax.set_xlabel("wall-clock seconds since the schedule's run began")
    ax.set_ylabel("training loss")
    ax.grid(True, alpha=0.3)
    _legend(ax)
    _finish(fig, empty=not records)
    return fig


def plot_predicted_vs_measured(records: list[RoundRecord]) -> Figure:
    """Each finished round: measured against predicted time, with y = x and a +-20% band."""
    fig, (ax,) = _figure(1, width=6)
    # zero or missing times have no place on log axes
    pairs = [
        (r.series, r.predicted_s, r.time_s, bool(r.flagged))
        for r in records
        if r.ok and r.time_s and r.predicted_s
    ]
    for colour, schedule in _colours(records):
        for flagged in (False, True):
            mine = [(p, t) for s, p, t, f in pairs if s == schedule and f == flagged]
            if not mine:
                continue
            xs, ys = [p for p, _ in mine], [t for _, t in mine]
            if flagged:  # hollow: not a measurement of the network
                ax.scatter(
                    xs, ys, facecolors="none", edgecolors=colour, s=30, label=f"{schedule} flagged"
                )
            else:
                ax.scatter(xs, ys, color=colour, s=14, label=schedule)
    if pairs:
        identity_band(ax, [p for _, p, _, _ in pairs] + [t for _, _, t, _ in pairs])
        _legend(ax)
    ax.set_xlabel("predicted round time (s)")
    ax.set_ylabel("measured round time (s)")
    ax.grid(True, which="both", alpha=0.3)
    _finish(fig, empty=not pairs)
    return fig


def identity_band(ax: Axes, values: list[float]) -> None:
    """Log axes over `values` (times), the line measured = predicted and a +-BAND band."""
    line = [min(values) / 1.5, max(values) * 1.5]
    ax.plot(line, line, color="black", linewidth=1, label="measured = predicted")
    ax.fill_between(
        line,
        [x * (1 - BAND) for x in line],
        [x * (1 + BAND) for x in line],
        color="grey",
        alpha=0.2,
        label=f"±{BAND:.0%}",
    )
    ax.set_xscale("log")
    ax.set_yscale("log")
    for axis in (ax.xaxis, ax.yaxis):
        axis.set_major_locator(LogLocator(subs=(1.0, 2.0, 5.0)))
        axis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
        axis.set_minor_formatter(NullFormatter())


def _figure(panels: int, width: float = 4.5) -> tuple[Figure, list[Axes]]:
    """A figure of `panels` axes, at most PANELS_PER_ROW to a row, sharing the y axis."""
    cols = min(panels, PANELS_PER_ROW)
    rows = math.ceil(panels / cols)
    fig = Figure(figsize=(max(6.0, width * cols), 4.5 * rows))
    axes: list[Axes] = list(fig.subplots(rows, cols, squeeze=False, sharey=True).flat)
    for spare in axes[panels:]:
        spare.set_visible(False)
    return fig, axes[:panels]


def _legend(ax: Axes) -> None:
    if ax.get_legend_handles_labels()[0]:
        ax.legend(fontsize=7, handlelength=3)


def _finish(fig: Figure, empty: bool) -> None:
    if empty:
        fig.text(0.5, 0.5, "no finished rounds", ha="center", va="center", color="grey")
    fig.tight_layout()


def _slots_text(records: list[RoundRecord], memory: int) -> str:
    slots = next(r.slots for r in records if r.memory == memory)
    return f"{slots} slot{'' if slots == 1 else 's'} per bank"


def _colours(records: list[RoundRecord]) -> list[tuple[str, str]]:
    series = list(dict.fromkeys(r.series for r in records))
    return [(f"C{i % 10}", s) for i, s in enumerate(series)]


def _of(records: list[RoundRecord], memory: int, series: str) -> list[RoundRecord]:
    """The rounds of one (network, schedule) at this memory (any memory but inna's)."""
    return [
        r
        for r in records
        if r.series == series and (r.memory == memory or r.network != NetworkMode.INNA)
    ]
