"""The results folder of one `innet run`: what ran, every round as it ended, and the summary.

    results/<name>-<YYYYmmdd-HHMMSS>/
        scenario.yaml               the scenario as run, every default resolved
        versions.json               innet, Python, torch, numpy, platform, git commit
        rounds.jsonl                one JSON object per round, appended and fsynced as it ends
        summary.csv                 one row per (memory, schedule), from `summarise`
        round-time.png              time per round per schedule, a panel per memory point
        loss.png                    training loss against wall-clock seconds
        predicted-vs-measured.png   each round's measured time against the planner's

rounds.jsonl is only ever appended to, so a crash leaves every earlier round intact; the other
files are written to a temporary file in the folder and renamed into place, so none is ever
seen half-written. Non-finite numbers (a diverged loss) are written as null.
"""

from __future__ import annotations

import csv
import importlib.metadata
import io
import itertools
import json
import logging
import math
import os
import platform
import subprocess
import tempfile
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

import yaml

from topo.units import format_duration, format_size

log = logging.getLogger(__name__)

ROUNDS_FILE = "rounds.jsonl"
CHECKOUT = Path(__file__).resolve().parents[1]
GIT_TIMEOUT_S = 10.0
BAND = 0.2  # the predicted-vs-measured plot shades +-20% around y = x
PANELS_PER_ROW = 3  # round-time.png
LINE_STYLES = ("-", "--", "-.", ":")  # loss.png: one per memory point, colours per schedule

# Every round record has these keys (values may be null where a failed round has none).
RECORD_KEYS = (
    "memory",  # full-scale aggregator memory per site, bytes
    "slots",  # slots per bank on the switches
    "schedule",  # family name, e.g. "cliques-3"
    "round",  # 0-based index within this schedule's run
    "groups",  # list of groups, each a list of city names
    "started",  # unix time of the synchronised start
    "time_s",  # measured: synchronised start to the last leader done
    "predicted_s",  # the planner's round time
    "wall_s",  # seconds since this schedule's run began, at the end of the round
    "wan_bytes",  # {"A->B": bytes sent on that WAN link in the round}
    "drops",  # {switch drop counter: count summed over switches}
    "retransmissions",
    "nacks",
    "slot_conflicts",
    "slots_needed",  # the planner's memory need, in slots
    "train_loss",
    "test_loss",
    "accuracy",  # fraction of test samples classified right, 0..1
    "cpu_lag_ms",  # worst switch processing lag seen in the round
    "cpu_bound",  # the switches, not the network, limited the round
    "status",  # "ok" or "failed: <reason>"
)

SUMMARY_COLUMNS = (
    "memory", "slots", "schedule", "rounds", "mean_time_s", "mean_predicted_s", "ratio",
    "consensus_s", "consensus_predicted_s", "final_train_loss", "final_test_loss",
    "final_accuracy", "baseline_accuracy", "wan_bytes", "retransmissions", "slot_conflicts",
    "cpu_bound_rounds", "status",
)  # fmt: skip


class ResultsWriter:
    """Writes one run's results folder; `record` each round as it ends, then `finish`."""

    def __init__(
        self, folder: Path, scenario_dict: Mapping[str, Any], versions: Mapping[str, Any]
    ) -> None:
        self.folder = Path(folder)
        self.folder.mkdir(parents=True, exist_ok=True)
        rounds = self.folder / ROUNDS_FILE
        if rounds.exists():
            raise FileExistsError(f"{rounds} exists: results of another run; choose a new folder")
        text = "# The scenario as run, every default resolved.\n"
        text += yaml.safe_dump(dict(scenario_dict), sort_keys=False)
        _replace_text(self.folder / "scenario.yaml", text)
        _replace_text(self.folder / "versions.json", json.dumps(versions, indent=2) + "\n")
        self._rounds = rounds.open("x", encoding="utf-8")
        self._records: list[dict[str, Any]] = []

    @property
    def records(self) -> tuple[dict[str, Any], ...]:
        return tuple(self._records)

    def record(self, rec: Mapping[str, Any]) -> None:
        """Append one round to rounds.jsonl; on disk (fsynced) when this returns."""
        if self._rounds.closed:
            raise RuntimeError(f"results in {self.folder} are finished; no more rounds")
        missing = [key for key in RECORD_KEYS if key not in rec]
        if missing:
            raise ValueError(f"round record without {', '.join(missing)}")
        status = rec["status"]
        if not (status == "ok" or (isinstance(status, str) and status.startswith("failed: "))):
            raise ValueError(f"round status must be 'ok' or 'failed: <reason>', got {status!r}")
        plain = _plain(rec)
        self._rounds.write(json.dumps(plain, allow_nan=False) + "\n")
        self._rounds.flush()
        os.fsync(self._rounds.fileno())
        self._records.append(plain)

    def finish(
        self, summary_rows: Iterable[Mapping[str, Any]], baseline: Mapping[str, Any] | None
    ) -> None:
        """Write summary.csv and the plots; `baseline` (train_loss, test_loss, accuracy of the
        model trained without the WAN) fills the baseline column and the loss reference."""
        self.close()
        rows = [dict(row) for row in summary_rows]
        if baseline is not None:
            for row in rows:
                row["baseline_accuracy"] = baseline.get("accuracy")
        _replace_text(self.folder / "summary.csv", summary_csv(rows))
        plot_round_times(self._records, self.folder / "round-time.png")
        plot_loss(self._records, self.folder / "loss.png", baseline)
        plot_predicted_vs_measured(self._records, self.folder / "predicted-vs-measured.png")

    def close(self) -> None:
        self._rounds.close()

    def __enter__(self) -> ResultsWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def collect_versions() -> dict[str, Any]:
    """What produced a run: package versions, platform, and the checkout's git commit (None
    where git or the repository is missing; git_dirty says whether tracked files changed)."""
    commit = _git("rev-parse", "HEAD")
    changes = _git("status", "--porcelain", "--untracked-files=no") if commit else None
    return {
        "innet": _version("innet"),
        "python": platform.python_version(),
        "torch": _version("torch"),
        "numpy": _version("numpy"),
        "platform": platform.platform(),
        "git_commit": commit,
        "git_dirty": None if changes is None else bool(changes),
    }


def read_records(folder: Path) -> list[dict[str, Any]]:
    """The rounds of a results folder; a last line cut short by a crash is left out."""
    path = Path(folder) / ROUNDS_FILE
    text = path.read_text(encoding="utf-8")
    lines = text.split("\n")
    if lines[-1]:
        log.warning("%s: last line is incomplete (the run stopped while writing it)", path)
    records = []
    for number, line in enumerate(lines[:-1], start=1):
        try:
            records.append(json.loads(line))
        except ValueError as err:
            raise ValueError(f"{path}:{number}: not a JSON round record: {err}") from None
    return records


def summarise(
    records: Iterable[Mapping[str, Any]], cycle_lengths: Mapping[str, int | tuple[int, int]]
) -> list[dict[str, Any]]:
    """One row per (memory, schedule), memory ascending, schedules in the order they ran.

    Means and the ratio are over the rounds that finished (status "ok"). Time to consensus is
    the sum, over the rounds to consensus, of the mean time of the rounds at the same position
    of the schedule's cycle (`_cycle_time`); measured is None when a position needed has no
    finished round. Final figures are those of the last finished round.
    """
    runs: dict[tuple[int, str], list[Mapping[str, Any]]] = {}
    for rec in records:
        runs.setdefault((rec["memory"], rec["schedule"]), []).append(rec)
    order: dict[str, int] = {}
    for _, schedule in runs:
        order.setdefault(schedule, len(order))
    rows = []
    for memory, schedule in sorted(runs, key=lambda run: (run[0], order[run[1]])):
        recs = sorted(runs[memory, schedule], key=lambda r: r["round"])
        if schedule not in cycle_lengths:
            raise ValueError(f"no cycle length given for schedule {schedule!r}")
        ok = [r for r in recs if r["status"] == "ok" and r["time_s"] is not None]
        failed = [r for r in recs if r["status"] != "ok"]
        mean_time = _mean(r["time_s"] for r in ok)
        mean_predicted = _mean(r["predicted_s"] for r in ok)
        last = ok[-1] if ok else {}
        rows.append(
            {
                "memory": memory,
                "slots": recs[0]["slots"],
                "schedule": schedule,
                "rounds": len(recs),
                "mean_time_s": mean_time,
                "mean_predicted_s": mean_predicted,
                "ratio": _ratio(mean_time, mean_predicted),
                "consensus_s": _cycle_time(ok, "time_s", cycle_lengths[schedule]),
                "consensus_predicted_s": _cycle_time(recs, "predicted_s", cycle_lengths[schedule]),
                "final_train_loss": last.get("train_loss"),
                "final_test_loss": last.get("test_loss"),
                "final_accuracy": last.get("accuracy"),
                "baseline_accuracy": None,
                "wan_bytes": sum(sum((r["wan_bytes"] or {}).values()) for r in recs),
                "retransmissions": sum(r["retransmissions"] or 0 for r in recs),
                "slot_conflicts": sum(r["slot_conflicts"] or 0 for r in recs),
                "cpu_bound_rounds": sum(1 for r in recs if r["cpu_bound"]),
                "status": _run_status(recs, failed),
            }
        )
    return rows


def summary_csv(rows: Iterable[Mapping[str, Any]]) -> str:
    out = io.StringIO()
    writer = csv.DictWriter(out, SUMMARY_COLUMNS, extrasaction="ignore", lineterminator="\n")
    writer.writeheader()
    for row in rows:
        writer.writerow({key: "" if row.get(key) is None else row[key] for key in SUMMARY_COLUMNS})
    return out.getvalue()


def format_table(rows: Iterable[Mapping[str, Any]]) -> str:
    """The summary as a plain-text table; '*' marks, per memory point, the schedule whose
    measured time to consensus was shortest."""
    rows = list(rows)
    first: dict[int, Mapping[str, Any]] = {}
    for row in rows:
        best = first.get(row["memory"])
        if row["consensus_s"] is not None and (
            best is None or row["consensus_s"] < best["consensus_s"]
        ):
            first[row["memory"]] = row
    header = ("memory", "schedule", "consensus", "predicted", "ratio", "accuracy", "", "status")
    lines = [header]
    for row in rows:
        slots = row["slots"]
        lines.append(
            (
                f"{format_size(row['memory'])} ({slots} slot{'s' if slots != 1 else ''}/bank)",
                row["schedule"],
                _shown(row["consensus_s"], format_duration),
                _shown(row["consensus_predicted_s"], format_duration),
                _shown(row["ratio"], lambda x: f"{x:.2f}"),
                _shown(row["final_accuracy"], lambda x: f"{100 * x:.1f}%"),
                "*" if first.get(row["memory"]) is row else "",
                _status(row),
            )
        )
    widths = [max(len(line[i]) for line in lines) for i in range(len(header))]
    right = {2, 3, 4, 5}  # numbers line up on the right
    text = [
        "  ".join(
            cell.rjust(widths[i]) if i in right else cell.ljust(widths[i])
            for i, cell in enumerate(line)
        ).rstrip()
        for line in lines
    ]
    text.append("* reached consensus first at this memory (measured)")
    if any(row.get("cpu_bound_rounds") for row in rows):
        text.append(
            "CPU-bound: a switch or a leader fell behind its schedule by more than 5% of the "
            "predicted round (cpu_lag_ms in rounds.jsonl); those rounds measure the CPU, not "
            "the network"
        )
    return "\n".join(text)


def _status(row: Mapping[str, Any]) -> str:
    bound = row.get("cpu_bound_rounds") or 0
    return f"{row['status']}, {bound} CPU-bound round(s)" if bound else str(row["status"])


def plot_round_times(records: list[dict[str, Any]], path: Path) -> None:
    """Time per round per schedule, one panel per memory point; predicted dashed."""
    memories = sorted({r["memory"] for r in records})
    fig, axes = _figure(max(1, len(memories)))
    for ax, memory in zip(axes, memories, strict=False):
        for colour, schedule in _colours(records):
            recs = sorted(_of(records, memory, schedule), key=lambda r: r["round"])
            done = [r for r in recs if r["time_s"] is not None and r["status"] == "ok"]
            if done:
                ax.plot([r["round"] for r in done], [r["time_s"] for r in done], marker="o",
                        color=colour, label=f"{schedule} measured")  # fmt: skip
            planned = [r for r in recs if r["predicted_s"] is not None]
            if planned:
                ax.plot([r["round"] for r in planned], [r["predicted_s"] for r in planned],
                        linestyle="--", color=colour, label=f"{schedule} predicted")  # fmt: skip
        ax.set_title(f"{format_size(memory)} ({_slots_text(records, memory)})")
        ax.set_xlabel("round")
        ax.xaxis.get_major_locator().set_params(integer=True)
        ax.grid(True, alpha=0.3)
        _legend(ax)
    for ax in axes[::PANELS_PER_ROW]:
        ax.set_ylabel("round time (s)")
    _save(fig, path, empty=not records)


def plot_loss(
    records: list[dict[str, Any]], path: Path, baseline: Mapping[str, Any] | None
) -> None:
    """Training loss against wall-clock seconds, one line per schedule x memory."""
    fig, (ax,) = _figure(1)
    memories = sorted({r["memory"] for r in records})
    for style, memory in zip(itertools.cycle(LINE_STYLES), memories, strict=False):
        for colour, schedule in _colours(records):
            points = [
                (r["wall_s"], r["train_loss"])
                for r in sorted(_of(records, memory, schedule), key=lambda r: r["round"])
                if r["wall_s"] is not None and r["train_loss"] is not None
            ]
            if points:
                ax.plot(*zip(*points, strict=True), marker=".", color=colour, linestyle=style,
                        label=f"{schedule}, {format_size(memory)}")  # fmt: skip
    if baseline is not None and baseline.get("train_loss") is not None:
        ax.axhline(baseline["train_loss"], color="grey", linewidth=3, alpha=0.4,
                   label="baseline, final")  # fmt: skip
    ax.set_xlabel("wall-clock seconds since the schedule's run began")
    ax.set_ylabel("training loss")
    ax.grid(True, alpha=0.3)
    _legend(ax)
    _save(fig, path, empty=not records)


def plot_predicted_vs_measured(records: list[dict[str, Any]], path: Path) -> None:
    """Each finished round: measured against predicted time, with y = x and a +-20% band."""
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

    fig, (ax,) = _figure(1, width=6)
    pairs = [
        r for r in records if r["status"] == "ok" and r["time_s"] and r["predicted_s"]
    ]  # zero or missing times have no place on log axes
    for colour, schedule in _colours(records):
        mine = [r for r in pairs if r["schedule"] == schedule]
        if mine:
            ax.scatter([r["predicted_s"] for r in mine], [r["time_s"] for r in mine],
                       color=colour, s=14, label=schedule)  # fmt: skip
    if pairs:
        values = [r["predicted_s"] for r in pairs] + [r["time_s"] for r in pairs]
        line = [min(values) / 1.5, max(values) * 1.5]
        ax.plot(line, line, color="black", linewidth=1, label="measured = predicted")
        ax.fill_between(line, [x * (1 - BAND) for x in line], [x * (1 + BAND) for x in line],
                        color="grey", alpha=0.2, label=f"±{BAND:.0%}")  # fmt: skip
        ax.set_xscale("log")
        ax.set_yscale("log")
        for axis in (ax.xaxis, ax.yaxis):
            axis.set_major_locator(LogLocator(subs=(1.0, 2.0, 5.0)))
            axis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
            axis.set_minor_formatter(NullFormatter())
        _legend(ax)
    ax.set_xlabel("predicted round time (s)")
    ax.set_ylabel("measured round time (s)")
    ax.grid(True, which="both", alpha=0.3)
    _save(fig, path, empty=not pairs)


def _figure(panels: int, width: float = 4.5) -> tuple[Any, list[Any]]:
    """A figure of `panels` axes, at most PANELS_PER_ROW to a row, sharing the y axis."""
    from matplotlib.figure import Figure  # no pyplot: no global figure state, Agg by default

    cols = min(panels, PANELS_PER_ROW)
    rows = math.ceil(panels / cols)
    fig = Figure(figsize=(max(6.0, width * cols), 4.5 * rows))
    axes = list(fig.subplots(rows, cols, squeeze=False, sharey=True).flat)
    for spare in axes[panels:]:
        spare.set_visible(False)
    return fig, axes[:panels]


def _legend(ax: Any) -> None:
    if ax.get_legend_handles_labels()[0]:
        ax.legend(fontsize=7, handlelength=3)


def _save(fig: Any, path: Path, empty: bool) -> None:
    if empty:
        fig.text(0.5, 0.5, "no finished rounds", ha="center", va="center", color="grey")
    fig.tight_layout()
    _replace(path, lambda tmp: fig.savefig(tmp, format="png", dpi=120))


def _slots_text(records: list[dict[str, Any]], memory: int) -> str:
    slots = next(r["slots"] for r in records if r["memory"] == memory)
    return f"{slots} slot{'' if slots == 1 else 's'} per bank"


def _colours(records: list[dict[str, Any]]) -> list[tuple[str, str]]:
    schedules = list(dict.fromkeys(r["schedule"] for r in records))
    return [(f"C{i % 10}", schedule) for i, schedule in enumerate(schedules)]


def _of(records: list[dict[str, Any]], memory: int, schedule: str) -> list[dict[str, Any]]:
    return [r for r in records if r["memory"] == memory and r["schedule"] == schedule]


def _mean(values: Iterable[float | None]) -> float | None:
    known = [v for v in values if v is not None]
    return sum(known) / len(known) if known else None


def _ratio(measured: float | None, predicted: float | None) -> float | None:
    return measured / predicted if measured is not None and predicted else None


def _cycle_time(
    recs: list[Mapping[str, Any]], key: str, length: int | tuple[int, int]
) -> float | None:
    """Sum over the rounds to consensus of the mean time at each round's cycle position.

    `length` is the cycle's length (consensus after one cycle), or (rounds to consensus, cycle
    length) when those differ: cliques of three on nine islands agree after 2 of a 4-round
    cycle, ring pairs need many cycles of 2."""
    rounds, cycle = (length, length) if isinstance(length, int) else length
    if rounds < 1 or cycle < 1:
        return None
    positions = [_mean(r[key] for r in recs if r["round"] % cycle == p) for p in range(cycle)]
    needed = [positions[t % cycle] for t in range(rounds)]
    return None if any(t is None for t in needed) else sum(t or 0.0 for t in needed)


def _run_status(recs: list[Mapping[str, Any]], failed: list[Mapping[str, Any]]) -> str:
    if not failed:
        return "ok"
    reason = str(failed[0]["status"]).removeprefix("failed: ")
    return f"{len(failed)} of {len(recs)} rounds failed (round {failed[0]['round']}: {reason})"


def _shown(value: Any, form: Callable[[Any], str]) -> str:
    return "-" if value is None else form(value)


def _plain(value: Any) -> Any:
    """JSON-ready: tuples as lists, numpy scalars as Python numbers, non-finite as None."""
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    if hasattr(value, "item") and not isinstance(value, str | bytes):
        value = value.item()  # a numpy scalar
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def _version(distribution: str) -> str | None:
    try:
        return importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        return None


def _git(*args: str) -> str | None:
    try:
        done = subprocess.run(
            ["git", "-C", str(CHECKOUT), *args],
            capture_output=True,
            text=True,
            timeout=GIT_TIMEOUT_S,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    return done.stdout.strip() if done.returncode == 0 else None


def _replace_text(path: Path, text: str) -> None:
    _replace(path, lambda tmp: tmp.write_text(text, encoding="utf-8"))


def _replace(path: Path, write: Callable[[Path], object]) -> None:
    """Write through a temporary file in the same folder, fsync it, rename it over `path`."""
    fd, name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    os.close(fd)
    tmp = Path(name)
    try:
        write(tmp)
        with tmp.open("rb") as done:
            os.fsync(done.fileno())
        tmp.chmod(0o644)
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)
