"""Rounds to consensus for many islands: `mixing.rounds_to_consensus` with few matrix products.

A round averages within groups: its matrix W is an orthogonal projection with WJ = J, so the
consensus error ||Phi_t - J|| never grows from one round to the next. The first round within
epsilon can then be searched for rather than walked to: with P the product of one cycle of c
rounds, the powers P^1, P^2, P^4 ... (one product each) bracket it by whole cycles, binary
lifting down those powers finds the last cycle still above epsilon, and the rounds of the next
cycle are played one by one, as `mixing` plays them. A spectral norm is computed only where
cheap bounds do not decide (a column's or a row's length is at most the norm, the Frobenius norm
at least). Rounding differs from playing every round only where an error is within about 1e-12
of epsilon.
"""

from __future__ import annotations

import math

import numpy as np

from controller.planner.mixing import EXACT, averaging_matrix
from controller.planner.schedule import Schedule

LIMIT = 2000  # as rounds_to_consensus: rounds tried before giving up
MARGIN = 1e-9  # a bound decides only when it is this far (relatively) from the threshold


def rounds_and_exactness(
    schedule: Schedule, epsilon: float, limit: int = LIMIT
) -> tuple[int | None, bool]:
    """(rounds_to_consensus(schedule, epsilon, limit), whether the average is exact by then:
    rounds_to_consensus(schedule, EXACT, limit=rounds) is not None). One island: (0, True)."""
    n = schedule.n
    if n == 1:
        return 0, True
    threshold = max(epsilon, EXACT)
    cycle = len(schedule.rounds)
    whole = limit // cycle  # whole cycles within the limit
    powers, reached = _doublings(schedule, threshold, whole)
    done, phi = 0, np.eye(n)  # binary lifting: the most whole cycles still above threshold
    for j in range(len(powers) - 1 - reached, -1, -1):
        if done + 2**j <= whole:
            trial = powers[j] @ phi
            if not _within(trial, threshold):
                done, phi = done + 2**j, trial
    for t in range(done * cycle, min(limit, (done + 1) * cycle)):  # then round by round
        phi = averaging_matrix(schedule.round_at(t), n) @ phi
        if _within(phi, threshold):
            return t + 1, _within(phi, EXACT)
    if (done + 1) * cycle <= limit:  # the cycle's end is within: only rounding said otherwise
        return (done + 1) * cycle, _within(phi, EXACT)
    return None, False


def _doublings(schedule: Schedule, threshold: float, whole: int) -> tuple[list[np.ndarray], bool]:
    """P^(2^j), P one cycle's product, for 2^j <= whole up to the first within threshold; and
    whether the last is within it (the others are not)."""
    if whole < 1:
        return [], False
    n = schedule.n
    power = np.eye(n)
    for rnd in schedule.rounds:
        power = averaging_matrix(rnd, n) @ power
    powers = [power]
    while not _within(powers[-1], threshold):
        if 2 ** len(powers) > whole:
            return powers, False
        powers.append(powers[-1] @ powers[-1])
    return powers, True


def _within(phi: np.ndarray, threshold: float) -> bool:
    """||phi - J||_2 <= threshold."""
    gap = phi - 1.0 / len(phi)
    squares = gap * gap
    frobenius = math.sqrt(float(squares.sum()))
    if frobenius * (1 + MARGIN) <= threshold:
        return True
    longest = math.sqrt(max(float(squares.sum(axis=0).max()), float(squares.sum(axis=1).max())))
    if longest * (1 - MARGIN) > threshold:
        return False
    return bool(np.linalg.norm(gap, 2) <= threshold)
