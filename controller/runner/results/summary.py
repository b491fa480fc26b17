"""The summary of a run: one row per (network, memory, schedule), from its round records.

Networks other than `inna` hold no partial sums in the edges: they are played once, at the
first memory point, and their rows say so (`per_memory` False).

Means and the ratio are over the rounds that finished. Time to consensus is the sum, over the
planner's rounds to consensus, of the mean time of the rounds at the same position of the
schedule's cycle (cliques of three on nine islands agree after 2 of a 4-round cycle; ring pairs
need many cycles of 2), so the predicted figure equals the planner's exactly. Final figures are
those of the last finished round. `flagged_rounds` counts the finished rounds that carry a flag
(controller/runner/flags.py): their times are in the means, and `flags` says how many carry
which, so a row is never read as the network's when its rounds were not; its
`consensus_unflagged_s` is the time to consensus from its unflagged rounds alone (None when a
cycle position has none), what the table compares rows by.
"""

from __future__ import annotations

import csv
import dataclasses
import io
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from controller.runner.flags import count_flags, flag_text
from controller.runner.records import RoundRecord
from innet.jsontypes import JSONObject
from innet.vocabulary import NetworkMode


@dataclass(frozen=True, slots=True)
class Cycle:
    """A schedule's rounds to consensus and the length of its cycle."""

    rounds: int  # 0: never reaches consensus within the planner's limit
    length: int


@dataclass(frozen=True, slots=True)
class SummaryRow:
    network: str
    memory: int
    slots: int
    schedule: str
    rounds: int  # rounds recorded
    mean_time_s: float | None
    mean_predicted_s: float | None
    ratio: float | None  # mean measured / mean predicted
    consensus_s: float | None
    consensus_predicted_s: float | None
    final_train_loss: float | None
    final_test_loss: float | None
    final_accuracy: float | None
    baseline_accuracy: float | None
    wan_bytes: int
    retransmissions: int
    slot_conflicts: int
    cpu_bound_rounds: int
    status: str
    per_memory: bool = True  # False: the network does not depend on memory (played once)
    flagged_rounds: int = 0  # finished rounds with a flag: they do not measure the network
    flags: str = ""  # how many rounds carry each flag: "timing 3, jitter 2"
    consensus_unflagged_s: float | None = None  # time to consensus from unflagged rounds only

    @property
    def measures_network(self) -> bool:
        """Every round finished and none is flagged."""
        return self.status == "ok" and not self.flagged_rounds

    def to_json(self) -> JSONObject:
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}


SUMMARY_COLUMNS = tuple(f.name for f in dataclasses.fields(SummaryRow))


def summarise(
    records: Iterable[RoundRecord],
    cycles: Mapping[tuple[str, str], Cycle],
    baseline_accuracy: float | None = None,
) -> list[SummaryRow]:
    """One row per (network, memory, schedule): networks and schedules in the order they
    first ran, memory ascending within each network."""
    runs: dict[tuple[str, int, str], list[RoundRecord]] = {}
    for rec in records:
        runs.setdefault((rec.network, rec.memory, rec.schedule), []).append(rec)
    networks: dict[str, int] = {}
    order: dict[str, int] = {}
    for network, _, schedule in runs:
        networks.setdefault(network, len(networks))
        order.setdefault(schedule, len(order))
    rows = []
    for network, memory, schedule in sorted(
        runs, key=lambda run: (networks[run[0]], run[1], order[run[2]])
    ):
        if (network, schedule) not in cycles:
            raise ValueError(f"no cycle length given for {network} {schedule!r}")
        recs = sorted(runs[network, memory, schedule], key=lambda r: r.round)
        rows.append(_row(recs, cycles[network, schedule], baseline_accuracy))
    return rows


def _row(recs: list[RoundRecord], cycle: Cycle, baseline_accuracy: float | None) -> SummaryRow:
    ok = [r for r in recs if r.ok]
    failed = [r for r in recs if r.status != "ok"]
    mean_time = _mean(r.time_s for r in ok)
    mean_predicted = _mean(r.predicted_s for r in ok)
    last = ok[-1] if ok else None
    return SummaryRow(
        network=recs[0].network,
        memory=recs[0].memory,
        slots=recs[0].slots,
        schedule=recs[0].schedule,
        rounds=len(recs),
        mean_time_s=mean_time,
        mean_predicted_s=mean_predicted,
        ratio=mean_time / mean_predicted if mean_time is not None and mean_predicted else None,
        consensus_s=_cycle_time([(r.round, r.time_s) for r in ok], cycle),
        consensus_predicted_s=_cycle_time([(r.round, r.predicted_s) for r in recs], cycle),
        final_train_loss=last.train_loss if last else None,
        final_test_loss=last.test_loss if last else None,
        final_accuracy=last.accuracy if last else None,
        baseline_accuracy=baseline_accuracy,
        wan_bytes=sum(sum(r.wan_bytes.values()) for r in recs),
        retransmissions=sum(r.retransmissions or 0 for r in recs),
        slot_conflicts=sum(r.slot_conflicts or 0 for r in recs),
        cpu_bound_rounds=sum(1 for r in recs if r.cpu_bound),
        status=_run_status(recs, failed),
        per_memory=recs[0].network == NetworkMode.INNA,
        flagged_rounds=sum(1 for r in ok if r.flagged),
        flags=flag_text(count_flags(r.flagged for r in ok)),
        consensus_unflagged_s=_cycle_time(
            [(r.round, r.time_s) for r in ok if not r.flagged], cycle
        ),
    )


def summary_csv(rows: Iterable[SummaryRow]) -> str:
    out = io.StringIO()
    writer = csv.DictWriter(out, SUMMARY_COLUMNS, lineterminator="\n")
    writer.writeheader()
    for row in rows:
        writer.writerow({k: "" if v is None else v for k, v in row.to_json().items()})
    return out.getvalue()


def _mean(values: Iterable[float | None]) -> float | None:
    known = [v for v in values if v is not None]
    return sum(known) / len(known) if known else None


def _cycle_time(times: list[tuple[int, float | None]], cycle: Cycle) -> float | None:
    """Sum over the rounds to consensus of the mean time at each round's cycle position."""
    if cycle.rounds < 1 or cycle.length < 1:
        return None
    positions = [_mean(t for r, t in times if r % cycle.length == p) for p in range(cycle.length)]
    needed = [positions[t % cycle.length] for t in range(cycle.rounds)]
    return None if any(t is None for t in needed) else sum(t or 0.0 for t in needed)


def _run_status(recs: list[RoundRecord], failed: list[RoundRecord]) -> str:
    if not failed:
        return "ok"
    reason = failed[0].status.removeprefix("failed: ")
    return f"{len(failed)} of {len(recs)} rounds failed (round {failed[0].round}: {reason})"
