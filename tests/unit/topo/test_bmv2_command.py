"""The bmv2 target's command line and where it finds its tools (the process itself runs only where
BMv2 is installed). PATH and the extra directories are fakes in tmp dirs: what this machine has
installed does not matter."""

from __future__ import annotations

from pathlib import Path

import pytest

from topo import bmv2
from topo.bmv2 import bmv2_command, find_tool, missing_tools, require_tools
from topo.exceptions import Bmv2Error


@pytest.fixture
def dirs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path, Path]:
    """(PATH's only directory, first extra directory, second extra directory), all empty."""
    on_path, local, opt = (tmp_path / d for d in ("path", "local", "opt"))
    for d in (on_path, local, opt):
        d.mkdir()
    monkeypatch.setenv("PATH", str(on_path))
    monkeypatch.setattr(bmv2, "EXTRA_TOOL_DIRS", (local, opt))
    return on_path, local, opt


def fake_tool(directory: Path, name: str, executable: bool = True) -> Path:
    path = directory / name
    path.write_text("#!/bin/sh\nexit 0\n")
    path.chmod(0o755 if executable else 0o644)
    return path


def test_ids_ports_and_addresses_are_explicit_and_logging_is_off(
    dirs: tuple[Path, Path, Path],
) -> None:
    argv = bmv2_command({2: "s0-eth2", 1: "s0-eth1"}, "127.0.0.1:50003", 4, 9093)
    assert argv[:3] == ["simple_switch_grpc", "--device-id", "4"]  # found nowhere: the name
    assert argv[3:7] == ["-i", "1@s0-eth1", "-i", "2@s0-eth2"]
    assert "--no-p4" in argv and "--log-console" not in argv
    target = argv[argv.index("--") + 1 :]
    assert target == ["--grpc-server-addr", "127.0.0.1:50003", "--cpu-port", "255"]
    assert argv[argv.index("--thrift-port") + 1] == "9093"


def test_the_console_log_only_on_request(dirs: tuple[Path, Path, Path]) -> None:
    argv = bmv2_command({1: "s0-eth1"}, "127.0.0.1:50000", 1, 9090, log_console=True)
    assert argv.index("--log-console") < argv.index("--")


def test_the_command_is_the_simple_switch_grpc_that_was_found(
    dirs: tuple[Path, Path, Path],
) -> None:
    found = fake_tool(dirs[2], "simple_switch_grpc")
    assert bmv2_command({1: "s0-eth1"}, "127.0.0.1:50000", 1, 9090)[0] == str(found)


def test_path_first_then_the_extra_directories_in_order(dirs: tuple[Path, Path, Path]) -> None:
    on_path, local, opt = dirs
    assert find_tool("p4c-bm2-ss") is None
    in_opt = fake_tool(opt, "p4c-bm2-ss")
    assert find_tool("p4c-bm2-ss") == str(in_opt)
    in_local = fake_tool(local, "p4c-bm2-ss")
    assert find_tool("p4c-bm2-ss") == str(in_local)
    on_path_too = fake_tool(on_path, "p4c-bm2-ss")
    assert find_tool("p4c-bm2-ss") == str(on_path_too)
    assert find_tool("simple_switch_grpc") is None


def test_a_file_that_is_not_executable_is_not_a_tool(dirs: tuple[Path, Path, Path]) -> None:
    fake_tool(dirs[1], "simple_switch_grpc", executable=False)
    assert find_tool("simple_switch_grpc") is None


def test_require_tools_names_exactly_what_is_missing_in_one_line(
    dirs: tuple[Path, Path, Path],
) -> None:
    with pytest.raises(Bmv2Error) as both:
        require_tools()
    message = str(both.value)
    assert "simple_switch_grpc and p4c-bm2-ss" in message and "\n" not in message
    assert "vagrant up" in message and "p4lang" in message and "from source" in message
    assert f"PATH, {dirs[1]}, {dirs[2]}" in message

    fake_tool(dirs[0], "simple_switch_grpc")
    with pytest.raises(Bmv2Error) as one:
        require_tools()
    assert "needs p4c-bm2-ss," in str(one.value) and "simple_switch_grpc" not in str(one.value)
    assert missing_tools() == ["p4c-bm2-ss"]

    fake_tool(dirs[2], "p4c-bm2-ss")
    require_tools()  # both found: no error
    assert missing_tools() == []


def test_compile_bmv2_without_p4c_says_what_to_install(
    dirs: tuple[Path, Path, Path], tmp_path: Path
) -> None:
    with pytest.raises(Bmv2Error, match=r"needs p4c-bm2-ss, not found here .*vagrant up"):
        bmv2.compile_bmv2(Path("p4src/innet.p4"), tmp_path / "build")


def test_compile_bmv2_runs_the_p4c_found_and_names_the_p4info_txtpb(
    dirs: tuple[Path, Path, Path], tmp_path: Path
) -> None:
    log = tmp_path / "argv"
    p4c = dirs[1] / "p4c-bm2-ss"
    p4c.write_text(f'#!/bin/sh\necho "$0 $@" > {log}\n')
    p4c.chmod(0o755)
    compiled = bmv2.compile_bmv2(Path("prog.p4"), tmp_path / "build", {"SLOTS": "64"})
    assert compiled.p4info == tmp_path / "build" / "prog-SLOTS64.p4info.txtpb"
    argv = log.read_text().split()
    assert argv[0] == str(p4c)
    assert argv[argv.index("--p4runtime-files") + 1] == str(compiled.p4info)
    assert argv[-3:] == ["-D", "SLOTS=64", "prog.p4"]


def fake_python(path: Path, imports_thrift: bool) -> Path:
    """An interpreter that can (exit 0) or cannot (exit 1) run `-c "import thrift"`."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"#!/bin/sh\nexit {0 if imports_thrift else 1}\n")
    path.chmod(0o755)
    return path


def fake_cli(directory: Path, shebang: str) -> Path:
    path = directory / "simple_switch_CLI"
    path.write_text(f"#!{shebang}\nimport sswitch_CLI\n")
    path.chmod(0o755)
    return path


@pytest.fixture
def system_python(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The system's python3, here a fake that imports Thrift."""
    python = fake_python(tmp_path / "usr" / "python3", imports_thrift=True)
    monkeypatch.setattr(bmv2, "SYSTEM_PYTHONS", (python,))
    return python


def test_the_cli_runs_with_its_own_interpreter_where_that_imports_thrift(
    dirs: tuple[Path, Path, Path], tmp_path: Path, system_python: Path
) -> None:
    own = fake_python(tmp_path / "own" / "python3", imports_thrift=True)
    cli = fake_cli(dirs[2], str(own))  # found in the second extra directory (/opt/p4/bin)
    assert bmv2.cli_command(9091) == [str(own), str(cli), "--thrift-port", "9091"]


def test_a_venv_python_first_on_path_is_passed_over_for_the_system_s(
    dirs: tuple[Path, Path, Path], system_python: Path
) -> None:
    """`#!/usr/bin/env python3` would pick the venv's python3, which lacks Thrift."""
    fake_python(dirs[0] / "python3", imports_thrift=False)  # the venv's, first on PATH
    cli = fake_cli(dirs[1], "/usr/bin/env python3")
    assert bmv2.cli_command(9090) == [str(system_python), str(cli), "--thrift-port", "9090"]


def test_no_cli_or_no_interpreter_for_it_is_one_line_saying_what_to_install(
    dirs: tuple[Path, Path, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with pytest.raises(Bmv2Error) as missing:
        bmv2.cli_command(9090)
    assert "needs simple_switch_CLI, not found here" in str(missing.value)
    assert "\n" not in str(missing.value)

    bare = fake_python(tmp_path / "usr" / "python3", imports_thrift=False)
    monkeypatch.setattr(bmv2, "SYSTEM_PYTHONS", (bare,))
    fake_cli(dirs[0], str(bare))
    with pytest.raises(Bmv2Error) as unusable:
        bmv2.cli_command(9090)
    message = str(unusable.value)
    assert f"imports thrift; none of {bare} does" in message and "python3-thrift" in message
    assert "\n" not in message


def test_a_cli_that_is_not_a_python_script_runs_as_it_is(dirs: tuple[Path, Path, Path]) -> None:
    cli = fake_cli(dirs[0], "/bin/sh")
    assert bmv2.cli_command(9090) == [str(cli), "--thrift-port", "9090"]


def test_p4c_gets_its_own_include_folder_unless_one_is_given(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A relocatable build with an empty `bin/p4include` beside p4c: p4c would look there first
    and miss core.p4, so the include folder under the same prefix is named for it."""
    monkeypatch.delenv("P4C_16_INCLUDE_PATH", raising=False)
    (tmp_path / "bin" / "p4include").mkdir(parents=True)
    p4c = fake_tool(tmp_path / "bin", "p4c-bm2-ss")
    assert "P4C_16_INCLUDE_PATH" not in bmv2.p4c_environment(str(p4c))  # no core.p4 anywhere
    include = tmp_path / "share" / "p4c" / "p4include"
    include.mkdir(parents=True)
    (include / "core.p4").write_text("")
    assert bmv2.p4c_environment(str(p4c))["P4C_16_INCLUDE_PATH"] == str(include)
    monkeypatch.setenv("P4C_16_INCLUDE_PATH", "/elsewhere")
    assert bmv2.p4c_environment(str(p4c))["P4C_16_INCLUDE_PATH"] == "/elsewhere"
