"""Fixed-point codec for in-network aggregation: float32 updates to int32 lanes and back.

Switches add int32 values with wraparound, so every member of a group must quantise with the same
scale, chosen so that the sum of k contributions cannot overflow. With a bound b on every
member's largest magnitude (max |x_i| <= b for all i), any element of the sum is at most k * b in
magnitude, so

    scale = floor((2**31 - 1) / k) / b

keeps each quantised value within +-floor((2**31 - 1) / k) and their sum within int32. Rounding
to the nearest integer costs at most 1 / (2 * scale) per value and per contributor.

Bounds are exchanged as power-of-two exponents (`exponent_of`): the group's bound is 2**E with E
the largest member exponent, which a sum-only network can find as the highest non-zero lane of
summed one-hot vectors (`exponent_vote`, `agreed_exponent`).
"""

from __future__ import annotations

import hashlib
import math

import numpy as np

from workers.exceptions import QuantiseError

INT32_MAX = 2**31 - 1
EXPONENT_LOW = -24  # the lowest exponent a one-hot vote carries (in its first lane)


def exponent_high(lanes: int) -> int:
    """The highest exponent a one-hot vote of `lanes` values carries (2**7 with 32 lanes)."""
    return EXPONENT_LOW + lanes - 1


def check_finite(x: np.ndarray) -> None:
    """Refuse NaN and Inf before anything is sent, naming where the first one is."""
    bad = ~np.isfinite(x)
    if bad.any():
        first = int(np.flatnonzero(bad)[0])
        raise QuantiseError(
            f"update holds {int(bad.sum())} non-finite value(s) (NaN or Inf), the first at "
            f"index {first}: {x.flat[first]}; nothing was sent"
        )


def exponent_of(x: np.ndarray, lanes: int) -> int:
    """The smallest E with max |x| <= 2**E (EXPONENT_LOW for an all-zero update), one that a
    vote of `lanes` values can carry."""
    check_finite(x)
    peak = float(np.max(np.abs(x))) if x.size else 0.0
    if peak == 0.0:
        return EXPONENT_LOW
    exponent = max(EXPONENT_LOW, math.ceil(math.log2(peak)))
    if exponent > (high := exponent_high(lanes)):
        raise QuantiseError(f"largest magnitude {peak:g} exceeds 2**{high}; scale the update down")
    return exponent


def exponent_vote(exponent: int, lanes: int) -> np.ndarray:
    """One chunk of `lanes` values with a 1 in the lane of `exponent`; summing the group's votes
    finds its max."""
    if not EXPONENT_LOW <= exponent <= (high := exponent_high(lanes)):
        raise QuantiseError(f"exponent {exponent} outside {EXPONENT_LOW}..{high}")
    vote = np.zeros(lanes, dtype=np.int32)
    vote[exponent - EXPONENT_LOW] = 1
    return vote


def agreed_exponent(votes_sum: np.ndarray) -> int:
    """The group's exponent from the sum of its members' votes (the highest non-zero lane)."""
    lanes = np.flatnonzero(np.asarray(votes_sum) != 0)
    if lanes.size == 0:
        raise QuantiseError("no member voted: the summed exponent votes are all zero")
    return int(lanes[-1]) + EXPONENT_LOW


def scale_for(exponent: int, contributors: int) -> float:
    """The shared scale for k contributors whose magnitudes are all at most 2**exponent."""
    if contributors < 1:
        raise QuantiseError(f"a group needs at least one contributor, got {contributors}")
    return (INT32_MAX // contributors) / 2.0**exponent


def quantise(x: np.ndarray, scale: float, contributors: int) -> np.ndarray:
    """float32 values to int32 at `scale`; refuses values the scale cannot carry safely."""
    x = np.asarray(x, dtype=np.float32)
    check_finite(x)
    limit = INT32_MAX // contributors
    q = np.rint(x.astype(np.float64) * scale)
    if q.size and np.max(np.abs(q)) > limit:
        raise QuantiseError(
            f"a value needs {np.max(np.abs(q)):.0f} at this scale, over the {limit} that keeps "
            f"the sum of {contributors} contributions within int32; agree on a larger exponent"
        )
    return q.astype(np.int32)


def dequantise(total: np.ndarray, scale: float) -> np.ndarray:
    """The float32 sum from the int32 sum of the group's quantised contributions."""
    return (np.asarray(total, dtype=np.int64) / scale).astype(np.float32)


def to_chunks(q: np.ndarray, lanes: int) -> np.ndarray:
    """int32 values as chunks of `lanes` (the last padded with zeros): shape (chunks, lanes)."""
    q = np.asarray(q, dtype=np.int32).ravel()
    chunks = -(-q.size // lanes)
    padded = np.zeros(chunks * lanes, dtype=np.int32)
    padded[: q.size] = q
    return padded.reshape(chunks, lanes)


def from_chunks(chunks: np.ndarray, length: int) -> np.ndarray:
    """The first `length` values of reassembled chunks."""
    flat = np.asarray(chunks, dtype=np.int32).ravel()
    if length > flat.size:
        raise QuantiseError(f"{length} values asked of chunks holding {flat.size}")
    return flat[:length].copy()


def sum_digest(total: np.ndarray) -> str:
    """The int32 sum's fingerprint: 16 hex digits of BLAKE2b over its values as little-endian
    int32. Equal sums give equal digests whatever network, target or process carried them, so a
    run can record it for every round and two runs can be compared round by round.

    >>> sum_digest(np.arange(4, dtype=np.int32)) == sum_digest(np.arange(4))
    True
    >>> sum_digest(np.arange(4, dtype=np.int32)) == sum_digest(np.arange(1, 5, dtype=np.int32))
    False
    """
    values = np.ascontiguousarray(total, dtype="<i4")
    return hashlib.blake2b(values.tobytes(), digest_size=8).hexdigest()
