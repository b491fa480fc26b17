"""A scenario's `lanes`: checked at its line, kept in the resolved scenario, and run by starting
innet run again with INNET_LANES set where the process has other lanes."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from controller.cli import main
from controller.runner.exceptions import LanesMismatch, ScenarioError
from controller.runner.scenario import parse_scenario
from topo.siteplan import LANES

REPO = Path(__file__).resolve().parents[4]
CLI = "import sys; from controller.cli import main; sys.exit(main())"

pytestmark = pytest.mark.skipif(LANES != 32, reason="these tests run in a 32-lane process")


def test_lanes_default_to_the_process_and_round_trip() -> None:
    s = parse_scenario("name: l\n")
    assert s.lanes == 32 and s.to_dict()["lanes"] == 32
    again = parse_scenario("name: l\nlanes: 32\n")
    assert again == s and parse_scenario(yaml.safe_dump(again.to_dict())) == s


def test_other_lanes_than_the_process_s_are_a_mismatch_at_their_line() -> None:
    with pytest.raises(LanesMismatch) as err:
        parse_scenario("name: l\nscale: 1000\nlanes: 256\n", "s.yaml")
    assert err.value.lanes == 256 and err.value.line == 3
    assert str(err.value).startswith("s.yaml:3: lanes: 256 lanes per packet")
    assert "INNET_LANES=256" in str(err.value)


@pytest.mark.parametrize(
    ("value", "why"),
    [("48", "built with 32, 64, 128, 256"), ("0", "at least 1"), ("many", "whole number")],
)
def test_lanes_innet_p4_is_not_built_with_are_refused(value: str, why: str) -> None:
    with pytest.raises(ScenarioError, match=why) as err:
        parse_scenario(f"name: l\nlanes: {value}\n", "s.yaml")
    assert not isinstance(err.value, LanesMismatch)
    assert str(err.value).startswith("s.yaml:2: lanes:")


def scenario(tmp_path: Path, lanes: int) -> Path:
    path = tmp_path / "s.yaml"
    path.write_text(f"name: l\nscale: 1000\nlanes: {lanes}\nmemory: 51.2MB\n"
                    "schedules: [all-to-all]\n")  # fmt: skip
    return path


def test_innet_run_starts_again_with_the_scenario_s_lanes(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "INNET_LANES"}
    proc = subprocess.run([sys.executable, "-c", CLI, "run", str(scenario(tmp_path, 256)),
                           "--check"], cwd=REPO, env=env, capture_output=True, text=True,
                          timeout=120, check=False)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert "starting again with INNET_LANES=256" in proc.stderr
    # the 2,410-value model in chunks of 256 (76 chunks of 32 in a 32-lane process)
    assert "update 2560 values (10 chunks)" in proc.stdout
    assert "pool 32.8 MB (16 slots/bank)" in proc.stdout  # slots of 1 KB: 2 x 16 x 1 KB x 1000


def test_a_cli_called_with_arguments_does_not_exec_and_says_why(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["run", str(scenario(tmp_path, 128)), "--check"]) == 2
    assert "128 lanes per packet, but this process runs 32" in capsys.readouterr().err
