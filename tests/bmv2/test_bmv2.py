"""innet on BMv2: `make p4`, the service and `innet run` with `--target bmv2`.

Skipped (with the reason) where simple_switch_grpc or p4c-bm2-ss is missing; the Vagrant VM
has both. The P4 source, controller and experiment are the ones the p4switch tests exercise.
"""

from __future__ import annotations

import csv
import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from tests.netns.topology import why_no_mininet
from topo.bmv2 import THRIFT_BASE_PORT, cli_command

pytestmark = [pytest.mark.bmv2, pytest.mark.slow]

REPO = Path(__file__).resolve().parents[2]
GRPC_BASE = 20800
RESULT_FILES = {
    "rounds.jsonl",
    "summary.csv",
    "scenario.yaml",
    "versions.json",
    "round-time.png",
    "loss.png",
    "predicted-vs-measured.png",
    "island-config.json",
    "logs",
    "network.json",
    "calibration.json",
}


def innet(*args: str, run_dir: Path, timeout: float = 900) -> subprocess.CompletedProcess[str]:
    argv = [sys.executable, "-c", "import sys; from innet_cli import main; sys.exit(main())"]
    env = {**os.environ, "INNET_RUN_DIR": str(run_dir)}
    return subprocess.run(
        [*argv, *args],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def needs_mininet() -> None:
    reason = why_no_mininet(("ip", "tc", "ethtool"))
    if reason is not None:
        pytest.skip(f"BMv2 testbed test skipped: {reason}")


def test_make_p4_compiles_and_the_p4info_agree() -> None:
    done = subprocess.run(["make", "p4"], cwd=REPO, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "P4Info agree" in done.stdout
    assert (REPO / "build" / "p4" / "innet.json").stat().st_size > 0


def test_the_service_on_bmv2(tmp_path: Path) -> None:
    needs_mininet()
    run_dir = tmp_path / "run"
    up = innet(
        "net",
        "up",
        "--target",
        "bmv2",
        "--hosts",
        "1",
        "--grpc-base-port",
        str(GRPC_BASE),
        "--slots",
        "64",
        run_dir=run_dir,
    )
    try:
        assert up.returncode == 0, up.stderr
        assert "healthy" in innet("status", run_dir=run_dir).stdout
        for number in (0, 1):
            advanced = innet("round", "advance", run_dir=run_dir)
            assert f"round {number} installed" in advanced.stdout, advanced.stderr
        assert "contribution" in innet("counters", "Tokyo", run_dir=run_dir).stdout
    finally:
        down = innet("net", "down", run_dir=run_dir)
        innet("clean", run_dir=run_dir)
    assert down.returncode == 0, down.stderr


def test_innet_run_on_bmv2_writes_the_same_results(tmp_path: Path) -> None:
    """The same scenario on p4switch and on BMv2: the same int32 sums in every round, and the
    results folder of a run. At a scale BMv2 carries (at scale 100,000 its all-to-all rounds
    took 25-44 s against 0.9 s planned, as the machine check said they would: 3.6 cores asked
    of 1 free); the check runs (on BMv2) but only warns, the run is about the results."""
    needs_mininet()
    scenario = tmp_path / "s.yaml"
    scenario.write_text(
        json.dumps(
            {
                "name": "bmv2",
                "hosts": 1,
                "scale": 1000000,
                "memory": ["1.6GB"],
                "schedules": ["all-to-all", "cliques-3"],
                "training": {"rounds": 3},
            }
        )
    )
    outs = {target: tmp_path / target for target in ("p4switch", "bmv2")}
    for target, out in outs.items():
        done = innet(
            "run",
            str(scenario),
            "--target",
            target,
            "--out",
            str(out),
            "--no-progress",
            "--grpc-base-port",
            str(GRPC_BASE),
            "--calibration",
            "warn",
            run_dir=tmp_path / f"run-{target}",
        )
        assert done.returncode == 0, (target, done.stderr)
    compared = innet("sums", str(outs["p4switch"]), str(outs["bmv2"]), run_dir=tmp_path / "run")
    print(compared.stdout)
    assert compared.returncode == 0, compared.stdout + compared.stderr
    assert "6 rounds compared (0 without sums): the same int32 sums" in compared.stdout
    out = outs["bmv2"]
    assert {p.name for p in out.iterdir()} == RESULT_FILES
    calibration = json.loads((out / "calibration.json").read_text())
    assert calibration["machine"]["backend"] == "bmv2", calibration  # BMv2 measured, not p4switch
    print(calibration["summary"])
    rounds = [json.loads(line) for line in (out / "rounds.jsonl").read_text().splitlines()]
    assert len(rounds) == 6 and all(r["status"] == "ok" for r in rounds)
    assert all(sum(r["wan_bytes"].values()) > 0 for r in rounds)
    row = next(csv.DictReader((out / "summary.csv").open()))
    # exact int32 sums on BMv2 too: all-to-all reproduces the single-process baseline
    assert abs(float(row["final_accuracy"]) - float(row["baseline_accuracy"])) < 0.005


def test_bmv2_with_link_emulators_reproduces_the_planner(tmp_path: Path) -> None:
    """--shaping links: BMv2 edges that shape nothing, a link emulator on every WAN link (how
    BMv2 runs where the kernel has no netem); every round within 20% of the planner or flagged
    with a reason, as on p4switch. At a scale the machine check says BMv2 carries here (it
    warns, where other work leaves less)."""
    needs_mininet()
    scenario = tmp_path / "s.yaml"
    scenario.write_text(
        json.dumps(
            {
                "name": "bmv2-links",
                "hosts": 1,
                "scale": 400000,
                "memory": ["1.6GB"],
                "schedules": ["cliques-3"],
                "training": {"rounds": 3},
                "round_deadline": "60s",
            }
        )
    )
    out = tmp_path / "out"
    done = innet(
        "run",
        str(scenario),
        "--target",
        "bmv2",
        "--shaping",
        "links",
        "--out",
        str(out),
        "--no-progress",
        "--grpc-base-port",
        str(GRPC_BASE),
        "--calibration",
        "warn",
        run_dir=tmp_path / "run",
    )
    assert done.returncode == 0, done.stderr
    network = json.loads((out / "network.json").read_text())
    assert [n["shaping"] for n in network.values()] == ["links"]
    rounds = [json.loads(line) for line in (out / "rounds.jsonl").read_text().splitlines()]
    assert len(rounds) == 3
    from tests.netns.test_experiment import assert_on_time_or_flagged  # (Mininet is here)

    assert_on_time_or_flagged(rounds, done.stdout)


def test_a_thrift_port_already_taken_is_named_before_anything_is_built(tmp_path: Path) -> None:
    """Another program listens on London's Thrift port: `innet run --target bmv2` says so in
    one line, naming the port and the switch, before it builds anything, and exits 1."""
    needs_mininet()
    scenario = tmp_path / "s.yaml"
    scenario.write_text(
        json.dumps(
            {
                "name": "taken",
                "hosts": 1,
                "scale": 1000000,
                "memory": ["1.6GB"],
                "schedules": ["all-to-all"],
                "training": {"rounds": 1},
            }
        )
    )
    out, london = tmp_path / "out", THRIFT_BASE_PORT + 3
    with socket.socket() as other:
        other.bind(("127.0.0.1", london))
        other.listen()
        done = innet(
            "run",
            str(scenario),
            "--target",
            "bmv2",
            "--out",
            str(out),
            "--no-progress",
            "--grpc-base-port",
            str(GRPC_BASE),
            "--calibration",
            "off",
            run_dir=tmp_path / "run",
        )
    assert done.returncode == 1, done.stderr
    error = [line for line in done.stderr.splitlines() if line.startswith("innet: error")]
    assert error == [
        f"innet: error: TCP port {london} (London's BMv2 Thrift) already in use on this "
        "machine (another testbed or program listens there): stop it (BMv2's Thrift ports are "
        f"{THRIFT_BASE_PORT} + the city's index)"
    ], done.stderr
    assert not list(Path("/sys/class/net").glob("s3-eth*"))  # nothing was built
    assert not (tmp_path / "run" / "state.json").exists()


def mc_nodes(thrift_port: int) -> list[str]:
    """The multicast nodes BMv2 itself holds: the `L1h=` lines of simple_switch_CLI's mc_dump
    (`mgrp(1)` then `  -> (L1h=0, rid=0) -> (ports=[1], lags=[])` per node)."""
    done = subprocess.run(
        cli_command(thrift_port),
        input="mc_dump\n",
        capture_output=True,
        text=True,
        timeout=30,
        check=True,
    )
    return [line for line in done.stdout.splitlines() if "L1h=" in line]


def test_a_live_bmv2_switch_healed_keeps_each_multicast_node_once(tmp_path: Path) -> None:
    """The heal path that pushes the pipeline to a running simple_switch_grpc again: before the
    fix BMv2 kept the old replication nodes beside the new ones (behavioral-model#891), so
    every copy left twice. The fabric now deletes the groups first."""
    needs_mininet()
    from controller.bringup import running_testbed
    from controller.planner.cost import CostParams
    from controller.rundir import RunDir
    from innet.packetformat import PacketFormat
    from topo.bmv2 import THRIFT_BASE_PORT
    from topo.loader import default_wan
    from topo.mininet_net import NetworkSpec
    from topo.siteplan import SlotPool

    pool = SlotPool(64, 1000.0, PacketFormat())
    params = CostParams.for_pool(pool, 10**9, 10e9)
    spec = NetworkSpec(
        default_wan(),
        1,
        slots=64,
        scale=1000.0,
        target="bmv2",
        shaping="links",
        grpc_base_port=GRPC_BASE,
    )
    run_dir = RunDir(tmp_path / "run")
    run_dir.claim("test", "running")
    try:
        with running_testbed(spec, params, run_dir) as up:
            up.watchdog.stop()  # this test heals by hand
            up.testbed.advance()
            before = mc_nodes(THRIFT_BASE_PORT)
            assert before, "round 0 installs multicast groups on Tokyo's edge"
            conn = up.testbed.fabric.connection(up.network.sites[0].name)
            conn.close()  # the stream ends while the process runs: heal's live branch
            assert up.testbed.heal() == [up.testbed.wan.names[0]]
            assert len(mc_nodes(THRIFT_BASE_PORT)) == len(before)  # not twice as many
    finally:
        run_dir.release()
