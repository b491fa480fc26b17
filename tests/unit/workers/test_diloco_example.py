"""The DiLoCo example (examples/diloco_gpt.py), a script written for gloo, run by torchrun as
three ranks on loopback with `--backend gloo` and with `--backend innet`, nothing else
changed: both train (the validation loss falls), and round by round their losses agree.

The averaged pseudo-gradients differ by innet's quantisation (docs/torch.md: at most k / (2
scale) per element, about 1e-8 of the largest here) and gloo's float rounding; a wrong average
(a rank's update lost, or counted twice) moves the losses by several percent. The losses are
held to agree within 1e-3, relative: far above what rounding gives, far below what a wrong sum
does."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import Any

import pytest

from tests.unit.workers.test_distributed import CHECKOUT, free_port

pytestmark = pytest.mark.slow

EXAMPLE = CHECKOUT / "examples" / "diloco_gpt.py"
SMALL = ["--rounds", "3", "--inner-steps", "8", "--width", "128", "--layers", "2"]
AGREE = 1e-3  # relative; see the module's docstring


ROTATING = "[[[0,1],[2]],[[1,2],[0]],[[0,2],[1]]]"  # the planner's kind of rotating cliques


def run(backend: str, *more: str) -> list[dict[str, Any]]:
    env = {
        **os.environ,
        "INNET_PEERS": ",".join(f"127.0.{os.getpid() % 200 + 20}.{200 + r}" for r in range(3)),
        "INNET_LANES": "256",
    }
    torchrun = [sys.executable, "-m", "torch.distributed.run", "--nproc-per-node", "3"]
    done = subprocess.run(
        [
            *torchrun,
            *("--master-port", str(free_port()), str(EXAMPLE), "--backend", backend),
            *SMALL,
            *more,
        ],
        capture_output=True,
        text=True,
        env=env,
        cwd=CHECKOUT,
        timeout=600,  # a hang guard
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]


@pytest.mark.parametrize("cliques", [None, ROTATING], ids=["world", "cliques"])
def test_the_example_trains_alike_over_gloo_and_innet(cliques: str | None) -> None:
    """Averaging over the world each round, or within each round's clique
    (innet.torch.Cliques)."""
    more = () if cliques is None else ("--cliques", cliques)
    gloo, innet = run("gloo", *more), run("innet", *more)
    assert gloo[0]["params"] == innet[0]["params"] > 400_000
    assert innet[0]["backend"] == "innet" and gloo[0]["backend"] == "gloo"
    rounds = list(zip(gloo[1:], innet[1:], strict=True))
    assert [g["round"] for g, _ in rounds] == [0, 1, 2]
    for g, i in rounds:
        for key in ("train_loss", "val_loss"):
            assert abs(i[key] - g[key]) <= AGREE * g[key], (key, g, i)
        apart = i["val_loss"] - g["val_loss"]
        print(
            f"\nround {g['round']}: val loss {g['val_loss']:.6f} gloo, innet {apart:+.2e} from it; "
            f"all_reduce {g['reduce_s']:.3f} s gloo, {i['reduce_s']:.3f} s innet"
        )
    assert innet[-1]["val_loss"] < innet[1]["val_loss"]  # it trains
