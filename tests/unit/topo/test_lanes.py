"""Lanes per packet: one number for innet.p4 (-D LANES), the hosts' codec and the planner."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from innet.paths import INNET_P4
from p4switch.exceptions import P4CompileError
from p4switch.program import compile_file
from topo.exceptions import SiteError
from topo.siteplan import LANE_CHOICES, lanes_from


def test_lanes_default_to_32_and_follow_the_environment() -> None:
    assert lanes_from({}) == 32
    assert [lanes_from({"INNET_LANES": str(n)}) for n in LANE_CHOICES] == list(LANE_CHOICES)


@pytest.mark.parametrize("text", ["48", "0", "-32", "many", "", "1e2"])
def test_a_lane_count_innet_p4_is_not_built_with_is_refused(text: str) -> None:
    with pytest.raises(SiteError, match=r"innet\.p4 is built with 32, 64, 128, 256 lanes"):
        lanes_from({"INNET_LANES": text})


@pytest.mark.parametrize("lanes", LANE_CHOICES)
def test_innet_p4_compiles_with_every_lane_count(lanes: int) -> None:
    program = compile_file(INNET_P4, defines={"SLOTS": "4", "LANES": str(lanes)})
    names = {r.name for r in program.registers}
    assert {f"InnetIngress.lane{i:02d}" for i in range(lanes)} <= names
    assert f"InnetIngress.lane{lanes:02d}" not in names


def test_innet_p4_refuses_a_lane_count_it_has_no_expansion_for() -> None:
    with pytest.raises(P4CompileError, match="LANES must be 32, 64, 128 or 256"):
        compile_file(INNET_P4, defines={"LANES": "48"})


PROBE = """
import json
from topo import siteplan
from workers import packets
from controller.planner.params import CostParams
values = tuple(range(-128, 128))
kind, flag = packets.PacketType.CONTRIBUTION, packets.Flag.WAN
p = packets.InnetPacket.of(kind, flag, 1, 2, 3, 4, 5, 6, values)
back = packets.InnetPacket.decode(p.encode())
print(json.dumps({
    "lanes": siteplan.LANES, "slot": siteplan.SLOT_BYTES, "frame": siteplan.FRAME_BYTES,
    "packet": len(p.encode()), "same": back == p, "defines": siteplan.program_defines(8),
    "plan_slot": CostParams(10**9, 10**8, 1e10).slot_bytes,
}))
"""


def test_the_hosts_and_the_planner_follow_innet_lanes_256() -> None:
    env = {**os.environ, "INNET_LANES": "256"}
    out = subprocess.run([sys.executable, "-c", PROBE], env=env, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    facts = json.loads(out.stdout)
    assert facts == {
        "lanes": 256,
        "slot": 1024,  # a slot holds one chunk's partial sums
        "frame": 14 + 20 + 8 + 16 + 1024,
        "packet": 16 + 1024,
        "same": True,
        "defines": {"SLOTS": "8", "LANES": "256"},
        "plan_slot": 1024,
    }


def test_a_bad_innet_lanes_stops_the_import_with_the_reason() -> None:
    env = {**os.environ, "INNET_LANES": "100"}
    probe = "import topo.siteplan"
    out = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, text=True)
    assert out.returncode != 0
    assert "INNET_LANES='100': innet.p4 is built with 32, 64, 128, 256" in out.stderr


AGGREGATE = """
import json
from controller.runner import calibration as cal
from controller.runner.emulation import resolve
from controller.runner.scenario import parse_scenario
from topo import siteplan
from workers.packets import InnetPacket
em = resolve(parse_scenario("name: t\\nlanes: 256\\nscale: 100000\\nmemory: [1.6GB]\\nhosts: 2\\n"))
switch = cal.member_switch(em)
n = em.scenario.wan.n
out = []
for port, frame in cal.chunk_frames(em, 5):
    out = switch.process(port, frame)
frame = out[0][1]
result = InnetPacket.decode(frame[14 + 20 + 8:])
print(json.dumps({"ports": sorted(p for p, _ in out), "bytes": len(frame),
                  "sums": list(result.values), "n": n}))
"""


def test_innet_p4_built_with_256_lanes_sums_every_lane_on_the_run_s_entries() -> None:
    """A member edge as the controller programs it, at INNET_LANES=256: the nine islands'
    contributions to one chunk come out as one RESULT to the hosts, each lane the exact sum."""
    env = {**os.environ, "INNET_LANES": "256"}
    run = subprocess.run([sys.executable, "-c", AGGREGATE], env=env, capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    facts = json.loads(run.stdout)
    values = range(5, 5 + 256)  # what calibration.chunk_frames sends for chunk 5
    assert facts["ports"] == [1, 2] and facts["bytes"] == 58 + 4 * 256
    assert facts["sums"] == [facts["n"] * v for v in values]
