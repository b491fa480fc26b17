"""The training side: digits split, model, DiLoCo rounds, the int32 wire encoding, schedules."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest
import torch

from workers.adamw import AdamW
from workers.config import TrainConfig
from workers.inprocess import baseline, run_in_process, run_with_models
from workers.quantise import INT32_MAX, scale_for
from workers.train import (
    DigitsSplit,
    IslandState,
    WorkerTrainer,
    decode,
    encode,
    evaluate,
    flatten,
    load_digits,
    load_flat,
    make_model,
    split_digits,
    worker_seed,
)

ISLANDS = 9


def test_the_digits_are_scikit_learns_without_importing_it() -> None:
    from sklearn.datasets import load_digits as sklearns

    features, labels = load_digits()
    expected = sklearns()
    assert features.shape == (1797, 64) and labels.dtype == np.int64
    np.testing.assert_array_equal(features, expected.data)
    np.testing.assert_array_equal(labels, expected.target)
    # an island process loads them without scikit-learn (0.9 s of CPU it would import)
    code = "import sys, workers.train as t; t.load_digits(); print('sklearn' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "False"


WORKERS = 2
ROUNDS = 12
ROWS = [[0, 1, 2], [3, 4, 5], [6, 7, 8]]
COLUMNS = [[0, 3, 6], [1, 4, 7], [2, 5, 8]]


@pytest.fixture(scope="module")
def split() -> DigitsSplit:
    return split_digits(ISLANDS, WORKERS, seed=0)


@pytest.fixture(scope="module")
def config() -> TrainConfig:
    return TrainConfig(seed=0)


@pytest.fixture(scope="module")
def baseline_history(split, config) -> list[dict]:
    return baseline(split, config, ROUNDS, WORKERS)


def test_split_is_stratified_standardised_and_deterministic(split) -> None:
    shards = [shard for island in split.islands for shard in island]
    assert len(split.islands) == ISLANDS and all(len(i) == WORKERS for i in split.islands)
    assert len(split.test) + sum(len(s) for s in shards) == 1797
    assert 440 <= len(split.test) <= 460
    for shard in shards:
        assert shard.x.dtype == torch.float32 and shard.x.shape[1] == 64
        counts = torch.bincount(shard.y, minlength=10)
        assert counts.min() >= 6 and counts.max() <= 9  # about 7.5 of each class in 75
    train_x = torch.cat([s.x for s in shards])
    varying = train_x.std(dim=0) > 0
    assert torch.allclose(train_x.mean(dim=0), torch.zeros(64), atol=1e-5)
    assert torch.allclose(train_x.std(dim=0, unbiased=False)[varying], torch.ones(1), atol=1e-4)
    again = split_digits(ISLANDS, WORKERS, seed=0)
    assert torch.equal(again.test.x, split.test.x)
    assert torch.equal(again.islands[4][1].y, split.islands[4][1].y)
    other = split_digits(ISLANDS, WORKERS, seed=1)
    assert not torch.equal(other.islands[0][0].x, split.islands[0][0].x)


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        ((0, 2, 0), "islands must be >= 1"),
        ((3, 0, 0), "workers_per_island must be >= 1"),
        ((3, 2, -1), "seed must be >= 0"),
        ((700, 2, 0), "need 1400 shards, but the training part holds only"),
    ],
)
def test_split_refuses_what_the_data_cannot_give(args, fragment) -> None:
    with pytest.raises(ValueError, match=fragment):
        split_digits(*args)


@pytest.mark.parametrize("fraction", [0.0, 1.0, -0.1])
def test_split_refuses_a_test_fraction_outside_0_1(fraction) -> None:
    with pytest.raises(ValueError, match="test_fraction"):
        split_digits(3, 2, 0, test_fraction=fraction)


def test_flatten_and_load_flat_round_trip() -> None:
    model = make_model(32, seed=0)
    vec = flatten(model)
    assert vec.dtype == np.float32 and vec.shape == (2410,)
    other = make_model(32, seed=1)
    assert not np.array_equal(flatten(other), vec)
    load_flat(other, vec)
    assert np.array_equal(flatten(other), vec)
    probe = torch.randn(5, 64)
    assert torch.equal(other(probe), model(probe))
    vec[:] = 0.0  # the model holds a copy, not a view of the caller's array
    assert not np.array_equal(flatten(other), vec)
    with pytest.raises(ValueError, match="2410 parameters; got a vector of shape"):
        load_flat(other, np.zeros(2409, dtype=np.float32))


def test_make_model_depends_on_its_seed_only() -> None:
    before = torch.random.get_rng_state()
    assert np.array_equal(flatten(make_model(16, 3)), flatten(make_model(16, 3)))
    assert torch.equal(torch.random.get_rng_state(), before)
    assert flatten(make_model(16, 3)).shape == (64 * 16 + 16 + 16 * 10 + 10,)


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("hidden", 0, "hidden must be >= 1, got 0"),
        ("inner_steps", 0, "inner_steps must be >= 1, got 0"),
        ("batch_size", -1, "batch_size must be >= 1, got -1"),
        ("inner_lr", 0.0, "inner_lr must be > 0, got 0.0"),
        ("outer_lr", -0.5, "outer_lr must be > 0, got -0.5"),
        ("outer_momentum", 1.0, r"outer_momentum must be in \[0, 1\), got 1.0"),
        ("weight_decay", -1e-4, "weight_decay must be >= 0"),
        ("inner_lr", float("nan"), "inner_lr must be finite, got nan"),
        ("seed", -3, "seed must be >= 0, got -3"),
    ],
)
def test_config_errors_name_the_field(field, value, message) -> None:
    with pytest.raises(ValueError, match=message):
        TrainConfig(**{field: value})


def diloco_outer_steps(
    theta: np.ndarray, deltas: list[np.ndarray], lr: float, mu: float
) -> np.ndarray:
    """DiLoCo's outer optimiser written plainly: Nesterov SGD on the averaged pseudo-gradient."""
    theta = theta.astype(np.float64)
    buffer = np.zeros_like(theta)
    for g in deltas:
        buffer = mu * buffer + g
        theta = theta - lr * (g + mu * buffer)
    return theta


def test_all_to_all_mean_of_proposals_is_diloco_on_the_mean_pseudo_gradient() -> None:
    n, size, rounds = 5, 200, 6
    config = TrainConfig(outer_lr=0.7, outer_momentum=0.9)
    rng = np.random.default_rng(7)
    theta0 = rng.normal(size=size).astype(np.float32)
    islands = [IslandState(theta0, config) for _ in range(n)]
    mean_deltas = []
    for _ in range(rounds):
        deltas = rng.normal(scale=0.1, size=(n, size))
        mean_deltas.append(deltas.mean(axis=0))
        proposals = [s.propose(s.theta - d) for s, d in zip(islands, deltas, strict=True)]
        mean = np.mean(proposals, axis=0)
        for s in islands:
            s.accept(mean)
    expected = diloco_outer_steps(theta0, mean_deltas, lr=0.7, mu=0.9)
    for s in islands:
        assert np.allclose(s.theta, expected, rtol=0, atol=1e-5)
    # the islands' own buffers differ, so this is not a test that passes trivially
    assert not np.allclose(islands[0].momentum, islands[1].momentum)


def test_propose_leaves_theta_and_rounds_alternate() -> None:
    config = TrainConfig(outer_lr=0.5, outer_momentum=0.0)
    state = IslandState(np.ones(4, dtype=np.float32), config)
    x = state.propose(np.full(4, 0.8, dtype=np.float32))
    assert np.array_equal(state.theta, np.ones(4, dtype=np.float32))
    assert np.allclose(x, 1.0 - 0.5 * 0.2)
    with pytest.raises(RuntimeError, match="propose was called twice"):
        state.propose(x)
    state.accept(x)
    assert np.array_equal(state.theta, x)
    with pytest.raises(RuntimeError, match="accept before propose"):
        state.accept(x)


def test_worker_trains_deterministically_and_keeps_its_optimiser_state(split, config) -> None:
    theta0 = flatten(make_model(config.hidden, config.seed))
    shard = split.islands[0][0]
    first = WorkerTrainer(shard, config, worker_seed(0, 0, 0))
    theta1, loss1 = first.local_phase(theta0)
    theta2, loss2 = first.local_phase(theta1)
    assert loss2 < loss1
    twin = WorkerTrainer(shard, config, worker_seed(0, 0, 0))
    assert np.array_equal(twin.local_phase(theta0)[0], theta1)
    # a fresh AdamW from theta1 differs from one that kept its moments for H steps
    fresh = WorkerTrainer(shard, config, worker_seed(0, 0, 0))
    fresh.local_phase(theta0)  # the same minibatches consumed as `first`
    fresh.optimiser = AdamW(fresh.model.parameters(), lr=config.inner_lr)
    assert not np.allclose(fresh.local_phase(theta1)[0], theta2)
    other = WorkerTrainer(shard, config, worker_seed(0, 0, 1))
    assert not np.array_equal(other.local_phase(theta0)[0], theta1)


@pytest.mark.parametrize(("members", "k"), [(1, 1), (3, 3), (9, 9), (3, 9)])
def test_the_mean_of_k_encodings_decodes_within_one_step_of_the_scale(members, k) -> None:
    """k sets the scale; a group may have fewer members than the k it was sized for."""
    exponent = 1
    rng = np.random.default_rng(k + members)
    theta0 = rng.normal(size=1000).astype(np.float32)
    xs = [(theta0 + rng.uniform(-2, 2, 1000)).astype(np.float32) for _ in range(members)]
    total = np.zeros(1000, dtype=np.int32)
    for x in xs:
        q, clipped = encode(x, theta0, exponent, k)
        assert q.dtype == np.int32 and clipped == 0
        total += q
    mean = decode(total, theta0, exponent, k, members)
    truth = np.mean(np.asarray(xs, dtype=np.float64), axis=0)
    # 1 / scale from rounding, plus float32's own rounding of each x - theta0 and of the mean
    scale = scale_for(exponent, k)
    tolerance = 1 / scale + 2.0**exponent * 2.0**-24 + np.spacing(np.abs(mean))
    assert mean.dtype == np.float32
    assert np.all(np.abs(mean - truth) <= tolerance)


@pytest.mark.parametrize("k", [2, 9, 32])
def test_int32_sums_of_clipped_encodings_never_overflow(k) -> None:
    exponent = 0
    theta0 = np.zeros(64, dtype=np.float32)
    far = np.full(64, 5.0, dtype=np.float32)  # every value beyond the bound, all one sign
    far[:32] = -5.0
    encodings = [encode(far, theta0, exponent, k) for _ in range(k)]
    assert all(clipped == 64 for _, clipped in encodings)
    exact = np.sum([q.astype(np.int64) for q, _ in encodings], axis=0)
    assert np.abs(exact).max() <= INT32_MAX
    wrapped = np.zeros(64, dtype=np.int32)
    for q, _ in encodings:
        wrapped += q
    assert np.array_equal(wrapped, exact)
    assert np.allclose(decode(wrapped, theta0, exponent, k, k), np.sign(far), atol=1e-6)


def test_all_to_all_rounds_learn_the_digits(baseline_history) -> None:
    first, fifth, last = baseline_history[0], baseline_history[5], baseline_history[-1]
    assert [h["round"] for h in baseline_history] == list(range(ROUNDS))
    assert fifth["accuracy"] > 0.9 and last["accuracy"] > 0.9
    assert last["train_loss"] < 0.2 * first["train_loss"]
    assert fifth["test_loss"] < first["test_loss"]
    assert all(h["spread"] == 0.0 for h in baseline_history)  # one group: one model
    assert all(h["accuracy_min"] == h["accuracy"] for h in baseline_history)


def test_a_run_is_determined_by_its_seed() -> None:
    small = split_digits(3, 2, seed=5)
    config = TrainConfig(inner_steps=5, seed=5)
    a = run_in_process(small, config, [[[0, 1], [2]]], 2, num_rounds=2)
    b = run_in_process(small, config, [[[0, 1], [2]]], 2, num_rounds=2)
    assert a == b
    c = run_in_process(small, TrainConfig(inner_steps=5, seed=6), [[[0, 1], [2]]], 2, 2)
    assert c != a


def test_two_rotating_rounds_of_triples_reach_consensus_from_any_start() -> None:
    """Rows then columns of a 3 x 3 grid average all nine models exactly (pure gossip)."""
    config = TrainConfig()
    rng = np.random.default_rng(3)
    states = [IslandState(rng.normal(size=50), config) for _ in range(ISLANDS)]
    start_mean = np.mean([s.theta for s in states], axis=0)

    def gossip(groups: list[list[int]]) -> float:
        proposals = [s.propose(s.theta) for s in states]  # no local progress: x = theta
        for group in groups:
            mean = np.mean([proposals[i] for i in group], axis=0)
            for i in group:
                states[i].accept(mean)
        return max(np.linalg.norm(a.theta - b.theta) for a in states for b in states)

    assert gossip(ROWS) > 1.0
    assert gossip(COLUMNS) < 1e-5
    assert np.allclose(states[0].theta, start_mean, atol=1e-6)


def test_rotating_triples_train_as_well_as_all_to_all(split, config, baseline_history) -> None:
    rotating = run_in_process(split, config, [ROWS, COLUMNS], WORKERS, ROUNDS)
    fixed = run_in_process(split, config, [ROWS], WORKERS, ROUNDS)
    assert abs(rotating[-1]["accuracy"] - baseline_history[-1]["accuracy"]) <= 0.02
    # rotation keeps the islands close; three cliques that never meet drift apart
    assert 0.0 < rotating[-1]["spread"] < 0.3 * fixed[-1]["spread"]
    assert fixed[-1]["spread"] > fixed[2]["spread"]


def test_quantised_rounds_match_exact_ones(split, config) -> None:
    schedule = [ROWS, COLUMNS]
    exact, exact_thetas = run_with_models(split, config, schedule, WORKERS, 4)
    wire, wire_thetas = run_with_models(split, config, schedule, WORKERS, 4, quantised=True)
    assert all(h["clipped"] == 0 for h in wire)
    assert wire[-1]["test_loss"] == pytest.approx(exact[-1]["test_loss"], abs=1e-4)
    for a, b in zip(exact_thetas, wire_thetas, strict=True):
        assert np.abs(a - b).max() <= 1e-4
    # the quantised path really encodes: a bound far too small clips and changes the result
    _, one_round = run_with_models(split, config, schedule, WORKERS, 1)
    tight, tight_thetas = run_with_models(
        split, config, schedule, WORKERS, 1, quantised=True, bound_exponent=-8
    )
    assert tight[0]["clipped"] > 0
    assert np.abs(tight_thetas[0] - one_round[0]).max() > 1e-2


def test_evaluate_scores_the_given_parameters(split, config) -> None:
    untrained = flatten(make_model(config.hidden, config.seed))
    loss, accuracy = evaluate(untrained, config, split.test)
    assert 0.0 <= accuracy < 0.3 and loss > 1.5


@pytest.mark.parametrize(
    ("rounds", "workers", "fragment"),
    [
        ([[[0, 1], [1, 2]]], 2, "island 1 is in more than one group"),
        ([[[0, 9]]], 2, r"island 9 is not in 0..8"),
        ([[list(range(9))]], 3, "island 0 has 2 shards in the split, not 3"),
        ([], 2, "rounds is empty"),
        ([[[0, 1], []]], 2, "round 0: a group is empty"),
    ],
)
def test_run_refuses_bad_schedules(split, config, rounds, workers, fragment) -> None:
    with pytest.raises(ValueError, match=fragment):
        run_in_process(split, config, rounds, workers, num_rounds=1)
