"""scripts/check_demo.py: what CI asks of `make demo`'s output, and each way it can fall short."""

from __future__ import annotations

from pathlib import Path

import pytest

from controller.runner.emulation import Emulation, resolve
from controller.runner.results import SummaryRow, format_table
from controller.runner.results.summary import summary_csv
from controller.runner.scenario import parse_scenario
from scripts.check_demo import PNG, RUN_PLOTS, check, main

SCENARIO = (
    "name: nine-cities\nmemory: [25.6MB, 1.6GB]\nschedules: [all-to-all, cliques-3]\n"
    "networks: [plain, inna]\n"
)


@pytest.fixture(scope="module")
def emulation() -> Emulation:
    return resolve(parse_scenario(SCENARIO))


def summary(emulation: Emulation) -> list[SummaryRow]:
    """A row per play, as a run that finished every round would summarise them."""
    rows = []
    for point in emulation.played:
        for play in point.plays:
            rows.append(
                SummaryRow(
                    network=play.network,
                    memory=point.memory_bytes,
                    slots=point.pool.slots_per_bank,
                    schedule=play.plan.family,
                    rounds=8,
                    mean_time_s=1.0,
                    mean_predicted_s=1.0,
                    ratio=1.0,
                    consensus_s=1.0,
                    consensus_predicted_s=1.0,
                    final_train_loss=0.1,
                    final_test_loss=0.1,
                    final_accuracy=0.97,
                    baseline_accuracy=0.97,
                    wan_bytes=1,
                    retransmissions=0,
                    slot_conflicts=0,
                    cpu_bound_rounds=0,
                    status="ok",
                    per_memory=play.network == "inna",
                )
            )
    return rows


def demo(tmp_path: Path, rows: list[SummaryRow]) -> tuple[str, Path]:
    """What make demo prints and writes for `rows`: the log, and the sweep's plot."""
    folder = tmp_path / "demo" / "run-1"
    folder.mkdir(parents=True)
    (folder / "summary.csv").write_text(summary_csv(rows))
    for name in RUN_PLOTS:
        (folder / name).write_bytes(PNG + b"rest")
    sweep = tmp_path / "demo" / "sweep.png"
    sweep.write_bytes(PNG)
    log = (
        "innet plan sweep ...\n[3/48] inna cliques-3 round 2\n"
        f"{format_table(rows)}\nresults: {folder}\n"
    )
    return log, sweep


def test_a_whole_demo_passes(tmp_path, emulation):
    log, sweep = demo(tmp_path, summary(emulation))
    assert check(log, emulation, sweep) == []


def test_a_row_missing_from_the_table_and_the_summary_is_named(tmp_path, emulation):
    rows = summary(emulation)
    log, sweep = demo(
        tmp_path,
        [
            r
            for r in rows
            if (r.network, r.schedule, r.memory) != ("inna", "cliques-3", 1_600_000_000)
        ],
    )
    problems = check(log, emulation, sweep)
    assert problems == [
        "the table: no row for inna, 1.6 GB, cliques-3",
        f"{tmp_path / 'demo' / 'run-1' / 'summary.csv'}: no row for inna, 1.6 GB, cliques-3",
    ]


def test_a_table_cut_short_or_missing_fails(tmp_path, emulation):
    log, sweep = demo(tmp_path, summary(emulation))
    cut = log[: log.index("* reached consensus")]
    assert "the log holds no whole comparison table" in check(cut, emulation, sweep)
    assert check("make: *** [demo] Error 1\n", emulation, sweep)[-2:] == [
        "the log holds no whole comparison table",
        "the log names no results folder ('results: FOLDER')",
    ]


def test_a_row_the_scenario_does_not_play_is_named(tmp_path, emulation):
    rows = summary(emulation)
    log, sweep = demo(tmp_path, rows)
    extra = log.replace("plain    any memory", "gloo     any memory", 1)
    problems = check(extra, emulation, sweep)
    assert "the table: no row for plain, any memory, all-to-all" in problems
    assert any("a row the scenario does not play" in p and "gloo" in p for p in problems)


def test_plots_missing_or_not_png_are_named(tmp_path, emulation):
    log, sweep = demo(tmp_path, summary(emulation))
    folder = tmp_path / "demo" / "run-1"
    (folder / "loss.png").unlink()
    (folder / "round-time.png").write_text("<html>")
    sweep.unlink()
    assert check(log, emulation, sweep) == [
        f"{sweep}: missing",
        f"{folder / 'round-time.png'}: not a PNG",
        f"{folder / 'loss.png'}: missing",
    ]


def test_the_command_line_exits_1_naming_each_problem(tmp_path, capsys):
    scenario = tmp_path / "s.yaml"
    scenario.write_text(SCENARIO)
    log = tmp_path / "demo.log"
    log.write_text("nothing\n")
    code = main([str(log), "--scenario", str(scenario), "--sweep", str(tmp_path / "x.png")])
    err = capsys.readouterr().err
    assert code == 1 and err.splitlines()[0] == f"check_demo: {tmp_path / 'x.png'}: missing"
    assert main([str(tmp_path / "none.log"), "--scenario", str(scenario)]) == 2
