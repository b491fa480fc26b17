"""One rank of the torch.distributed backend tests (tests/unit/workers/test_distributed.py),
written as a user writes a script for gloo: only the backend's name differs (torch finds innet's
through its package's entry point; the backend's own module is never imported here).

    RANK=r WORLD_SIZE=3 MASTER_ADDR=127.0.0.1 MASTER_PORT=P \
        python -m tests.unit.workers.torchdist_rank BACKEND WHAT

WHAT is one of:

- `ops`: every supported operation, then the unsupported ones; one JSON line of what came out;
- `cliques`: a rotating schedule's groups (innet.torch.Cliques), any backend;
- `nan`: rank 1 passes a NaN, the others wait for it within a 3 s group timeout;
- `dead`: rank 2 exits before an all_reduce the others wait for within a 3 s group timeout.
"""

from __future__ import annotations

import datetime
import json
import os
import sys

import torch
import torch.distributed as dist

TIMEOUT = datetime.timedelta(seconds=3)


def hexed(t: torch.Tensor) -> str:
    return t.contiguous().reshape(-1).view(torch.uint8).numpy().tobytes().hex()


def inputs(rank: int) -> dict[str, torch.Tensor]:
    """Rank `rank`'s tensors to sum, the same wherever they are drawn (the test draws every
    rank's to know the exact sums)."""
    gen = torch.Generator().manual_seed(100 + rank)
    return {
        "int32": torch.randint(-(2**31), 2**31 - 1, (777,), dtype=torch.int32, generator=gen),
        "int8": torch.randint(-128, 127, (5, 7), dtype=torch.int8, generator=gen),
        "float32": torch.randn(3, 1000, generator=gen) * (rank + 1),
        "avg": torch.randn(50, generator=gen),
        "bfloat16": torch.randn(64, generator=gen).to(torch.bfloat16),
    }


def ops(rank: int, world: int, backend: str) -> dict[str, object]:
    out: dict[str, object] = {}
    given = inputs(rank)
    for name in ("int32", "int8"):
        dist.all_reduce(given[name])
        out[name] = hexed(given[name])
    for name in ("float32", "bfloat16"):
        dist.all_reduce(given[name])
        out[name] = given[name].to(torch.float32).reshape(-1).tolist()
    mean = given["avg"]
    if backend == "gloo":  # gloo has no AVG: its sum over the world
        dist.all_reduce(mean)
        mean /= world
    else:
        dist.all_reduce(mean, op=dist.ReduceOp.AVG)
    out["avg"] = mean.tolist()
    a, b = torch.full((10,), float(rank)), torch.full((3,), rank, dtype=torch.int64)
    works = [dist.all_reduce(a, async_op=True), dist.all_reduce(b, async_op=True)]
    for work in works:
        work.wait()
    out["async"] = [a.tolist(), b.tolist()]
    root = torch.zeros(6, dtype=torch.float64)
    if rank == 1:
        root = torch.arange(6, dtype=torch.float64) * 0.1
    dist.broadcast(root, src=1)
    out["broadcast"] = hexed(root)
    mine = torch.full((4,), rank * 1000 + 7, dtype=torch.int32)
    gathered = [torch.zeros(4, dtype=torch.int32) for _ in range(world)]
    dist.all_gather(gathered, mine)
    out["all_gather"] = [hexed(g) for g in gathered]
    into = torch.zeros(world * 3)
    dist.all_gather_into_tensor(into, torch.full((3,), rank + 0.5))
    out["all_gather_into_tensor"] = into.tolist()
    dist.barrier()
    pair = dist.new_group([0, 2])
    if rank in (0, 2):
        x = torch.full((5,), float(rank + 1))
        dist.all_reduce(x, group=pair)
        out["pair"] = x.tolist()
    refused = {}
    for name, call in (
        ("max", lambda: dist.all_reduce(torch.ones(2), op=dist.ReduceOp.MAX)),
        ("reduce_scatter", lambda: dist.reduce_scatter(torch.zeros(1), [torch.ones(1)] * world)),
        ("send", lambda: dist.send(torch.ones(1), dst=(rank + 1) % world)),
    ):
        if backend != "innet":
            continue
        try:
            call()
            refused[name] = "accepted"
        except Exception as err:
            refused[name] = f"{type(err).__name__}: {err}"
    out["refused"] = refused
    return out


CLIQUES = [[[0, 1], [2]], [[1, 2], [0]], [[0, 2], [1]]]


def cliques(rank: int) -> dict[str, object]:
    """Four rounds of the cycle of three: each rank sums rank + 1 within its clique."""
    from innet.torch import Cliques

    rotating = Cliques(CLIQUES)
    sums = []
    for _ in range(4):
        x = torch.tensor([float(rank + 1)])
        group = rotating.next()
        if group is not None:
            dist.all_reduce(x, group=group)
        sums.append(x.item())
    return {"sums": sums, "mates": [list(rotating.ranks(r)) for r in range(3)]}


def failing(rank: int, what: str) -> dict[str, object]:
    group = dist.new_group(list(range(dist.get_world_size())), timeout=TIMEOUT)
    x = torch.ones(100)
    if what == "nan" and rank == 1:
        x[17] = float("nan")
    if what == "dead" and rank == 2:
        os._exit(0)  # gone without a word, as a crashed rank is
    try:
        dist.all_reduce(x, group=group)
        return {"error": None}
    except Exception as err:
        return {"error": f"{type(err).__name__}: {err}"}


def main() -> int:
    backend, what = sys.argv[1], sys.argv[2]
    dist.init_process_group(backend, timeout=TIMEOUT)
    rank, world = dist.get_rank(), dist.get_world_size()
    if what == "ops":
        result = ops(rank, world, backend)
    elif what == "cliques":
        result = cliques(rank)
    else:
        result = failing(rank, what)
    print(json.dumps(result), flush=True)
    os._exit(0)  # a rank waited on by none: no teardown to agree on


if __name__ == "__main__":
    sys.exit(main())
