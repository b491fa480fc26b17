"""The innet service end to end: `innet net up` on the nine cities, rounds, traffic that reaches
exactly its group, a killed switch healed, counters, `innet net down`, and `innet clean`.

Needs root, Mininet (the Python package), mnexec and nsenter; skipped with the reason otherwise.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path

import pytest

from controller.p4rt import SwitchConnection, deadline_after
from innet.packetformat import PacketFormat
from tests.netns.harness import api_port
from tests.netns.topology import why_no_mininet

pytestmark = [pytest.mark.netns, pytest.mark.slow]

REPO = Path(__file__).resolve().parents[2]
GRPC_BASE = 20400  # below the ephemeral ports (topo.siteplan.GRPC_BASE_PORT)
CHUNKS = 20
# round 1 of the nine cities' triple schedule (cliques-3), group 0: Tokyo, London, Chicago
ROUND1_GROUP0 = (0, 3, 7)
OUTSIDER = 1  # Singapore: in another group of round 1
PACKET_FORMAT = PacketFormat()  # `innet net up --lanes` and the leaders' (innet_host --lanes)


_REASON = why_no_mininet(("ip", "tc", "ethtool", "nsenter"))
if _REASON is not None:
    pytest.skip(f"innet service test skipped: {_REASON}", allow_module_level=True)


def free_port() -> int:
    return api_port(GRPC_BASE)


def innet(run_dir: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "INNET_RUN_DIR": str(run_dir)}
    argv = [sys.executable, "-c", "import sys; from innet_cli import main; sys.exit(main())"]
    done = subprocess.run(
        [*argv, *args], cwd=REPO, env=env, capture_output=True, text=True, timeout=300
    )
    if check and done.returncode != 0:
        raise AssertionError(f"innet {' '.join(args)}: {done.returncode}\n{done.stderr}")
    return done


def state(run_dir: Path) -> dict:
    return json.loads((run_dir / "state.json").read_text())


def pid_of(st: dict, role: str) -> int:
    return next(p["pid"] for p in st["network"]["processes"] if p["role"] == role)


def in_host(st: dict, city: int, argv: list[str]) -> subprocess.Popen[str]:
    """Run a command in city's first host's network namespace (nsenter by the host shell's PID)."""
    pid = pid_of(st, f"host h{city}_1")
    return subprocess.Popen(
        ["nsenter", "-t", str(pid), "-n", *argv],
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


LISTEN = """
import socket, sys, time
from innet.packetformat import PacketFormat
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind((sys.argv[1], PacketFormat.UDP_PORT)); s.settimeout(0.2)
n, end = 0, time.monotonic() + float(sys.argv[2])
while time.monotonic() < end:
    try:
        s.recv(2048); n += 1
    except TimeoutError:
        pass
print(n)
"""


def stat(table: str, name: str) -> int:
    """A statistic from `innet counters CITY`'s table."""
    return next(int(line.split()[1]) for line in table.splitlines() if line.split()[:1] == [name])


def leftovers(st: dict) -> list[str]:
    found = [
        f"interface {n}" for n in st["network"]["interfaces"] if Path("/sys/class/net", n).exists()
    ]
    for p in [st["service"], *st["network"]["processes"]]:
        try:
            cmd = Path(f"/proc/{p['pid']}/cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if [c.decode() for c in cmd if c] == p["cmdline"]:
            found.append(f"{p['role']} PID {p['pid']}")
    return found


def test_service_end_to_end(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    port = free_port()
    up = innet(
        run_dir,
        "net",
        "up",
        "--hosts",
        "1",
        "--port",
        str(port),
        "--grpc-base-port",
        str(GRPC_BASE),
        "--slots",
        "64",
        "--lanes",
        str(PACKET_FORMAT.lanes),
    )
    recorded = state(run_dir)
    try:
        assert "9 switches programmed" in up.stdout and f"127.0.0.1:{port}" in up.stdout
        status = innet(run_dir, "status").stdout
        assert "NOT healthy" not in status and "healthy" in status
        assert "no round installed yet" in status
        # 64 slots per bank at scale 1000: 2 x 64 x 128 B x 1000 of full-scale memory
        assert "16.4 MB (64 slots/bank)" in up.stdout and "16.4 MB (64 slots/bank)" in status
        assert status.count(" ok ") >= 9

        assert "round 0 installed" in innet(run_dir, "round", "advance").stdout
        second = innet(run_dir, "round", "advance").stdout
        assert "round 1 installed" in second and "{Tokyo, London, Chicago}" in second
        another_client_takes_primary_and_leaves(run_dir, port)

        # every member of round 1's first group contributes; an outsider listens
        outsider = in_host(
            recorded, OUTSIDER, [sys.executable, "-c", LISTEN, f"10.0.{OUTSIDER}.1", "8"]
        )
        members = ",".join(map(str, ROUND1_GROUP0))
        lanes = ("--lanes", str(PACKET_FORMAT.lanes))  # the switches' packet format
        leaders = [
            in_host(
                recorded,
                m,
                [
                    sys.executable,
                    "-m",
                    "tests.netns.innet_host",
                    str(m),
                    str(CHUNKS),
                    "8",
                    members,
                    "20",
                    *lanes,
                ],
            )
            for m in ROUND1_GROUP0
        ]
        reports = [json.loads(p.communicate(timeout=60)[0]) for p in leaders]
        for m, report in zip(ROUND1_GROUP0, reports, strict=True):
            assert report["exact"] == CHUNKS and report["wrong"] == 0, (m, report)
        assert outsider.communicate(timeout=30)[0].strip() == "0"  # others get nothing

        assert stat(innet(run_dir, "counters", "Tokyo").stdout, "contribution") >= CHUNKS
        assert stat(innet(run_dir, "counters", "TYO").stdout, "completed") >= CHUNKS
        assert stat(innet(run_dir, "counters", "Singapore").stdout, "contribution") == 0

        # a switch dies: the service's watchdog restarts it and reinstalls its entries
        victim = pid_of(recorded, "p4switch s3")
        os.kill(victim, signal.SIGTERM)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            st = state(run_dir)
            if pid_of(st, "p4switch s3") != victim and "healthy" in innet(run_dir, "status").stdout:
                break
            time.sleep(0.5)
        else:
            log = (run_dir / "service.log").read_text(errors="replace")[-4000:]
            raise AssertionError(f"the killed switch was not restarted within 60 s:\n{log}")
        recorded = state(run_dir)
        reports = [
            json.loads(p.communicate(timeout=60)[0])
            for p in [
                in_host(
                    recorded,
                    m,
                    [
                        sys.executable,
                        "-m",
                        "tests.netns.innet_host",
                        str(m),
                        str(CHUNKS),
                        "8",
                        members,
                        "20",
                        *lanes,
                    ],
                )
                for m in ROUND1_GROUP0
            ]
        ]
        assert all(r["exact"] == CHUNKS for r in reports), reports  # London's entries are back

        bad = innet(run_dir, "counters", "Atlantis", check=False)
        assert bad.returncode == 2 and "unknown city 'Atlantis'" in bad.stderr
        assert "down" in innet(run_dir, "net", "down").stdout
        assert leftovers(recorded) == []
        assert not (run_dir / "state.json").exists()
        assert innet(run_dir, "status", check=False).returncode == 1
    finally:
        innet(run_dir, "clean", check=False)
    assert leftovers(recorded) == []


def test_clean_after_a_crashed_service(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    innet(
        run_dir,
        "net",
        "up",
        "--hosts",
        "1",
        "--port",
        str(free_port()),
        "--grpc-base-port",
        str(GRPC_BASE),
        "--slots",
        "64",
    )
    recorded = state(run_dir)
    os.kill(recorded["service"]["pid"], signal.SIGKILL)  # no teardown: everything is left
    deadline = time.monotonic() + 10
    while Path(f"/proc/{recorded['service']['pid']}").exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert leftovers(recorded)  # switches, host shells and interfaces still there
    refused = innet(run_dir, "net", "up", "--port", str(free_port()), check=False)
    assert refused.returncode == 2 and "innet clean" in refused.stderr
    cleaned = innet(run_dir, "clean").stdout
    assert "SIGTERM" in cleaned
    assert leftovers(recorded) == []
    assert "nothing to clean" in innet(run_dir, "clean").stdout


def status_until(run_dir: Path, wanted: Callable[[str], bool], what: str) -> str:
    deadline = time.monotonic() + 30
    while not wanted(status := innet(run_dir, "status").stdout):
        assert time.monotonic() < deadline, f"innet status never showed {what}:\n{status}"
        time.sleep(0.2)  # polling interval of the status
    return status


def another_client_takes_primary_and_leaves(run_dir: Path, port: int) -> None:
    """Tokyo's primary taken by another client: `primary: lost`, rounds refused with nothing
    installed; once it leaves, the controller is primary again and healthy."""
    _, topo = api(port, "GET", "/topology")
    tokyo = next(s for s in topo["switches"] if s["city"] == "Tokyo")
    other = SwitchConnection("other", tokyo["grpc_addr"], tokyo["device_id"], (3, 0))
    other.connect(deadline_after(10))
    try:
        status = status_until(run_dir, lambda out: "NOT healthy" in out, "primary lost")
        assert "LOST" in status and "another client is primary" in status
        refused = innet(run_dir, "round", "advance", check=False)
        assert refused.returncode != 0 and "another client is primary" in refused.stderr
        assert api(port, "GET", "/rounds/current")[1]["number"] == 1
    finally:
        other.close()
    status_until(run_dir, lambda out: "NOT healthy" not in out, "healthy again")
    _, health = api(port, "GET", "/health")
    assert health["ok"] and all(s["primary"] == "ok" for s in health["switches"]), health


def api(port: int, method: str, path: str, body: dict | None = None) -> tuple[int, dict]:
    request = urllib.request.Request(
        f"http://127.0.0.1:{port}{path}",
        method=method,
        data=None if body is None else json.dumps(body).encode(),
        headers={"Content-Type": "application/json"},
    )
    try:
        with urllib.request.urlopen(request, timeout=60) as reply:
            return reply.status, json.loads(reply.read())
    except urllib.error.HTTPError as err:
        return err.code, json.loads(err.read())


def wait_state(port: int, states: tuple[str, ...], timeout: float) -> dict:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        _, status = api(port, "GET", "/experiment")
        if status["state"] in states:
            return status
        time.sleep(0.5)  # polling interval of the experiment's status
    raise AssertionError(f"experiment not {states} after {timeout} s: {status}")


def test_experiments_through_the_api(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    port = free_port()
    innet(
        run_dir,
        "net",
        "up",
        "--hosts",
        "1",
        "--port",
        str(port),
        "--grpc-base-port",
        str(GRPC_BASE),
        "--scale",
        "100000",
        "--memory",
        "1.6GB",
    )
    recorded = state(run_dir)
    folders = []
    try:
        code, started = api(port, "POST", "/experiment", {"rounds": 3, "name": "api-test"})
        assert code == 202 and started["state"] == "running", started
        folders.append(Path(started["folder"]))
        code, busy = api(port, "POST", "/experiment", {"rounds": 1})
        assert code == 409 and "running" in busy["detail"]
        done = wait_state(port, ("finished", "failed"), 240)
        assert done["state"] == "finished" and done["done"] == 3, done
        assert [r["status"] for r in done["records"]] == ["ok"] * 3
        for r in done["records"]:  # on time, or flagged with a reason (a busy machine)
            assert r["flags"] or abs(r["time_s"] / r["predicted_s"] - 1) < 0.2, r
            assert all(reason.strip() for reason in r["flags"].values()), r
        (row,) = done["summary"]
        assert row["schedule"] == done["schedule"] and row["final_accuracy"] > 0.5
        assert (folders[0] / "summary.csv").exists() and (folders[0] / "rounds.jsonl").exists()

        code, started = api(port, "POST", "/experiment", {"rounds": 500, "name": "api-stop"})
        assert code == 202
        folders.append(Path(started["folder"]))
        wait_state(port, ("running",), 10)
        code, _ = api(port, "POST", "/experiment/stop")
        assert code == 200
        stopped = wait_state(port, ("stopped", "finished", "failed"), 240)
        assert stopped["state"] == "stopped" and stopped["done"] < 500, stopped
        assert state(run_dir).get("experiment", {}).get("processes") == []
        assert "down" in innet(run_dir, "net", "down").stdout
        assert leftovers(recorded) == []
    finally:
        innet(run_dir, "clean", check=False)
        for folder in folders:
            shutil.rmtree(folder, ignore_errors=True)
