"""controller/cluster/janitor.py: when the agent that recorded a network is gone without having
undone it, the janitor stops exactly the recorded processes and removes the run directory; when
the agent undid it first, the janitor finds nothing to do."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

from controller.cluster.janitor import alive, clean, watch

AGENT = textwrap.dedent(
    """
    import sys, time
    from pathlib import Path
    from controller.rundir import NetworkRecord, ProcessRecord, RunDir
    run_dir = RunDir(Path(sys.argv[1]))
    run_dir.claim("cluster agent", "building")
    switch = ProcessRecord.of("p4switch s0", int(sys.argv[2]))
    run_dir.update(network=NetworkRecord((switch,), (), sys.argv[1]))
    if sys.argv[3] == "release":
        run_dir.release()
    print("recorded", flush=True)
    time.sleep(600)
    """
)


def start_agent(run_dir: Path, switch: subprocess.Popen[bytes], how: str) -> subprocess.Popen[str]:
    agent = subprocess.Popen(
        [sys.executable, "-c", AGENT, str(run_dir), str(switch.pid), how],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert agent.stdout is not None and agent.stdout.readline().strip() == "recorded"
    return agent


def test_an_agent_killed_outright_leaves_its_recorded_processes_to_the_janitor(
    tmp_path: Path,
) -> None:
    run_dir = tmp_path / "agent"
    switch = subprocess.Popen(["sleep", "600"])
    bystander = subprocess.Popen(["sleep", "600"])  # not recorded: never touched
    try:
        agent = start_agent(run_dir, switch, "keep")
        os.kill(agent.pid, signal.SIGKILL)
        agent.wait()
        done = watch(run_dir, agent.pid, threading.Event())
        assert switch.wait(timeout=30) == -signal.SIGTERM
        assert any(f"PID {switch.pid}" in line for line in done)
        assert not run_dir.exists()
        assert alive(bystander.pid)
    finally:
        for proc in (switch, bystander):
            proc.kill()
            proc.wait()


def test_a_released_run_directory_leaves_the_janitor_nothing_to_do(tmp_path: Path) -> None:
    run_dir = tmp_path / "agent"
    switch = subprocess.Popen(["sleep", "600"])
    try:
        agent = start_agent(run_dir, switch, "release")
        agent.kill()
        agent.wait()
        assert watch(run_dir, agent.pid, threading.Event()) == []
        assert alive(switch.pid)  # the agent released it: not the janitor's any more
        assert not run_dir.exists()
    finally:
        switch.kill()
        switch.wait()


def test_a_stopped_janitor_cleans_at_once_and_a_missing_directory_is_nothing(
    tmp_path: Path,
) -> None:
    stop = threading.Event()
    stop.set()
    assert watch(tmp_path / "never", os.getpid(), stop) == []  # this process is alive
    assert clean(tmp_path / "never") == []
    assert not alive(2**22 + 1)  # above any PID Linux hands out
