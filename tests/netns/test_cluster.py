"""innet on a Ray cluster of three "machines" (network namespaces on a bridge, tests/netns/
cluster.py): `innet cluster check` finds every node, checks it and measures the clocks and the
wires between them; a cluster that cannot be reached is refused in one line; a cluster stopped,
one of its nodes lost first, leaves nothing behind."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.netns.cluster import CHECKOUT, LocalCluster, why_not_here
from topo.loader import default_wan, load_wan
from topo.wan import Wan

pytestmark = [pytest.mark.netns, pytest.mark.slow]

INNET = str(Path(sys.executable).parent / "innet")


@pytest.fixture(scope="module")
def cluster() -> Iterator[LocalCluster]:
    reason = why_not_here()
    if reason is not None:
        pytest.skip(f"cluster test skipped: {reason}")
    built = LocalCluster(f"icl{os.getpid() % 100_000}", Path(tempfile.mkdtemp(prefix="icl")))
    built.start()
    try:
        yield built
    finally:
        built.stop()


def test_check_finds_every_node_and_measures_its_clock_and_the_wires(
    cluster: LocalCluster,
) -> None:
    done = cluster.driver(
        1, [INNET, "cluster", "check", cluster.head, "--json", "--exchanges", "20"]
    )
    assert done.returncode == 0, done.stderr
    survey = json.loads(done.stdout)
    addresses = [cluster.address(i) for i in range(1, cluster.nodes + 1)]
    assert [n["address"] for n in survey["nodes"]] == addresses
    for node in survey["nodes"]:
        assert node["uid"] == 0 and node["namespaces"] is None and node["mininet"] is None
        clock = node["clock"]
        assert clock["samples"] == 20
        # one kernel clock on every "machine": the true offset, 0, lies within the stated bound
        assert abs(clock["offset_s"]) <= clock["uncertainty_s"]
    pairs = [tuple(w["nodes"]) for w in survey["wires"]]
    a, b, c = addresses
    assert pairs == [(a, b), (a, c), (b, c)]
    for wire in survey["wires"]:
        assert 0 < wire["one_way_s"] == wire["min_round_trip_s"] / 2
        assert wire["min_round_trip_s"] <= wire["median_round_trip_s"]


def test_check_prints_the_nodes_and_wires(cluster: LocalCluster) -> None:
    done = cluster.driver(2, [INNET, "cluster", "check", cluster.head, "--exchanges", "5"])
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(f"cluster {cluster.head}: 3 nodes, Ray ")
    for i in range(1, cluster.nodes + 1):
        assert f"\n{cluster.address(i)} " in done.stdout
    assert f"{cluster.address(2)} - {cluster.address(3)}" in done.stdout


def test_an_unreachable_head_is_refused_in_one_line(cluster: LocalCluster) -> None:
    done = cluster.driver(1, [INNET, "cluster", "check", f"{cluster.address(1)}:6390"])
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1
    assert f"cannot reach the Ray cluster at {cluster.address(1)}:6390" in done.stderr


def test_a_cluster_stopped_after_losing_a_node_leaves_nothing(cluster: LocalCluster) -> None:
    small = LocalCluster(f"icm{os.getpid() % 100_000}", Path(tempfile.mkdtemp(prefix="icm")), 2)
    try:
        small.start()
        assert small.pids(2)
        small.kill_node(2)
        done = small.driver(1, [INNET, "cluster", "check", small.head, "--exchanges", "3"])
        # the head still counts the lost node alive: its agent never answers, and is named
        assert done.returncode == 1, done.stderr
        assert done.stderr.count("\n") == 1
        assert f"node {small.address(2)}: " in done.stderr
    finally:
        small.stop()
    assert small.leftovers() == []


DRIVER = [sys.executable, "-m", "tests.netns.cluster_driver"]
GONE_WITHIN_S = 60.0  # a bound on waiting for the janitors, not a figure: a hang guard


def test_the_nine_cities_split_over_three_machines_forward_between_them(
    cluster: LocalCluster,
) -> None:
    """Three cities a machine, programmed from the head over P4Runtime at each machine's
    address; Tokyo's leader reaches every other city's, across the crossing links' tunnels."""
    done = cluster.driver(1, [*DRIVER, cluster.head], timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    machines = [cluster.address(i) for i in (1, 2, 3)]
    assert seen["node_of"] == [m for m in machines for _ in range(3)]
    assert {addr.split(":")[0] for addr in seen["sites"].values()} == set(machines)
    for city, ping in seen["pings"].items():
        assert ping["code"] == 0, (city, ping)
        # the shaping never delivers early: the round trip holds the path's delay, less at most
        # the wire's share taken off each crossing link (tens of microseconds here)
        assert ping["rtt_ms"] >= ping["planned_ms"] - 1.0, (city, ping)
    for i in (1, 2, 3):
        assert cluster.made_by_innet(i) == [], f"left on machine {i}"


def test_a_driver_killed_with_the_network_up_leaves_nothing_on_any_machine(
    cluster: LocalCluster,
) -> None:
    driver = cluster.start_driver(1, [*DRIVER, cluster.head, "--hold"])
    try:
        assert driver.stdout is not None
        line = driver.stdout.readline()
        assert line.strip() == "up", driver.stderr.read() if driver.stderr else line
        assert all(cluster.made_by_innet(i) for i in (1, 2, 3))
    finally:
        driver.kill()
        driver.communicate()
    deadline = time.monotonic() + GONE_WITHIN_S
    left = [x for i in (1, 2, 3) for x in cluster.made_by_innet(i)]
    while left and time.monotonic() < deadline:
        time.sleep(0.5)
        left = [x for i in (1, 2, 3) for x in cluster.made_by_innet(i)]
    assert left == []


TRIANGLE = """name: triangle
sources: {s: made up}
cities:
  - {name: Aster, code: AST, continent: X, lat: 0, lon: 0, source: s}
  - {name: Birch, code: BIR, continent: X, lat: 0, lon: 1, source: s}
  - {name: Cedar, code: CED, continent: X, lat: 0, lon: 2, source: s}
links:
  - {a: Aster, b: Birch, delay: 20ms, capacity: 100Gbps, source: s}
  - {a: Birch, b: Cedar, delay: 30ms, capacity: 100Gbps, source: s}
  - {a: Aster, b: Cedar, delay: 40ms, capacity: 100Gbps, source: s}
"""


def scenario_on(
    path: Path,
    placement: dict[str, str] | None,
    topology: str = "nine-cities",
    networks: tuple[str, ...] = ("inna",),
) -> Path:
    """One host an island, at a scale two cores keep up with; `placement` on the cluster's
    machines."""
    doc: dict[str, object] = {
        "name": "c",
        "topology": topology,
        "hosts": 1,
        "scale": 100000,
        "memory": ["1.6GB"],
        "schedules": ["all-to-all"],
        "networks": list(networks),
        "training": {"rounds": 3},
        "round_deadline": "20s",
        "seed": 1,
    }
    if placement is not None:
        doc["placement"] = placement
    path.write_text(json.dumps(doc))  # JSON is YAML
    return path


def placed(
    cluster: LocalCluster, tmp_path: Path, which: str, networks: tuple[str, ...] = ("inna",)
) -> tuple[Path, Wan, list[str]]:
    """The scenario `which` with its islands spread over the three machines in WAN order:
    the nine cities three a machine, the triangle one a machine (every link crosses)."""
    topology = "nine-cities"
    wan = default_wan()
    if which == "triangle":
        path = tmp_path / "triangle-wan.yaml"
        path.write_text(TRIANGLE)
        topology, wan = str(path), load_wan(path)
    machines = [cluster.address(1 + u * 3 // wan.n) for u in range(wan.n)]
    where = dict(zip(wan.names, machines, strict=True))
    return scenario_on(tmp_path / f"{which}.yaml", where, topology, networks), wan, machines


@pytest.mark.parametrize(
    ("which", "network"), [("nine-cities", "inna"), ("triangle", "inna"), ("nine-cities", "gloo")]
)
def test_a_run_over_three_machines_gives_one_machine_s_sums_and_losses(
    cluster: LocalCluster, tmp_path: Path, which: str, network: str
) -> None:
    """Every round's int32 sums (innet's modes) and test loss as on one machine; the
    placement, the crossing links and the clocks recorded. gloo's leaders, TCP between them
    across the machines' tunnels, sum floats in the same ring order on both."""
    scenario, wan, machines = placed(cluster, tmp_path, which, (network,))
    there, here = tmp_path / "cluster", tmp_path / "one"
    began = time.monotonic()
    done = cluster.driver(
        1,
        [
            INNET,
            "run",
            str(scenario),
            "--cluster",
            cluster.head,
            "--out",
            str(there),
            "--no-progress",
        ],
        timeout=900,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    on_cluster = time.monotonic() - began
    alone = ["--calibration", "warn", "--run-dir", str(tmp_path / "run")]
    began = time.monotonic()
    one = subprocess.run(
        [INNET, "run", str(scenario), "--out", str(here), "--no-progress", *alone],
        capture_output=True,
        text=True,
        timeout=900,
        cwd=CHECKOUT,
        check=False,
    )
    assert one.returncode == 0, one.stderr[-3000:]
    alone_s = time.monotonic() - began
    print(f"\n{which} {network}: wall {on_cluster:.1f} s on the cluster, {alone_s:.1f} s alone")
    if network != "gloo":  # gloo's sums are floats, taken by no switch
        compared = subprocess.run(
            [INNET, "sums", str(there), str(here)], capture_output=True, text=True, check=False
        )
        assert compared.returncode == 0, compared.stdout
    rounds = {
        p: [json.loads(x) for x in (p / "rounds.jsonl").read_text().splitlines()]
        for p in (there, here)
    }
    assert [r["test_loss"] for r in rounds[there]] == [r["test_loss"] for r in rounds[here]]
    for r, alone_r in zip(rounds[there], rounds[here], strict=True):
        assert r["status"] == "ok", r
        print(
            f"round {r['round']}: {r['time_s']:.3f} s on the cluster, {alone_r['time_s']:.3f} s "
            f"alone, planned {r['predicted_s']:.3f} s",
            r["flags"] or "",
        )
    recorded = json.loads((there / "cluster.json").read_text())
    assert recorded["placement"] == dict(zip(wan.names, machines, strict=True))
    crossing = {(x["a"], x["b"]) for x in recorded["crossing_links"]}
    node_of = dict(zip(wan.names, machines, strict=True))
    cut = {(link.a, link.b) for link in wan.links if node_of[link.a] != node_of[link.b]}
    assert crossing == cut and cut
    assert len(recorded["nodes"]) == 3 and recorded["clocks"]["loose_nodes"] == []
    fetched = sorted(p.name for p in (there / "logs").glob("*.log"))
    assert fetched == sorted(p.name for p in (here / "logs").glob("*.log")) and fetched
    for i in (1, 2, 3):
        assert cluster.made_by_innet(i) == [], f"left on machine {i}"


SERVICE = ["--scale", "100000", "--memory", "1.6GB", "--port", "8719"]  # as light as the runs


def service_api(cluster: LocalCluster, run_dir: Path, method: str, path: str, body: object = None):
    """One request to the service whose state is in `run_dir`, from the head's machine (the API
    binds its loopback)."""
    ask = (
        "import json, pathlib, sys; from controller.rundir import RunDir; "
        "from controller.service.client import ServiceClient; "
        "service = ServiceClient(RunDir(pathlib.Path(sys.argv[1]))); "
        "print(json.dumps(service.request(sys.argv[2], sys.argv[3], json.loads(sys.argv[4]))))"
    )
    argv = [sys.executable, "-c", ask, str(run_dir), method, path, json.dumps(body)]
    done = cluster.driver(1, argv, timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout)


def test_the_service_s_testbed_on_three_machines(cluster: LocalCluster, tmp_path: Path) -> None:
    """`innet net up --cluster`: the nine cities three a machine, programmed and served from the
    head's machine; status, a round advanced, counters and an experiment over the API as on one
    machine, the experiment's rounds ok with the cluster recorded; `net down` leaves nothing on
    any machine."""
    wan = default_wan()
    machines = [cluster.address(1 + u * 3 // wan.n) for u in range(wan.n)]
    where = ",".join(f"{city}={m}" for city, m in zip(wan.names, machines, strict=True))
    run_dir = ["--run-dir", str(tmp_path / "service")]
    up = cluster.driver(
        1,
        [INNET, "net", "up", "--cluster", cluster.head, "--placement", where, *SERVICE, *run_dir],
        timeout=600,
    )
    folder = None
    try:
        assert up.returncode == 0, up.stderr[-3000:]
        print(up.stdout)
        assert f"cluster {cluster.head}: " in up.stdout and "8 WAN links cross" in up.stdout
        topology = service_api(cluster, tmp_path / "service", "GET", "/topology")
        placed = dict(zip(wan.names, machines, strict=True))
        assert topology["cluster"]["placement"] == placed
        assert {s["city"]: s["grpc_addr"].split(":")[0] for s in topology["switches"]} == placed
        for command in (["status"], ["round", "advance"], ["counters"]):
            done = cluster.driver(1, [INNET, *command, *run_dir])
            assert done.returncode == 0, (command, done.stderr[-3000:])
        status = cluster.driver(1, [INNET, "status", *run_dir]).stdout
        assert all(city in status for city in wan.names), status
        body = {"rounds": 2, "name": "on-cluster", "round_deadline_s": 20}
        started = service_api(cluster, tmp_path / "service", "POST", "/experiment", body)
        folder = Path(started["folder"])
        deadline = time.monotonic() + 600.0  # a hang guard
        state = started
        while state["state"] == "running":
            assert time.monotonic() < deadline, state
            time.sleep(1.0)
            state = service_api(cluster, tmp_path / "service", "GET", "/experiment")
        assert state["state"] == "finished", state
        rounds = [json.loads(x) for x in (folder / "rounds.jsonl").read_text().splitlines()]
        assert [r["status"] for r in rounds] == ["ok", "ok"], rounds
        for r in rounds:
            print(f"round {r['round']}: {r['time_s']:.3f} s, planned {r['predicted_s']:.3f} s")
        recorded = json.loads((folder / "cluster.json").read_text())
        assert recorded["placement"] == placed and recorded["clocks"]["loose_nodes"] == []
    finally:
        down = cluster.driver(1, [INNET, "net", "down", *run_dir], timeout=300)
        if folder is not None:
            shutil.rmtree(folder, ignore_errors=True)
    assert down.returncode == 0, down.stderr[-3000:]
    for i in (1, 2, 3):
        assert cluster.made_by_innet(i) == [], f"left on machine {i}"


def test_a_service_on_a_cluster_stopped_by_a_signal_mid_experiment_leaves_nothing(
    cluster: LocalCluster, tmp_path: Path
) -> None:
    """The cities placed by the service itself; SIGTERM to the service while an experiment
    plays: no further round (a round playing ends at once: every machine's agent signals its
    island processes), the testbed torn down on every machine, the run directory released, the
    rounds recorded whole."""
    run_dir = tmp_path / "service"
    up = cluster.driver(
        1,
        [INNET, "net", "up", "--cluster", cluster.head, *SERVICE, "--run-dir", str(run_dir)],
        timeout=600,
    )
    assert up.returncode == 0, up.stderr[-3000:]
    print(up.stdout)
    state = json.loads((run_dir / "state.json").read_text())
    service = state["service"]["pid"]
    body = {"rounds": 60, "name": "on-cluster-stopped", "round_deadline_s": 20}
    started = service_api(cluster, run_dir, "POST", "/experiment", body)
    folder = Path(started["folder"])
    try:
        deadline = time.monotonic() + 600.0  # a hang guard
        while service_api(cluster, run_dir, "GET", "/experiment")["done"] < 1:
            assert time.monotonic() < deadline, "no round done"
            time.sleep(0.5)
        os.kill(service, signal.SIGTERM)
        while Path(f"/proc/{service}").exists():
            assert time.monotonic() < deadline, "the service did not stop"
            time.sleep(0.2)
        rounds = [json.loads(x) for x in (folder / "rounds.jsonl").read_text().splitlines()]
        assert rounds and rounds[0]["status"] == "ok", rounds
        assert len(rounds) < 60
        assert not (run_dir / "state.json").exists()
        for i in (1, 2, 3):
            assert cluster.made_by_innet(i) == [], f"left on machine {i}"
    finally:
        if Path(f"/proc/{service}").exists():
            os.kill(service, signal.SIGKILL)
        shutil.rmtree(folder, ignore_errors=True)


def test_the_service_refuses_a_placement_on_a_machine_the_cluster_lacks(
    cluster: LocalCluster, tmp_path: Path
) -> None:
    """One line naming the city and the machine, exit status 2, nothing started anywhere."""
    wan = default_wan()
    where = [f"{city}={cluster.address(1)}" for city in wan.names[:-1]]
    where.append(f"{wan.names[-1]}=10.250.0.99")
    run_dir = ["--run-dir", str(tmp_path / "service")]
    up = cluster.driver(
        1,
        [
            INNET,
            "net",
            "up",
            "--cluster",
            cluster.head,
            "--placement",
            ",".join(where),
            *SERVICE,
            *run_dir,
        ],
        timeout=600,
    )
    assert up.returncode == 2, up.stderr[-3000:]
    line = up.stderr.strip().splitlines()[-1]
    assert wan.names[-1] in line and "10.250.0.99" in line and "does not have" in line, line
    for i in (1, 2, 3):
        assert cluster.made_by_innet(i) == [], f"left on machine {i}"
    status = cluster.driver(1, [INNET, "status", *run_dir])
    assert status.returncode == 1, status.stderr  # no service runs there


@contextlib.contextmanager
def a_long_run(
    cluster: LocalCluster, tmp_path: Path
) -> Iterator[tuple[subprocess.Popen[str], Path, Wan, list[str]]]:
    """`innet run --cluster` of the nine cities three a machine for 40 rounds, from the head's
    machine: its driver, results folder, WAN and machines once its first round is recorded;
    the driver killed if it still runs when the block ends."""
    scenario, wan, machines = placed(cluster, tmp_path, "nine-cities")
    doc = json.loads(scenario.read_text())
    doc["training"] = {"rounds": 40}
    scenario.write_text(json.dumps(doc))
    out = tmp_path / "out"
    run = [INNET, "run", str(scenario), "--cluster", cluster.head, "--out", str(out)]
    driver = cluster.start_driver(1, [*run, "--no-progress"])
    try:
        deadline = time.monotonic() + 600.0  # a hang guard
        rounds = out / "rounds.jsonl"
        while not (rounds.exists() and rounds.read_text().count("\n") >= 1):
            assert driver.poll() is None, driver.communicate()[1][-3000:]
            assert time.monotonic() < deadline, "no round recorded"
            time.sleep(0.2)
        yield driver, out, wan, machines
    finally:
        if driver.poll() is None:
            driver.kill()
            driver.communicate()


def test_a_run_on_a_cluster_interrupted_mid_run_leaves_whole_results_and_nothing_behind(
    cluster: LocalCluster, tmp_path: Path
) -> None:
    """Ctrl-C (SIGINT) once a round is recorded: exit status 130, the line says how far it
    got, the rounds recorded so far whole, and nothing left on any machine."""
    with a_long_run(cluster, tmp_path) as (driver, out, _, _):
        driver.send_signal(signal.SIGINT)
        _, err = driver.communicate(timeout=600)
    assert driver.returncode == 130, err[-3000:]
    line = err.strip().splitlines()[-1]
    assert "innet: interrupted (SIGINT)" in line and f"results so far in {out}" in line, line
    recorded = [json.loads(x) for x in (out / "rounds.jsonl").read_text().splitlines()]
    assert recorded and all(r["status"] in ("ok", "failed") for r in recorded)
    assert recorded[0]["status"] == "ok" and len(recorded) < 40
    assert (out / "summary.csv").exists() and (out / "cluster.json").exists()
    for i in (1, 2, 3):
        assert cluster.made_by_innet(i) == [], f"left on machine {i}"


def test_a_machine_lost_mid_run_stops_it_naming_the_machine_and_its_islands(
    cluster: LocalCluster, tmp_path: Path
) -> None:
    """(Last in this module: it kills machine 3.) The run stops with machine 3 and its
    islands named, its results whole up to the last round recorded, and nothing of it left on
    the machines still up."""
    with a_long_run(cluster, tmp_path) as (driver, out, wan, machines):
        cluster.kill_node(3)
        _, err = driver.communicate(timeout=600)
    assert driver.returncode == 1, err[-3000:]
    lost = [
        cluster.address(3),
        *(wan.names[u] for u in range(wan.n) if machines[u] == machines[-1]),
    ]
    assert all(name in err for name in lost), err[-3000:]
    assert f"machine {cluster.address(3)} lost" in err
    recorded = [json.loads(line) for line in (out / "rounds.jsonl").read_text().splitlines()]
    assert recorded and recorded[0]["status"] == "ok"
    assert (out / "summary.csv").exists()
    deadline = time.monotonic() + GONE_WITHIN_S
    left = [x for i in (1, 2) for x in cluster.made_by_innet(i)]
    while left and time.monotonic() < deadline:
        time.sleep(0.5)
        left = [x for i in (1, 2) for x in cluster.made_by_innet(i)]
    assert left == []
