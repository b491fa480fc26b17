"""The netem probe (topo.shaping.netem_available) leaves no namespace behind: a stop signal in
the middle of it waits until its namespace is deleted, and one left by a process killed outright
is deleted by the next probe. Needs root and `ip netns`."""

from __future__ import annotations

import os
import signal
import subprocess
from typing import Any

import pytest

from innet.stopping import StopSignals
from topo import shaping

pytestmark = [pytest.mark.netns, pytest.mark.usefixtures("netns_available")]


def namespaces() -> list[str]:
    listed = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True, check=True)
    return [line.split()[0] for line in listed.stdout.splitlines() if line.split()]


def test_a_probe_left_by_a_process_that_is_gone_is_deleted_and_a_live_one_s_kept() -> None:
    gone = subprocess.Popen(["true"])
    gone.wait()  # its PID is no process's now
    with subprocess.Popen(["sleep", "60"]) as live:
        stale = f"{shaping.PROBE_PREFIX}{gone.pid}"
        kept = f"{shaping.PROBE_PREFIX}{live.pid}"
        for name in (stale, kept):
            subprocess.run(["ip", "netns", "add", name], check=True)
        try:
            assert stale in shaping.delete_stale_probes()
            assert stale not in namespaces() and kept in namespaces()
        finally:
            for name in (stale, kept):
                subprocess.run(["ip", "netns", "del", name], capture_output=True, check=False)
            live.kill()


def test_ctrl_c_in_the_middle_of_the_probe_waits_for_its_namespace_to_go(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """SIGINT arrives just after `ip netns add` returns: the probe still deletes its namespace,
    then the signal is raised."""
    real = subprocess.run

    def run(argv: list[str], *args: Any, **kwargs: Any) -> subprocess.CompletedProcess[str]:
        done = real(argv, *args, **kwargs)
        if argv[:3] == ["ip", "netns", "add"]:
            signal.raise_signal(signal.SIGINT)
        return done

    signals = StopSignals().install()
    monkeypatch.setattr(shaping.subprocess, "run", run)
    shaping.netem_available.cache_clear()
    try:
        with pytest.raises(KeyboardInterrupt):
            shaping.netem_available()
    finally:
        signals.restore()
        shaping.netem_available.cache_clear()
    assert f"{shaping.PROBE_PREFIX}{os.getpid()}" not in namespaces()
