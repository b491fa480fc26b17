"""Compute in the timeline (controller/planner/compute.py) against cases worked by hand from the
recursion in its docstring."""

import math

import pytest

from controller.planner.compute import (
    ACCELERATORS,
    Compute,
    first_reaching,
    steady_utilisation,
    timeline,
)
from controller.planner.exceptions import PlanError

# C = 9 s, exchanges 1, 3 and 12 s.
#
# Without overlap (p_r = s_r + C, s_{r+1} = x_r): p = 9, 19, 31 and x = 10, 22, 43; 27 s of
# compute in 43 s.
#
# With overlap (p_r = max(s_r + C, x_{r-1}), s_{r+1} = p_r):
#   round 0: p = 9,                 x = 9 + 1 = 10
#   round 1: p = max(9 + 9, 10) = 18,  x = 18 + 3 = 21
#   round 2: p = max(18 + 9, 21) = 27, x = 27 + 12 = 39
# 27 s of compute in 39 s.
C = 9.0
EXCHANGES = [1.0, 3.0, 12.0]


def test_without_overlap_each_round_waits_for_its_exchange() -> None:
    line = timeline(C, EXCHANGES, overlap=False)
    assert line.ends_s == pytest.approx((10.0, 22.0, 43.0))
    assert line.wall_s == pytest.approx(43.0)
    assert line.utilisation == pytest.approx(27 / 43)
    assert line.exchange_s == tuple(EXCHANGES) and line.compute_s == C and not line.overlap


def test_with_overlap_a_proposal_waits_for_the_previous_exchange_only() -> None:
    line = timeline(C, EXCHANGES, overlap=True)
    assert line.ends_s == pytest.approx((10.0, 21.0, 39.0))
    assert line.utilisation == pytest.approx(27 / 39)


def test_with_overlap_a_long_exchange_holds_the_proposal_after_next() -> None:
    # C = 2 s, exchanges 5, 1, 1 s: round 0 proposes at 2, its exchange ends at 7; round 1
    # computes 2..4 but proposes only at 7 (it needs round 0's mean): x = 8; round 2 computes
    # from 7 to 9 (x_1 = 8 is past): x = 10. 6 s of compute in 10 s.
    line = timeline(2.0, [5.0, 1.0, 1.0], overlap=True)
    assert line.ends_s == pytest.approx((7.0, 8.0, 10.0))
    assert line.utilisation == pytest.approx(0.6)
    # without overlap: 2 + 5, then 7 + 2 + 1, then 10 + 2 + 1
    assert timeline(2.0, [5.0, 1.0, 1.0], overlap=False).ends_s == pytest.approx((7, 10, 13))


def test_no_rounds_no_utilisation() -> None:
    line = timeline(C, [], overlap=False)
    assert line.wall_s == 0.0 and math.isnan(line.utilisation)


def test_steady_utilisation_both_ways() -> None:
    # without overlap C / (C + mean E) = 9 / (9 + 16/3) = 27/43, the timeline's over one cycle
    assert steady_utilisation(C, EXCHANGES, overlap=False) == pytest.approx(27 / 43)
    # with overlap C / mean max(C, E) = 9 / ((9 + 9 + 12) / 3) = 0.9
    assert steady_utilisation(C, EXCHANGES, overlap=True) == pytest.approx(0.9)
    assert steady_utilisation(C, [2.0], overlap=True) == 1.0  # the exchange hides entirely
    assert steady_utilisation(C, [1.0, math.inf], overlap=False) == 0.0  # never: no progress


def test_a_long_run_tends_to_the_steady_utilisation() -> None:
    cycle = [1.0, 3.0, 12.0]
    for overlap in (False, True):
        long = timeline(C, cycle * 2000, overlap).utilisation
        assert long == pytest.approx(steady_utilisation(C, cycle, overlap), rel=1e-3)


def test_steady_utilisation_needs_a_round() -> None:
    with pytest.raises(PlanError, match="at least one round"):
        steady_utilisation(C, [], overlap=False)


def test_first_reaching_gives_the_round_and_its_wall_clock() -> None:
    line = timeline(C, EXCHANGES, overlap=False)  # ends 10, 22, 43
    assert first_reaching(line, [0.2, 0.5, 0.9], 0.5) == (1, pytest.approx(22.0))
    assert first_reaching(line, [3.0, 2.5, 1.0], 2.0, higher_is_better=False) == (2, 43.0)
    assert first_reaching(line, [0.1, 0.2, 0.3], 0.5) is None


def test_step_time_from_flops_by_hand() -> None:
    # 6 x 1.04e9 params x 1e6 tokens = 6.24e15 FLOPs; 8 A100 x 312e12 x MFU 0.5 = 1.248e15 FLOP/s
    compute = Compute.from_flops(1.04e9, 1e6, "a100", 8, 0.5)
    assert compute.step_time_s == pytest.approx(5.0)
    assert compute.round_s(20) == pytest.approx(100.0)
    assert "8 x a100 312 TFLOP/s x MFU 0.5" in compute.source
    # H100: 989e12 FLOP/s; 6 x 1e9 x 989e3 = 5.934e15 FLOPs on one at MFU 1: 6 s
    assert Compute.from_flops(1e9, 989e3, "h100", 1, 1.0).step_time_s == pytest.approx(6.0)
    assert set(ACCELERATORS) == {"a100", "h100"}


@pytest.mark.parametrize("step_time", [0.0, -1.0, math.inf, math.nan])
def test_a_step_time_must_be_a_positive_duration(step_time: float) -> None:
    with pytest.raises(PlanError, match="positive duration"):
        Compute(step_time, "given")


def test_a_round_has_at_least_one_inner_step() -> None:
    with pytest.raises(PlanError, match="at least one inner step"):
        Compute(0.45, "given").round_s(0)


@pytest.mark.parametrize("mfu", [0.0, -0.1, 1.01, math.nan])
def test_mfu_is_a_share_of_the_peak(mfu: float) -> None:
    with pytest.raises(PlanError, match=r"MFU is a share of the peak, in \(0, 1\]"):
        Compute.from_flops(1e9, 1e6, "h100", 8, mfu)


def test_unknown_accelerators_and_empty_models_are_refused() -> None:
    with pytest.raises(PlanError, match="unknown accelerator 'tpu'; known: a100, h100"):
        Compute.from_flops(1e9, 1e6, "tpu", 8, 0.5)
    for params, tokens, count in ((0, 1e6, 8), (1e9, -1, 8), (1e9, 1e6, 0)):
        with pytest.raises(PlanError, match="must be positive"):
            Compute.from_flops(params, tokens, "a100", count, 0.5)


@pytest.mark.parametrize("compute_s", [-1.0, math.inf, math.nan])
def test_a_round_compute_must_be_finite_and_not_negative(compute_s: float) -> None:
    with pytest.raises(PlanError, match="finite time >= 0"):
        timeline(compute_s, [1.0], overlap=False)


def test_edge_cases_are_refused_or_defined() -> None:
    from controller.planner.compute import steady_utilisation, timeline

    assert timeline(0.0, [0.0, 0.0], False).utilisation == 1.0  # nothing takes any time
    for bad in ([-5.0], [float("nan")]):
        with pytest.raises(PlanError, match="exchange takes a finite time"):
            timeline(1.0, bad, False)
    with pytest.raises(PlanError, match="compute must be a finite time"):
        steady_utilisation(-1.0, [1.0], False)
    line = timeline(1.0, [1.0, 1.0], False)
    with pytest.raises(PlanError, match="3 figures for a timeline of 2 rounds"):
        first_reaching(line, [0.1, 0.2, 0.3], 0.2)
