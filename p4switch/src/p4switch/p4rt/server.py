"""The P4Runtime server of p4switch: gRPC service, pipeline configuration, arbitration, packet I/O.

`P4RuntimeServer` serves one device. A client sets the pipeline with the P4Info and, as
`p4_device_config`, the P4 program source; the `Loader` given to the server turns them into a
`LoadedProgram` (fresh run-time state and a way to make the data plane run it). Writes and reads
are translated by the other modules of `p4switch.p4rt` into changes of that state, under
`state.lock`; `p4switch.p4rt.service` is the gRPC face.

Deadlines: each request may carry one (seconds on the server's `clock`, `time.monotonic` unless
given another, from the client's gRPC deadline). Work whose deadline has passed is refused with
DEADLINE_EXCEEDED, checked before a lock is taken and again once it is held, so a request that
waited too long changes nothing.
The loader runs outside the configuration lock (one load at a time), so writes and reads against
the running pipeline go on while a new program compiles; only the switch-over takes the lock.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent import futures
from contextlib import contextmanager

import grpc
from google.rpc import code_pb2
from p4.v1 import p4runtime_pb2

from p4switch.exceptions import (
    ArbitrationRefusedError,
    P4InfoMismatchError,
    P4RTError,
    PacketInError,
)
from p4switch.p4rt.arbitration import Arbiter, Session
from p4switch.p4rt.codec import InstalledPipeline
from p4switch.p4rt.deadline import Clock, acquired, check_deadline
from p4switch.p4rt.digests import DigestChannel
from p4switch.p4rt.handlers import add_to_server
from p4switch.p4rt.idle import SWEEP_INTERVAL_S, IdleChannel
from p4switch.p4rt.packetio import packet_in_message, packet_out_frame
from p4switch.p4rt.program import Installed, LoadedProgram, Loader
from p4switch.p4rt.read import read_entity
from p4switch.p4rt.reconcile import carry_over
from p4switch.p4rt.schema import P4InfoIndex
from p4switch.p4rt.service import P4RuntimeService
from p4switch.p4rt.write import ReportCheck, apply_batch

log = logging.getLogger(__name__)

_MAX_WORKERS = 32  # each open StreamChannel holds one worker thread
_MAX_MESSAGE = 64 << 20  # P4Info and P4 source travel in one message
_SetRequest = p4runtime_pb2.SetForwardingPipelineConfigRequest
_GetRequest = p4runtime_pb2.GetForwardingPipelineConfigRequest


class P4RuntimeServer:
    """A P4Runtime gRPC server for one device.

    `loader` turns a SetForwardingPipelineConfig's P4Info and device config into a program
    (raising ValueError if it cannot); `send_packet_out` injects a frame, packet_out header
    included, on the CPU port. `initial` is a program already running in the data plane (it is
    not activated again; its P4Info must describe its state, or P4InfoMismatchError is raised).
    `cpu_port` is the data-plane port that replicas sent to SDN port 0xfffffffd go to.
    `clock` is what request deadlines are instants of (a test passes a simulated one, to decide
    exactly when a deadline has passed). Entries of tables with support_timeout are swept for
    idleness every `idle_sweep_interval` seconds (None: only when `sweep_idle` is called);
    their idle time counts on the state's clock, the one the data plane stamps hits with.
    """

    def __init__(
        self,
        *,
        device_id: int,
        loader: Loader,
        send_packet_out: Callable[[bytes], None],
        initial: LoadedProgram | None = None,
        cpu_port: int | None = None,
        clock: Clock = time.monotonic,
        idle_sweep_interval: float | None = SWEEP_INTERVAL_S,
    ) -> None:
        self.device_id = device_id
        self._clock = clock
        self._loader = loader
        self._send_packet_out = send_packet_out
        self._cpu_port = cpu_port
        self._config_lock = threading.RLock()  # pipeline changes, and writes against them
        self._load_lock = threading.Lock()  # one program loads (compiles) at a time
        self._committed: Installed | None = None
        self._saved: Installed | None = None  # VERIFY_AND_SAVE: reads and writes go here
        if initial is not None:
            schema = P4InfoIndex.bind(initial.p4info, initial.state)
            pipeline = InstalledPipeline(schema, initial.state, cpu_port)
            self._committed = Installed(
                initial, pipeline, initial.p4info, initial.device_config, None
            )
        self.arbiter = Arbiter(device_id)
        self.digests = DigestChannel(self.arbiter)  # the running pipeline's digest lists
        self.idle = IdleChannel(self.arbiter, idle_sweep_interval)  # its idle timeouts
        self._sessions: set[Session] = set()
        self._sessions_lock = threading.Lock()
        self._grpc: grpc.Server | None = None
        self.packet_ins_dropped = 0
        self.requests_expired = 0  # requests refused because the client's deadline passed
        self._expired_lock = threading.Lock()

    # --- life cycle -----------------------------------------------------------------------

    def start(self, address: str, interceptors: Sequence[grpc.ServerInterceptor] = ()) -> int:
        """Listen on `address` ("host:port"; port 0 picks a free one) and return the port;
        `interceptors` see every call first, as gRPC's server interceptors do."""
        if self._grpc is not None:
            raise RuntimeError("the P4Runtime server is already started")
        server = grpc.server(
            futures.ThreadPoolExecutor(max_workers=_MAX_WORKERS, thread_name_prefix="p4rt"),
            interceptors=interceptors,
            options=[
                ("grpc.so_reuseport", 0),  # a port in use is an error, not a shared port
                ("grpc.max_receive_message_length", _MAX_MESSAGE),
                ("grpc.max_send_message_length", _MAX_MESSAGE),
            ],
        )
        # undecodable requests: INVALID_ARGUMENT
        add_to_server(P4RuntimeService(self, self._clock), server)
        try:
            port: int = server.add_insecure_port(address)
        except RuntimeError as err:
            raise OSError(f"P4Runtime server cannot listen on {address}: {err}") from err
        if port == 0:
            raise OSError(f"P4Runtime server cannot listen on {address}")
        server.start()
        self._grpc = server
        self.digests.run(self._committed.pipeline if self._committed is not None else None)
        self.idle.run(self._committed.pipeline if self._committed is not None else None)
        log.info("P4Runtime server for device %d listening on port %d", self.device_id, port)
        return port

    def stop(self, grace: float = 1.0) -> None:
        """End every stream and stop serving (waits at most about `grace` seconds)."""
        server, self._grpc = self._grpc, None
        if server is None:
            return
        self.digests.stop()
        self.idle.stop()
        with self._sessions_lock:
            sessions = list(self._sessions)
        for session in sessions:
            session.close()
        server.stop(grace).wait(grace + 1.0)

    # --- the data plane's side ------------------------------------------------------------

    def packet_in(self, frame: bytes) -> None:
        """Send a frame the pipeline sent to the CPU port to the primary client (never blocks)."""
        installed = self._committed
        primary = self.arbiter.primary()
        if installed is None or primary is None:
            self.packet_ins_dropped += 1
            return
        try:
            msg = packet_in_message(installed.pipeline.schema.packet_in, frame)
        except PacketInError as err:
            log.warning("packet-in dropped: %s", err)
            self.packet_ins_dropped += 1
            return
        if not primary.send_packet_in(p4runtime_pb2.StreamMessageResponse(packet=msg)):
            self.packet_ins_dropped += 1

    def sweep_idle(self) -> int:
        """Sweep the running pipeline for idle entries now, as the sweeping thread does, and
        notify the primary client; the number of entries reported."""
        return self.idle.sweep()

    @property
    def pipeline(self) -> InstalledPipeline | None:
        """The pipeline reads and writes refer to (the saved one, if any, else the running one)."""
        installed = self._saved or self._committed
        return installed.pipeline if installed is not None else None

    # --- pipeline configuration -----------------------------------------------------------

    def _load(
        self, config: p4runtime_pb2.ForwardingPipelineConfig, deadline: float | None
    ) -> Installed:
        """Run the loader (outside the configuration lock) and bind the P4Info to its state."""
        with acquired(
            self._load_lock, deadline, "waiting for another program to load", self._clock
        ):
            installed = self._load_now(config)
        check_deadline(
            deadline, "the program was loaded after the deadline; nothing changed", self._clock
        )
        return installed

    def _load_now(self, config: p4runtime_pb2.ForwardingPipelineConfig) -> Installed:
        try:
            program = self._loader(config.p4info, config.p4_device_config)
            schema = P4InfoIndex.bind(config.p4info, program.state)
        except P4RTError:
            raise
        except (ValueError, P4InfoMismatchError) as err:
            raise P4RTError(code_pb2.INVALID_ARGUMENT, str(err)) from err
        except Exception as err:
            log.exception("loading the forwarding pipeline config failed")
            raise P4RTError(code_pb2.INTERNAL, f"loading the program failed: {err}") from err
        cookie = config.cookie.cookie if config.HasField("cookie") else None
        pipeline = InstalledPipeline(schema, program.state, self._cpu_port)
        return Installed(program, pipeline, config.p4info, config.p4_device_config, cookie)

    def set_pipeline(
        self,
        request: p4runtime_pb2.SetForwardingPipelineConfigRequest,
        deadline: float | None = None,
    ) -> None:
        """Carry out a SetForwardingPipelineConfig (the caller checked the client is primary)."""
        with self._counting_expired():
            self._set_pipeline(request, deadline)

    def _set_pipeline(
        self, request: p4runtime_pb2.SetForwardingPipelineConfigRequest, deadline: float | None
    ) -> None:
        action = request.action
        if action == _SetRequest.COMMIT:
            if request.HasField("config"):
                raise P4RTError(code_pb2.INVALID_ARGUMENT, "COMMIT takes no config")
            with self._locked(deadline):
                if self._saved is None:
                    raise P4RTError(code_pb2.NOT_FOUND, "no saved config to commit")
                self._commit(self._saved)
            return
        known = (
            _SetRequest.VERIFY,
            _SetRequest.VERIFY_AND_SAVE,
            _SetRequest.VERIFY_AND_COMMIT,
            _SetRequest.RECONCILE_AND_COMMIT,
        )
        if action not in known:
            raise P4RTError(code_pb2.INVALID_ARGUMENT, f"unknown action {action}")
        if not request.HasField("config") or not request.config.HasField("p4info"):
            raise P4RTError(code_pb2.INVALID_ARGUMENT, "a config with a P4Info is required")
        check_deadline(deadline, "the deadline passed before the program was loaded", self._clock)
        installed = self._load(request.config, deadline)  # no lock held: writes go on
        if action == _SetRequest.VERIFY:
            return
        with self._locked(deadline):
            if action == _SetRequest.VERIFY_AND_SAVE:
                self._saved = installed
                log.info("pipeline config saved; COMMIT makes the data plane run it")
                return
            running = self._committed
            if action == _SetRequest.RECONCILE_AND_COMMIT and running is not None:
                with running.pipeline.state.lock:  # no packet sees a half-copied state
                    # under the new state's lock too: a native data path takes the carried
                    # entries, groups and sessions when it is released, before the commit
                    with installed.pipeline.state.lock:
                        carry_over(running.pipeline, installed.pipeline)
                    self._commit(installed)
            else:
                self._commit(installed)

    @contextmanager
    def _counting_expired(self) -> Iterator[None]:
        try:
            yield
        except P4RTError as err:
            if err.code == code_pb2.DEADLINE_EXCEEDED:
                with self._expired_lock:
                    self.requests_expired += 1
                log.info("request refused: %s", err.message)
            raise

    @contextmanager
    def _locked(self, deadline: float | None) -> Iterator[None]:
        """Hold the configuration lock, unless the deadline passes first (DEADLINE_EXCEEDED)."""
        with acquired(
            self._config_lock, deadline, "waiting for the configuration lock", self._clock
        ):
            yield

    def _commit(self, installed: Installed) -> None:
        try:
            installed.program.activate()
        except Exception as err:
            log.exception("activating the program failed")
            raise P4RTError(code_pb2.INTERNAL, f"activating the program failed: {err}") from err
        self._committed, self._saved = installed, None
        if self._grpc is not None:
            self.digests.run(installed.pipeline)
            self.idle.run(installed.pipeline)
        log.info("forwarding pipeline committed (%d tables)", len(installed.pipeline.schema.tables))

    def get_pipeline(
        self, request: p4runtime_pb2.GetForwardingPipelineConfigRequest
    ) -> p4runtime_pb2.GetForwardingPipelineConfigResponse:
        response = p4runtime_pb2.GetForwardingPipelineConfigResponse()
        installed = self._saved or self._committed
        kind = request.response_type
        if kind not in _GetRequest.ResponseType.values():
            raise P4RTError(code_pb2.INVALID_ARGUMENT, f"unknown response type {kind}")
        if installed is None:
            return response  # no config: `config` stays unset
        config = response.config
        config.SetInParent()
        if kind in (_GetRequest.ALL, _GetRequest.P4INFO_AND_COOKIE):
            config.p4info.CopyFrom(installed.p4info)
        if kind in (_GetRequest.ALL, _GetRequest.DEVICE_CONFIG_AND_COOKIE):
            config.p4_device_config = installed.device_config
        if installed.cookie is not None:
            config.cookie.cookie = installed.cookie
        return response

    # --- writes, reads, streams -----------------------------------------------------------

    def write(
        self,
        request: p4runtime_pb2.WriteRequest,
        deadline: float | None = None,
        check_report: ReportCheck | None = None,
    ) -> list[P4RTError | None]:
        """Apply a Write's updates under the state lock; one result per update (None: applied).
        A batch whose results `check_report` refuses is undone whole and the refusal raised."""
        atomicity = request.atomicity
        if atomicity not in p4runtime_pb2.WriteRequest.Atomicity.values():
            raise P4RTError(code_pb2.INVALID_ARGUMENT, f"unknown atomicity {atomicity}")
        with self._counting_expired(), self._locked(deadline):
            installed = self._saved or self._committed
            if installed is None:
                raise P4RTError(code_pb2.FAILED_PRECONDITION, "no forwarding pipeline is set")
            atomic = atomicity != p4runtime_pb2.WriteRequest.CONTINUE_ON_ERROR
            with acquired(
                installed.pipeline.state.lock, deadline, "waiting for the state", self._clock
            ):
                return apply_batch(
                    installed.pipeline, request.updates, atomic=atomic, check_report=check_report
                )

    def read(
        self, request: p4runtime_pb2.ReadRequest, deadline: float | None = None
    ) -> tuple[list[p4runtime_pb2.Entity], list[P4RTError | None]]:
        with self._counting_expired():
            return self._read(request, deadline)

    def _read(
        self, request: p4runtime_pb2.ReadRequest, deadline: float | None
    ) -> tuple[list[p4runtime_pb2.Entity], list[P4RTError | None]]:
        check_deadline(deadline, "the deadline passed before the read started", self._clock)
        installed = self._saved or self._committed
        if installed is None:
            raise P4RTError(code_pb2.FAILED_PRECONDITION, "no forwarding pipeline is set")
        entities: list[p4runtime_pb2.Entity] = []
        errors: list[P4RTError | None] = []
        with acquired(
            installed.pipeline.state.lock, deadline, "waiting for the state", self._clock
        ):
            for query in request.entities:
                try:
                    entities += read_entity(installed.pipeline, query)
                    errors.append(None)
                except P4RTError as err:
                    errors.append(err)
        return entities, errors

    def serve_stream(
        self, session: Session, requests: Iterator[p4runtime_pb2.StreamMessageRequest]
    ) -> None:
        """Handle what a client sends on its StreamChannel (runs on its own thread)."""
        try:
            for msg in requests:
                kind = msg.WhichOneof("update")
                if kind == "arbitration":
                    self.arbiter.update(session, msg.arbitration)
                elif kind == "packet":
                    self._packet_out(session, msg.packet)
                elif kind == "digest_ack":
                    installed = self._committed
                    pipeline = installed.pipeline if installed is not None else None
                    self.digests.ack(session, pipeline, msg.digest_ack)
                elif kind is not None:
                    _stream_error(session, code_pb2.UNIMPLEMENTED, f"p4switch ignores {kind}")
        except ArbitrationRefusedError as err:
            log.info("ending a stream: %s", err.message)
            session.send(err)
        except Exception as err:  # the client went away, or a bug: end this stream only
            log.debug("stream ended: %r", err)
        finally:
            self.arbiter.remove(session)
            session.close()

    def _packet_out(self, session: Session, packet: p4runtime_pb2.PacketOut) -> None:
        if not session.arbitrated or self.arbiter.primary() is not session:
            _stream_error(
                session, code_pb2.PERMISSION_DENIED, "only the primary sends packets", packet
            )
            return
        installed = self._committed  # packets go to the program the data plane runs
        if installed is None:
            _stream_error(session, code_pb2.FAILED_PRECONDITION, "no pipeline is running", packet)
            return
        try:
            frame = packet_out_frame(installed.pipeline.schema.packet_out, packet)
        except P4RTError as err:
            _stream_error(session, err.code, err.message, packet)
            return
        try:
            self._send_packet_out(frame)
        except Exception as err:
            log.exception("sending a packet-out failed")
            _stream_error(session, code_pb2.INTERNAL, f"sending the packet failed: {err}", packet)

    def open_session(self) -> Session:
        session = Session()
        with self._sessions_lock:
            self._sessions.add(session)
        return session

    def close_session(self, session: Session) -> None:
        self.arbiter.remove(session)
        session.close()
        with self._sessions_lock:
            self._sessions.discard(session)


def _stream_error(
    session: Session, code: int, message: str, packet: p4runtime_pb2.PacketOut | None = None
) -> None:
    error = p4runtime_pb2.StreamError(canonical_code=code, message=message)
    if packet is not None:
        error.packet_out.packet_out.CopyFrom(packet)
    session.send(p4runtime_pb2.StreamMessageResponse(error=error))
