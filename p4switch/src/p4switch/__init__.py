"""p4switch: a P4_16 v1model software switch with a P4Runtime server, AF_PACKET ports, egress
shaping and pcap capture.

Its public API is the names below, imported from `p4switch` itself; every module under it is
internal and may change. Another project (innet is one) imports these names and nothing else.

Compile a program and run it in this process:

    compile_file(path, include_dirs=(), defines=None) -> CompiledProgram
    InProcessSwitch(program, backend=None, clock=None): .write(updates), .read(entities),
        .process(port, frame), .counter(name), .register(name), .counts(); .serve(address)
        makes it a P4Runtime server, .stop() ends that
    PacketProcessor: what a pipeline is (.process(port, frame) -> [(port, frame), ...])
    EXAMPLES: the folder of example programs (l2.p4)

Run it as a process (ports, P4Runtime server, control socket): the `p4switch` command, also
`python -m p4switch`; `main(argv)` runs that command in this process, `build_parser()` is its
argument parser; `BACKENDS` names the back ends it (and InProcessSwitch) can run a program on.
`python -m p4switch.linkemu` emulates links between pairs of ports; `python -m p4switch.control`
talks to a running switch.

Read and change a running switch through its control socket:

    read_stats(socket) -> SwitchStats (PortStats per port); control_request(socket, request)
    parse_shape("1:rate=10Gbps,delay=35ms") -> (port, ShapeSpec)

Files: `load_p4info(path)` reads a P4Info in protobuf text format.

Linux packet sockets as the switch's ports read them: ETH_P_ALL, SOL_PACKET, PACKET_AUXDATA,
PACKET_OUTGOING, AUXDATA_SPACE, and `as_on_wire(data, ancdata)`, a received frame with the VLAN
tag the kernel took off put back.

Errors: every one is a `P4SwitchError`; `InputError` (exit status 2) marks bad input such as a
`P4CompileError`; `ControlError` is a control socket that does not answer; `WriteRefusedError`
a batch an in-process switch refused.

Names are loaded when first used, so `import p4switch` stays cheap for the commands.
"""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from p4switch.backends import NAMES as BACKENDS
    from p4switch.cli import build_parser, main
    from p4switch.control import control_request, read_stats
    from p4switch.dataplane import PacketProcessor
    from p4switch.exceptions import ControlError, InputError, P4CompileError, P4SwitchError
    from p4switch.inprocess import InProcessSwitch, WriteRefusedError
    from p4switch.p4info_diff import load as load_p4info
    from p4switch.ports import ETH_P_ALL, PACKET_AUXDATA, PACKET_OUTGOING, SOL_PACKET
    from p4switch.program import CompiledProgram, compile_file
    from p4switch.shaping import ShapeSpec, parse_shape
    from p4switch.stats import PortStats, SwitchStats
    from p4switch.vlan import AUXDATA_SPACE, as_on_wire

EXAMPLES = Path(__file__).resolve().parent / "examples"

# public name -> (module, its name there)
_PUBLIC: dict[str, tuple[str, str]] = {
    "compile_file": ("p4switch.program", "compile_file"),
    "CompiledProgram": ("p4switch.program", "CompiledProgram"),
    "InProcessSwitch": ("p4switch.inprocess", "InProcessSwitch"),
    "PacketProcessor": ("p4switch.dataplane", "PacketProcessor"),
    "WriteRefusedError": ("p4switch.inprocess", "WriteRefusedError"),
    "main": ("p4switch.cli", "main"),
    "build_parser": ("p4switch.cli", "build_parser"),
    "BACKENDS": ("p4switch.backends", "NAMES"),
    "read_stats": ("p4switch.control", "read_stats"),
    "control_request": ("p4switch.control", "control_request"),
    "SwitchStats": ("p4switch.stats", "SwitchStats"),
    "PortStats": ("p4switch.stats", "PortStats"),
    "parse_shape": ("p4switch.shaping", "parse_shape"),
    "ShapeSpec": ("p4switch.shaping", "ShapeSpec"),
    "load_p4info": ("p4switch.p4info_diff", "load"),
    "ETH_P_ALL": ("p4switch.ports", "ETH_P_ALL"),
    "SOL_PACKET": ("p4switch.ports", "SOL_PACKET"),
    "PACKET_AUXDATA": ("p4switch.ports", "PACKET_AUXDATA"),
    "PACKET_OUTGOING": ("p4switch.ports", "PACKET_OUTGOING"),
    "AUXDATA_SPACE": ("p4switch.vlan", "AUXDATA_SPACE"),
    "as_on_wire": ("p4switch.vlan", "as_on_wire"),
    "P4SwitchError": ("p4switch.exceptions", "P4SwitchError"),
    "InputError": ("p4switch.exceptions", "InputError"),
    "P4CompileError": ("p4switch.exceptions", "P4CompileError"),
    "ControlError": ("p4switch.exceptions", "ControlError"),
}

__all__ = [
    "AUXDATA_SPACE",
    "BACKENDS",
    "ETH_P_ALL",
    "EXAMPLES",
    "PACKET_AUXDATA",
    "PACKET_OUTGOING",
    "SOL_PACKET",
    "CompiledProgram",
    "ControlError",
    "InProcessSwitch",
    "InputError",
    "P4CompileError",
    "P4SwitchError",
    "PacketProcessor",
    "PortStats",
    "ShapeSpec",
    "SwitchStats",
    "WriteRefusedError",
    "as_on_wire",
    "build_parser",
    "compile_file",
    "control_request",
    "load_p4info",
    "main",
    "parse_shape",
    "read_stats",
]


def __getattr__(name: str) -> Any:
    try:
        module, attribute = _PUBLIC[name]
    except KeyError:
        raise AttributeError(f"module 'p4switch' has no attribute {name!r}") from None
    value = getattr(importlib.import_module(module), attribute)
    globals()[name] = value  # found once: later uses do not come here
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
