"""`innet run` end to end on the nine emulated cities: training through p4switch edges.

What the experiment must show (measured rounds within 20% of the planner, the crossover, loss
that falls, accuracy beside the single-process baseline, the bytes on the WAN links), and what
it must survive: a leader killed mid-run, a switch killed mid-run (Ctrl-C and SIGTERM:
tests/netns/test_interrupts.py).

Needs root, Mininet (the Python package), mnexec and nsenter; skipped with the reason otherwise.
Each test builds the network with its own run directory and P4Runtime ports, and runs beside two
busy loops (`busy_machine`): users run innet on shared machines, so every figure the tests hold
must hold there, or be flagged by the run (controller/runner/flags.py).
"""

from __future__ import annotations

import csv
import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import IO

import pytest

from innet.cpuload import CpuHogs
from tests.netns.load import topped_up
from tests.netns.topology import why_no_mininet
from topo.loader import default_wan

pytestmark = [pytest.mark.netns, pytest.mark.slow]

REPO = Path(__file__).resolve().parents[2]
GRPC_BASE = 20600
FRAME = 186  # bytes of an innet frame on the wire
HOGS = 2  # busy loops beside every test: as many as this machine has cores
TOLERANCE = 0.20  # an unflagged round is within this of its prediction

_REASON = why_no_mininet(("ip", "tc", "ethtool", "nsenter"))
if _REASON is not None:
    pytest.skip(f"innet run test skipped: {_REASON}", allow_module_level=True)


@pytest.fixture(autouse=True)
def busy_machine() -> Iterator[CpuHogs]:
    """Two busy loops' worth of other work for the whole test: the loops other work on the
    machine does not already stand for (tests/netns/load.py), stopped (by PID) after it."""
    hogs, busy = topped_up(HOGS)
    with hogs:
        print(f"other work before the test: {busy:.2f} cores; busy loops added: {hogs.n}")
        yield hogs


def write_scenario(path: Path, **changes: object) -> Path:
    doc = {
        "name": "t",
        "topology": "nine-cities",
        "hosts": 1,
        "scale": 100000,
        "bandwidth": "10Gbps",
        "memory": ["1.6GB"],
        "schedules": ["all-to-all"],
        "training": {"rounds": 3},
        "round_deadline": "20s",
        "seed": 1,
    }
    doc.update(changes)
    path.write_text(json.dumps(doc))  # JSON is YAML
    return path


def start_run(
    tmp_path: Path, scenario: Path, *options: str, stderr: int | IO[str] = subprocess.PIPE
) -> tuple[subprocess.Popen[str], Path, Path]:
    """`innet run` started as a user starts it; its stderr piped, or written to `stderr`.

    The machine check only warns unless `options` say otherwise: beside two busy loops it
    calls these scenarios "tight" or "does not fit" by the draw (0.16 to 0.23 cores wanted of
    the 0.20 it finds free, here), and the tests hold the run's figures through its flags
    (`assert_on_time_or_flagged`). The refusal itself is tested with --calibration refuse."""
    if "--calibration" not in options:
        options = (*options, "--calibration", "warn")
    out, run_dir = tmp_path / "out", tmp_path / "run"
    argv = [
        sys.executable,
        "-c",
        "import sys; from innet_cli import main; sys.exit(main())",
        "run",
        str(scenario),
        "--out",
        str(out),
        "--run-dir",
        str(run_dir),
        "--grpc-base-port",
        str(GRPC_BASE),
        "--no-progress",
        *options,
    ]
    proc = subprocess.Popen(argv, cwd=REPO, stdout=subprocess.PIPE, stderr=stderr, text=True)
    return proc, out, run_dir


def assert_on_time_or_flagged(rounds: list[dict], stdout: str) -> None:
    """The must-show on a busy machine: every finished round is within 20% of the planner's
    prediction, or flagged with a reason (and then never the table's winner); each flagged
    configuration's row in the table says how many of its rounds were flagged."""
    flagged = [r for r in rounds if r["flags"]]
    print(
        "\nrounds flagged:",
        [
            (
                r["network"],
                r["schedule"],
                r["memory"],
                r["round"],
                f"{r['time_s'] / r['predicted_s']:.2f}x",
                r["flags"],
            )
            for r in flagged
        ]
        or "none",
    )
    for r in rounds:
        assert r["status"] == "ok", r
        if not r["flags"]:
            assert abs(r["time_s"] / r["predicted_s"] - 1) < TOLERANCE, r
        assert all(reason.strip() for reason in r["flags"].values()), r
    per_row = Counter((r["network"], r["memory"], r["schedule"]) for r in flagged)
    for count in per_row.values():
        assert f"; flagged {count} of " in stdout, stdout
    starred = [line for line in stdout.splitlines() if " * " in line]
    for line in starred:
        assert "; flagged" not in line, line  # a flagged row is never the winner


def finish(proc: subprocess.Popen[str], timeout: float) -> tuple[int, str, str]:
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate()
        raise AssertionError(f"innet run still running after {timeout} s\n{err}") from None
    return proc.returncode, out, err


def records(out: Path) -> list[dict]:
    path = out / "rounds.jsonl"
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines()]


def wait_for_records(proc: subprocess.Popen[str], out: Path, n: int, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while len(records(out)) < n:
        if proc.poll() is not None:
            raise AssertionError(f"innet run exited ({proc.returncode}): {proc.stderr.read()}")
        if time.monotonic() > deadline:
            raise AssertionError(f"fewer than {n} rounds recorded after {timeout} s")
        time.sleep(0.2)  # polling interval of the results file


def recorded_pids(run_dir: Path, role_prefix: str) -> list[int]:
    """PIDs the run recorded for `innet clean`: the network's, and the island processes'."""
    state = json.loads((run_dir / "state.json").read_text())
    processes = state["network"]["processes"] + state.get("experiment", {}).get("processes", [])
    return [p["pid"] for p in processes if p["role"].startswith(role_prefix)]


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def test_nine_cities_reproduce_the_planner_and_the_crossover(tmp_path: Path) -> None:
    scenario = write_scenario(
        tmp_path / "s.yaml",
        hosts=2,
        memory=["25.6MB", "1.6GB"],
        schedules=["all-to-all", "cliques-3"],
        training={"rounds": 6},
        round_deadline="60s",
    )
    proc, out, run_dir = start_run(tmp_path, scenario)
    code, stdout, stderr = finish(proc, 900)
    assert code == 0, stderr
    for name in (
        "rounds.jsonl",
        "summary.csv",
        "scenario.yaml",
        "versions.json",
        "round-time.png",
        "loss.png",
        "predicted-vs-measured.png",
    ):
        assert (out / name).stat().st_size > 0, name
    rounds = records(out)
    assert len(rounds) == 2 * 2 * 6
    assert_on_time_or_flagged(rounds, stdout)
    for r in rounds:  # where the lag was seen: the switches, and each city's leader
        assert set(r["lag_ms"]) == {"switches", *(c.name for c in default_wan().cities)}, r
        assert r["cpu_lag_ms"] == pytest.approx(max(r["lag_ms"].values())), r
        cities = {c.name for c in default_wan().cities}
        assert set(r["leader_cpu_ms"]) == cities and all(v > 0 for v in r["leader_cpu_ms"].values())
        # every leader's int32 sum recorded, one per group (else the round failed naming them)
        assert set(r["sums"]) == cities, r
        assert len({r["sums"][c] for group in r["groups"] for c in group}) == len(r["groups"])
    rows = list(csv.DictReader((out / "summary.csv").open()))
    # measured: from the rounds that measure the network (a row's unflagged rounds)
    consensus = {
        (int(row["memory"]), row["schedule"]): row["consensus_unflagged_s"] for row in rows
    }
    predicted = {
        (int(row["memory"]), row["schedule"]): float(row["consensus_predicted_s"]) for row in rows
    }
    small, large = 25_600_000, 1_600_000_000
    assert predicted[small, "cliques-3"] < predicted[small, "all-to-all"]  # the crossover
    assert predicted[large, "all-to-all"] < predicted[large, "cliques-3"]
    # ... and measured: triples beat all-to-all on the starved pool, all-to-all wins on the
    # generous one. Unflagged rounds are within TOLERANCE of their predictions, so the order
    # is asserted where the predictions stand further apart than that allows (there load
    # cannot swap it); closer ones are printed. Where every round at one position of a
    # schedule's cycle was flagged there is no measurement of the network to compare:
    # printed, and the table must not star it.
    for memory, faster, slower in (
        (small, "cliques-3", "all-to-all"),
        (large, "all-to-all", "cliques-3"),
    ):
        a, b = consensus[memory, faster], consensus[memory, slower]
        apart = (1 + TOLERANCE) * predicted[memory, faster] < (1 - TOLERANCE) * predicted[
            memory, slower
        ]
        if a and b and apart:
            assert float(a) < float(b), (memory, a, b)
        elif a and b:
            print(
                f"measured at {memory}: {faster} {a} s, {slower} {b} s (predicted closer "
                f"than {TOLERANCE:.0%} apart: not asserted)"
            )
        else:
            print(f"measured crossover at {memory} not compared: no unflagged cycle", a, b)
            assert not [
                line
                for line in stdout.splitlines()
                if " * " in line and line.split()[0] == ("25.6" if memory == small else "1.6")
            ]
    baseline = float(rows[0]["baseline_accuracy"])
    for row in rows:
        runs = [
            r
            for r in rounds
            if r["memory"] == int(row["memory"]) and r["schedule"] == row["schedule"]
        ]
        assert runs[-1]["train_loss"] < runs[0]["train_loss"]
        assert abs(float(row["final_accuracy"]) - baseline) <= 0.02, row
        if row["schedule"] == "all-to-all":  # the same arithmetic as the baseline, in int32
            assert abs(float(row["final_accuracy"]) - baseline) < 0.005, row
    # bytes on the WAN: each member's update crosses each link of its tree once per chunk
    wan = default_wan()
    chunks = 2432 // 32
    for r in rounds:
        if r["retransmissions"] or r["nacks"]:
            continue
        members = [[wan.index(c) for c in g] for g in r["groups"]]
        expected = sum(
            len(wan.tree(src, [m for m in g if m != src])) * chunks * FRAME
            for g in members
            if len(g) > 1
            for src in g
        )
        assert sum(r["wan_bytes"].values()) == expected, r
    assert "reached consensus first" in stdout
    assert not (run_dir / "state.json").exists()


def test_link_emulators_on_the_wan_reproduce_the_planner(tmp_path: Path) -> None:
    """--shaping links: every WAN link is a link emulator process, the edges shape nothing (how
    BMv2 runs where the kernel has no netem); rounds still within 20% of the planner."""
    # no one-slot pool here: it has no headroom for any timing noise, whoever shapes the links
    scenario = write_scenario(
        tmp_path / "s.yaml",
        hosts=1,
        memory=["102MB", "1.6GB"],
        schedules=["all-to-all", "cliques-3"],
        training={"rounds": 3},
        round_deadline="60s",
    )
    proc, out, run_dir = start_run(tmp_path, scenario, "--shaping", "links")
    code, stdout, stderr = finish(proc, 900)
    assert code == 0, stderr
    network = json.loads((out / "network.json").read_text())
    assert [n["shaping"] for n in network.values()] == ["links", "links"]
    rounds = records(out)
    assert len(rounds) == 2 * 2 * 3
    assert_on_time_or_flagged(rounds, stdout)
    print(
        "\nlink emulators: measured / predicted round time:",
        ", ".join(
            f"{r['schedule']}@{r['memory']:.3g} {r['time_s'] / r['predicted_s']:.3f}"
            for r in rounds
        ),
    )
    assert not (run_dir / "state.json").exists()


def test_a_leader_killed_mid_run_fails_its_round_by_name_and_the_run_goes_on(
    tmp_path: Path,
) -> None:
    scenario = write_scenario(
        tmp_path / "s.yaml",
        schedules=["all-to-all", "cliques-3"],
        round_deadline="5s",
        training={"rounds": 4},
    )
    proc, out, run_dir = start_run(tmp_path, scenario)
    wait_for_records(proc, out, 1, 300)
    london = recorded_pids(run_dir, "island process")[3]  # leaders in city order: 3 is London
    os.kill(london, signal.SIGKILL)
    code, _stdout, stderr = finish(proc, 300)
    assert code == 1, stderr
    assert "London" in stderr
    rounds = records(out)
    failed = [r for r in rounds if r["status"] != "ok"]
    assert len(failed) == 1 and "London" in failed[0]["status"], failed
    assert failed[0]["schedule"] == "all-to-all"
    before = [r for r in rounds if r["schedule"] == "all-to-all" and r["status"] == "ok"]
    assert before and all(r["time_s"] > 0 for r in before)  # written before the kill, intact
    after = [r for r in rounds if r["schedule"] == "cliques-3"]
    assert len(after) == 4 and all(r["status"] == "ok" for r in after)  # the run went on
    assert (out / "summary.csv").exists()
    assert not alive(london) and not (run_dir / "state.json").exists()


def test_a_switch_killed_mid_run_is_reinstalled_and_the_run_finishes(tmp_path: Path) -> None:
    scenario = write_scenario(tmp_path / "s.yaml", training={"rounds": 5}, round_deadline="30s")
    proc, out, run_dir = start_run(tmp_path, scenario)
    wait_for_records(proc, out, 1, 300)
    (frankfurt,) = recorded_pids(run_dir, "p4switch s4")
    os.kill(frankfurt, signal.SIGKILL)
    code, _stdout, stderr = finish(proc, 300)
    assert code == 0, stderr
    rounds = records(out)
    assert len(rounds) == 5 and all(r["status"] == "ok" for r in rounds), rounds
    assert not alive(frankfurt)


def test_an_overloaded_cpu_is_reported_not_taken_for_the_network(tmp_path: Path) -> None:
    """At scale 1000 a 100 MB update is ~88k frames/s into nine Python switches on this CPU.
    The machine check refuses it before anything starts; told to go on (--calibration warn),
    the run marks itself, the switches fall behind, and the round is flagged CPU-bound instead
    of reported as a slow network. The deadline leaves the busy machine time to finish it."""
    scenario = write_scenario(
        tmp_path / "s.yaml",
        scale=1000,
        update_size="100MB",
        training={"rounds": 1},
        round_deadline="240s",
    )
    proc, out, run_dir = start_run(tmp_path, scenario, "--calibration", "refuse")
    code, _stdout, stderr = finish(proc, 120)
    assert code != 0 and "does not fit" in stderr, stderr
    assert not out.exists() or not records(out)  # refused before any round
    assert not (run_dir / "state.json").exists()  # ... and before the network was built
    proc, out, _run_dir = start_run(tmp_path, scenario, "--calibration", "warn")
    code, stdout, stderr = finish(proc, 600)
    assert code == 0, stderr
    assert "does not fit" in stdout + stderr
    calibration = json.loads((out / "calibration.json").read_text())
    assert calibration["verdict"] == "does not fit", calibration
    (r,) = records(out)
    assert r["status"] == "ok" and r["cpu_bound"] and "cpu_bound" in r["flags"], r
    assert r["cpu_lag_ms"] > 0.05 * r["predicted_s"] * 1e3
    # flagged cpu_bound (and timing too, when the lag made it more than 20% late)
    (row,) = [line for line in stdout.splitlines() if "; flagged 1 of 1:" in line]
    assert "cpu_bound 1" in row, row
    assert "the round measures the CPU" in stdout


def test_a_worker_killed_fails_the_next_round_naming_its_island(tmp_path: Path) -> None:
    """A non-leader host's process dies: its leader finds it gone at the next local phase."""
    scenario = write_scenario(
        tmp_path / "s.yaml", hosts=2, training={"rounds": 4}, round_deadline="10s"
    )
    proc, out, run_dir = start_run(tmp_path, scenario)
    wait_for_records(proc, out, 1, 300)
    islands = recorded_pids(run_dir, "island process")
    chicago_worker = islands[9 + 7]  # leaders first, then the other hosts in city order
    os.kill(chicago_worker, signal.SIGKILL)
    code, _stdout, stderr = finish(proc, 300)
    assert code == 1, stderr
    failed = [r for r in records(out) if r["status"] != "ok"]
    assert len(failed) == 1, failed
    assert "Chicago" in failed[0]["status"] and "worker" in failed[0]["status"]
    assert "Chicago" in stderr


def test_lossy_wan_links_cost_time_but_not_exactness(tmp_path: Path) -> None:
    """1% of frames lost on every WAN link: resends, NACKs and RECOVERs make every sum exact
    (all-to-all still reproduces the single-process baseline); the rounds take longer than the
    lossless planner says."""
    scenario = write_scenario(
        tmp_path / "s.yaml", wan_loss=0.01, training={"rounds": 2}, round_deadline="60s"
    )
    proc, out, _run_dir = start_run(tmp_path, scenario)
    code, _stdout, stderr = finish(proc, 300)
    assert code == 0, stderr
    rounds = records(out)
    assert len(rounds) == 2 and all(r["status"] == "ok" for r in rounds)
    assert sum(r["retransmissions"] for r in rounds) > 0
    assert all(r["time_s"] > r["predicted_s"] for r in rounds)
    assert all("loss" in r["flags"] for r in rounds)  # the plan does not model loss
    row = next(csv.DictReader((out / "summary.csv").open()))
    assert abs(float(row["final_accuracy"]) - float(row["baseline_accuracy"])) < 0.005
