import numpy as np
import pytest

from topo.siteplan import LANES
from workers.exceptions import QuantiseError
from workers.quantise import (
    EXPONENT_HIGH,
    EXPONENT_LOW,
    INT32_MAX,
    agreed_exponent,
    dequantise,
    exponent_of,
    exponent_vote,
    from_chunks,
    quantise,
    scale_for,
    to_chunks,
)


def group_sum(updates: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray, float]:
    """What the network computes (int32 sums with wraparound) and the exact reference."""
    k = len(updates)
    votes = sum(exponent_vote(exponent_of(u)) for u in updates)
    scale = scale_for(agreed_exponent(votes), k)
    qs = [quantise(u, scale, k) for u in updates]
    wrapped = np.zeros_like(qs[0])
    for q in qs:
        wrapped = wrapped + q  # int32 arithmetic, as the switch does
    exact = np.sum([q.astype(np.int64) for q in qs], axis=0)
    return wrapped, exact, scale


@pytest.mark.parametrize("k", [1, 2, 3, 9, 32])
def test_the_sum_of_k_contributions_never_overflows(k):
    rng = np.random.default_rng(k)
    updates = [rng.uniform(-1, 1, 10_000).astype(np.float32) for _ in range(k)]
    updates[0][0] = 1.0  # the worst case: every member at the bound, same sign
    for u in updates:
        u[1] = 1.0
    wrapped, exact, scale = group_sum(updates)
    assert np.array_equal(wrapped.astype(np.int64), exact)
    assert np.abs(exact).max() <= INT32_MAX
    err = np.abs(dequantise(wrapped, scale) - np.sum(updates, axis=0, dtype=np.float64))
    assert err.max() <= k / (2 * scale) + 1e-6 * k  # rounding, plus float32 output


def test_exponent_votes_find_the_group_maximum():
    votes = exponent_vote(-3) + exponent_vote(5) + exponent_vote(0)
    assert agreed_exponent(votes) == 5
    assert exponent_of(np.array([0.0, -3.5, 2.0], dtype=np.float32)) == 2
    assert exponent_of(np.array([4.0], dtype=np.float32)) == 2  # 4 <= 2**2
    assert exponent_of(np.zeros(3, dtype=np.float32)) == EXPONENT_LOW
    assert len(exponent_vote(EXPONENT_HIGH)) == LANES


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_non_finite_values_are_refused_before_sending(bad):
    x = np.ones(100, dtype=np.float32)
    x[42] = bad
    with pytest.raises(QuantiseError, match="index 42"):
        exponent_of(x)
    with pytest.raises(QuantiseError, match="nothing was sent"):
        quantise(x, 1.0, 1)


def test_values_beyond_the_agreed_bound_are_refused():
    scale = scale_for(0, 3)  # magnitudes up to 1.0
    with pytest.raises(QuantiseError, match="larger exponent"):
        quantise(np.array([2.5], dtype=np.float32), scale, 3)
    with pytest.raises(QuantiseError, match="exceeds"):
        exponent_of(np.array([1e12], dtype=np.float32))
    with pytest.raises(QuantiseError):
        scale_for(0, 0)
    with pytest.raises(QuantiseError, match="no member"):
        agreed_exponent(np.zeros(LANES, dtype=np.int32))


def test_chunks_round_trip():
    q = np.arange(100, dtype=np.int32) - 50
    chunks = to_chunks(q)
    assert chunks.shape == (4, LANES) and chunks[-1, 4:].sum() == 0
    assert np.array_equal(from_chunks(chunks, 100), q)
    with pytest.raises(QuantiseError):
        from_chunks(chunks, 200)
