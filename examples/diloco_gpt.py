"""DiLoCo over a small GPT, written as one writes it for gloo; the backend is a flag.

    torchrun --nproc-per-node 3 examples/diloco_gpt.py --backend gloo
    torchrun --nproc-per-node 3 examples/diloco_gpt.py --backend innet   # the only change

Each rank trains its own copy of a character-level GPT (about 3.3 million parameters) on its own
slice of the text for `--inner-steps` AdamW steps; then the ranks average their pseudo-gradients
(where they started minus where they ended) with one all_reduce, and every rank takes the same
outer Nesterov step with that average (DiLoCo: Douillard et al., 2023). The text is the
Python standard library's own source, which every Python installation has. Rank 0 prints one
JSON line a round: the round, the mean training loss over the ranks, the validation loss after
the outer step, the seconds of the inner steps, of the all_reduces and of the whole round;
`--log FILE` writes them there too.

Nothing here knows innet: torch finds the "innet" backend through its installed entry point.
gloo has no AVG reduction, so the average is a SUM divided by the group's size, as gloo users
write it. With `--cliques`, the outer step averages within the rank's group of the round, the
planner's rotating cliques (`innet.torch.Cliques`, plain torch.distributed groups: any backend);
`--cliques schedule` takes them from `innet run`'s schedule (`INNET_CLIQUES`). Under `innet run`
(`INNET_LOG` set), every rank also gives its line to `innet.torch.log`, which the run gathers
beside its collectives.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sysconfig
import time
from pathlib import Path

import torch
import torch.distributed as dist
from torch import nn
from torch.nn import functional as F

MODULES = ("argparse.py", "ast.py", "dataclasses.py", "difflib.py", "inspect.py", "typing.py")


def corpus() -> torch.Tensor:
    """The text as bytes (every rank reads the same files of the same interpreter)."""
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    text = b"".join((stdlib / m).read_bytes() for m in MODULES)
    return torch.frombuffer(bytearray(text), dtype=torch.uint8).to(torch.long)


class Block(nn.Module):
    def __init__(self, width: int, heads: int) -> None:
        super().__init__()
        self.norm1, self.norm2 = nn.LayerNorm(width), nn.LayerNorm(width)
        self.attn = nn.MultiheadAttention(width, heads, batch_first=True)
        self.mlp = nn.Sequential(
            nn.Linear(width, 4 * width), nn.GELU(), nn.Linear(4 * width, width)
        )

    def forward(self, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        h = self.norm1(x)
        x = x + self.attn(h, h, h, attn_mask=mask, need_weights=False)[0]
        return x + self.mlp(self.norm2(x))


class GPT(nn.Module):
    def __init__(self, width: int, layers: int, context: int, vocab: int = 256) -> None:
        super().__init__()
        self.tokens, self.positions = nn.Embedding(vocab, width), nn.Embedding(context, width)
        self.blocks = nn.ModuleList(Block(width, width // 32) for _ in range(layers))
        self.norm, self.out = nn.LayerNorm(width), nn.Linear(width, vocab)
        mask = torch.triu(torch.full((context, context), float("-inf")), diagonal=1)
        self.register_buffer("mask", mask)

    def forward(self, idx: torch.Tensor) -> torch.Tensor:
        n = idx.shape[1]
        x = self.tokens(idx) + self.positions(torch.arange(n))
        for block in self.blocks:
            x = block(x, self.mask[:n, :n])
        return self.out(self.norm(x))


def batch(
    data: torch.Tensor, size: int, context: int, gen: torch.Generator
) -> tuple[torch.Tensor, torch.Tensor]:
    starts = torch.randint(0, data.numel() - context - 1, (size,), generator=gen)
    x = torch.stack([data[s : s + context] for s in starts])
    y = torch.stack([data[s + 1 : s + context + 1] for s in starts])
    return x, y


def loss_of(model: nn.Module, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    logits = model(x)
    return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), y.reshape(-1))


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--backend", default="gloo")
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--inner-steps", type=int, default=10)
    p.add_argument("--width", type=int, default=256)
    p.add_argument("--layers", type=int, default=4)
    p.add_argument("--context", type=int, default=64)
    p.add_argument("--batch", type=int, default=16)
    p.add_argument("--inner-lr", type=float, default=1e-3)
    p.add_argument("--outer-lr", type=float, default=0.7)
    p.add_argument("--outer-momentum", type=float, default=0.9)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--log", type=Path)
    p.add_argument(
        "--cliques",
        help="rounds of groups of ranks as JSON, e.g. [[[0,1],[2]],[[1,2],[0]]], or 'schedule' "
        "(innet run's): each round's outer step averages within the rank's clique (default: "
        "over the world)",
    )
    args = p.parse_args()

    torch.set_num_threads(1)  # several ranks share the machine's cores
    dist.init_process_group(args.backend)
    rank, world = dist.get_rank(), dist.get_world_size()
    data = corpus()
    cut = int(data.numel() * 0.95)
    train, val = data[:cut], data[cut:]
    mine = train[rank * cut // world : (rank + 1) * cut // world]  # each rank its own slice

    torch.manual_seed(args.seed)  # the same initial model everywhere
    model = GPT(args.width, args.layers, args.context)
    params = [q for q in model.parameters()]
    outer = torch.optim.SGD(params, lr=args.outer_lr, momentum=args.outer_momentum, nesterov=True)
    inner = torch.optim.AdamW(params, lr=args.inner_lr, weight_decay=0.0)
    gen = torch.Generator().manual_seed(args.seed * 1000 + rank)
    probe = torch.Generator().manual_seed(12345)
    val_x, val_y = batch(val, 64, args.context, probe)
    rotating = None
    if args.cliques is not None:  # the only line that knows innet: its schedule's groups
        from innet.torch import Cliques

        if args.cliques == "schedule":
            rotating = Cliques.from_env()
        else:
            rotating = Cliques(json.loads(args.cliques))
    if rank == 0:
        count = sum(q.numel() for q in params)
        print(
            json.dumps({"backend": dist.get_backend(), "world": world, "params": count}), flush=True
        )

    for r in range(args.rounds):
        began = time.perf_counter()
        start = [q.detach().clone() for q in params]
        losses = []
        for _ in range(args.inner_steps):
            x, y = batch(mine, args.batch, args.context, gen)
            loss = loss_of(model, x, y)
            inner.zero_grad()
            loss.backward()
            inner.step()
            losses.append(loss.item())
        inner_s = time.perf_counter() - began
        delta = torch.cat(
            [(s - q.detach()).reshape(-1) for s, q in zip(start, params, strict=True)]
        )
        mean_loss = torch.tensor([sum(losses) / len(losses)])
        reduce_began = time.perf_counter()
        clique = rotating.next() if rotating is not None else dist.group.WORLD
        if clique is not None:  # None: alone this round, its own update
            dist.all_reduce(delta, group=clique)
            delta /= dist.get_world_size(clique)
        dist.all_reduce(mean_loss)
        reduce_s = time.perf_counter() - reduce_began
        offset = 0
        with torch.no_grad():
            for s, q in zip(start, params, strict=True):
                q.copy_(s)  # back to where the round started, then the outer step
                q.grad = delta[offset : offset + q.numel()].view_as(q).clone()
                offset += q.numel()
        outer.step()
        with torch.no_grad():
            val_loss = loss_of(model, val_x, val_y).item()
        line = {
            "round": r,
            "train_loss": mean_loss.item() / world,
            "val_loss": val_loss,
            "inner_s": inner_s,
            "reduce_s": reduce_s,
            "round_s": time.perf_counter() - began,
        }
        if os.environ.get("INNET_LOG"):  # under innet run: the run gathers every rank's
            from innet.torch import log

            log(**line)
        if rank == 0:
            print(json.dumps(line), flush=True)
            if args.log is not None:
                with args.log.open("a") as f:
                    f.write(json.dumps(line) + "\n")
        if not math.isfinite(val_loss):
            raise SystemExit(f"rank {rank}: the validation loss is {val_loss} at round {r}")
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
