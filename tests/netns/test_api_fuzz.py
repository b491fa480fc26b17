"""Schemathesis against the service of `innet net up` on the nine cities: the service's own
OpenAPI schema, every operation with cases that fit it and cases that break it, a bounded
number of each (tests/unit/controller/service/fuzzing.py says what is checked). Afterwards the
testbed is still healthy and installs the next round on every switch.

Needs root, Mininet (the Python package) and mnexec; skipped with the reason otherwise.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import httpx
import pytest
import schemathesis
from schemathesis import GenerationMode

from tests.netns.harness import api_port
from tests.netns.topology import why_no_mininet
from tests.unit.controller.service.fuzzing import fuzz, install_schedules

pytestmark = [pytest.mark.netns, pytest.mark.slow]

REPO = Path(__file__).resolve().parents[2]
GRPC_BASE = 21000
TOKEN = "fuzz-token-of-the-netns-run"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
EXAMPLES = 25  # per operation and mode
SCHEDULES = 8  # random schedules of the nine cities set and installed afterwards

_REASON = why_no_mininet(("ip", "tc"))
if _REASON is not None:
    pytest.skip(f"API fuzz test skipped: {_REASON}", allow_module_level=True)


def innet(run_dir: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "INNET_RUN_DIR": str(run_dir)}
    argv = [sys.executable, "-c", "import sys; from innet_cli import main; sys.exit(main())"]
    done = subprocess.run(
        [*argv, *args], cwd=REPO, env=env, capture_output=True, text=True, timeout=300
    )
    if check and done.returncode != 0:
        raise AssertionError(f"innet {' '.join(args)}: {done.returncode}\n{done.stderr}")
    return done


def _skip(label: str, mode: GenerationMode) -> bool:
    """Not /shutdown (it ends the service), and no experiment that fits the schema: it would
    train for up to 10,000 rounds. Bodies that break the schema must be refused, so they run."""
    return label == "POST /shutdown" or (label == "POST /experiment" and mode.is_positive)


def test_fuzzing_the_api_leaves_the_testbed_healthy(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    token_file = tmp_path / "token"
    token_file.write_text(TOKEN + "\n")
    port = api_port(GRPC_BASE)
    base = f"http://127.0.0.1:{port}"
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
        "--slots",
        "64",
        "--token-file",
        str(token_file),
    )
    try:
        schema = schemathesis.openapi.from_url(f"{base}/openapi.json", headers=AUTH)
        run = fuzz(schema, AUTH, EXAMPLES, skip=_skip)
        print(f"schemathesis: {run.summary()}")
        assert run.failures == [], "\n".join(run.failures)
        assert 500 not in run.statuses and run.statuses.get(422, 0) > 100, run.summary()

        assert httpx.get(f"{base}/health").status_code == 401  # the token is still wanted
        api = httpx.Client(base_url=base, headers=AUTH, timeout=120)
        assert api.post("/experiment/stop").json()["state"] == "idle"  # none was started
        health = api.get("/health").json()
        assert health["ok"] is True, health
        cities = [c["name"] for c in api.get("/topology").json()["cities"]]
        assert install_schedules(api, cities, SCHEDULES) == SCHEDULES
        assert "healthy" in innet(run_dir, "status").stdout
        assert "down" in innet(run_dir, "net", "down").stdout
    finally:
        innet(run_dir, "clean", check=False)
