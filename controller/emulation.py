"""The scenario at the emulation's scale: update size, the planner's parameters, the trainers'
configuration, the single-process baseline and what `innet run --check` predicts.

The scenario's figures are full scale; bandwidths, memory and the update are divided by its
`scale` in the emulation, so planning at full scale gives the times the emulation should show.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

from controller.planner.cost import CostParams
from controller.planner.optimise import Planner
from controller.scenario import Scenario
from topo.siteplan import LANES


def train_config(sc: Scenario) -> dict[str, Any]:
    """workers.train.TrainConfig's fields from the scenario's training section and seed."""
    fields = dataclasses.asdict(sc.training)
    fields.pop("rounds")
    return {**fields, "seed": sc.seed}


def update_floats(sc: Scenario) -> int:
    """Values each leader sends per round: the model, padded to update_size, whole chunks."""
    from workers import train

    model = train.make_model(sc.training.hidden, sc.seed)
    n_params = sum(p.numel() for p in model.parameters())
    full = sc.update_bytes_for(math.ceil(n_params * 4 * sc.scale))
    floats = max(n_params, math.ceil(full / sc.scale / 4))
    return math.ceil(floats / LANES) * LANES


def cost_params(sc: Scenario, memory: int, floats: int) -> CostParams:
    """The planner's parameters at full scale for one memory point (rate pacing, offsets)."""
    return CostParams.for_pool(sc.pool(memory), round(floats * 4 * sc.scale), sc.bandwidth_bps)


def baseline(sc: Scenario) -> dict[str, Any]:
    """The same training in one process, all islands averaged exactly every round."""
    from workers import train

    cfg = train.TrainConfig(**train_config(sc))
    split = train.split_digits(sc.wan.n, sc.hosts, sc.seed)
    rows = train.baseline(split, cfg, sc.training.rounds, sc.hosts)
    last = rows[-1]
    keys = ("train_loss", "test_loss", "accuracy")
    return {**{k: last[k] for k in keys}, "rounds": rows}


def predictions(sc: Scenario) -> list[str]:
    """What `innet run --check` prints: per memory point and schedule, the planner's view."""
    floats = update_floats(sc)
    lines = [
        f"scenario {sc.name}: {sc.wan.n} islands x {sc.hosts} hosts, scale {sc.scale:g}, "
        f"update {floats} values ({floats // LANES} chunks) per island per round"
    ]
    planner = Planner(sc.wan)
    for memory in sc.memory_bytes:
        params = cost_params(sc, memory, floats)
        slots = sc.pool(memory).slots_per_bank
        for family in sc.schedules:
            plan = planner.plan(params, families=[family]).family(family)
            rounds = [f"{c.time_s:.3f}" for c in plan.costs]
            lines.append(
                f"  memory {memory / 1e6:g} MB ({slots} slot(s)/bank): {family}: consensus in "
                f"{plan.rounds} round(s), {plan.time_s:.3f} s predicted; round times {rounds}"
            )
    return lines
