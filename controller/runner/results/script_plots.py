"""The plots of a training script's run (controller/runner/script.py), from its records.

    collectives.png   each collective's measured time against the planner's price, per
                      network (hollow: flagged, not a measurement of the network)
    metrics.png       what rank 0 logged against its play's seconds, one line per play: the
                      first of `METRICS` the script logs (val_loss, loss, ...), else its first
                      numeric one

No pyplot: each plot is its own `Figure`, as the built-in runs' plots (results/plots.py).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from matplotlib.figure import Figure

from controller.runner.results.plots import identity_band
from innet.units import format_size

METRICS = ("val_loss", "test_loss", "loss", "train_loss", "accuracy")  # preferred, in order
NOT_METRICS = ("rank", "time", "play_s", "round", "step", "network", "memory", "schedule")


def plot_collectives(records: Sequence[Mapping[str, Any]]) -> Figure:
    """Measured against predicted time of every finished collective, coloured by network."""
    fig = Figure(figsize=(6.5, 5.0))
    ax = fig.subplots()
    done = [r for r in records if r["status"] == "ok" and r["time_s"] and r["predicted_s"]]
    networks = list(dict.fromkeys(r["network"] for r in done))
    for i, network in enumerate(networks):
        colour = f"C{i % 10}"
        for flagged in (False, True):
            mine = [r for r in done if r["network"] == network and bool(r["flags"]) == flagged]
            if not mine:
                continue
            xs, ys = [r["predicted_s"] for r in mine], [r["time_s"] for r in mine]
            if flagged:
                ax.scatter(
                    xs, ys, facecolors="none", edgecolors=colour, s=30, label=f"{network} flagged"
                )
            else:
                ax.scatter(xs, ys, color=colour, s=14, label=network)
    if done:
        identity_band(ax, [r["predicted_s"] for r in done] + [r["time_s"] for r in done])
        ax.legend(fontsize=7)
    else:
        fig.text(0.5, 0.5, "no finished collectives", ha="center", va="center", color="grey")
    ax.set_xlabel("planner's price (s)")
    ax.set_ylabel("measured collective time (s)")
    ax.grid(True, which="both", alpha=0.3)
    fig.tight_layout()
    return fig


def chosen_metric(lines: Sequence[Mapping[str, Any]]) -> str | None:
    """The metric the plot shows: the first of METRICS logged, else the first numeric one."""
    numeric = [
        k
        for line in lines
        for k, v in line.items()
        if k not in NOT_METRICS and isinstance(v, int | float) and not isinstance(v, bool)
    ]
    for name in METRICS:
        if name in numeric:
            return name
    return numeric[0] if numeric else None


def plot_metrics(lines: Sequence[Mapping[str, Any]]) -> Figure:
    """Rank 0's chosen metric against the seconds since its play began, one line per play."""
    fig = Figure(figsize=(7.0, 4.5))
    ax = fig.subplots()
    mine = [line for line in lines if line.get("rank") == 0]
    name = chosen_metric(mine)
    plays: dict[tuple[str, str, int], list[Mapping[str, Any]]] = {}
    for line in mine:
        plays.setdefault((line["network"], line["schedule"], line["memory"]), []).append(line)
    memories = sorted({m for _, _, m in plays})
    for i, ((network, schedule, memory), points) in enumerate(plays.items()):
        if name is None:
            break
        points = [p for p in points if isinstance(p.get(name), int | float) and "play_s" in p]
        if not points:
            continue
        style = ("-", "--", "-.", ":")[memories.index(memory) % 4]
        label = f"{network} {schedule}"
        if len(memories) > 1:
            label += f" @ {format_size(memory)}"
        ax.plot(
            [p["play_s"] for p in points],
            [p[name] for p in points],
            style,
            marker="o",
            markersize=3,
            color=f"C{i % 10}",
            label=label,
        )
    if name is None:
        fig.text(0.5, 0.5, "the script logged no number", ha="center", va="center", color="grey")
    else:
        ax.legend(fontsize=7)
    ax.set_xlabel("seconds since the play began (this machine's wall clock)")
    ax.set_ylabel(name or "")
    ax.grid(True, alpha=0.3)
    fig.tight_layout()
    return fig
