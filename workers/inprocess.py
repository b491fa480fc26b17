"""The whole experiment in one process: the reference every emulated run is compared with.

Every island's workers train in turn (workers/train.py), and each round's groups average their
proposals exactly, or with `quantised` through encode, an int32 sum with wraparound and decode,
as the network does. `baseline` is DiLoCo: all islands in one group, exact averaging.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

import numpy as np

from workers.config import TrainConfig
from workers.train import (
    DEFAULT_BOUND_EXPONENT,
    DigitsSplit,
    IslandState,
    WorkerTrainer,
    decode,
    encode,
    evaluate,
    flatten,
    model_for,
    worker_seed,
)

log = logging.getLogger(__name__)


def check_groups(groups: Sequence[Sequence[int]], islands: int, index: int) -> None:
    """Refuse a round whose groups name unknown islands or share one."""
    seen: set[int] = set()
    for group in groups:
        if not group:
            raise ValueError(f"round {index}: a group is empty; leave an idle island out instead")
        for i in group:
            if not 0 <= i < islands:
                raise ValueError(f"round {index}: island {i} is not in 0..{islands - 1}")
            if i in seen:
                raise ValueError(f"round {index}: island {i} is in more than one group")
            seen.add(i)


def group_mean(
    proposals: list[np.ndarray], theta0: np.ndarray, quantised: bool, bound_exponent: int
) -> tuple[np.ndarray, int]:
    """The mean of a group's proposals, exact or through int32 sums; and the clipped count."""
    k = len(proposals)
    if not quantised:
        return np.mean(np.asarray(proposals, dtype=np.float64), axis=0).astype(np.float32), 0
    total = np.zeros(theta0.shape, dtype=np.int32)
    clipped = 0
    for x in proposals:
        q, c = encode(x, theta0, bound_exponent, k)
        total += q  # int32 with wraparound, as the switch adds
        clipped += c
    return decode(total, theta0, bound_exponent, k, k), clipped


def spread(thetas: Sequence[np.ndarray]) -> float:
    """The largest L2 distance between two islands' parameters."""
    stack = np.asarray(thetas, dtype=np.float64)
    gaps = stack[:, None, :] - stack[None, :, :]
    return float(np.sqrt((gaps**2).sum(axis=2)).max())


def run_in_process(
    split: DigitsSplit,
    config: TrainConfig,
    rounds: Sequence[Sequence[Sequence[int]]],
    workers_per_island: int,
    num_rounds: int,
    quantised: bool = False,
    bound_exponent: int = DEFAULT_BOUND_EXPONENT,
) -> list[dict[str, float | int]]:
    """The whole experiment in one process; one dict of figures per round (round 0 first).

    `rounds` lists each round's groups of island indices and is cycled for `num_rounds`; an
    island in no group of a round keeps its own proposal. Groups average exactly, or with
    `quantised` through encode, an int32 sum and decode, as the network does. Figures: the
    islands' mean training loss, the test loss and accuracy of the islands' average model, the
    worst island's accuracy, the spread between islands and how many values were clipped.
    """
    history, _ = run_with_models(
        split, config, rounds, workers_per_island, num_rounds, quantised, bound_exponent
    )
    return history


def run_with_models(
    split: DigitsSplit,
    config: TrainConfig,
    rounds: Sequence[Sequence[Sequence[int]]],
    workers_per_island: int,
    num_rounds: int,
    quantised: bool = False,
    bound_exponent: int = DEFAULT_BOUND_EXPONENT,
) -> tuple[list[dict[str, float | int]], list[np.ndarray]]:
    """`run_in_process`, also returning every island's final parameters."""
    n = len(split.islands)
    if num_rounds < 1:
        raise ValueError(f"num_rounds must be >= 1, got {num_rounds}")
    if not rounds:
        raise ValueError("rounds is empty: give at least one round of groups")
    for i, shards in enumerate(split.islands):
        if len(shards) != workers_per_island:
            raise ValueError(
                f"island {i} has {len(shards)} shards in the split, not {workers_per_island}"
            )
    for index, groups in enumerate(rounds):
        check_groups(groups, n, index)
    theta0 = flatten(model_for(config))
    trainers = [
        [WorkerTrainer(shard, config, worker_seed(config.seed, i, w)) for w, shard in enumerate(s)]
        for i, s in enumerate(split.islands)
    ]
    states = [IslandState(theta0, config) for _ in range(n)]
    history: list[dict[str, float | int]] = []
    for r in range(num_rounds):
        proposals: list[np.ndarray] = []
        losses: list[float] = []
        for state, workers in zip(states, trainers, strict=True):
            results = [w.local_phase(state.start) for w in workers]
            local_mean = np.mean(np.asarray([t for t, _ in results], dtype=np.float64), axis=0)
            losses.append(float(np.mean([loss for _, loss in results])))
            proposals.append(state.propose(local_mean))
        accepted = list(proposals)  # an island in no group keeps its own
        clipped = 0
        for group in rounds[r % len(rounds)]:
            mean, c = group_mean([proposals[i] for i in group], theta0, quantised, bound_exponent)
            clipped += c
            for i in group:
                accepted[i] = mean
        for state, x in zip(states, accepted, strict=True):
            state.accept(x)
        thetas = [s.theta for s in states]
        average = np.mean(np.asarray(thetas, dtype=np.float64), axis=0).astype(np.float32)
        test_loss, accuracy = evaluate(average, config, split.test)
        figures = {
            "round": r,
            "train_loss": float(np.mean(losses)),
            "test_loss": test_loss,
            "accuracy": accuracy,
            "accuracy_min": min(evaluate(t, config, split.test)[1] for t in thetas),
            "spread": spread(thetas),
            "clipped": clipped,
        }
        log.info("round %d: %s", r, figures)
        history.append(figures)
    return history, [s.theta.copy() for s in states]


def baseline(
    split: DigitsSplit, config: TrainConfig, num_rounds: int, workers_per_island: int
) -> list[dict[str, float | int]]:
    """What the experiment compares with: DiLoCo, all islands in one group, exact averaging."""
    everyone = [list(range(len(split.islands)))]
    return run_in_process(split, config, [everyone], workers_per_island, num_rounds)
