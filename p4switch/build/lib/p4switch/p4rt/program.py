"""What a pipeline configuration becomes in the P4Runtime server: the program a `Loader` made of
a client's P4Info and device config (`LoadedProgram`), and that program as installed through
P4Runtime, with what Get returns and Write changes (`Installed`)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from p4.config.v1 import p4info_pb2

from p4switch.p4rt.codec import InstalledPipeline
from p4switch.runtime import SwitchState


@dataclass(frozen=True)
class LoadedProgram:
    p4info: p4info_pb2.P4Info
    device_config: bytes  # what SetForwardingPipelineConfig sent (p4switch: the P4 source)
    state: SwitchState
    activate: Callable[[], None]  # makes the data plane use this program and state


# may raise ValueError: the client gets INVALID_ARGUMENT with its message (a P4RTError: its code)
Loader = Callable[[p4info_pb2.P4Info, bytes], LoadedProgram]


@dataclass(frozen=True)
class Installed:
    """A program as configured through P4Runtime: what Get returns, and what Write changes."""

    program: LoadedProgram
    pipeline: InstalledPipeline
    p4info: p4info_pb2.P4Info  # as the client sent it
    device_config: bytes
    cookie: int | None
