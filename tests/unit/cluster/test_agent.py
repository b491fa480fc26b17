"""controller/cluster/agent.py without Ray: the island logs are handed over once, each cut to its
last bytes; a node asked for what it does not hold says so, naming itself."""

from __future__ import annotations

from pathlib import Path

import pytest

from controller.cluster.agent import NodeAgent
from controller.exceptions import RunDirError
from controller.rundir import RunDir


def test_the_island_logs_are_handed_over_once_each_cut_to_its_tail(tmp_path: Path) -> None:
    agent = NodeAgent("127.0.0.1")
    agent._run_dir = RunDir(tmp_path)
    logs = tmp_path / "logs"
    logs.mkdir()
    (logs / "h0_1.log").write_text("first\n" * 3)
    (logs / "h1_1.log").write_text("x" * 100)
    assert agent.islands_logs(most_bytes=10) == {"h0_1": "rst\nfirst\n", "h1_1": "x" * 10}
    assert agent.islands_logs() == {}  # handed over: what comes next is new


def test_a_node_asked_for_what_it_does_not_hold_names_itself() -> None:
    agent = NodeAgent("10.250.0.9")
    assert agent.islands_logs() == {}
    with pytest.raises(RunDirError, match=r"node 10\.250\.0\.9: no network is built here"):
        agent.port_counters(0)
    with pytest.raises(RunDirError, match=r"node 10\.250\.0\.9: no island processes run here"):
        agent.islands_send(0, None)  # type: ignore[arg-type]
    agent.close()  # nothing built: nothing to tear down
