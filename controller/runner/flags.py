"""Why a round does not measure the network: the flags a round record carries.

A round is `ok` and unflagged only when its time is the network's. Every other round carries one
flag per reason, each with a sentence that says what was seen:

- `timing`: its measured time is off the prediction by more than `TIMING_TOLERANCE`; the reason
  names the slot conflicts and retransmissions the plan does not explain (a plan explains none,
  but for retransmissions in a scenario with loss), or says that none was seen;
- `cpu_bound`: a switch or a leader fell behind its schedule by more than
  `max(CPU_LAG_FLOOR_S, CPU_LAG_FRACTION x predicted)`: the round measures the CPU;
- `loss`: the scenario loses frames on its WAN links, which the planner does not model;
- `clocks`: the run's round times are read across machines whose clocks are known more loosely
  than the plan's smallest headroom (a run on a cluster in the `flag` clock mode,
  controller/cluster/clocks.py): every round carries it;
- `jitter`: the round's timing noise (the worst switch or leader lag) exceeded the planned
  headroom of its slot pools (`RoundCost.headroom_s`: the misalignment a pool absorbs beyond
  the planned skew and WAN jitter), contributions found the pool full (slot conflicts), and that
  cost the round: retransmissions the plan does not explain, or a time off its prediction.
  Noise beyond the headroom that caused no conflict is not flagged: the round still measured
  the network (a memory-bound plan has no headroom at all, and a lag peak of one frame need
  not misalign a whole stream). Nor are conflicts whose contributions the edges bounced and the
  leaders replayed, on time and without a retransmission (docs/protocol.md, "Bounces"): each
  cost its chunk a frame time or two, and the round's time says they cost it no more; they are
  counted in the record (`slot_conflicts`).

    >>> seen = RoundSeen(time_s=6.34, predicted_s=1.77, slot_conflicts=1800, retransmissions=830,
    ...                  lag_s=0.03, headroom_s=0.01)
    >>> sorted(flag_round(seen))
    ['jitter', 'timing']
    >>> flag_round(RoundSeen(time_s=1.8, predicted_s=1.77, lag_s=0.001))
    {}
    >>> flag_round(RoundSeen(time_s=3.604, predicted_s=3.597, slot_conflicts=76, lag_s=0.006,
    ...                      headroom_s=0.0))  # bounced and replayed: on time, no resend
    {}
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from innet.units import format_duration

FLAGS = ("timing", "cpu_bound", "loss", "jitter", "clocks")  # the order flags are listed in
TIMING_TOLERANCE = 0.2  # a round within 20% of its prediction is on time
CPU_LAG_FLOOR_S = 0.005  # lag below this is never called CPU-bound
CPU_LAG_FRACTION = 0.05  # ... nor below this share of the predicted round time


@dataclass(frozen=True, slots=True)
class RoundSeen:
    """What a round measured, and what its plan and scenario allow for."""

    time_s: float | None  # None: the round did not finish
    predicted_s: float
    slot_conflicts: int = 0
    retransmissions: int = 0
    lag_s: float = 0.0  # the worst switch or leader processing lag in the round
    headroom_s: float = math.inf  # the plan's slack for timing noise (RoundCost.headroom_s)
    wan_loss: float = 0.0  # the share of frames each WAN link loses
    clocks: str = ""  # why the run's clocks are too loose for its headroom ("": they are not)


def cpu_threshold_s(predicted_s: float) -> float:
    """The lag above which a round is CPU-bound."""
    return max(CPU_LAG_FLOOR_S, CPU_LAG_FRACTION * predicted_s)


def flag_round(seen: RoundSeen) -> dict[str, str]:
    """The round's flags, in `FLAGS` order, each with its reason; empty when it measures the
    network."""
    flags: dict[str, str] = {}
    off = _off(seen)
    if off is not None:
        flags["timing"] = _timing_reason(seen, off)
    if seen.lag_s > cpu_threshold_s(seen.predicted_s):
        flags["cpu_bound"] = (
            f"a switch or leader fell {format_duration(seen.lag_s)} behind its schedule, "
            f"above {format_duration(cpu_threshold_s(seen.predicted_s))}"
        )
    if seen.wan_loss > 0:
        flags["loss"] = (
            f"every WAN link loses {100 * seen.wan_loss:.3g}% of frames, which the plan does "
            "not model"
        )
    costly = off is not None or (seen.retransmissions and not seen.wan_loss)
    if seen.lag_s > seen.headroom_s and seen.slot_conflicts and costly:
        flags["jitter"] = (
            f"timing noise of {format_duration(seen.lag_s)} exceeded the slot pools' planned "
            f"headroom of {format_duration(max(0.0, seen.headroom_s))}: "
            f"{seen.slot_conflicts} slot conflict(s)"
        )
    if seen.clocks:
        flags["clocks"] = seen.clocks
    return flags


def _off(seen: RoundSeen) -> float | None:
    """How far the round is off its prediction (a fraction), when beyond the tolerance."""
    if seen.time_s is None or not seen.predicted_s > 0:
        return None
    off = seen.time_s / seen.predicted_s - 1
    return off if abs(off) > TIMING_TOLERANCE else None


def _timing_reason(seen: RoundSeen, off: float) -> str:
    side = "above" if off > 0 else "below"
    text = f"{100 * abs(off):.0f}% {side} its prediction"
    unexplained = []
    if seen.slot_conflicts:
        unexplained.append(f"{seen.slot_conflicts} slot conflict(s)")
    if seen.retransmissions and not seen.wan_loss:
        unexplained.append(f"{seen.retransmissions} retransmission(s)")
    if unexplained:
        return f"{text}, with {' and '.join(unexplained)} the plan does not explain"
    return f"{text}, with no slot conflict or unexplained retransmission"


def count_flags(flag_sets: Iterable[Mapping[str, str]]) -> dict[str, int]:
    """How many rounds carry each flag, in `FLAGS` order (flags never seen left out)."""
    counts = dict.fromkeys(FLAGS, 0)
    for flags in flag_sets:
        for name in flags:
            counts[name] = counts.get(name, 0) + 1
    return {name: n for name, n in counts.items() if n}


def flag_text(counts: Mapping[str, int]) -> str:
    """Counts as one cell: "timing 3, jitter 2" ("" when none)."""
    return ", ".join(f"{name} {n}" for name, n in counts.items())
