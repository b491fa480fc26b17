"""Compute in the timeline: a round is H inner steps of compute, then the exchange.

**The emulated system's compute.** A scenario states it at full scale, as the time of one inner
step (`Compute.step_time_s`), given directly or from the FLOPs of a dense model:

    step_time = 6 x N x tokens / (accelerators x peak x MFU)

(forward and backward cost about 6 FLOPs per parameter per token; N parameters, `tokens` per
inner step on each island, `accelerators` per island at `peak` FLOP/s each, of which the model
uses the share MFU). A round's compute is C = H x step_time.

**The timeline of R rounds.** Round r computes from s_r; its island proposes at p_r and the
exchange of its proposal ends at x_r = p_r + E_r.

* Without overlap the island waits for the exchange: p_r = s_r + C, s_{r+1} = x_r.
* With overlap (`training.overlap`, the outer update applied one round late) the next round's
  inner steps start from the island's own proposal while the exchange runs; the proposal of
  round r + 1 needs the group's mean of round r: p_r = max(s_r + C, x_{r-1}), s_{r+1} = p_r. In
  the steady state a round then takes max(C, E) instead of C + E.

The run ends when its last exchange does (x_{R-1}); compute utilisation is R x C over that.
The measured timeline is the same recursion over the measured exchange times: the CPU time the
local steps take on this machine is another clock (the runner records both).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from controller.planner.exceptions import PlanError

# Peak dense BF16 tensor throughput per accelerator, FLOP/s, from the vendors' datasheets (which
# quote twice these figures "with sparsity"): NVIDIA A100 Tensor Core GPU datasheet (SXM, 312
# TFLOPS), NVIDIA H100 Tensor Core GPU datasheet (SXM, 989 TFLOPS).
ACCELERATORS = {"a100": 312e12, "h100": 989e12}
FLOPS_PER_PARAM_TOKEN = 6  # forward 2, backward 4


@dataclass(frozen=True)
class Compute:
    """The full-scale compute of one inner step, and where the figure comes from."""

    step_time_s: float
    source: str  # "given" or the FLOPs formula with its figures

    def __post_init__(self) -> None:
        if not (math.isfinite(self.step_time_s) and self.step_time_s > 0):
            raise PlanError(f"the step time must be a positive duration, not {self.step_time_s}")

    def round_s(self, inner_steps: int) -> float:
        """C: the compute of one round of `inner_steps` inner steps."""
        if inner_steps < 1:
            raise PlanError(f"a round takes at least one inner step, not {inner_steps}")
        return inner_steps * self.step_time_s

    @classmethod
    def from_flops(
        cls, params: float, tokens: float, accelerator: str, accelerators: int, mfu: float
    ) -> Compute:
        """The step time of a dense model of `params` on `tokens` per step (6 N tokens FLOPs)."""
        if accelerator not in ACCELERATORS:
            known = ", ".join(sorted(ACCELERATORS))
            raise PlanError(f"unknown accelerator {accelerator!r}; known: {known}")
        if not 0 < mfu <= 1:
            raise PlanError(f"MFU is a share of the peak, in (0, 1], not {mfu:g}")
        if params <= 0 or tokens <= 0 or accelerators < 1:
            raise PlanError("parameters, tokens per step and accelerators must be positive")
        peak = ACCELERATORS[accelerator]
        flops = FLOPS_PER_PARAM_TOKEN * params * tokens
        source = (
            f"6 x {params:.4g} params x {tokens:.4g} tokens / ({accelerators} x "
            f"{accelerator} {peak / 1e12:g} TFLOP/s x MFU {mfu:g})"
        )
        return cls(flops / (accelerators * peak * mfu), source)


@dataclass(frozen=True)
class Timeline:
    """When each round's exchange ends (x_r), counted from the start of round 0's compute."""

    compute_s: float  # C
    exchange_s: tuple[float, ...]  # E_r
    ends_s: tuple[float, ...]  # x_r
    overlap: bool

    @property
    def wall_s(self) -> float:
        return self.ends_s[-1] if self.ends_s else 0.0

    @property
    def utilisation(self) -> float:
        """Compute time over wall-clock, in [0, 1] (1 when nothing takes any time)."""
        if not self.ends_s:
            return math.nan
        if self.wall_s == 0:
            return 1.0
        return len(self.ends_s) * self.compute_s / self.wall_s


def timeline(compute_s: float, exchanges: Sequence[float], overlap: bool) -> Timeline:
    """The rounds' timeline from C and each round's exchange time E_r (module docstring)."""
    _check(compute_s, exchanges)
    start, last_end = 0.0, -math.inf
    ends: list[float] = []
    for e in exchanges:
        propose = start + compute_s
        if overlap:
            propose = max(propose, last_end)
        last_end = propose + e
        ends.append(last_end)
        start = propose if overlap else last_end
    return Timeline(compute_s, tuple(exchanges), tuple(ends), overlap)


def steady_utilisation(compute_s: float, cycle: Sequence[float], overlap: bool) -> float:
    """Utilisation of a long run whose exchanges repeat `cycle`: C / (C + mean E) without
    overlap, C / mean max(C, E) with it (a round waits for the exchange before last)."""
    if not cycle:
        raise PlanError("a schedule has at least one round")
    if any(math.isinf(e) for e in cycle):
        return 0.0  # a round that never ends: nothing is computed in the long run
    _check(compute_s, cycle)
    if overlap:
        per_round = sum(max(compute_s, e) for e in cycle) / len(cycle)
    else:
        per_round = compute_s + sum(cycle) / len(cycle)
    return compute_s / per_round if per_round > 0 else 1.0


def first_reaching(
    line: Timeline, figures: Sequence[float], target: float, higher_is_better: bool = True
) -> tuple[int, float] | None:
    """The first round whose figure (e.g. test accuracy after its exchange) reaches `target`,
    and the full-scale wall-clock at which it did (that round's x_r); None if none did."""
    if len(figures) != len(line.ends_s):
        raise PlanError(f"{len(figures)} figures for a timeline of {len(line.ends_s)} rounds")
    for r, (value, end) in enumerate(zip(figures, line.ends_s, strict=True)):
        if (value >= target) if higher_is_better else (value <= target):
            return r, end
    return None


def _check(compute_s: float, exchanges: Sequence[float]) -> None:
    if not (math.isfinite(compute_s) and compute_s >= 0):
        raise PlanError(f"a round's compute must be a finite time >= 0, not {compute_s}")
    bad = [e for e in exchanges if not (math.isfinite(e) and e >= 0)]
    if bad:
        raise PlanError(f"an exchange takes a finite time >= 0, not {bad[0]}")
