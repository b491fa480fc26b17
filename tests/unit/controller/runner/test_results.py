"""The results folder: records survive, the summary's arithmetic, the plots, the table."""

from __future__ import annotations

import csv
import dataclasses
import io
import json
import math
from pathlib import Path
from typing import Any

import pytest
import yaml

from controller.runner.records import Baseline, RoundRecord
from controller.runner.results import (
    Cycle,
    ResultsWriter,
    collect_versions,
    format_table,
    read_records,
    summarise,
)
from controller.runner.results.plots import plot_predicted_vs_measured, plot_round_times
from controller.runner.results.summary import SUMMARY_COLUMNS, summary_csv

CYCLES = {("inna", "all-to-all"): Cycle(1, 1), ("inna", "cliques-3"): Cycle(3, 3)}

MB = 10**6
SCENARIO = {"name": "tiny", "memory": ["25.6MB", "1.6GB"], "schedules": ["all-to-all"]}
VERSIONS = {"innet": "0.1.0", "python": "3.11"}


def rec(memory: int, schedule: str, index: int, time_s: float | None, **over: Any) -> RoundRecord:
    """A round record; predicted is 10 s unless given, status ok unless given."""
    base: dict[str, Any] = {
        "memory": memory,
        "slots": 1 if memory < 100 * MB else 32,
        "schedule": schedule,
        "round": index,
        "groups": (("Tokyo", "London"), ("New York",)),
        "started": 1_700_000_000.0 + index,
        "time_s": time_s,
        "predicted_s": 10.0,
        "wall_s": 12.0 * (index + 1),
        "wan_bytes": {"Tokyo->London": 1000, "London->Tokyo": 500},
        "drops": {"slot_conflict": 0},
        "retransmissions": 2,
        "nacks": 1,
        "slot_conflicts": 3,
        "slots_needed": 4,
        "train_loss": 2.0 - 0.1 * index,
        "test_loss": 2.1 - 0.1 * index,
        "accuracy": 0.5 + 0.01 * index,
        "cpu_lag_ms": 1.5,
        "cpu_bound": False,
        "status": "ok",
        "lag_ms": {"switches": 0.4, "Tokyo": 1.5},
        "leader_cpu_ms": {"Tokyo": 120.0},
    }
    base.update(over)
    return RoundRecord(**base)


def test_writer_starts_the_folder_with_scenario_and_versions(tmp_path: Path) -> None:
    folder = tmp_path / "results" / "tiny-20260101-120000"
    with ResultsWriter(folder, SCENARIO, VERSIONS):
        pass
    assert yaml.safe_load((folder / "scenario.yaml").read_text()) == SCENARIO
    assert json.loads((folder / "versions.json").read_text()) == VERSIONS
    assert (folder / "rounds.jsonl").read_text() == ""
    assert not [p for p in folder.iterdir() if p.name.startswith(".")]  # no temporary left


def test_the_network_of_every_memory_point_is_recorded_as_it_comes_up(tmp_path: Path) -> None:
    with ResultsWriter(tmp_path, SCENARIO, VERSIONS) as writer:
        writer.record_network("25.6 MB", {"target": "bmv2", "shaping": "links", "scale": 1e5})
        writer.record_network("1.6 GB", {"target": "bmv2", "shaping": "kernel", "scale": 1e5})
    assert json.loads((tmp_path / "network.json").read_text()) == {
        "25.6 MB": {"target": "bmv2", "shaping": "links", "scale": 1e5},
        "1.6 GB": {"target": "bmv2", "shaping": "kernel", "scale": 1e5},
    }


def test_a_folder_with_rounds_is_not_reused(tmp_path: Path) -> None:
    ResultsWriter(tmp_path, SCENARIO, VERSIONS).close()
    with pytest.raises(FileExistsError, match="results of another run"):
        ResultsWriter(tmp_path, SCENARIO, VERSIONS)


def test_records_round_trip_through_rounds_jsonl(tmp_path: Path) -> None:
    records = [rec(25_600_000, "all-to-all", i, 9.5 + i) for i in range(3)]
    with ResultsWriter(tmp_path, SCENARIO, VERSIONS) as writer:
        for r in records:
            writer.record(r)
    assert read_records(tmp_path) == records
    assert len((tmp_path / "rounds.jsonl").read_text().splitlines()) == 3


def crashing_round(writer: ResultsWriter, first: RoundRecord) -> None:
    """Records one round, then fails as a run would."""
    writer.record(first)
    raise RuntimeError("switch died")


def test_a_record_written_before_an_exception_is_intact(tmp_path: Path) -> None:
    first = rec(25_600_000, "cliques-3", 0, 8.0)
    writer = ResultsWriter(tmp_path, SCENARIO, VERSIONS)
    with pytest.raises(RuntimeError, match="switch died"):
        crashing_round(writer, first)
    assert read_records(tmp_path) == [first]  # on disk while the writer still holds the file
    writer.close()
    assert read_records(tmp_path) == [first]


def test_a_line_cut_short_by_a_crash_is_left_out(tmp_path: Path) -> None:
    with ResultsWriter(tmp_path, SCENARIO, VERSIONS) as writer:
        writer.record(rec(25_600_000, "all-to-all", 0, 9.0))
    with (tmp_path / "rounds.jsonl").open("a") as f:
        f.write('{"memory": 256')
    assert [r.round for r in read_records(tmp_path)] == [0]


def test_records_read_back_must_have_every_key_and_a_known_status(tmp_path: Path) -> None:
    written = rec(25_600_000, "all-to-all", 0, 9.0).to_json()
    incomplete = {k: v for k, v in written.items() if k not in ("nacks", "drops")}
    with pytest.raises(ValueError, match="without drops, nacks"):
        RoundRecord.from_json(incomplete)
    with pytest.raises(ValueError, match="unknown keys colour"):
        RoundRecord.from_json({**written, "colour": "red"})
    with pytest.raises(ValueError, match="'ok' or 'failed: <reason>'"):
        rec(25_600_000, "all-to-all", 0, 9.0, status="broken")
    (tmp_path / "rounds.jsonl").write_text(json.dumps(incomplete) + "\n")
    with pytest.raises(ValueError, match=r"rounds.jsonl:1: not a round record"):
        read_records(tmp_path)


def test_non_finite_numbers_are_written_as_null(tmp_path: Path) -> None:
    with ResultsWriter(tmp_path, SCENARIO, VERSIONS) as writer:
        writer.record(
            rec(25_600_000, "all-to-all", 0, 9.0, train_loss=math.nan, test_loss=math.inf)
        )
    (back,) = read_records(tmp_path)
    assert back.train_loss is None and back.test_loss is None


def test_no_round_is_recorded_after_finish(tmp_path: Path) -> None:
    writer = ResultsWriter(tmp_path, SCENARIO, VERSIONS)
    writer.finish([], None)
    with pytest.raises(RuntimeError, match="finished"):
        writer.record(rec(25_600_000, "all-to-all", 0, 9.0))


def hand_made() -> list[RoundRecord]:
    """Two memory points (given large first) x two schedules; cliques-3 has a 3-round cycle."""
    big, small = 1_600_000_000, 25_600_000
    return [
        *(rec(big, "all-to-all", i, 5.0 + i, predicted_s=5.0) for i in range(2)),
        rec(big, "cliques-3", 0, 2.0, predicted_s=2.0),
        rec(big, "cliques-3", 1, 3.0, predicted_s=2.5),
        rec(big, "cliques-3", 2, 4.0, predicted_s=3.0),
        rec(big, "cliques-3", 3, 4.0, predicted_s=2.0),  # position 0 again: mean 3.0
        rec(small, "cliques-3", 0, 20.0, predicted_s=10.0, cpu_bound=True),
        rec(
            small,
            "cliques-3",
            1,
            None,
            predicted_s=10.0,
            train_loss=None,
            status="failed: deadline 60 s passed; Tokyo not done",
        ),
        rec(small, "cliques-3", 2, 30.0, predicted_s=20.0, cpu_bound=True),
        rec(small, "all-to-all", 0, 12.0, predicted_s=10.0),
    ]


def test_summarise_arithmetic() -> None:
    rows = summarise(hand_made(), CYCLES)
    keys = [(r.memory, r.schedule) for r in rows]
    assert keys == [
        (25_600_000, "all-to-all"),
        (25_600_000, "cliques-3"),
        (1_600_000_000, "all-to-all"),
        (1_600_000_000, "cliques-3"),
    ]  # memory ascending, schedules in the order they first ran
    small_all, small_cliques, big_all, big_cliques = rows
    assert set(big_all.to_json()) == set(SUMMARY_COLUMNS)

    assert big_all.rounds == 2 and big_all.slots == 32
    assert big_all.mean_time_s == pytest.approx(5.5)
    assert big_all.mean_predicted_s == pytest.approx(5.0)
    assert big_all.ratio == pytest.approx(1.1)
    assert big_all.consensus_s == pytest.approx(5.5)  # one-round cycle: the mean round
    assert big_all.consensus_predicted_s == pytest.approx(5.0)

    assert big_cliques.mean_time_s == pytest.approx(13.0 / 4)
    assert big_cliques.mean_predicted_s == pytest.approx(9.5 / 4)
    assert big_cliques.consensus_s == pytest.approx(3.0 + 3.0 + 4.0)
    assert big_cliques.consensus_predicted_s == pytest.approx(2.0 + 2.5 + 3.0)
    assert big_cliques.final_train_loss == pytest.approx(1.7)
    assert big_cliques.final_test_loss == pytest.approx(1.8)
    assert big_cliques.final_accuracy == pytest.approx(0.53)
    assert big_cliques.wan_bytes == 4 * 1500
    assert big_cliques.retransmissions == 4 * 2
    assert big_cliques.slot_conflicts == 4 * 3
    assert big_cliques.status == "ok"

    # the failed round counts in the totals, not in the means; its position has no time
    assert small_cliques.rounds == 3
    assert small_cliques.mean_time_s == pytest.approx(25.0)
    assert small_cliques.mean_predicted_s == pytest.approx(15.0)
    assert small_cliques.ratio == pytest.approx(25.0 / 15.0)
    assert small_cliques.consensus_s is None
    assert small_cliques.consensus_predicted_s == pytest.approx(40.0)
    assert small_cliques.final_accuracy == pytest.approx(0.52)
    assert small_cliques.cpu_bound_rounds == 2
    assert small_cliques.wan_bytes == 3 * 1500
    assert small_cliques.status == (
        "1 of 3 rounds failed (round 1: deadline 60 s passed; Tokyo not done)"
    )
    assert small_all.consensus_s == pytest.approx(12.0)


def test_summarise_needs_every_cycle_length() -> None:
    with pytest.raises(ValueError, match="'cliques-3'"):
        summarise(hand_made(), {("inna", "all-to-all"): Cycle(1, 1)})


def test_summarise_with_too_few_rounds_for_a_cycle() -> None:
    (row,) = summarise(
        [rec(25_600_000, "ring-pairs", 0, 4.0)], {("inna", "ring-pairs"): Cycle(2, 2)}
    )
    assert row.consensus_s is None and row.consensus_predicted_s is None
    assert row.mean_time_s == 4.0


def test_finish_writes_the_summary_and_the_plots(tmp_path: Path) -> None:
    records = hand_made()
    with ResultsWriter(tmp_path, SCENARIO, VERSIONS) as writer:
        for r in records:
            writer.record(r)
        rows = summarise(writer.records, CYCLES, baseline_accuracy=0.61)
        writer.finish(rows, Baseline(1.2, 1.3, 0.61, ()))
    with (tmp_path / "summary.csv").open() as f:
        table = list(csv.DictReader(f))
    assert tuple(table[0]) == SUMMARY_COLUMNS
    assert [(r["memory"], r["schedule"]) for r in table] == [
        ("25600000", "all-to-all"),
        ("25600000", "cliques-3"),
        ("1600000000", "all-to-all"),
        ("1600000000", "cliques-3"),
    ]
    assert {r["baseline_accuracy"] for r in table} == {"0.61"}
    assert table[1]["consensus_s"] == ""  # None is an empty cell
    assert float(table[3]["consensus_s"]) == pytest.approx(10.0)
    for name in ("round-time.png", "loss.png", "predicted-vs-measured.png"):
        png = (tmp_path / name).read_bytes()
        assert png.startswith(b"\x89PNG\r\n\x1a\n") and len(png) > 1000, name
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]


def test_finish_without_rounds_or_baseline_still_writes_everything(tmp_path: Path) -> None:
    ResultsWriter(tmp_path, SCENARIO, VERSIONS).finish([], None)
    assert (tmp_path / "summary.csv").read_text().splitlines() == [",".join(SUMMARY_COLUMNS)]
    for name in ("round-time.png", "loss.png", "predicted-vs-measured.png"):
        assert (tmp_path / name).stat().st_size > 0


def test_format_table_names_the_first_to_consensus_per_memory() -> None:
    rows = summarise(hand_made(), CYCLES)
    table = format_table(rows)
    lines = table.splitlines()
    assert lines[0].split() == [
        "memory",
        "schedule",
        "consensus",
        "predicted",
        "ratio",
        "accuracy",
        "status",
    ]
    marked = [line for line in lines[1:-1] if " * " in line]
    # at 25.6 MB cliques-3 never finished a whole cycle; at 1.6 GB all-to-all's 5.5 s beats
    # the cliques' 10 s
    assert len(marked) == 2
    assert marked[0].startswith("25.6 MB (1 slot/bank)") and "all-to-all" in marked[0]
    assert marked[1].startswith("1.6 GB (32 slots/bank)") and "all-to-all" in marked[1]
    assert "1 of 3 rounds failed" in table
    assert "10.0 s" in table and "7.50 s" in table and "1.10" in table and "53.0%" in table
    assert "* reached consensus first at this memory" in table
    assert "network" not in lines[0] and "vs plain" not in lines[0]  # one network: no columns
    # two of the small cliques' rounds were CPU-bound: counted, and the flag explained
    assert "flagged: 2 of 10 rounds do not measure the network (cpu_bound 2)" in table
    assert lines[-1].startswith("  cpu_bound: a switch or a leader fell behind")


def test_format_table_marks_a_schedule_that_beats_all_to_all() -> None:
    records = [
        rec(25_600_000, "all-to-all", 0, 30.0),
        *(rec(25_600_000, "cliques-3", i, 6.0) for i in range(3)),
    ]
    table = format_table(summarise(records, CYCLES))
    (marked,) = [line for line in table.splitlines() if " * " in line]
    assert "cliques-3" in marked and "18.0 s" in marked


def test_collect_versions_has_the_keys() -> None:
    versions = collect_versions()
    for key in ("innet", "python", "torch", "numpy", "platform", "git_commit", "git_dirty"):
        assert key in versions
    assert versions["python"].count(".") == 2
    assert versions["numpy"] and versions["platform"]
    assert versions["git_commit"] is None or len(versions["git_commit"]) == 40
    json.dumps(versions)


def test_collect_versions_without_git(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", "/nonexistent")
    versions = collect_versions()
    assert versions["git_commit"] is None and versions["git_dirty"] is None


def test_a_record_is_written_with_every_field_as_a_key() -> None:
    written = rec(1, "x", 0, 1.0).to_json()
    assert list(written) == [f.name for f in dataclasses.fields(RoundRecord)]
    assert len(written) == 33
    assert written["groups"] == [["Tokyo", "London"], ["New York"]]
    assert RoundRecord.from_json(json.loads(json.dumps(written))) == rec(1, "x", 0, 1.0)


def test_format_table_says_which_rounds_measured_the_cpu() -> None:
    records = [
        rec(25_600_000, "all-to-all", 0, 30.0, cpu_bound=True, cpu_lag_ms=900.0),
        rec(25_600_000, "all-to-all", 1, 31.0),
    ]
    table = format_table(summarise(records, {("inna", "all-to-all"): Cycle(1, 1)}))
    assert "ok; flagged 1 of 2: cpu_bound 1" in table
    assert "the round measures the CPU" in table
    assert " * " not in table  # the only row is flagged: never starred
    assert "no star at 25.6 MB: the fastest row there has flagged rounds" in table
    calm_rows = summarise(
        [rec(25_600_000, "all-to-all", 0, 30.0)], {("inna", "all-to-all"): Cycle(1, 1)}
    )
    calm = format_table(calm_rows)
    assert "flagged:" not in calm and "; flagged" not in calm and " * " in calm


def test_consensus_sums_the_rounds_to_consensus_by_cycle_position() -> None:
    """cliques-3: consensus after 2 rounds of a 4-round cycle; ring pairs: 5 rounds of 2."""
    times = [0.8, 0.9, 1.0, 1.1] * 2
    records = [rec(MB, "cliques-3", i, t, predicted_s=t) for i, t in enumerate(times)]
    (row,) = summarise(records, {("inna", "cliques-3"): Cycle(2, 4)})
    assert row.consensus_s == pytest.approx(0.8 + 0.9)
    assert row.consensus_predicted_s == pytest.approx(1.7)
    ring = [rec(MB, "ring-pairs", i, 1.0 + i % 2) for i in range(4)]
    (row,) = summarise(ring, {("inna", "ring-pairs"): Cycle(5, 2)})
    assert row.consensus_s == pytest.approx(1 + 2 + 1 + 2 + 1)
    (row,) = summarise(ring, {("inna", "ring-pairs"): Cycle(0, 2)})  # never reaches consensus
    assert row.consensus_s is None


def test_format_table_puts_a_plain_wan_beside_inna_and_gives_the_gain() -> None:
    """plain played once (any memory): its fastest, all-to-all's 15 s (predicted 10 s), is the
    reference of every row; inna's all-to-all at 1.6 GB takes 6 s (predicted 5 s)."""
    records = [
        rec(25_600_000, "all-to-all", 0, 15.0, network="plain"),
        rec(25_600_000, "all-to-all", 0, 20.0),
        rec(1_600_000_000, "all-to-all", 0, 6.0, predicted_s=5.0),
    ]
    cycles = {("plain", "all-to-all"): Cycle(1, 1), ("inna", "all-to-all"): Cycle(1, 1)}
    rows = summarise(records, cycles)
    assert [(r.network, r.per_memory) for r in rows] == [
        ("plain", False),
        ("inna", True),
        ("inna", True),
    ]
    lines = format_table(rows).splitlines()
    assert lines[0].split()[:2] == ["network", "memory"] and "vs plain" in lines[0]
    assert lines[1].startswith("plain") and "any memory" in lines[1] and " * " not in lines[1]
    assert "1.00x (1.00x)" in lines[1]
    assert "0.75x (1.00x)" in lines[2] and " * " in lines[2]  # first at 25.6 MB among inna
    assert "2.50x (2.00x)" in lines[3]
    assert lines[-1] == (
        "fastest against the fastest over a plain WAN (all-to-all): "
        "inna all-to-all at 1.6 GB 2.50x (2.00x)"
    )
    assert any(line.startswith("any memory: the edges hold no partial sums") for line in lines)


def test_no_star_where_another_schedule_has_only_flagged_rounds_even_slower_ones() -> None:
    """Beside a busy loop: all-to-all measured unflagged, every triples round flagged and slow.
    The triples' network time is unknown (their prediction is the faster one), so all-to-all
    cannot be named first at that memory."""
    records = [rec(25_600_000, "all-to-all", 0, 8.4, predicted_s=8.5)]
    records += [
        rec(
            25_600_000,
            "cliques-3",
            i,
            9.0,
            predicted_s=0.6,
            flags={"cpu_bound": "a switch or leader fell 108 ms behind"},
        )
        for i in range(3)
    ]
    table = format_table(summarise(records, CYCLES))
    assert " * " not in table
    assert "no star at 25.6 MB: cliques-3 there has only flagged rounds to compare" in table


def test_older_records_without_a_network_read_as_inna() -> None:
    written = rec(1, "x", 0, 1.0).to_json()
    del written["network"]
    assert RoundRecord.from_json(written).network == "inna"


def test_flagged_rounds_are_kept_and_counted_never_starred_and_drawn_hollow() -> None:
    """The busy demo's outlier: triples 3x their prediction, flagged for timing; the table
    must not name them the winner, summary.csv must carry the flags, the plots mark them."""
    records = [
        rec(25_600_000, "all-to-all", 0, 30.0),
        rec(25_600_000, "cliques-3", 0, 9.0, flags={"timing": "250% above its prediction"}),
        rec(25_600_000, "cliques-3", 1, 6.0),
        rec(25_600_000, "cliques-3", 2, 6.0),
    ]
    rows = summarise(records, CYCLES)
    small = next(row for row in rows if row.schedule == "cliques-3")
    assert (small.flagged_rounds, small.flags) == (1, "timing 1")
    table = format_table(rows)
    assert " * " not in table  # the fastest row there is flagged, and all-to-all is not faster
    assert "flagged 1 of 3: timing 1" in table and "timing: more than 20% off" in table
    assert "no star at 25.6 MB" in table
    written = list(csv.DictReader(io.StringIO(summary_csv(rows))))
    assert [r["flags"] for r in written] == ["", "timing 1"]
    assert [r["flagged_rounds"] for r in written] == ["0", "1"]
    labels = [t.get_text() for t in plot_predicted_vs_measured(records).axes[0].get_legend().texts]
    assert "inna cliques-3 flagged" in labels and "inna cliques-3" in labels
    labels = [t.get_text() for t in plot_round_times(records).axes[0].get_legend().texts]
    assert "inna cliques-3 flagged" in labels


def test_a_row_slowed_by_flagged_rounds_does_not_hand_the_star_to_a_slower_one() -> None:
    """The jittery WAN at 102 MB: all-to-all's unflagged rounds take 1.52 s, one flagged round
    4.8 s (its row's time to consensus 2.34 s); triples take 1.78 s. Starring the triples would
    name the wrong winner: nothing is starred there."""
    cycles = {("inna", "all-to-all"): Cycle(1, 1), ("inna", "cliques-3"): Cycle(2, 2)}
    records = [
        rec(MB, "all-to-all", 0, 1.52),
        rec(MB, "all-to-all", 1, 4.8, flags={"timing": "212% above its prediction"}),
        rec(MB, "cliques-3", 0, 0.82),
        rec(MB, "cliques-3", 1, 0.96),
    ]
    rows = summarise(records, cycles)
    assert rows[0].consensus_unflagged_s == pytest.approx(1.52)
    assert rows[0].consensus_s == pytest.approx((1.52 + 4.8) / 2)
    table = format_table(rows)
    assert " * " not in table and "the fastest row there has flagged rounds" in table
    calm = format_table(summarise(records[:1] + records[2:], cycles))
    (starred,) = [line for line in calm.splitlines() if " * " in line]
    assert "all-to-all" in starred
