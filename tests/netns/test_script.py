"""`innet run` of a user's training script (controller/runner/script.py) on three islands
between namespaces: the DiLoCo example, written for gloo but for its backend's name, played
over a plain WAN, with multicast and with in-line aggregation, each collective through the
switches as the runner grants it, and over torch's own gloo, each collective as observed.

What must hold: every network gives the same validation loss round by round (their sums are
all exact int32 sums at the same shared scale, so the same model); the schedule's cliques reach
the script (ring pairs: the update is averaged by pairs); every collective is within 20% of the
planner's price for it, or flagged with a reason; a rank that calls what the backend does not
carry ends its play with one line naming the rank and the operation, the other ranks are told
so by the runner, and the collectives before it are recorded whole.

Needs root, Mininet (the Python package), mnexec and nsenter; skipped with the reason otherwise.
"""

from __future__ import annotations

import csv
import json
from collections import defaultdict
from pathlib import Path

import pytest

from tests.netns.test_experiment import finish, start_run
from tests.netns.test_networks import WAN
from tests.netns.topology import why_no_mininet

pytestmark = [pytest.mark.netns, pytest.mark.slow]

_REASON = why_no_mininet(("ip", "tc", "ethtool", "nsenter"))
if _REASON is not None:
    pytest.skip(f"training script test skipped: {_REASON}", allow_module_level=True)

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "diloco_gpt.py"
SMALL = ["--width", "64", "--layers", "1", "--context", "32", "--batch", "8", "--inner-steps", "2"]
EXACT = ("plain", "multicast", "inna")


def scenario(
    tmp_path: Path,
    script: Path,
    args: list[str],
    networks: list[str],
    target: dict | None = None,
    schedules: tuple[str, ...] = ("all-to-all", "ring-pairs"),
) -> Path:
    (tmp_path / "three.yaml").write_text(WAN)
    doc = {
        "name": "script",
        "topology": "three.yaml",
        "hosts": 1,
        "scale": 1000,
        "lanes": 256,
        "bandwidth": "10Gbps",
        "memory": ["1.6GB"],
        "schedules": list(schedules),
        "networks": networks,
        "training": {"script": str(script), "args": args, "timeout": "300s", "target": target},
        "round_deadline": "20s",
    }
    path = tmp_path / "s.yaml"
    path.write_text(json.dumps(doc))
    return path


def jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def test_the_example_trains_the_same_model_over_every_network_on_the_planners_time(
    tmp_path: Path,
) -> None:
    args = ["--backend", "innet", "--rounds", "2", "--cliques", "schedule", *SMALL]
    target = {"metric": "val_loss", "below": 5.3}  # its second round's is 5.19
    path = scenario(tmp_path, EXAMPLE, args, [*EXACT, "gloo"], target)
    proc, out, _ = start_run(tmp_path, path)
    code, stdout, stderr = finish(proc, 600)
    assert code == 0, stderr
    print(stdout)
    assert (out / "collectives.png").stat().st_size and (out / "metrics.png").stat().st_size
    rows = list(csv.DictReader((out / "summary.csv").open()))
    assert [(r["network"], r["schedule"], r["status"]) for r in rows] == [
        (n, s, "ok") for n in (*EXACT, "gloo") for s in ("all-to-all", "ring-pairs")
    ]
    # the same model everywhere: every rank's validation loss, round by round
    losses: dict[str, dict[str, list[tuple[int, int, float]]]] = defaultdict(dict)
    for m in jsonl(out / "metrics.jsonl"):
        key = (m["rank"], m["round"], m["val_loss"])
        losses[m["schedule"]].setdefault(m["network"], []).append(key)
    for schedule, by_network in losses.items():
        plain = sorted(by_network["plain"])
        assert len(plain) == 3 * 2, schedule  # three ranks, two rounds
        for network in EXACT:
            assert sorted(by_network[network]) == plain, (schedule, network)
        # gloo sums floats: the same losses within the quantisation's error (docs/torch.md)
        gloo = sorted(by_network["gloo"])
        assert [g[:2] for g in gloo] == [p[:2] for p in plain]
        worst = max(abs(g[2] - p[2]) for g, p in zip(gloo, plain, strict=True))
        print(f"{schedule}: gloo's validation losses differ from innet's by {worst:.2e} at most")
        assert worst <= 1e-4
    collectives = jsonl(out / "collectives.jsonl")
    gloo = [c for c in collectives if c["network"] == "gloo"]  # torch's own, as observed
    assert gloo and {c["collective"] for c in gloo} == {"gloo"}
    late = [
        c for c in collectives if not c["flags"] and abs(c["time_s"] / c["predicted_s"] - 1) > 0.2
    ]
    assert all(c["status"] == "ok" for c in collectives) and not late, late
    flagged = [(c["network"], c["op"], c["flags"]) for c in collectives if c["flags"]]
    print("collectives flagged:", flagged)
    assert all(float(r["target_s"]) > 0 for r in rows)  # every play reached its target
    for row in rows:  # the row's figures are its collectives
        mine = [
            c
            for c in collectives
            if (c["network"], c["schedule"]) == (row["network"], row["schedule"])
        ]
        # per round two all_reduces: innet's each a vote and a sum, gloo's one collective
        assert int(row["collectives"]) == len(mine) == (4 if row["network"] == "gloo" else 8)
        assert float(row["predicted_s"]) == pytest.approx(
            sum(c["predicted_s"] for c in mine), abs=1e-3
        )
    # the update (85,184 values) averaged by the whole world, or by the ring's pairs
    updates = [c for c in collectives if c["values"] > 1000]
    assert {len(c["members"]) for c in updates if c["schedule"] == "all-to-all"} == {3}
    assert {len(c["members"]) for c in updates if c["schedule"] == "ring-pairs"} == {2}
    assert {c["collective"] for c in updates if c["network"] == "inna"} == {"inna"}
    assert {c["collective"] for c in updates if c["network"] == "multicast"} == {"multicast"}
    assert {c["collective"] for c in updates if c["network"] == "plain"} <= {"ring", "direct"}


BAD = """\
import torch
import torch.distributed as dist

dist.init_process_group("innet")
t = torch.ones(1000)
dist.all_reduce(t)
print("sum", t[0].item(), flush=True)
if dist.get_rank() == 1:
    dist.reduce(t, dst=0)
dist.all_reduce(t)
"""


def test_an_unsupported_operation_ends_the_play_naming_the_rank_and_the_operation(
    tmp_path: Path,
) -> None:
    script = tmp_path / "bad.py"
    script.write_text(BAD)
    path = scenario(tmp_path, script, [], ["plain", "inna"])
    proc, out, _ = start_run(tmp_path, path)
    code, _, stderr = finish(proc, 600)
    assert code == 1, stderr
    rows = list(csv.DictReader((out / "summary.csv").open()))
    assert len(rows) == 4  # every play ran, each ended by rank 1
    for row in rows:
        assert row["status"].startswith("failed: rank 1 (Bb) exited with status 1: "), row
        assert "has no reduce" in row["status"]
    assert "innet: failed: plain all-to-all @ 1.6 GB: failed: rank 1 (Bb)" in stderr
    collectives = jsonl(out / "collectives.jsonl")
    assert [c["op"] for c in collectives] == ["all_reduce vote", "all_reduce"] * 4
    assert all(c["status"] == "ok" for c in collectives)
    # the others were told by the runner why their next sum would not come
    other = (out / "logs" / "plain-all-to-all-1.6-GB" / "rank-0.log").read_text()
    assert "sum 3.0" in other and "rank 1 (Bb) exited with status 1" in other


DIES = """\
import os
import torch
import torch.distributed as dist

dist.init_process_group("innet")
t = torch.ones(200_000)
dist.all_reduce(t)
work = dist.all_reduce(t, async_op=True)  # its second: rank 2 is gone while it runs
if dist.get_rank() == 2:
    os._exit(3)
work.wait()
"""


def test_a_rank_that_dies_mid_collective_ends_the_play_naming_it_and_nothing_hangs(
    tmp_path: Path,
) -> None:
    script = tmp_path / "dies.py"
    script.write_text(DIES)
    path = scenario(tmp_path, script, [], ["inna"], schedules=("all-to-all",))
    proc, out, _ = start_run(tmp_path, path)
    code, _, stderr = finish(proc, 300)
    assert code == 1, stderr
    (row,) = csv.DictReader((out / "summary.csv").open())
    assert row["status"].startswith("failed: rank 2 (Cc) exited with status 3"), row
    first, *rest = jsonl(out / "collectives.jsonl")
    assert first["status"] == "ok" and first["op"] == "all_reduce vote"
    assert all(c["status"] == "ok" or "rank 2 (Cc)" in c["status"] for c in rest)
