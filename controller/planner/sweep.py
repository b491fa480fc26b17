"""Time to consensus per family across aggregator memory sizes, and where the winner changes."""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass, replace

from controller.planner.cost import CostParams
from controller.planner.optimise import DEFAULT_EPSILON, Plan, Planner


@dataclass(frozen=True)
class Crossover:
    """Between two neighbouring memory points the best family changes."""

    memory_bytes: float  # refined by bisection
    below: str  # best family under it
    above: str  # best family over it


@dataclass(frozen=True)
class Sweep:
    plans: tuple[Plan, ...]
    crossovers: tuple[Crossover, ...]

    @property
    def families(self) -> tuple[str, ...]:
        return tuple(f.family for f in self.plans[0].families)


def memory_points(low: int, high: int, points: int) -> list[int]:
    """Log-spaced memory sizes from low to high, both included."""
    if points < 2 or low == high:
        return [low]
    ratio = (high / low) ** (1 / (points - 1))
    return [round(low * ratio**i) for i in range(points - 1)] + [high]


def sweep(
    planner: Planner,
    base: CostParams,
    memories: Sequence[int],
    epsilon: float = DEFAULT_EPSILON,
    families: Sequence[str] | None = None,
    refine_steps: int = 12,
) -> Sweep:
    plans = tuple(planner.plan(replace(base, memory_bytes=m), epsilon, families) for m in memories)
    crossovers = []
    for lo, hi in itertools.pairwise(plans):
        below, above = lo.best.family, hi.best.family
        if below == above:
            continue
        a, b = lo.params.memory_bytes, hi.params.memory_bytes
        for _ in range(refine_steps):  # geometric bisection, only the two families involved
            mid = round((a * b) ** 0.5)
            if mid in (a, b):
                break
            if (
                planner.plan(replace(base, memory_bytes=mid), epsilon, [below, above]).best.family
                == below
            ):
                a = mid
            else:
                b = mid
        crossovers.append(Crossover((a * b) ** 0.5, below, above))
    return Sweep(plans, tuple(crossovers))
