"""P4 programs as processors for bench/forwarding.py (`--processor bench.p4_processors:l2`).

Each factory compiles a test program and installs the entries that forward between the
benchmark's two hosts (h1 on port 1, h2 on port 2), as a controller would.
"""

from __future__ import annotations

from pathlib import Path

from p4switch import runtime as rt
from p4switch.compiler.v1model import Pipeline
from p4switch.program import compile_file

PROGRAMS = Path(__file__).resolve().parent.parent / "tests" / "unit" / "p4switch" / "programs"
HOSTS = {1: ("02:00:0a:00:00:01", "10.0.0.1"), 2: ("02:00:0a:00:00:02", "10.0.0.2")}


def _mac(text: str) -> int:
    return int(text.replace(":", ""), 16)


def _ip(text: str) -> int:
    a, b, c, d = (int(x) for x in text.split("."))
    return a << 24 | b << 16 | c << 8 | d


def l2() -> Pipeline:
    """(a) L2 forwarding: one exact match on the destination MAC."""
    program = compile_file(PROGRAMS / "l2.p4")
    state = program.new_state()
    for port, (mac, _) in HOSTS.items():
        action = rt.ActionCall("L2Ingress.forward", (port,))
        state.table("L2Ingress.dmac").insert(rt.TableEntry((rt.exact(_mac(mac), 48),), action))
    return program.pipeline(state)


def agg32() -> Pipeline:
    """(b) Ethernet/IPv4/UDP plus 32 int32 values added into 32 register lanes, then routed."""
    program = compile_file(PROGRAMS / "agg32.p4")
    state = program.new_state()
    for port, (_, ip) in HOSTS.items():
        action = rt.ActionCall("AggIngress.forward", (port,))
        state.table("AggIngress.route").insert(rt.TableEntry((rt.exact(_ip(ip), 32),), action))
    return program.pipeline(state)
