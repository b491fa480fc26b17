"""A scenario's `lanes`: checked at its line, kept in the resolved scenario as its packet
format, and run in the process that reads it, whatever lanes another scenario had there."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from controller.runner.exceptions import ScenarioError
from controller.runner.scenario import parse_scenario
from innet.packetformat import PacketFormat
from innet_cli import main


def test_lanes_default_to_32_and_round_trip() -> None:
    s = parse_scenario("name: l\n")
    assert s.packet_format == PacketFormat(32) and s.to_dict()["lanes"] == 32
    again = parse_scenario("name: l\nlanes: 256\n")
    assert again.packet_format == PacketFormat(256) and again.to_dict()["lanes"] == 256
    assert parse_scenario(yaml.safe_dump(again.to_dict())).packet_format == PacketFormat(256)


@pytest.mark.parametrize(
    ("value", "why"),
    [("48", "takes 32, 64, 128 or 256"), ("0", "at least 1"), ("many", "whole number")],
)
def test_lanes_innet_p4_is_not_built_with_are_refused(value: str, why: str) -> None:
    with pytest.raises(ScenarioError, match=why) as err:
        parse_scenario(f"name: l\nlanes: {value}\n", "s.yaml")
    assert str(err.value).startswith("s.yaml:2: lanes:")


def scenario(tmp_path: Path, lanes: int) -> Path:
    path = tmp_path / f"s{lanes}.yaml"
    path.write_text(
        f"name: l\nscale: 1000\nlanes: {lanes}\nmemory: 51.2MB\nschedules: [all-to-all]\n"
    )
    return path


def test_innet_run_checks_scenarios_of_other_lanes_one_after_another_in_one_process(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["run", str(scenario(tmp_path, 256)), "--check"]) == 0
    wide = capsys.readouterr().out
    # the 2,410-value model in chunks of 256; slots of 1 KB: 2 x 16 x 1 KB x 1000
    assert "update 2560 values (10 chunks)" in wide
    assert "pool 32.8 MB (16 slots/bank)" in wide
    assert main(["run", str(scenario(tmp_path, 32)), "--check"]) == 0
    narrow = capsys.readouterr().out
    assert "update 2432 values (76 chunks)" in narrow  # chunks of 32 lanes
    assert "pool 32.8 MB (128 slots/bank)" in narrow  # slots of 128 B
