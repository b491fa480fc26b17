"""innet as a torch.distributed backend (workers/distributed.py), three ranks on loopback (no
root): the same script (tests/unit/workers/torchdist_rank.py) with backend "gloo" and "innet".
Integer sums, broadcasts and gathers are bit for bit gloo's; float sums are within the stated
quantisation bound of the exact sum; a group of two; every operation innet does not carry is
refused naming it; a rank with a NaN fails at once naming itself and the operation, and the
others (like the others of a rank that died) fail within the group's timeout naming the silent
ranks; a rank's environment that cannot work is refused naming the variable."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from importlib.metadata import entry_points
from itertools import count
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch

from innet.torch import CliquesError, check_rounds
from innet.vocabulary import Collective
from tests.unit.workers.torchdist_rank import inputs
from workers.distributed import BackendSetupError, RankSetup
from workers.quantise import INT32_MAX

CHECKOUT = Path(__file__).resolve().parents[3]
WORLD = 3
_RUNS = count()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def ranks(backend: str, what: str, collective: str = "ring") -> list[dict[str, Any]]:
    """The three ranks' JSON lines ({} from one that died); each rank on an address of its own
    on loopback (port 20043 is every rank's, as on the testbed)."""
    net = f"127.{os.getpid() % 200 + 20}.{next(_RUNS) % 250}"
    env = {
        **os.environ,
        "WORLD_SIZE": str(WORLD),
        "MASTER_ADDR": "127.0.0.1",
        "MASTER_PORT": str(free_port()),
        "INNET_PEERS": ",".join(f"{net}.{r + 1}" for r in range(WORLD)),
        "INNET_COLLECTIVE": collective,
    }
    argv = [sys.executable, "-m", "tests.unit.workers.torchdist_rank", backend, what]
    procs = [
        subprocess.Popen(
            argv,
            env={**env, "RANK": str(r)},
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            cwd=CHECKOUT,
        )
        for r in range(WORLD)
    ]
    outs = []
    for r, proc in enumerate(procs):
        out, err = proc.communicate(timeout=300)  # a hang guard
        assert proc.returncode == 0, f"rank {r}: {err[-3000:]}"
        lines = out.strip().splitlines()
        outs.append(json.loads(lines[-1]) if lines else {})  # a rank that died says nothing
    return outs


@pytest.fixture(scope="module")
def gloo() -> list[dict[str, Any]]:
    return ranks("gloo", "ops")


@pytest.fixture(scope="module", params=["ring", "direct"])
def innet(request: pytest.FixtureRequest) -> Iterator[list[dict[str, Any]]]:
    yield ranks("innet", "ops", request.param)


def test_the_backend_is_found_through_the_package_s_entry_point() -> None:
    found = {e.name: e.value for e in entry_points(group="torch.backends")}
    assert found.get("innet") == "workers.torchhook:register", (
        "innet's package is not installed with its entry points: run make setup"
    )


def test_integer_sums_broadcasts_and_gathers_are_gloo_s_bit_for_bit(
    gloo: list[dict[str, Any]], innet: list[dict[str, Any]]
) -> None:
    for r in range(WORLD):
        for name in ("int32", "int8", "broadcast", "all_gather", "all_gather_into_tensor"):
            assert innet[r][name] == gloo[r][name], (r, name)
        assert innet[r]["async"] == gloo[r]["async"] == [[3.0] * 10, [3] * 3]
    assert [innet[r].get("pair") for r in range(WORLD)] == [[4.0] * 5, None, [4.0] * 5]
    wrapped = sum(inputs(r)["int32"].to(torch.int64) for r in range(WORLD))
    expected = ((wrapped + 2**31) % 2**32 - 2**31).to(torch.int32)  # int32 wrap-around
    assert innet[0]["int32"] == expected.numpy().tobytes().hex()


def quantisation_bound(name: str) -> float:
    """k / (2 scale) with the group's shared scale for `name` (workers/distributed.py)."""
    peak = max(float(inputs(r)[name].to(torch.float32).abs().max()) for r in range(WORLD))
    exponent = int(np.ceil(np.log2(peak)))
    scale = (INT32_MAX // WORLD) / 2.0**exponent
    return WORLD / (2 * scale)


@pytest.mark.parametrize(("name", "dtype"), [("float32", np.float32), ("avg", np.float32)])
def test_float_sums_are_within_the_quantisation_bound_of_the_exact_sum(
    gloo: list[dict[str, Any]], innet: list[dict[str, Any]], name: str, dtype: type
) -> None:
    exact = sum(inputs(r)[name].to(torch.float64).reshape(-1).numpy() for r in range(WORLD))
    bound = quantisation_bound(name)
    if name == "avg":
        exact, bound = exact / WORLD, bound / WORLD
    rounding = np.spacing(np.abs(exact).astype(dtype)).astype(np.float64)  # the cast to float32
    for r in range(WORLD):
        got = np.array(innet[r][name])
        assert np.all(np.abs(got - exact) <= bound + rounding), (r, np.max(np.abs(got - exact)))
        assert innet[r][name] == innet[0][name]  # every member the same bits
    print(
        f"\n{name}: bound {bound:.3g}; innet - exact at most {np.max(np.abs(got - exact)):.3g}, "
        f"gloo - exact {np.max(np.abs(np.array(gloo[0][name]) - exact)):.3g}"
    )


def test_bfloat16_sums_are_within_the_bound_and_one_bfloat16_step(
    innet: list[dict[str, Any]],
) -> None:
    exact = sum(inputs(r)["bfloat16"].to(torch.float64).numpy() for r in range(WORLD))
    step = torch.tensor(np.abs(exact)).to(torch.bfloat16).to(torch.float64).numpy() * 2.0**-7
    got = np.array(innet[0]["bfloat16"])
    assert np.all(np.abs(got - exact) <= quantisation_bound("bfloat16") + step)


def test_what_innet_does_not_carry_is_refused_naming_it(innet: list[dict[str, Any]]) -> None:
    refused = innet[0]["refused"]
    assert refused["max"].startswith("UnsupportedCollective: backend 'innet' has no all_reduce MAX")
    assert "has no reduce_scatter" in refused["reduce_scatter"]
    assert "has no send" in refused["send"]
    assert all("it carries all_reduce (SUM, AVG)" in line for line in refused.values())


def test_a_rank_with_a_nan_fails_at_once_and_the_others_within_the_timeout() -> None:
    nan, first, last = (ranks("innet", "nan")[r]["error"] for r in (1, 0, 2))
    assert nan.startswith("CollectiveFailed: rank 1: all_reduce #1 over ranks 0, 1, 2: ")
    assert "non-finite value(s) (NaN or Inf), the first at index 17" in nan
    for line, me in ((first, 0), (last, 2)):
        assert line.startswith(f"CollectiveFailed: rank {me}: all_reduce #1"), line
        assert "gave up after" in line and "(deadline_s 3.0)" in line, line


def test_a_rank_that_died_fails_the_others_within_the_timeout_naming_it() -> None:
    outs = ranks("innet", "dead")
    for me in (0, 1):
        line = outs[me]["error"]
        assert f"rank {me}: all_reduce #1 over ranks 0, 1, 2" in line, line
        assert "gave up after" in line and "never reached" in line, line
    assert "2" in outs[0]["error"].split("never reached")[0].split("island(s)")[-1]


@pytest.mark.parametrize(
    ("env", "says"),
    [
        ({"INNET_NETWORK": "inna"}, "INNET_NETWORK=inna: only the plain network"),
        ({"INNET_COLLECTIVE": "gloo"}, "INNET_COLLECTIVE=gloo: give ring or direct"),
        ({"INNET_PEERS": "127.0.0.1,127.0.0.2"}, "INNET_PEERS names 2 address(es) for 3 ranks"),
        ({"INNET_LANES": "33"}, "INNET_LANES=33"),
        ({"INNET_RATE": "fast"}, "INNET_RATE=fast"),
        ({"INNET_RATE": "0bps"}, "INNET_RATE=0bps"),
        ({"INNET_NETWORK": "carrier-pigeon"}, "give plain, multicast, inna or gloo"),
    ],
)
def test_an_environment_that_cannot_work_is_refused_naming_the_variable(
    env: dict[str, str], says: str
) -> None:
    with pytest.raises(BackendSetupError, match=says.replace("(", r"\(").replace(")", r"\)")):
        RankSetup.from_env(0, 3, env)


def test_under_innet_run_a_rank_asks_its_runner_for_multicast_and_inna() -> None:
    """With the runner's socket named, the modes through the switches are the runner's to
    grant (controller/runner/script.py); the rank keeps the socket's path."""
    env = {"INNET_NETWORK": "inna", "INNET_CONTROL": "/run/x.sock"}
    where = RankSetup.from_env(2, 3, env)
    assert where.network == "inna" and where.control == "/run/x.sock"


def test_log_writes_one_json_line_per_call_with_the_rank_and_refuses_what_is_not_a_metric(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from innet.exceptions import InputError
    from innet.torch import log

    path = tmp_path / "rank.jsonl"
    monkeypatch.setenv("INNET_LOG", str(path))
    monkeypatch.setenv("RANK", "2")
    log(round=0, loss=2.5)
    log(round=1, loss=float("nan"), note="diverged")
    first, second = (json.loads(line) for line in path.read_text().splitlines())
    assert first["rank"] == 2 and first["round"] == 0 and first["loss"] == 2.5
    assert second["loss"] == "nan" and second["note"] == "diverged" and "time" in second
    with pytest.raises(InputError, match=r"weights=.* is not a number or a text"):
        log(weights=[1.0, 2.0])  # type: ignore[arg-type]
    assert len(path.read_text().splitlines()) == 2  # nothing half-written


def test_a_rank_is_placed_by_its_environment() -> None:
    where = RankSetup.from_env(1, 3, {"INNET_COLLECTIVE": "direct", "INNET_RATE": "10Mbps"})
    assert where.addresses == ("10.0.0.1", "10.0.1.1", "10.0.2.1")  # the testbed's leaders
    assert where.collective == Collective.DIRECT and where.rate_bps == 10e6
    with pytest.raises(BackendSetupError, match="at most 32"):
        RankSetup.from_env(0, 33, {})


@pytest.mark.parametrize("backend", ["gloo", "innet"])
def test_the_schedule_s_cliques_are_each_rank_s_group_round_by_round(backend: str) -> None:
    """Rounds {0,1}{2}, {1,2}{0}, {0,2}{1}, then the cycle again: each rank's sum of rank + 1
    over its clique, alone its own; plain torch.distributed, so gloo alike."""
    outs = ranks(backend, "cliques")
    assert [o["sums"] for o in outs] == [
        [3.0, 1.0, 4.0, 3.0],
        [3.0, 5.0, 2.0, 3.0],
        [3.0, 5.0, 4.0, 3.0],
    ]
    assert outs[2]["mates"] == [[2], [1, 2], [0, 2]]


@pytest.mark.parametrize(
    ("rounds", "says"),
    [
        ([], "non-empty list of rounds"),
        ([[[0, 1]]], r"round 0: rank\(s\) \[2\] in no group"),
        ([[[0, 1], [1, 2]]], "round 0: rank 1 is in group 0 and group 1"),
        ([[[0, 1, 2]], [[0, 3], [1, 2]]], "round 1, group 0: 3 is not a rank of a world of 3"),
        ([[[0, 1, 2]], [[], [0, 1, 2]]], "round 1, group 0: a non-empty list of ranks"),
        ([[[0, True], [2]]], "True is not a rank"),
    ],
)
def test_rounds_that_are_not_partitions_of_the_world_are_refused(rounds: Any, says: str) -> None:
    with pytest.raises(CliquesError, match=says):
        check_rounds(rounds, 3)
    assert check_rounds([[[1, 0], [2]]], 3) == (((0, 1), (2,)),)
