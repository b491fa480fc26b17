"""The workers' inner optimiser: AdamW (decoupled weight decay), written out.

It takes the steps `torch.optim.AdamW` takes on CPU tensors, operation for operation (its
single-tensor path: weight decay, then the moments, then the bias-corrected step), so a model
trained with either ends with the same parameters; a unit test holds the two to that. It exists
because `torch.optim.Optimizer`'s constructor imports `torch._dynamo` on first use: 1.6 s of CPU
in every island process, nine or eighteen of which start together on two cores for each memory
point of a run, to build an optimiser that never meets `torch.compile`.
"""

from __future__ import annotations

from collections.abc import Iterable

import torch


class AdamW:
    """AdamW over `params`: lr, betas, eps and weight_decay as `torch.optim.AdamW` takes them
    (with its defaults); its state (step count and both moments) persists across calls."""

    def __init__(
        self,
        params: Iterable[torch.nn.Parameter],
        lr: float = 1e-3,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
        weight_decay: float = 1e-2,
    ) -> None:
        if not lr >= 0.0 or not eps >= 0.0 or not weight_decay >= 0.0:
            raise ValueError(f"AdamW needs lr, eps, weight_decay >= 0: {lr}, {eps}, {weight_decay}")
        if not all(0.0 <= b < 1.0 for b in betas):
            raise ValueError(f"AdamW needs betas in [0, 1): {betas}")
        self.params = [p for p in params if p.requires_grad]
        self.lr, self.betas, self.eps, self.weight_decay = lr, betas, eps, weight_decay
        self.steps = [0] * len(self.params)  # per parameter: one without a gradient waits
        self.exp_avg = [torch.zeros_like(p) for p in self.params]
        self.exp_avg_sq = [torch.zeros_like(p) for p in self.params]

    def zero_grad(self) -> None:
        for p in self.params:
            p.grad = None

    @torch.no_grad()
    def step(self) -> None:
        beta1, beta2 = self.betas
        for i, (p, exp_avg, exp_avg_sq) in enumerate(
            zip(self.params, self.exp_avg, self.exp_avg_sq, strict=True)
        ):
            grad = p.grad
            if grad is None:
                continue
            self.steps[i] += 1
            step = float(self.steps[i])
            step_size = self.lr / (1 - beta1**step)
            bias_correction2_sqrt = (1 - beta2**step) ** 0.5
            p.mul_(1 - self.lr * self.weight_decay)
            exp_avg.lerp_(grad, 1 - beta1)
            exp_avg_sq.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
            denom = (exp_avg_sq.sqrt() / bias_correction2_sqrt).add_(self.eps)
            p.addcdiv_(exp_avg, denom, value=-step_size)
