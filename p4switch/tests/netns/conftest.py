"""Fixtures for tests that run the switch between network namespaces (root only).

Names start with `p4t<pid>` so parallel runs and other users of the machine are never touched;
teardown deletes exactly the namespaces built here and stops exactly the processes started here.
"""

from __future__ import annotations

import itertools
import os
import shutil
import subprocess
from collections.abc import Iterator

import pytest

from tests.netns import topology
from tests.netns.harness import SwitchLauncher, SwitchProcess

_modules = itertools.count()


def _why_unavailable() -> str | None:
    if os.geteuid() != 0:
        return "needs root (network namespaces and raw sockets); run the tests as root"
    for tool in ("ip", "ethtool", "ping"):
        if shutil.which(tool) is None:
            return f"needs the {tool!r} command (make setup installs it)"
    probe = f"p4t{os.getpid()}-probe"
    done = subprocess.run(["ip", "netns", "add", probe], capture_output=True, text=True)
    if done.returncode != 0:
        return f"'ip netns add' does not work here: {done.stderr.strip()}"
    topology.destroy([probe])
    return None


@pytest.fixture(scope="session")
def netns_available() -> None:
    reason = _why_unavailable()
    if reason is not None:
        pytest.skip(f"netns test skipped: {reason}")


@pytest.fixture(scope="module")
def net(netns_available: None) -> Iterator[topology.TwoHostNet]:
    prefix = f"p4t{os.getpid()}m{next(_modules)}"
    built = topology.build(prefix)
    try:
        yield built
    finally:
        topology.destroy(built.namespaces)


@pytest.fixture
def started() -> Iterator[list[SwitchProcess]]:
    """The processes a test starts with `harness.start_controlled`; each is stopped afterwards,
    and no other process."""
    processes: list[SwitchProcess] = []
    try:
        yield processes
    finally:
        for process in processes:
            process.terminate()


@pytest.fixture
def switches(net: topology.TwoHostNet, tmp_path) -> Iterator[SwitchLauncher]:
    launcher = SwitchLauncher(net, tmp_path)
    try:
        yield launcher
    finally:
        launcher.stop_all()
