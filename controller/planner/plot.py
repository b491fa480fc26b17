"""PNG plot of a sweep: time to consensus against aggregator memory, one line per family, and
the networks that use no memory (plain, multicast) as flat lines in the family's colour. With a
jitter margin, the memory points where no family is fastest across the band are shaded."""

from __future__ import annotations

import math
import os
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

from controller.planner.exceptions import PlanError
from controller.planner.sweep import Sweep
from innet.exceptions import InputError
from innet.paths import check_destination, make_folder

if TYPE_CHECKING:  # matplotlib is imported only when a plot is drawn
    from matplotlib.axes import Axes


def check_plot_path(path: Path) -> None:
    """PlanError unless a plot can be written at `path`: not a directory itself, and in a
    folder that exists or can be made (plot_sweep makes it)."""
    if path.is_dir():
        raise PlanError(f"cannot write the plot to {path}: it is a directory; give a file name")
    try:
        check_destination(path.parent, "--plot")
    except InputError as err:
        raise PlanError(f"cannot write the plot to {path}: {err}") from None


def plot_sweep(result: Sweep, path: Path, title: str) -> None:
    """Write the plot to `path` atomically (a temporary file renamed into place), making its
    folder when missing."""
    check_plot_path(path)
    # imported here: matplotlib takes a second to load, and every `innet` command imports this
    # module; pyplot is told its backend (no display) before its first import
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8, 5))
    memories = [p.params.memory_bytes / 1e6 for p in result.plans]
    colours = {}
    for family in result.families:
        times = [p.family(family).time_s for p in result.plans]
        shown = [(m, t) for m, t in zip(memories, times, strict=True) if not math.isinf(t)]
        if shown:
            (line,) = ax.plot(
                *zip(*shown, strict=True), marker="o", markersize=3, label=f"inna {family}"
            )
            colours[family] = line.get_color()
    for plan, style in zip(result.baselines, ("--", ":", "-."), strict=False):
        for f in plan.families:  # no memory used: the same time at every size
            if not math.isinf(f.time_s):
                ax.plot(
                    [memories[0], memories[-1]],
                    [f.time_s, f.time_s],
                    linestyle=style,
                    linewidth=1,
                    color=colours.get(f.family),
                    label=f"{plan.params.network} {f.family}",
                )
    for c in result.crossovers:
        ax.axvline(c.memory_bytes / 1e6, color="grey", linestyle="--", linewidth=1)
        ax.annotate(
            f"crossover {c.memory_bytes / 1e6:.3g} MB",
            (c.memory_bytes / 1e6, 0.98),
            xycoords=("data", "axes fraction"),
            rotation=90,
            va="top",
            ha="right",
            fontsize=8,
            color="grey",
        )
    _shade_no_winner(ax, result, memories)
    if result.inna_beats_plain_bytes is not None:
        mark = result.inna_beats_plain_bytes / 1e6
        ax.axvline(mark, color="black", linestyle=":", linewidth=1)
        ax.annotate(
            f"inna beats plain from {mark:.3g} MB",
            (mark, 0.02),
            xycoords=("data", "axes fraction"),
            rotation=90,
            va="bottom",
            ha="right",
            fontsize=8,
        )
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("aggregator memory per site (MB)")
    ax.set_ylabel("time to consensus (s)")
    ax.set_title(title)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7, ncol=2)
    fig.tight_layout()
    make_folder(path.parent, "--plot")
    fd, tmp = tempfile.mkstemp(prefix=".plot-", suffix=".png", dir=path.parent)
    os.close(fd)
    try:
        fig.savefig(tmp, dpi=120)
        os.replace(tmp, path)
    finally:
        plt.close(fig)
        if os.path.exists(tmp):
            os.unlink(tmp)


def _shade_no_winner(ax: Axes, result: Sweep, memories: list[float]) -> None:
    """Shade each memory point without a winner across the jitter band, halfway (on the log
    scale) to its neighbours."""
    labelled = False
    for k, choice in enumerate(result.choices):
        if choice.winner is not None or len(choice.band.shifts) < 2:
            continue
        low = (memories[k - 1] * memories[k]) ** 0.5 if k else memories[k]
        high = (memories[k] * memories[k + 1]) ** 0.5 if k + 1 < len(memories) else memories[k]
        label = None if labelled else "within the jitter margin: no winner"
        ax.axvspan(low, high, color="orange", alpha=0.15, linewidth=0, label=label)
        labelled = True
