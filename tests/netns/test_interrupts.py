"""Ctrl-C and SIGTERM at each moment of `innet run`, on a machine whose every core is busy.

A user on a busy laptop presses Ctrl-C: whatever the run was doing (starting up, checking the
machine, building the network, playing a round, tearing down), it must stop within
STOP_WITHIN_S of wall time, leave no process, interface or namespace and no state.json behind,
keep whole results of the rounds recorded so far, say on stderr how far it got, and exit 130.
A second signal during the teardown must not cut it short.

Each run is started with SIGINT ignored, as a background job of a non-interactive shell starts
it (`innet run ... &` in a script): the run must handle the signal itself. The test waits for
the run's own progress line naming the moment (`--no-progress` prints one per phase; for the
start-up, which has none, until the run handles SIGINT) before it signals, beside two busy
loops and a niced third. Every process the run starts inherits a mark in its environment;
after the exit none that carries it may be alive.

Needs root, Mininet (the Python package), mnexec and nsenter; skipped with the reason otherwise.
"""

from __future__ import annotations

import csv
import json
import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from innet.cpuload import CpuHogs
from tests.netns.test_experiment import REPO, alive, finish, records, start_run, write_scenario
from tests.netns.test_testbed import GRPC_BASE as SERVICE_GRPC_BASE
from tests.netns.test_testbed import free_port
from tests.netns.topology import why_no_mininet
from topo.loader import default_wan
from topo.mininet_hosts import check_names

pytestmark = [pytest.mark.netns, pytest.mark.slow]

STOP_WITHIN_S = 10.0  # the bound: from the signal to the exit, every core busy
START_TIMEOUT_S = 300.0  # to reach a moment: a hang guard, not a measurement
FREE_TIMEOUT_S = 1800.0  # for another test's testbed to go (a shared machine): a hang guard
MARK = "INNET_INTERRUPT_TEST"  # environment variable every process of the run inherits

_REASON = why_no_mininet(("ip", "tc", "ethtool", "nsenter"))
if _REASON is not None:
    pytest.skip(f"interrupt tests skipped: {_REASON}", allow_module_level=True)


@pytest.fixture(autouse=True)
def busy_machine() -> Iterator[None]:
    """Two busy loops and a niced third for the whole test, stopped (by PID) after it."""
    with CpuHogs(2), CpuHogs(1) as niced:
        for pid in niced.pids:
            os.setpriority(os.PRIO_PROCESS, pid, 10)
        yield


@dataclass
class Started:
    """One `innet run`: its process, stderr file, results folder, run directory and mark."""

    proc: subprocess.Popen[str]
    stderr: Path
    out: Path
    run_dir: Path
    mark: str

    def text(self) -> str:
        return self.stderr.read_text(errors="replace")

    def wait_for(self, line: str) -> None:
        """Until the run's stderr holds `line` (a phase of the progress, a notice)."""
        deadline = time.monotonic() + START_TIMEOUT_S
        while line not in self.text():
            if self.proc.poll() is not None:
                raise AssertionError(
                    f"innet run exited ({self.proc.returncode}) before {line!r}:\n{self.text()}"
                )
            if time.monotonic() > deadline:
                raise AssertionError(f"no {line!r} after {START_TIMEOUT_S} s:\n{self.text()}")
            time.sleep(0.05)  # polling interval of the stderr file

    def stop(self, signum: int, again_at: str | None = None) -> None:
        """Signal the run (and once more when stderr shows `again_at`); it must exit 130 within
        STOP_WITHIN_S of the first signal."""
        sent = time.monotonic()
        self.proc.send_signal(signum)
        if again_at is not None:
            self.wait_for(again_at)
            self.proc.send_signal(signum)
        left = max(0.0, STOP_WITHIN_S - (time.monotonic() - sent))
        code, _stdout, _ = finish(self.proc, left)  # the one timed assertion
        took = time.monotonic() - sent
        print(f"\n{signal.Signals(signum).name} to exit: {took:.2f} s\n{self.text()}")
        assert code == 130, self.text()


def start(
    tmp_path: Path, scenario: Path, monkeypatch: pytest.MonkeyPatch, *options: str
) -> Started:
    """The run started with SIGINT ignored (as a background job inherits it) and marked. Past
    the machine check it runs with `--calibration warn`: the busy loops leave too little CPU
    for the plan, which the check would refuse."""
    wait_for_free_names()
    mark = uuid.uuid4().hex
    monkeypatch.setenv(MARK, mark)
    stderr = tmp_path / "stderr.txt"
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)  # inherited by the child
    try:
        with stderr.open("w") as err:
            proc, out, run_dir = start_run(tmp_path, scenario, *options, stderr=err)
    finally:
        signal.signal(signal.SIGINT, previous)
    return Started(proc, stderr, out, run_dir, mark)


def nine_city_names(hosts: int = 1) -> list[str]:
    """The root-namespace interfaces a nine-city testbed of `hosts` per city creates."""
    return check_names(default_wan(), hosts, "")


def wait_for_free_names() -> None:
    """Until no nine-city testbed (another test's, on a shared machine) holds the names this
    run will create: the run would refuse to start, and the checks would see its interfaces."""
    deadline = time.monotonic() + FREE_TIMEOUT_S
    while taken := [n for n in nine_city_names() if Path("/sys/class/net", n).exists()]:
        if time.monotonic() > deadline:
            raise AssertionError(f"another testbed holds {taken[:3]} after {FREE_TIMEOUT_S} s")
        time.sleep(0.5)  # polling interval while another testbed is up


def marked_processes(mark: str) -> list[str]:
    """Processes alive whose environment carries `mark`, as "PID: command line"."""
    found = []
    wanted = f"{MARK}={mark}".encode()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if wanted not in (entry / "environ").read_bytes().split(b"\0"):
                continue
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:  # gone meanwhile
            continue
        found.append(f"{entry.name}: {cmdline}")
    return found


def assert_nothing_left(run: Started, hosts: int = 1) -> None:
    """No process of the run alive, none of its interfaces or namespaces, no state file."""
    assert marked_processes(run.mark) == [], run.text()
    assert [n for n in nine_city_names(hosts) if Path("/sys/class/net", n).exists()] == []
    namespaces = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    assert f"innet-netem-{run.proc.pid}" not in namespaces  # the shaping check's namespace
    assert not (run.run_dir / "state.json").exists()


def assert_whole_results(run: Started) -> list[dict]:
    """Every round line whole, summary.csv of exactly those rounds; the round records."""
    kept = records(run.out)  # each line parses: none cut short
    rows = list(csv.DictReader((run.out / "summary.csv").open()))
    assert sum(int(row["rounds"]) for row in rows) == len(kept), rows
    assert all(r["status"] == "ok" for r in kept), kept
    return kept


def the_line(run: Started) -> str:
    """The run's last word: 'innet: interrupted (SIGNAL) during ...'."""
    (line,) = [x for x in run.text().splitlines() if x.startswith("innet: interrupted")]
    return line


def test_ctrl_c_during_the_machine_check(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    run = start(tmp_path, write_scenario(tmp_path / "s.yaml"), monkeypatch)
    run.wait_for("] the machine check")
    run.stop(signal.SIGINT)
    assert "during the machine check; nothing built, no results written" in the_line(run)
    assert not run.out.exists() or not any(run.out.iterdir())
    assert_nothing_left(run)


def handles(pid: int, signum: int) -> bool:
    """Whether process `pid` has a handler of its own for `signum` (/proc/PID/status SigCgt):
    one started with SIGINT ignored has one once its StopSignals are installed."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("SigCgt:"):
            return bool(int(line.split()[1], 16) >> (signum - 1) & 1)
    raise AssertionError(f"no SigCgt in /proc/{pid}/status")


def test_ctrl_c_while_a_run_of_other_lanes_starts_up(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """SIGINT as a run of 256 lanes (not innet.p4's default 32) starts up, loading and planning
    its scenario: it stops there, not half-way, and not by dying before its handler is set.
    The start-up prints no progress line, so the test waits for the run's own SIGINT handler."""
    run = start(tmp_path, write_scenario(tmp_path / "s.yaml", lanes=256), monkeypatch)
    deadline = time.monotonic() + START_TIMEOUT_S
    while not handles(run.proc.pid, signal.SIGINT):
        assert run.proc.poll() is None and time.monotonic() < deadline, run.text()
        time.sleep(0.01)  # polling interval of the run's signal handlers
    run.stop(signal.SIGINT)
    assert "during start-up; nothing built, no results written" in the_line(run)
    assert_nothing_left(run)


def test_sigterm_while_the_network_is_built(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    run = start(tmp_path, write_scenario(tmp_path / "s.yaml"), monkeypatch, "--calibration", "warn")
    run.wait_for("] the network's start-up")
    first_switch = run.run_dir / "switches" / "s0.log"  # hosts and links made, switches starting
    deadline = time.monotonic() + START_TIMEOUT_S
    while not first_switch.exists():
        assert run.proc.poll() is None and time.monotonic() < deadline, run.text()
        time.sleep(0.05)  # polling interval of the switches' logs
    run.stop(signal.SIGTERM)
    line = the_line(run)
    assert "(SIGTERM) during the network's start-up @ 1.6 GB; 0 rounds recorded" in line, line
    assert f"network torn down; results so far in {run.out}" in line
    assert_nothing_left(run)
    assert assert_whole_results(run) == []


def test_ctrl_c_in_a_round_then_again_during_the_teardown(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The first SIGINT stops a round; the second, sent as the teardown begins, is noted and
    hurries it, and nothing is left behind either."""
    scenario = write_scenario(tmp_path / "s.yaml", training={"rounds": 50})
    run = start(tmp_path, scenario, monkeypatch, "--calibration", "warn")
    run.wait_for("[1/50] inna all-to-all @ 1.6 GB")  # a round recorded, the next one playing
    run.stop(signal.SIGINT, again_at="] the teardown @ 1.6 GB")
    assert "SIGINT again: still tearing down" in run.text()
    line = the_line(run)
    assert "(SIGINT) during round " in line and " of inna all-to-all @ 1.6 GB;" in line, line
    assert_nothing_left(run)
    kept = assert_whole_results(run)
    assert 1 <= len(kept) < 50
    assert f"; {len(kept)} round{'s' if len(kept) > 1 else ''} recorded; network torn down" in line


def test_sigterm_during_the_teardown(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """After the last round: the teardown goes on to its end, then the run says it was
    stopped there (130), with every round's results."""
    scenario = write_scenario(tmp_path / "s.yaml", training={"rounds": 2})
    run = start(tmp_path, scenario, monkeypatch, "--calibration", "warn")
    run.wait_for("] the teardown @ 1.6 GB")
    run.stop(signal.SIGTERM)
    line = the_line(run)
    assert "(SIGTERM) during the teardown @ 1.6 GB; 2 rounds recorded" in line, line
    assert_nothing_left(run)
    assert len(assert_whole_results(run)) == 2
    network = json.loads((run.out / "network.json").read_text())
    assert list(network) == ["1.6 GB"]


# --- the service: `innet net up` -------------------------------------------------------------


def net_up(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[subprocess.Popen[str], Path]:
    """`innet net up` started with SIGINT ignored (which the service inherits) and marked."""
    wait_for_free_names()
    monkeypatch.setenv(MARK, uuid.uuid4().hex)
    run_dir = tmp_path / "run"
    argv = [
        sys.executable,
        "-c",
        "import sys; from innet_cli import main; sys.exit(main())",
        "net",
        "up",
        "--hosts",
        "1",
        "--port",
        str(free_port()),
        "--grpc-base-port",
        str(SERVICE_GRPC_BASE),
        "--scale",
        "100000",
        "--memory",
        "1.6GB",
        "--run-dir",
        str(run_dir),
    ]
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)  # inherited by the child
    try:
        proc = subprocess.Popen(
            argv, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
    finally:
        signal.signal(signal.SIGINT, previous)
    return proc, run_dir


def service_left(run_dir: Path) -> list[str]:
    """What a stopped service must not leave: its state file, its processes, interfaces."""
    left = [str(run_dir / "state.json")] if (run_dir / "state.json").exists() else []
    left += marked_processes(os.environ[MARK])
    return left + [n for n in nine_city_names() if Path("/sys/class/net", n).exists()]


def test_ctrl_c_while_net_up_builds_the_testbed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Ctrl-C at `innet net up` while its service builds the network: the service is stopped
    and tears down what it built; net up says so and exits 130."""
    proc, run_dir = net_up(tmp_path, monkeypatch)
    deadline = time.monotonic() + START_TIMEOUT_S
    while '"building"' not in read_or_empty(run_dir / "state.json"):
        assert proc.poll() is None and time.monotonic() < deadline, proc.stderr
        time.sleep(0.05)  # polling interval of the state file
    sent = time.monotonic()
    proc.send_signal(signal.SIGINT)
    code, _stdout, stderr = finish(proc, STOP_WITHIN_S)  # the one timed assertion
    print(f"\nSIGINT to net up's exit: {time.monotonic() - sent:.2f} s\n{stderr}")
    assert code == 130, stderr
    assert "interrupted (SIGINT) while the testbed was built: the service (PID" in stderr
    assert service_left(run_dir) == []


def test_ctrl_c_to_the_service_while_it_serves(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    proc, run_dir = net_up(tmp_path, monkeypatch)
    code, _stdout, stderr = finish(proc, START_TIMEOUT_S)
    assert code == 0, stderr
    service = json.loads((run_dir / "state.json").read_text())["service"]["pid"]
    sent = time.monotonic()
    os.kill(service, signal.SIGINT)
    while alive(service):
        took = time.monotonic() - sent
        assert took < STOP_WITHIN_S, f"the service still runs {took:.1f} s after SIGINT"
        time.sleep(0.05)  # polling interval while the service stops
    print(f"\nSIGINT to the service's exit: {time.monotonic() - sent:.2f} s")
    log = (run_dir / "service.log").read_text()
    assert "stopped by SIGINT; testbed torn down" in log, log[-2000:]
    assert service_left(run_dir) == []


def read_or_empty(path: Path) -> str:
    try:
        return path.read_text()
    except FileNotFoundError:
        return ""
