"""The workers' AdamW takes torch.optim.AdamW's steps exactly, on the models the islands train."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from workers.adamw import AdamW
from workers.config import TrainConfig
from workers.train import model_for


def trained(make_optimiser, steps: int, seed: int = 3) -> list[torch.Tensor]:
    """A digits MLP after `steps` minibatch steps on random data, with `make_optimiser`."""
    torch.manual_seed(seed)
    model = model_for(TrainConfig())
    optimiser = make_optimiser(model.parameters())
    generator = torch.Generator().manual_seed(seed)
    for _ in range(steps):
        x = torch.randn(16, 64, generator=generator)
        y = torch.randint(0, 10, (16,), generator=generator)
        loss = nn.functional.cross_entropy(model(x), y)
        optimiser.zero_grad()
        loss.backward()
        optimiser.step()
    return [p.detach().clone() for p in model.parameters()]


@pytest.mark.parametrize("lr, weight_decay", [(1e-3, 1e-2), (3e-2, 0.0), (5e-3, 0.1)])
def test_the_same_parameters_as_torch_optim_adamw(lr: float, weight_decay: float) -> None:
    ours = trained(lambda ps: AdamW(ps, lr=lr, weight_decay=weight_decay), steps=40)
    theirs = trained(lambda ps: torch.optim.AdamW(ps, lr=lr, weight_decay=weight_decay), 40)
    for a, b in zip(ours, theirs, strict=True):
        assert torch.equal(a, b)


def test_a_parameter_without_a_gradient_is_left_alone_and_keeps_its_own_step_count() -> None:
    w = nn.Parameter(torch.ones(3))
    idle = nn.Parameter(torch.ones(2))
    ours = AdamW([w, idle], lr=0.1)
    w.grad = torch.ones(3)
    ours.step()
    assert torch.equal(idle, torch.ones(2)) and ours.steps == [1, 0]
    assert not torch.equal(w, torch.ones(3))


@pytest.mark.parametrize(
    "kwargs", [{"lr": -1.0}, {"eps": -1e-8}, {"weight_decay": -0.1}, {"betas": (0.9, 1.0)}]
)
def test_bad_hyperparameters_are_refused(kwargs: dict) -> None:
    with pytest.raises(ValueError, match="AdamW needs"):
        AdamW([nn.Parameter(torch.ones(1))], **kwargs)
