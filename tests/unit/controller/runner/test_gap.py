"""The gap to one data centre from hand-made rounds: utilisation, wall-clock and time to target,
measured and predicted, against the one-building reference (controller/runner/results/gap.py)."""

from __future__ import annotations

import math

import pytest

from controller.runner.records import RoundRecord
from controller.runner.results.gap import (
    TrainingTarget,
    gap_csv,
    gap_rows,
    gap_table,
    plot_accuracy_time,
)

MEMORY = 1_600_000_000


def rnd(
    network: str,
    r: int,
    time_s: float | None,
    predicted_s: float,
    accuracy: float,
    status: str = "ok",
    flags: dict[str, str] | None = None,
) -> RoundRecord:
    return RoundRecord(
        MEMORY,
        64,
        "all-to-all",
        r,
        (("A", "B"),),
        0.0,
        time_s,
        predicted_s,
        0.0,
        accuracy=accuracy,
        test_loss=1 - accuracy,
        network=network,
        status=status,
        flags=flags or {},
    )


def records() -> list[RoundRecord]:
    """C = 9 s. Plain: exchanges 1, 3, 12 s measured (2, 2, 2 predicted); one building: 1 s."""
    return [
        rnd("plain", 0, 1.0, 2.0, 0.50),
        rnd("plain", 1, 3.0, 2.0, 0.80),
        rnd("plain", 2, 12.0, 2.0, 0.95, flags={"timing": "3x"}),
        *(rnd("one-dc", r, 1.0, 1.0, a) for r, a in enumerate((0.5, 0.85, 0.9))),
    ]


def test_hand_computed_utilisation_and_time_to_target() -> None:
    ref, plain = gap_rows(records(), 9.0, False, TrainingTarget(accuracy=0.8))
    assert ref.network == "one-dc"  # the reference first, though played after
    # without overlap: ends at 10, 22, 43 measured (11, 22, 33 predicted)
    assert plain.wall_s == pytest.approx(43.0) and plain.wall_predicted_s == pytest.approx(33.0)
    assert plain.utilisation == pytest.approx(27 / 43)
    assert plain.utilisation_predicted == pytest.approx(27 / 33)
    assert (plain.target_round, plain.target_s, plain.target_predicted_s) == (1, 22.0, 22.0)
    assert ref.utilisation == pytest.approx(0.9) and (ref.target_round, ref.target_s) == (1, 20)
    assert plain.vs_one_dc == pytest.approx(22 / 20) and ref.vs_one_dc == pytest.approx(1.0)
    assert plain.flagged_rounds == 1
    assert plain.final_accuracy == 0.95
    assert plain.final_perplexity == pytest.approx(math.exp(0.05))  # test loss 1 - accuracy


def test_overlap_hides_the_exchanges_under_the_compute() -> None:
    ref, plain = gap_rows(records(), 9.0, True, TrainingTarget(accuracy=0.8))
    # p0 = 9, x0 = 10; p1 = max(18, 10), x1 = 21; p2 = max(27, 21), x2 = 39
    assert plain.wall_s == pytest.approx(39.0) and plain.utilisation == pytest.approx(27 / 39)
    assert plain.target_s == pytest.approx(21.0)
    assert ref.wall_s == pytest.approx(28.0)  # 9, 18, 27 of compute and the last 1 s exchange


def test_a_target_never_reached_and_a_failed_round() -> None:
    recs = [*records()[:2], rnd("plain", 2, None, 2.0, 0.0, status="failed: deadline")]
    (plain,) = gap_rows(recs, 9.0, False, TrainingTarget(accuracy=0.99))
    assert plain.target_round is None and plain.utilisation is None and plain.wall_s is None
    assert plain.utilisation_predicted == pytest.approx(27 / 33)
    assert plain.vs_one_dc is None
    (by_loss,) = gap_rows(records()[:3], 9.0, False, TrainingTarget(loss=0.2))
    assert by_loss.target_round == 1  # test loss 0.2 after round 1
    table = gap_table([plain])
    assert "never" in table and "to accuracy 99%" in table


def test_the_table_the_csv_and_the_plot() -> None:
    rows = gap_rows(records(), 9.0, False, TrainingTarget(accuracy=0.8))
    table = gap_table(rows)
    lines = table.splitlines()
    assert lines[1].startswith("one building") and "1.10x" in lines[2]
    assert "62.8%" in lines[2] and "81.8%" in lines[2]  # 27/43 measured, 27/33 predicted
    assert "flagged rounds are in these figures: plain all-to-all 1" in table
    csv_text = gap_csv(rows)
    assert csv_text.splitlines()[0].startswith("network,memory,schedule,per_memory")
    fig = plot_accuracy_time(records(), 9.0, False)
    assert len(fig.axes[0].lines) == 2
