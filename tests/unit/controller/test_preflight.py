"""What `innet net up` and `innet run` check before anything starts: the target's tools are
installed, and the shaping asked for works on this kernel. Each refusal is one line naming what
is missing, with a non-zero status, and nothing is left behind (no service, no run directory
claimed). As root only: both commands refuse non-root users before these checks."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from innet_cli import main
from topo import bmv2
from topo.bmv2 import missing_tools
from topo.shaping import netem_available

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="innet net up and run need root")


SCENARIO = "SCENARIO"  # a 32-lane scenario in the test's folder: this process has 32 lanes


def one_line_error(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    code = main(list(argv))
    out, err = capsys.readouterr()
    assert code != 0 and not out, out
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    return lines[0]


def hide_bmv2(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Whatever this machine has installed, BMv2's tools are found nowhere."""
    (tmp_path / "empty").mkdir()
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    monkeypatch.setattr(bmv2, "EXTRA_TOOL_DIRS", ())
    assert missing_tools() == ["simple_switch_grpc", "p4c-bm2-ss"]


def scenario(folder: Path) -> str:
    path = folder / "s.yaml"
    path.write_text("name: preflight\nmemory: [25.6MB, 1.6GB]\nschedules: [all-to-all]\n")
    return str(path)


@pytest.mark.parametrize("command", [["net", "up"], ["run", SCENARIO]])
def test_bmv2_without_its_tools_says_what_to_install(
    command: list[str],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    hide_bmv2(tmp_path, monkeypatch)
    run_dir = tmp_path / "run"
    command = [scenario(tmp_path) if word == SCENARIO else word for word in command]
    line = one_line_error(capsys, *command, "--target", "bmv2", "--run-dir", str(run_dir))
    for missing in missing_tools():
        assert missing in line
    assert "vagrant up" in line and "p4lang" in line
    assert not run_dir.exists()  # nothing started, nothing claimed


@pytest.mark.skipif(netem_available(), reason="this kernel has netem: kernel shaping works")
@pytest.mark.parametrize("command", [["net", "up"], ["run", SCENARIO]])
def test_kernel_shaping_without_netem_is_refused_before_anything_starts(
    command: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run_dir = tmp_path / "run"
    command = [scenario(tmp_path) if word == SCENARIO else word for word in command]
    line = one_line_error(capsys, *command, "--shaping", "kernel", "--run-dir", str(run_dir))
    assert "needs netem" in line and "--shaping links" in line
    assert not run_dir.exists()


def test_bmv2_cannot_be_asked_to_shape_its_own_ports(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("topo.mininet_net.require_tools", lambda: None)  # as if installed
    line = one_line_error(
        capsys,
        "net",
        "up",
        "--target",
        "bmv2",
        "--shaping",
        "switch",
        "--run-dir",
        str(tmp_path / "run"),
    )
    assert "BMv2 cannot shape its own ports: use --shaping links" in line
