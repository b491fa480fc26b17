"""A program's pipeline run in the caller's process: no ports, no P4Runtime server, programmed
with the P4Runtime updates a controller would write to a switch process, on the back end that
process would choose (`backend`: None, native where it can run; "python"; "native").

    >>> from p4switch import EXAMPLES, compile_file
    >>> switch = InProcessSwitch(compile_file(EXAMPLES / "l2.p4"))
    >>> switch.process(1, bytes(10))  # a runt frame: the parser rejects it, nothing goes out
    []
    >>> switch.fresh().backend == switch.backend  # the same program, a state of its own
    True

A caller times or checks a program with it (innet measures how many frames per second one core
processes); a batch is applied atomically, as a P4Runtime Write with atomicity DATAPLANE_ATOMIC
would be.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from p4switch.backends import build_pipeline
from p4switch.exceptions import P4SwitchError
from p4switch.p4rt.codec import InstalledPipeline
from p4switch.p4rt.schema import P4InfoIndex
from p4switch.p4rt.write import apply_batch

if TYPE_CHECKING:
    from p4.config.v1 import p4info_pb2
    from p4.v1 import p4runtime_pb2

    from p4switch.dataplane import PacketProcessor
    from p4switch.program import CompiledProgram


class WriteRefusedError(P4SwitchError):
    """A batch of updates the in-process switch refused: names the update and why."""


class InProcessSwitch:
    """One switch's pipeline and state, in this process: `program` with no entries yet."""

    def __init__(self, program: CompiledProgram, backend: str | None = None) -> None:
        self._program, self._requested = program, backend
        self.p4info: p4info_pb2.P4Info = program.p4info
        self._state = program.new_state()
        self._installed = InstalledPipeline(
            P4InfoIndex.bind(program.p4info, self._state), self._state
        )
        built = build_pipeline(
            program, self._state, backend, cpu_port=None, parser_reject="ingress"
        )
        self._pipeline: PacketProcessor = built.pipeline
        self.backend = built.choice.name  # what runs it: native unless asked or unable

    def fresh(self) -> InProcessSwitch:
        """Another switch of the same program and back end, with a fresh state and no entries
        (the program is not compiled again)."""
        return type(self)(self._program, self._requested)

    def write(self, updates: Sequence[p4runtime_pb2.Update]) -> None:
        """Apply one atomic batch, as a P4Runtime Write would; WriteRefusedError if refused."""
        with self._state.lock:
            results = apply_batch(self._installed, updates, atomic=True)
        for i, error in enumerate(results):
            if error is not None:
                raise WriteRefusedError(f"update {i} of {len(updates)} refused: {error}")

    @property
    def pipeline(self) -> PacketProcessor:
        """The pipeline itself (a native one offers `native_entry` to C callers)."""
        return self._pipeline

    def process(self, port: int, frame: bytes) -> list[tuple[int, bytes]]:
        """One frame in on `port`: the (egress port, frame) pairs it produces."""
        return self._pipeline.process(port, frame)

    def counter(self, name: str) -> list[int]:
        """The packet counts of counter `name` (its P4Info name), index by index."""
        return list(self._state.counter(name).packets)
