"""Which rounds measure the network: the flags and their reasons."""

from __future__ import annotations

import math

import pytest

from controller.runner.flags import (
    FLAGS,
    TIMING_TOLERANCE,
    RoundSeen,
    count_flags,
    cpu_threshold_s,
    flag_round,
    flag_text,
)


def seen(**changes: object) -> RoundSeen:
    base: dict[str, object] = {"time_s": 1.0, "predicted_s": 1.0}
    base.update(changes)
    return RoundSeen(**base)  # type: ignore[arg-type]


def test_a_round_on_time_without_noise_carries_no_flag() -> None:
    assert flag_round(seen(time_s=1.19, lag_s=0.004, headroom_s=0.01)) == {}
    assert flag_round(seen(time_s=0.81)) == {}


def test_the_outlier_of_the_busy_demo_is_flagged_timing_and_jitter() -> None:
    """cliques-3 on one slot per bank beside two busy loops: 4.33 s against 0.97 s, 334 slot
    conflicts, 227 retransmissions, 13.7 ms of lag against 10.24 ms of headroom: it was `ok`
    and starred; it must carry both reasons."""
    flags = flag_round(
        seen(
            time_s=4.325,
            predicted_s=0.971,
            slot_conflicts=334,
            retransmissions=227,
            lag_s=0.0137,
            headroom_s=0.01024,
        )
    )
    assert list(flags) == ["timing", "jitter"]
    assert "345% above its prediction" in flags["timing"]
    assert "334 slot conflict(s) and 227 retransmission(s)" in flags["timing"]
    assert "13.7 ms" in flags["jitter"] and "10.2 ms" in flags["jitter"]


@pytest.mark.parametrize("off", [TIMING_TOLERANCE + 0.01, -(TIMING_TOLERANCE + 0.01)])
def test_off_the_prediction_either_way_is_timing_even_with_nothing_seen(off: float) -> None:
    flags = flag_round(seen(time_s=1.0 + off))
    assert list(flags) == ["timing"]
    assert "no slot conflict or unexplained retransmission" in flags["timing"]
    assert ("above" if off > 0 else "below") in flags["timing"]


def test_retransmissions_are_explained_by_loss_and_loss_is_a_flag() -> None:
    flags = flag_round(seen(time_s=1.5, retransmissions=40, wan_loss=0.01))
    assert list(flags) == ["timing", "loss"]
    assert "40 retransmission" not in flags["timing"]
    assert "1% of frames" in flags["loss"]


def test_cpu_bound_above_five_percent_of_the_round_or_five_ms() -> None:
    assert cpu_threshold_s(0.05) == pytest.approx(0.005)
    assert cpu_threshold_s(2.0) == pytest.approx(0.1)
    assert flag_round(seen(predicted_s=2.0, time_s=2.0, lag_s=0.099)) == {}
    assert list(flag_round(seen(predicted_s=2.0, time_s=2.0, lag_s=0.101))) == ["cpu_bound"]


def test_noise_beyond_the_headroom_is_jitter_only_when_slots_ran_out_at_a_cost() -> None:
    assert flag_round(seen(lag_s=0.004, headroom_s=0.0)) == {}  # memory-bound, no conflict
    conflicts = {"lag_s": 0.004, "headroom_s": 0.0, "slot_conflicts": 3}
    resent = seen(**conflicts, retransmissions=2)
    assert list(flag_round(resent)) == ["jitter"]
    assert list(flag_round(seen(**conflicts, time_s=1.3))) == ["timing", "jitter"]
    # bounced, replayed, on time, nothing resent: counted, not flagged
    assert flag_round(seen(**conflicts)) == {}
    # with a lossy WAN, retransmissions are the loss's: the conflicts cost the round nothing
    assert list(flag_round(seen(**conflicts, retransmissions=2, wan_loss=0.01))) == ["loss"]
    assert (
        flag_round(seen(lag_s=0.004, headroom_s=math.inf, slot_conflicts=3, retransmissions=2))
        == {}
    )


def test_a_round_that_did_not_finish_has_no_timing_flag() -> None:
    assert list(flag_round(seen(time_s=None, lag_s=1.0))) == ["cpu_bound"]


def test_counts_keep_the_flag_order() -> None:
    counts = count_flags([{"jitter": "a"}, {"timing": "b", "jitter": "c"}, {}])
    assert list(counts) == ["timing", "jitter"] and counts == {"timing": 1, "jitter": 2}
    assert flag_text(counts) == "timing 1, jitter 2"
    assert set(FLAGS) == {"timing", "cpu_bound", "loss", "jitter", "clocks"}
