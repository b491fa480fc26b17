"""torchft's DiLoCo over innet (examples/torchft_diloco.py): three
replica groups on loopback, a lighthouse, torchft's own outer loop, once with its process group
over innet and once over torchft's gloo group.

What must hold: every replica has the same parameters after every outer step (the averages
agree bit for bit among the replicas); innet's evaluation losses are gloo's within 1e-5,
relative (innet's sums are exact at the shared scale, gloo's are float sums: the losses agree
to six digits, a lost or doubled replica's update would move them by percents). torchft is
installed by `make torchft` (make test's setup does it), apart from innet's environment.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]
EXAMPLE = REPO / "examples" / "torchft_diloco.py"
STEPS = 3

pytestmark = pytest.mark.slow


def run(backend: str) -> dict[int, list[dict]]:
    argv = [sys.executable, str(EXAMPLE), "--replicas", "3", "--backend", backend]
    argv += ["--outer-steps", str(STEPS), "--sync-every", "5", "--deadline", "240"]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=300, cwd=REPO)
    assert "make torchft" not in done.stderr, "torchft is not installed: run make torchft"
    assert done.returncode == 0, done.stderr[-3000:]
    lines: dict[int, list[dict]] = {}
    for text in done.stdout.splitlines():
        line = json.loads(text)
        lines.setdefault(line["replica"], []).append(line)
    return lines


def test_torchft_diloco_over_innet_trains_as_over_gloo() -> None:
    innet, gloo = run("innet"), run("gloo")
    assert sorted(innet) == sorted(gloo) == [0, 1, 2]
    for by_replica in (innet, gloo):
        steps = [
            [(x["step"], x["params"], x["eval_loss"]) for x in by_replica[r]] for r in range(3)
        ]
        assert steps[0] == steps[1] == steps[2]  # the replicas agree bit for bit
        assert [s for s, _, _ in steps[0]] == list(range(1, STEPS + 1))
    for ours, theirs in zip(innet[0], gloo[0], strict=True):
        assert ours["eval_loss"] == pytest.approx(theirs["eval_loss"], rel=1e-5)
    print(
        "eval losses (innet, gloo):",
        [(x["eval_loss"], y["eval_loss"]) for x, y in zip(innet[0], gloo[0], strict=True)],
    )
