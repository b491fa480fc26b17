"""The docs' blocks marked `netns`, run as root: README.md's emulated WAN (`innet net up`,
`status`, `round advance`, `counters`, `net down`) and docs/testbed.md's `build_network`.

The service comes up once, as the README says, in a run directory of its own under tmp_path
(`INNET_RUN_DIR`), on a free API port and P4Runtime ports from 20800 (away from the other
tests'); whatever happens, `innet net down` then `innet clean` leave nothing behind. The rules
for marking blocks are in tests/docs/__init__.py; tests/unit/test_docs.py parses these blocks.

Needs root, Mininet (the Python package), mnexec; skipped with the reason otherwise.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.docs import blocks
from tests.netns.harness import api_port
from tests.netns.topology import why_no_mininet

pytestmark = [pytest.mark.netns, pytest.mark.slow]

GRPC_BASE = 20800

_REASON = why_no_mininet(("ip", "tc", "ethtool"))
if _REASON is not None:
    pytest.skip(f"docs netns test skipped: {_REASON}", allow_module_level=True)

# What the README says these commands show, checked in their output.
SHOWS = {
    ("net", "up"): ["9 switches programmed", "slot pool 32.8 MB (128 slots/bank)"],
    ("status",): ["healthy", "32.8 MB (128 slots/bank)", "no round installed yet"],
    ("round", "advance"): ["round 0 installed on every switch"],
    ("counters", "Tokyo"): ["contribution", "s0-eth1"],
    ("net", "down"): ["innet testbed down"],
}


def free_port() -> int:
    return api_port(GRPC_BASE)


def innet(*args: str, env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(blocks.VENV_BIN / "innet"), *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def test_the_blocks_marked_netns_run(tmp_path: Path) -> None:
    netns = [b for b in blocks.all_blocks()[0] if b.mode == "netns"]
    assert {b.lang for b in netns} == {"sh", "python"}, [b.where for b in netns]
    run_dir, scratch, checkout = tmp_path / "run", tmp_path / "tmp", tmp_path / "checkout"
    scratch.mkdir()
    checkout.mkdir()
    work = blocks.workdir(checkout)
    env = blocks.command_env(INNET_RUN_DIR=str(run_dir), TMPDIR=str(scratch))
    seen: list[tuple[str, ...]] = []
    try:
        for block in netns:
            if block.lang == "python":
                assert blocks.run_python(block, work, env, timeout=240) is None
                continue
            for cmd in blocks.commands(block):
                argv = cmd.argv
                if cmd.program == "innet" and argv[1:3] == ("net", "up"):  # its own ports
                    argv += ("--port", str(free_port()), "--grpc-base-port", str(GRPC_BASE))
                done = blocks.run_command(
                    blocks.Command(cmd.where, cmd.text, argv, cmd.status), work, env
                )
                assert blocks.outcome(cmd, done) is None
                for words, shown in SHOWS.items():
                    if cmd.program == "innet" and argv[1 : 1 + len(words)] == words:
                        missing = [s for s in shown if s not in done.stdout]
                        assert missing == [], f"{cmd.where}: {missing} not in\n{done.stdout}"
                        seen.append(words)
        assert sorted(seen) == sorted(SHOWS), "the README's commands changed: update SHOWS"
    finally:
        if (run_dir / "state.json").exists():
            innet("net", "down", env=env, cwd=work)
        cleaned = innet("clean", env=env, cwd=work)
        assert cleaned.returncode == 0, cleaned.stderr
    assert not (run_dir / "state.json").exists()
