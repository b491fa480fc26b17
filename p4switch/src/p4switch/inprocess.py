"""A program's pipeline run in the caller's process: no ports, programmed with the P4Runtime
updates a controller would write to a switch process, on the back end that process would choose
(`backend`: None, native where it can run; "python"; "native").

    >>> from p4switch import EXAMPLES, compile_file
    >>> switch = InProcessSwitch(compile_file(EXAMPLES / "l2.p4"))
    >>> switch.process(1, bytes(10))  # a runt frame: the parser rejects it, nothing goes out
    []
    >>> switch.fresh().backend == switch.backend  # the same program, a state of its own
    True

A caller times or checks a program with it (innet measures how many frames per second one core
processes); a batch is applied atomically, as a P4Runtime Write with atomicity DATAPLANE_ATOMIC
would be, and `read` answers P4Runtime reads. `clock` (nanoseconds) is what the program's
global timestamps and meters count on, so a test can move time by hand.

`serve` also makes it a P4Runtime server (gRPC, device 1 unless told), so a controller under
test programs the very pipeline the caller sends frames through:

    >>> port = switch.serve("127.0.0.1:0")  # port 0: a free one
    >>> port > 0
    True
    >>> switch.stop()  # the switch keeps its state and runs on

A client may push the switch's own program again (its P4Info): the pipeline then starts anew with
no entries, as on a switch process; another program is refused (INVALID_ARGUMENT), for an
in-process switch does not compile. Packet-outs go to `packet_out` (the frame with its
packet_out header); there are no packet-ins (no CPU port).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from p4.v1 import p4runtime_pb2

from p4switch.backends import build_pipeline
from p4switch.exceptions import P4RTError, P4SwitchError
from p4switch.p4rt.codec import InstalledPipeline
from p4switch.p4rt.program import LoadedProgram
from p4switch.p4rt.read import read_entity
from p4switch.p4rt.schema import P4InfoIndex
from p4switch.p4rt.server import P4RuntimeServer
from p4switch.p4rt.write import apply_batch

if TYPE_CHECKING:
    import grpc
    from p4.config.v1 import p4info_pb2

    from p4switch.dataplane import PacketProcessor
    from p4switch.program import CompiledProgram
    from p4switch.runtime import SwitchState


class WriteRefusedError(P4SwitchError):
    """A batch of updates the in-process switch refused: names the update and why."""


@dataclass(frozen=True)
class _Running:
    """The state the pipeline runs on, and the pipeline (swapped together by a pipeline push)."""

    state: SwitchState
    pipeline: PacketProcessor


class InProcessSwitch:
    """One switch's pipeline and state, in this process: `program` with no entries yet."""

    def __init__(
        self,
        program: CompiledProgram,
        backend: str | None = None,
        *,
        clock: Callable[[], int] | None = None,
    ) -> None:
        self._program, self._requested, self._clock = program, backend, clock
        self.p4info: p4info_pb2.P4Info = program.p4info
        self._running, self.backend = self._build()  # backend: native unless asked or unable
        self._installed = InstalledPipeline(
            P4InfoIndex.bind(program.p4info, self._running.state), self._running.state
        )
        self._server: P4RuntimeServer | None = None

    def _build(self) -> tuple[_Running, str]:
        program = self._program
        state = program.new_state() if self._clock is None else program.new_state(self._clock)
        built = build_pipeline(
            program,
            state,
            self._requested,
            cpu_port=None,
            parser_reject="ingress",
            clock=self._clock,
        )
        return _Running(state, built.pipeline), built.choice.name

    def fresh(self) -> InProcessSwitch:
        """Another switch of the same program, back end and clock, with a fresh state and no
        entries (the program is not compiled again)."""
        return type(self)(self._program, self._requested, clock=self._clock)

    # --- P4Runtime ---------------------------------------------------------------------------

    def write(self, updates: Sequence[p4runtime_pb2.Update]) -> None:
        """Apply one atomic batch, as a P4Runtime Write would; WriteRefusedError if refused."""
        if self._server is not None:  # served: the server's pipeline configuration decides
            request = p4runtime_pb2.WriteRequest(
                device_id=self._server.device_id,
                atomicity=p4runtime_pb2.WriteRequest.DATAPLANE_ATOMIC,
            )
            request.updates.extend(updates)
            results = self._server.write(request)
        else:
            with self._running.state.lock:
                results = apply_batch(self._installed, updates, atomic=True)
        for i, error in enumerate(results):
            if error is not None:
                raise WriteRefusedError(f"update {i} of {len(updates)} refused: {error}")

    def read(self, entities: Sequence[p4runtime_pb2.Entity]) -> list[p4runtime_pb2.Entity]:
        """Every entity the queries select, as a P4Runtime Read answers them (a zero id or an
        unset field is a wildcard); P4SwitchError names a query refused and why."""
        if self._server is not None:
            request = p4runtime_pb2.ReadRequest(device_id=self._server.device_id)
            request.entities.extend(entities)
            found, errors = self._server.read(request)
        else:
            found, errors = [], []
            with self._running.state.lock:
                for query in entities:
                    try:
                        found += read_entity(self._installed, query)
                        errors.append(None)
                    except P4RTError as err:
                        errors.append(err)
        for i, error in enumerate(errors):
            if error is not None:
                raise P4SwitchError(f"read {i} of {len(entities)} refused: {error}")
        return found

    def serve(
        self,
        address: str,
        *,
        device_id: int = 1,
        packet_out: Callable[[bytes], None] | None = None,
        interceptors: Sequence[grpc.ServerInterceptor] = (),
    ) -> int:
        """Serve this switch over P4Runtime on `address` ("host:port"; port 0 picks a free one)
        as device `device_id`, and return the port; `stop` ends it. `packet_out` receives each
        packet-out (dropped without it); `interceptors` see every call first, as gRPC's server
        interceptors do. OSError if the address cannot be listened on."""
        if self._server is not None:
            raise P4SwitchError("this in-process switch is already served: stop() it first")
        running = self._running
        initial = LoadedProgram(self.p4info, b"", running.state, _nothing)
        server = P4RuntimeServer(
            device_id=device_id,
            loader=self._load,
            send_packet_out=packet_out if packet_out is not None else _drop,
            initial=initial,
        )
        assert server.pipeline is not None  # the initial program
        server.pipeline.pre_records.update(self._installed.pre_records)  # what was written
        port = server.start(address, interceptors)
        self._server = server
        return port

    def stop(self, grace: float = 1.0) -> None:
        """Stop serving (every stream ends; waits about `grace` seconds at most). The switch
        keeps the state its clients left and runs on."""
        server, self._server = self._server, None
        if server is None:
            return
        server.stop(grace)
        if server.pipeline is not None:  # a client may have pushed the program anew
            self._installed = server.pipeline

    def _load(self, p4info: p4info_pb2.P4Info, device_config: bytes) -> LoadedProgram:
        """A client's pipeline push: this switch's own program, with a fresh state."""
        if p4info != self._program.p4info:
            raise ValueError(
                "an in-process switch runs the program it was made with: this P4Info is another "
                "program's (run the p4switch command to load programs over P4Runtime)"
            )
        running, _ = self._build()

        def activate() -> None:
            self._running = running

        return LoadedProgram(p4info, device_config, running.state, activate)

    # --- the data plane ----------------------------------------------------------------------

    @property
    def pipeline(self) -> PacketProcessor:
        """The pipeline itself (a native one offers `native_entry` to C callers)."""
        return self._running.pipeline

    def process(self, port: int, frame: bytes) -> list[tuple[int, bytes]]:
        """One frame in on `port`: the (egress port, frame) pairs it produces."""
        return self._running.pipeline.process(port, frame)

    def counter(self, name: str) -> list[int]:
        """The packet counts of counter `name` (its P4Info name), index by index."""
        state = self._running.state
        with state.lock:
            return list(state.counter(name).packets)

    def register(self, name: str) -> list[int]:
        """The cells of register `name` (its P4Info name), index by index."""
        state = self._running.state
        with state.lock:
            return list(state.register(name).cells)

    def counts(self) -> dict[str, int]:
        """What the pipeline counted besides the program's counters: frames the parser rejected
        (`parser_error.<name>`) and frames dropped (`drop.<reason>`), zeros left out."""
        counts: dict[str, int] = getattr(self._running.pipeline, "counts", {})  # both back ends'
        return {key: n for key, n in counts.items() if n}


def _nothing() -> None:
    """Activating the program a switch was served with: it runs already."""


def _drop(frame: bytes) -> None:
    """A packet-out nobody asked for."""
