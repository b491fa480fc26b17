"""Every P4 program the project's tests compile, on p4c as on p4switch: p4c-bm2-ss takes it,
and the P4Info p4c writes agrees with p4switch's in all it says of every object, by name and
by id (`python -m p4switch.p4info_diff`, which `make p4` runs on innet.p4).

Skipped (with the reason, by tests/bmv2/conftest.py) where p4c-bm2-ss is missing.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from google.protobuf import text_format
from p4.config.v1 import p4info_pb2
from p4switch import EXAMPLES, compile_file

from innet.exceptions import one_line
from innet.packetformat import PacketFormat
from topo.bmv2 import bmv2_pipeline
from topo.exceptions import Bmv2Error
from topo.siteplan import program_defines

pytestmark = [pytest.mark.bmv2]

REPO = Path(__file__).resolve().parents[2]
PROGRAMS = sorted(
    [
        *(REPO / "p4switch" / "tests" / "programs").glob("*.p4"),
        *(REPO / "p4switch" / "tests" / "tutorials").glob("*.p4"),  # flowcache's idle timeouts
    ]
)


def differences(reference: p4info_pb2.P4Info, ours: p4info_pb2.P4Info, folder: Path) -> str:
    """What `python -m p4switch.p4info_diff` finds between p4c's P4Info and p4switch's, one
    line each: "" when they agree."""
    paths = []
    for name, info in (("p4c", reference), ("p4switch", ours)):
        paths.append(folder / f"{name}.p4info.txtpb")
        paths[-1].write_text(text_format.MessageToString(info))
    command = [sys.executable, "-m", "p4switch.p4info_diff", *map(str, paths)]
    done = subprocess.run(command, capture_output=True, text=True, check=False, timeout=60)
    assert done.returncode in (0, 1), done.stderr  # 2: a file it could not read
    return done.stdout if done.returncode else ""


@pytest.mark.parametrize("program", PROGRAMS, ids=[p.name for p in PROGRAMS])
def test_p4c_takes_the_program_and_its_p4info_agrees_with_p4switch_s(
    program: Path, tmp_path: Path
) -> None:
    reference = bmv2_pipeline(program, tmp_path, {}).p4info
    assert differences(reference, compile_file(program).p4info, tmp_path) == ""


@pytest.mark.parametrize(("slots", "lanes"), [(1, 32), (4, 32), (64, 32), (4, 256)])
def test_innet_p4_agrees_for_every_pool_the_testbed_compiles(
    slots: int, lanes: int, tmp_path: Path
) -> None:
    program = REPO / "p4src" / "innet.p4"
    defines = program_defines(PacketFormat(lanes), slots)
    reference = bmv2_pipeline(program, tmp_path, defines).p4info
    ours = compile_file(program, [program.parent], defines).p4info
    assert differences(reference, ours, tmp_path) == ""


def test_a_program_p4c_refuses_is_one_error_naming_the_file_and_line(tmp_path: Path) -> None:
    program = tmp_path / "broken.p4"
    source = (EXAMPLES / "l2.p4").read_text()
    lines = source.splitlines()
    at = len(lines) // 2  # inside a control block
    lines.insert(at, "this is not P4;")
    program.write_text("\n".join(lines) + "\n")
    with pytest.raises(Bmv2Error) as refused:
        bmv2_pipeline(program, tmp_path / "build", {})
    message = one_line(refused.value)
    assert message.startswith(f"p4c-bm2-ss refused {program}: "), message
    assert f"broken.p4({at + 1}):syntax error" in message, message  # p4c's file(line)
    assert "\n" not in message
    assert not list((tmp_path / "build").glob("*.json"))  # nothing half-written to load
