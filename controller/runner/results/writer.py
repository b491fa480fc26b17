"""The results folder of one `innet run`: what ran, every round as it ended, and the summary.

    results/<name>-<YYYYmmdd-HHMMSS>/
        scenario.yaml               the scenario as run, every default resolved
        versions.json               innet, Python, torch, numpy, platform, git commit
        network.json                per memory point: the target, the shaping used, the scale,
                                    each WAN link's shaping spec (delay, rate, jitter, loss)
        rounds.jsonl                one JSON object per round, appended and fsynced as it ends
        summary.csv                 one row per (memory, schedule) (results/summary.py)
        round-time.png              time per round per schedule, a panel per memory point
        loss.png                    training loss against wall-clock seconds
        predicted-vs-measured.png   each round's measured time against the planner's
        gap.csv                     with `compute`: utilisation and time to target per row,
                                    against the islands in one building (results/gap.py)
        accuracy-time.png           with `compute`: accuracy against full-scale wall-clock

rounds.jsonl is only ever appended to, so a crash leaves every earlier round intact; the other
files are written to a temporary file in the folder and renamed into place, so none is ever
seen half-written.
"""

from __future__ import annotations

import json
import logging
import os
import platform
import subprocess
import tempfile
from collections.abc import Callable, Iterable
from pathlib import Path

import yaml
from matplotlib.figure import Figure

from controller.runner.records import Baseline, RoundRecord
from controller.runner.results.gap import GapRow, gap_csv, plot_accuracy_time
from controller.runner.results.plots import (
    plot_loss,
    plot_predicted_vs_measured,
    plot_round_times,
)
from controller.runner.results.summary import SummaryRow, summary_csv
from innet.jsontypes import JSONObject
from innet.paths import CHECKOUT
from innet.versions import installed_version

log = logging.getLogger(__name__)

ROUNDS_FILE = "rounds.jsonl"
GIT_TIMEOUT_S = 10.0


class ResultsWriter:
    """Writes one run's results folder; `record` each round as it ends, then `finish`."""

    def __init__(self, folder: Path, scenario_dict: JSONObject, versions: JSONObject) -> None:
        self.folder = Path(folder)
        self.folder.mkdir(parents=True, exist_ok=True)
        rounds = self.folder / ROUNDS_FILE
        if rounds.exists():
            raise FileExistsError(f"{rounds} exists: results of another run; choose a new folder")
        text = "# The scenario as run, every default resolved.\n"
        text += yaml.safe_dump(scenario_dict, sort_keys=False)
        replace_text(self.folder / "scenario.yaml", text)
        replace_text(self.folder / "versions.json", json.dumps(versions, indent=2) + "\n")
        self._rounds = rounds.open("x", encoding="utf-8")
        self._records: list[RoundRecord] = []
        self._networks: JSONObject = {}

    @property
    def records(self) -> tuple[RoundRecord, ...]:
        return tuple(self._records)

    def record(self, rec: RoundRecord) -> None:
        """Append one round to rounds.jsonl; on disk (fsynced) when this returns."""
        if self._rounds.closed:
            raise RuntimeError(f"results in {self.folder} are finished; no more rounds")
        self._rounds.write(json.dumps(rec.to_json(), allow_nan=False) + "\n")
        self._rounds.flush()
        os.fsync(self._rounds.fileno())
        self._records.append(rec)

    def record_file(self, name: str, data: JSONObject) -> None:
        """A JSON file of the run's own beside the results (e.g. cluster.json), written whole
        at once."""
        replace_text(self.folder / name, json.dumps(data, indent=2, allow_nan=False) + "\n")

    def record_network(self, label: str, facts: JSONObject) -> None:
        """How the network of memory point `label` was built (network.json: target, shaping,
        scale, ...), written as soon as it is up."""
        self._networks[label] = facts
        replace_text(self.folder / "network.json", json.dumps(self._networks, indent=2) + "\n")

    def finish(
        self,
        rows: Iterable[SummaryRow],
        baseline: Baseline | None,
        gap: tuple[list[GapRow], float, bool] | None = None,
        *,
        plots: bool = True,
    ) -> None:
        """Write summary.csv and the plots (`baseline`: the loss reference line); with `gap`
        (its rows, a round's compute, overlap), gap.csv and accuracy-time.png. Without `plots`
        (a run stopped by a signal, which must end within seconds), the CSV files only."""
        self.close()
        records = list(self._records)
        replace_text(self.folder / "summary.csv", summary_csv(rows))
        if gap is not None:
            gap_rows, compute_s, overlap = gap
            replace_text(self.folder / "gap.csv", gap_csv(gap_rows))
        if not plots:
            return
        if gap is not None:
            save_figure(
                plot_accuracy_time(records, compute_s, overlap), self.folder / "accuracy-time.png"
            )
        save_figure(plot_round_times(records), self.folder / "round-time.png")
        save_figure(plot_loss(records, baseline), self.folder / "loss.png")
        save_figure(plot_predicted_vs_measured(records), self.folder / "predicted-vs-measured.png")

    def close(self) -> None:
        self._rounds.close()

    def __enter__(self) -> ResultsWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def collect_versions() -> JSONObject:
    """What produced a run: package versions, platform, and the checkout's git commit (None
    where git or the repository is missing; git_dirty says whether tracked files changed)."""
    commit = _git("rev-parse", "HEAD")
    changes = _git("status", "--porcelain", "--untracked-files=no") if commit else None
    return {
        "innet": installed_version("innet"),
        "python": platform.python_version(),
        "torch": installed_version("torch"),
        "numpy": installed_version("numpy"),
        "platform": platform.platform(),
        "git_commit": commit,
        "git_dirty": None if changes is None else bool(changes),
    }


def read_records(folder: Path) -> list[RoundRecord]:
    """The rounds of a results folder; a last line cut short by a crash is left out."""
    path = Path(folder) / ROUNDS_FILE
    text = path.read_text(encoding="utf-8")
    lines = text.split("\n")
    if lines[-1]:
        log.warning("%s: last line is incomplete (the run stopped while writing it)", path)
    records = []
    for number, line in enumerate(lines[:-1], start=1):
        try:
            records.append(RoundRecord.from_json(json.loads(line)))
        except ValueError as err:
            raise ValueError(f"{path}:{number}: not a round record: {err}") from None
    return records


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


def save_figure(fig: Figure, path: Path) -> None:
    _replace(path, lambda tmp: fig.savefig(tmp, format="png", dpi=120))


def replace_text(path: Path, text: str) -> None:
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
