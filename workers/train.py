"""The training side of the experiment: DiLoCo-style rounds of a small model.

The model (`TrainConfig.model`) is an MLP on scikit-learn's digits, or a character-level
transformer on Python's own source (workers/textlm.py); both go through `model_for`,
`split_for` and the same trainer. Pure computation, no network and no processes: island
processes call it between aggregation rounds, and workers/inprocess.py plays a whole experiment
in one process as the reference.

**One round.** Every worker starts from its island's parameters `theta`, takes H AdamW steps on
its shard (`WorkerTrainer.local_phase`; the inner optimiser keeps its state across rounds, as in
DiLoCo), and the island averages its workers' results exactly into `theta_local_mean`. The island
then takes its own outer step (`IslandState.propose`): pseudo-gradient `delta = theta -
theta_local_mean`, Nesterov momentum `m = mu * m + delta`, proposal `x = theta - lr * (delta + mu
* m)`. The islands of a group average their proposals, and each accepts the mean as its new
`theta` (`IslandState.accept`).

**Overlap** (`TrainConfig.overlap`, streaming DiLoCo). The exchange runs beside the next round's
inner steps, which therefore start from the island's own proposal, not the group's mean
(`IslandState.start`). When the mean arrives it becomes the base of the next proposal: the
pseudo-gradient of round r + 1 (its inner steps from the own proposal x_r) is applied to the
mean of round r, so the outer update lands one round late and no island waits for the WAN.

**Why the group averages proposals, not pseudo-gradients.** With all islands in one group
(all-to-all) this is exactly DiLoCo's outer step on the averaged pseudo-gradient: every island
holds the same `theta`, the momentum update is linear and every buffer starts at zero, so the
mean of the islands' buffers is the buffer DiLoCo would keep for the mean pseudo-gradient, and
the mean of the proposals is `theta - lr * nesterov(mean delta)`. With groups that rotate from
round to round the islands' models differ; averaging parameters is then gossip averaging: it
applies every member's step and also pulls together models that drifted apart in earlier
rounds, which averaging pseudo-gradients alone would never do.

**On the wire.** The network sums int32 values. A member sends `x - theta0` (theta0: the
parameters every island started from), clipped to +-2**E and quantised with the group's shared
scale (`workers.quantise`); the group's mean comes back as theta0 + the dequantised sum / the
group's size (`encode`, `decode`).
"""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from torch import nn

from workers.adamw import AdamW
from workers.config import TrainConfig
from workers.quantise import quantise, scale_for

FEATURES = 64  # 8 x 8 pixels
CLASSES = 10
DEFAULT_BOUND_EXPONENT = 3  # |x - theta0| <= 8: far above how far the parameters move


def load_digits() -> tuple[np.ndarray, np.ndarray]:
    """scikit-learn's digits: 1,797 8x8 images as float64 features (n, 64) and int64 labels.

    Read from the file `sklearn.datasets.load_digits` reads, without importing scikit-learn,
    which costs 0.9 s of CPU in each island process (a unit test holds the two equal); through
    scikit-learn where the file is not where it was."""
    spec = importlib.util.find_spec("sklearn")
    roots = spec.submodule_search_locations if spec is not None else None
    path = Path(roots[0]) / "datasets" / "data" / "digits.csv.gz" if roots else None
    if path is not None and path.is_file():
        data = np.loadtxt(path, delimiter=",")
        features, labels = data[:, :-1], data[:, -1]
    else:
        from sklearn.datasets import load_digits as load

        digits = load()
        features, labels = digits.data, digits.target
    return np.asarray(features, dtype=np.float64), np.asarray(labels, dtype=np.int64)


@dataclass(frozen=True)
class Dataset:
    """Samples as float32 features (n, 64) and int64 labels (n,)."""

    x: torch.Tensor
    y: torch.Tensor

    def __post_init__(self) -> None:
        if self.x.shape[0] != self.y.shape[0]:
            raise ValueError(f"{self.x.shape[0]} feature rows but {self.y.shape[0]} labels")

    def __len__(self) -> int:
        return int(self.y.shape[0])


@dataclass(frozen=True)
class DigitsSplit:
    """A held-out test set shared by everyone, and each island's worker shards."""

    test: Dataset
    islands: tuple[tuple[Dataset, ...], ...]


def split_digits(
    islands: int, workers_per_island: int, seed: int, test_fraction: float = 0.25
) -> DigitsSplit:
    """Digits split into a test set and islands x workers shards, deterministic in `seed`.

    Each class is shuffled and split into test and training parts in the same proportion; the
    training samples, ordered by class, are dealt round-robin to the shards, so every shard has
    about the same class mix. Features are standardised with the training part's statistics.
    """
    if islands < 1:
        raise ValueError(f"islands must be >= 1, got {islands}")
    if workers_per_island < 1:
        raise ValueError(f"workers_per_island must be >= 1, got {workers_per_island}")
    if not 0.0 < test_fraction < 1.0:
        raise ValueError(f"test_fraction must be strictly between 0 and 1, got {test_fraction}")
    if seed < 0:
        raise ValueError(f"seed must be >= 0, got {seed}")
    features, labels = load_digits()
    rng = np.random.default_rng(seed)
    test_idx: list[np.ndarray] = []
    train_idx: list[np.ndarray] = []
    for c in range(CLASSES):
        members = rng.permutation(np.flatnonzero(labels == c))
        n_test = round(test_fraction * members.size)
        test_idx.append(members[:n_test])
        train_idx.append(members[n_test:])
    train = np.concatenate(train_idx)  # ordered by class, shuffled within each class
    test = rng.permutation(np.concatenate(test_idx))
    shards = islands * workers_per_island
    if shards > train.size:
        raise ValueError(
            f"{islands} islands x {workers_per_island} workers need {shards} shards, but the "
            f"training part holds only {train.size} samples (test_fraction={test_fraction}); "
            "use fewer islands or workers, or a smaller test_fraction"
        )
    mean = features[train].mean(axis=0)
    std = features[train].std(axis=0)
    std[std == 0.0] = 1.0  # pixels that are blank in every training image

    def dataset(idx: np.ndarray) -> Dataset:
        x = (features[idx] - mean) / std
        return Dataset(torch.from_numpy(x.astype(np.float32)), torch.from_numpy(labels[idx]))

    dealt = [dataset(rng.permutation(train[s::shards])) for s in range(shards)]
    return DigitsSplit(
        test=dataset(test),
        islands=tuple(
            tuple(dealt[i * workers_per_island : (i + 1) * workers_per_island])
            for i in range(islands)
        ),
    )


def make_model(hidden: int, seed: int) -> nn.Module:
    """MLP 64 -> hidden -> 10 with ReLU, initialised from `seed` (the global RNG is untouched)."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        return nn.Sequential(nn.Linear(FEATURES, hidden), nn.ReLU(), nn.Linear(hidden, CLASSES))


def model_for(config: TrainConfig) -> nn.Module:
    """The configuration's model: the digits MLP, or the character transformer
    (workers/textlm.py: `hidden` is its width), initialised from config.seed."""
    if config.model == "mlp":
        return make_model(config.hidden, config.seed)
    from workers.textlm import make_transformer

    return make_transformer(config.hidden, config.layers, config.context, config.seed)


def split_for(config: TrainConfig, islands: int, workers_per_island: int) -> DigitsSplit:
    """The test set and the shards of the configuration's task, deterministic in its seed."""
    if config.model == "mlp":
        return split_digits(islands, workers_per_island, config.seed)
    from workers.textlm import split_text

    return split_text(islands, workers_per_island, config.seed, config.context)


def flatten(model: nn.Module) -> np.ndarray:
    """All parameters as one flat float32 vector (a copy)."""
    with torch.no_grad():
        parts = [p.detach().reshape(-1) for p in model.parameters()]
        return torch.cat(parts).numpy().astype(np.float32, copy=True)


def load_flat(model: nn.Module, vec: np.ndarray) -> None:
    """Copy a flat vector into the model's parameters (in place: optimisers keep their state)."""
    params = list(model.parameters())
    size = sum(p.numel() for p in params)
    vec = np.asarray(vec)
    if vec.shape != (size,):
        raise ValueError(f"the model has {size} parameters; got a vector of shape {vec.shape}")
    flat = torch.from_numpy(vec.astype(np.float32))
    offset = 0
    with torch.no_grad():
        for p in params:
            p.copy_(flat[offset : offset + p.numel()].view_as(p))
            offset += p.numel()


def worker_seed(seed: int, island: int, worker: int) -> int:
    """The minibatch seed of one worker, the same in every process that derives it."""
    return int(np.random.SeedSequence([seed, island, worker]).generate_state(1)[0])


class WorkerTrainer:
    """One worker: its shard, a model and an AdamW optimiser whose state persists across rounds."""

    def __init__(self, shard: Dataset, config: TrainConfig, worker_seed: int) -> None:
        if len(shard) == 0:
            raise ValueError("a worker needs a non-empty shard")
        torch.set_num_threads(1)  # many small processes share two cores
        self.shard = shard
        self.config = config
        self.model = model_for(config)
        self.optimiser = AdamW(
            self.model.parameters(), lr=config.inner_lr, weight_decay=config.weight_decay
        )
        self.generator = torch.Generator().manual_seed(worker_seed)

    def local_phase(self, theta: np.ndarray) -> tuple[np.ndarray, float]:
        """H AdamW steps from `theta`: (the parameters reached, the mean minibatch loss)."""
        load_flat(self.model, theta)
        n = len(self.shard)
        batch = min(self.config.batch_size, n)
        total = 0.0
        for _ in range(self.config.inner_steps):
            idx = torch.randperm(n, generator=self.generator)[:batch]
            targets = self.shard.y[idx].reshape(-1)  # a sequence model predicts every position
            loss = nn.functional.cross_entropy(self.model(self.shard.x[idx]), targets)
            self.optimiser.zero_grad()
            loss.backward()  # type: ignore[no-untyped-call]  # torch does not annotate it
            self.optimiser.step()
            total += loss.item()
        return flatten(self.model), total / self.config.inner_steps


class IslandState:
    """An island's outer state: its parameters (the group's last mean), where its next inner
    steps start (the same, or with overlap its own last proposal) and its momentum buffer.

    Each round: `propose` once, then `accept` the group's mean proposal (an island alone in a
    round accepts its own).
    """

    def __init__(self, theta0: np.ndarray, config: TrainConfig) -> None:
        self.theta = np.array(theta0, dtype=np.float32).ravel()
        self.start = self.theta  # where the next inner steps start
        self.momentum = np.zeros(self.theta.shape, dtype=np.float64)
        self.config = config
        self._proposal: np.ndarray | None = None

    def propose(self, theta_local_mean: np.ndarray) -> np.ndarray:
        """Outer Nesterov step on delta = start - theta_local_mean, taken from `theta`."""
        if self._proposal is not None:
            raise RuntimeError("propose was called twice in one round; accept the group's mean")
        local = np.asarray(theta_local_mean, dtype=np.float64)
        if local.shape != self.theta.shape:
            raise ValueError(f"theta_local_mean has shape {local.shape}, theta {self.theta.shape}")
        mu = self.config.outer_momentum
        delta = self.start.astype(np.float64) - local
        self.momentum = mu * self.momentum + delta
        step = delta + mu * self.momentum
        self._proposal = (self.theta - self.config.outer_lr * step).astype(np.float32)
        return self._proposal

    def accept(self, x_group_mean: np.ndarray) -> None:
        """The group's average proposal becomes this island's parameters. Without overlap the
        next inner steps start from them; with overlap they start from the island's own
        proposal (the exchange runs beside them), and the mean is the base of the next
        proposal: the outer update lands one round late."""
        if self._proposal is None:
            raise RuntimeError("accept before propose: each round proposes first")
        x = np.asarray(x_group_mean, dtype=np.float32)
        if x.shape != self.theta.shape:
            raise ValueError(f"the group mean has shape {x.shape}, theta {self.theta.shape}")
        self.theta = x.copy()
        self.start = self._proposal if self.config.overlap else self.theta
        self._proposal = None


def evaluate(theta: np.ndarray, config: TrainConfig, test: Dataset) -> tuple[float, float]:
    """(cross-entropy loss, accuracy) of the parameters `theta` on `test`."""
    model = model_for(config)
    load_flat(model, theta)
    targets = test.y.reshape(-1)
    with torch.no_grad():
        logits = model(test.x)
        loss = float(nn.functional.cross_entropy(logits, targets))
        accuracy = float((logits.argmax(dim=1) == targets).float().mean())
    return loss, accuracy


def encode(
    x: np.ndarray, theta0: np.ndarray, bound_exponent: int, contributors: int
) -> tuple[np.ndarray, int]:
    """`x - theta0` clipped to +-2**bound_exponent, as int32 for a sum of `contributors`.

    Returns the int32 values and how many were clipped.
    """
    bound = 2.0**bound_exponent
    diff = np.asarray(x, dtype=np.float64) - np.asarray(theta0, dtype=np.float64)
    clipped = int(np.count_nonzero(np.abs(diff) > bound))
    diff = np.clip(diff, -bound, bound)
    return quantise(diff, scale_for(bound_exponent, contributors), contributors), clipped


def decode(
    int_sum: np.ndarray,
    theta0: np.ndarray,
    bound_exponent: int,
    contributors: int,
    group_size: int,
) -> np.ndarray:
    """The group's mean parameters from the int32 sum of its members' encodings (float32)."""
    if group_size < 1:
        raise ValueError(f"group_size must be >= 1, got {group_size}")
    scale = scale_for(bound_exponent, contributors)
    mean_diff = np.asarray(int_sum, dtype=np.int64) / scale / group_size
    return (np.asarray(theta0, dtype=np.float64) + mean_diff).astype(np.float32)
