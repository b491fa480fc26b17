import numpy as np
import pytest

from innet.packetformat import PacketFormat
from workers.exceptions import QuantiseError
from workers.quantise import (
    EXPONENT_LOW,
    INT32_MAX,
    agreed_exponent,
    dequantise,
    exponent_high,
    exponent_of,
    exponent_vote,
    from_chunks,
    quantise,
    scale_for,
    to_chunks,
)

PACKET_FORMAT = PacketFormat()
LANES = PACKET_FORMAT.lanes  # 32


def group_sum(updates: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray, float]:
    """What the network computes (int32 sums with wraparound) and the exact reference."""
    k = len(updates)
    votes = sum(exponent_vote(exponent_of(u, LANES), LANES) for u in updates)
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
    votes = exponent_vote(-3, LANES) + exponent_vote(5, LANES) + exponent_vote(0, LANES)
    assert agreed_exponent(votes) == 5
    assert exponent_of(np.array([0.0, -3.5, 2.0], dtype=np.float32), LANES) == 2
    assert exponent_of(np.array([4.0], dtype=np.float32), LANES) == 2  # 4 <= 2**2
    assert exponent_of(np.zeros(3, dtype=np.float32), LANES) == EXPONENT_LOW
    assert len(exponent_vote(exponent_high(LANES), LANES)) == LANES


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_non_finite_values_are_refused_before_sending(bad):
    x = np.ones(100, dtype=np.float32)
    x[42] = bad
    with pytest.raises(QuantiseError, match="index 42"):
        exponent_of(x, LANES)
    with pytest.raises(QuantiseError, match="nothing was sent"):
        quantise(x, 1.0, 1)


def test_values_beyond_the_agreed_bound_are_refused():
    scale = scale_for(0, 3)  # magnitudes up to 1.0
    with pytest.raises(QuantiseError, match="larger exponent"):
        quantise(np.array([2.5], dtype=np.float32), scale, 3)
    with pytest.raises(QuantiseError, match="exceeds"):
        exponent_of(np.array([1e12], dtype=np.float32), LANES)
    with pytest.raises(QuantiseError):
        scale_for(0, 0)
    with pytest.raises(QuantiseError, match="no member"):
        agreed_exponent(np.zeros(LANES, dtype=np.int32))


def test_chunks_round_trip():
    q = np.arange(100, dtype=np.int32) - 50
    chunks = to_chunks(q, LANES)
    assert chunks.shape == (4, LANES) and chunks[-1, 4:].sum() == 0
    assert np.array_equal(from_chunks(chunks, 100), q)
    with pytest.raises(QuantiseError):
        from_chunks(chunks, 200)


def test_the_exponent_vote_follows_the_lane_count() -> None:
    """A vote has one lane per exponent from EXPONENT_LOW: 32 lanes reach 2**7, 256 lanes far
    beyond; what one lane count cannot carry, a wider one can."""
    assert exponent_high(32) == 7
    with pytest.raises(QuantiseError, match=r"-24\.\.7"):
        exponent_vote(8, 32)
    with pytest.raises(QuantiseError, match=r"exceeds 2\*\*7"):
        exponent_of(np.array([2.0**8], dtype=np.float32), 32)
    wide_lanes = PacketFormat(256).lanes
    assert exponent_high(wide_lanes) == EXPONENT_LOW + 255
    assert exponent_of(np.array([2.0**8], dtype=np.float32), wide_lanes) == 8
    vote = exponent_vote(exponent_high(wide_lanes), wide_lanes)
    assert vote.shape == (256,) and vote.dtype == np.int32
    assert vote.sum() == 1 and vote[-1] == 1
    votes = exponent_vote(8, wide_lanes) + exponent_vote(-3, wide_lanes)
    assert len(votes) == 256 and agreed_exponent(votes) == 8
    assert to_chunks(np.arange(300, dtype=np.int32), wide_lanes).shape == (2, 256)
