"""How a schedule mixes: averaging matrices, consensus error, rounds to (exact) consensus.

A round in which each group averages its members' values is the doubly stochastic matrix W with
W[i, j] = 1/|g| when i and j share group g. After t rounds the islands hold Phi_t x with
Phi_t = W_t ... W_1; consensus is Phi_t = J = 11^T/n. The consensus error is the spectral norm
||Phi_t - J||: the largest factor by which any disagreement (x minus its mean) survives.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from controller.planner.schedule import Round, Schedule

EXACT = 1e-9  # an error below this is the exact average up to floating-point rounding


def averaging_matrix(rnd: Round, n: int) -> np.ndarray:
    w = np.zeros((n, n))
    for g in rnd.groups:
        idx = np.array(g)
        w[np.ix_(idx, idx)] = 1.0 / len(g)
    return w


def consensus_errors(schedule: Schedule, rounds: int) -> list[float]:
    """||Phi_t - J||_2 for t = 1..rounds, following the cycle from its first round."""
    n = schedule.n
    j = np.full((n, n), 1.0 / n)
    phi = np.eye(n)
    errors = []
    for t in range(rounds):
        phi = averaging_matrix(schedule.round_at(t), n) @ phi
        errors.append(float(np.linalg.norm(phi - j, 2)))
    return errors


def rounds_to_consensus(
    schedule: Schedule, epsilon: float = EXACT, limit: int = 2000
) -> int | None:
    """Rounds until the consensus error is at most epsilon; None if not within `limit` rounds."""
    n = schedule.n
    if n == 1:
        return 0
    j = np.full((n, n), 1.0 / n)
    phi = np.eye(n)
    for t in range(limit):
        phi = averaging_matrix(schedule.round_at(t), n) @ phi
        if np.linalg.norm(phi - j, 2) <= max(epsilon, EXACT):
            return t + 1
    return None


@dataclass(frozen=True)
class Mixing:
    """Summary of a schedule's mixing."""

    rounds_to_exact: int | None
    cycle_contraction: float  # ||P - J|| for the product P of one cycle
    spectral_gap: float  # 1 - per-round contraction (geometric mean over the cycle)


def mixing(schedule: Schedule) -> Mixing:
    n = schedule.n
    j = np.full((n, n), 1.0 / n)
    p = np.eye(n)
    for rnd in schedule.rounds:
        p = averaging_matrix(rnd, n) @ p
    contraction = float(np.linalg.norm(p - j, 2)) if n > 1 else 0.0
    contraction = 0.0 if contraction < EXACT else min(contraction, 1.0)
    per_round = contraction ** (1.0 / len(schedule.rounds))
    return Mixing(
        rounds_to_exact=rounds_to_consensus(schedule, EXACT, limit=4 * len(schedule.rounds) + n),
        cycle_contraction=contraction,
        spectral_gap=1.0 - per_round,
    )
