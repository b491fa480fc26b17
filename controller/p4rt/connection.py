"""One P4Runtime switch over gRPC: stream channel, arbitration, pipeline, write, read, packet I/O.

    conn = SwitchConnection("s1", "127.0.0.1:50051", device_id=1, election_id=(0, 1))
    conn.connect(deadline_after(10))      # opens the StreamChannel and becomes primary
    conn.set_pipeline(p4info, p4_source)  # VERIFY_AND_COMMIT
    conn.write([insert(entity)])          # or WriteError naming each refused update
    conn.close()

Deadlines are absolute `time.monotonic()` values. A connection whose stream ends (the switch
stopped or restarted) is no longer `alive`; `reconnect(deadline)` opens a new channel and
arbitrates again (the switch may have lost its state: see `Fabric.reinstall`).

When another client takes primary the connection reports it (`primary` is False, the loss is
logged and counted in `primary_losses`) and does not fight a live primary. When the switch
announces that there is no primary (that client's stream ended), it asks to be primary again
with an election id at least the highest the switch announced, the claims spaced by a
back-off (`controller.p4rt.arbitration`); `claim_primary(deadline)` asks at once.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field

import grpc
from google.rpc import code_pb2
from p4.config.v1 import p4info_pb2
from p4.v1 import p4runtime_pb2, p4runtime_pb2_grpc

from controller.p4rt.arbitration import Announcement, Announcements, ClientArbitration
from controller.p4rt.exceptions import (
    ConnectionLost,
    P4RuntimeError,
    SwitchUnreachable,
    UpdateFailure,
    WriteError,
    code_name,
)
from controller.p4rt.schema import Schema, Value
from controller.p4rt.status import detail_errors, partial_report, rpc_failure, write_failure

log = logging.getLogger(__name__)

_SetRequest = p4runtime_pb2.SetForwardingPipelineConfigRequest
_MAX_MESSAGE = 64 << 20  # the P4Info and the P4 source travel in one message
PACKET_IN_BACKLOG = 4096


def deadline_after(seconds: float) -> float:
    """An absolute deadline `seconds` from now, as the methods here take it."""
    return time.monotonic() + seconds


@dataclass(frozen=True)
class PacketIn:
    payload: bytes
    metadata: Mapping[str, int] = field(default_factory=dict)


class SwitchConnection:
    """A controller's connection to one P4Runtime device (default role)."""

    def __init__(
        self,
        name: str,
        address: str,
        device_id: int,
        election_id: tuple[int, int] = (0, 1),
        *,
        rpc_timeout: float = 30.0,
    ) -> None:
        self.name = name
        self.address = address
        self.device_id = device_id
        self.rpc_timeout = rpc_timeout
        self.packet_ins: queue.Queue[PacketIn] = queue.Queue(PACKET_IN_BACKLOG)
        self.schema: Schema | None = None  # known once a pipeline is set or fetched
        self._channel: grpc.Channel | None = None
        self._stub: p4runtime_pb2_grpc.P4RuntimeStub | None = None
        self._requests: queue.Queue[p4runtime_pb2.StreamMessageRequest | None] = queue.Queue()
        self._alive = threading.Event()
        self._stream_error: grpc.RpcError | None = None
        self._reader: threading.Thread | None = None
        self.arbitration = ClientArbitration(name, device_id, election_id, self._put, self._ended)

    def __repr__(self) -> str:
        return f"SwitchConnection({self.name!r}, {self.address!r}, device_id={self.device_id})"

    # --- life cycle -------------------------------------------------------------------------

    @property
    def alive(self) -> bool:
        """True while the stream channel is open (False after the switch stopped or restarted)."""
        return self._alive.is_set()

    @property
    def primary(self) -> bool:
        return self._alive.is_set() and self.arbitration.primary.is_set()

    @property
    def election_id(self) -> tuple[int, int]:
        """The election id writes carry (it rises to the highest announced on a re-claim)."""
        return self.arbitration.election_id

    @property
    def announced(self) -> Announcement | None:
        """What the switch last announced to this stream about who is primary."""
        return self.arbitration.announcements.latest

    @property
    def primary_losses(self) -> int:
        """How often this connection stopped being primary while its stream stayed up."""
        return self.arbitration.losses

    def _put(self, msg: p4runtime_pb2.StreamMessageRequest) -> None:
        self._requests.put(msg)

    def connect(self, deadline: float) -> None:
        """Open a channel and a StreamChannel, and become primary; raise if that fails."""
        if self._channel is not None:
            raise P4RuntimeError(f"switch {self.name}: already connected; close() it first")
        channel = grpc.insecure_channel(
            self.address,
            options=[
                ("grpc.max_receive_message_length", _MAX_MESSAGE),
                ("grpc.max_send_message_length", _MAX_MESSAGE),
            ],
        )
        try:
            grpc.channel_ready_future(channel).result(timeout=max(0.0, deadline - time.monotonic()))
        except grpc.FutureTimeoutError:
            channel.close()
            raise SwitchUnreachable(
                f"switch {self.name}: no P4Runtime server answers at {self.address}; "
                "is the switch running and listening there?"
            ) from None
        self._channel = channel
        self._stub = p4runtime_pb2_grpc.P4RuntimeStub(channel)
        self._open_stream()
        try:
            if not self.claim_primary(deadline):
                raise self.arbitration.refused()
        except BaseException:
            self.close()
            raise

    def reconnect(self, deadline: float) -> None:
        """Drop the current channel and connect again, retrying until `deadline`."""
        self.close()
        while True:
            try:
                self.connect(deadline)
                log.info("switch %s: reconnected to %s", self.name, self.address)
                return
            except (SwitchUnreachable, ConnectionLost) as err:
                if time.monotonic() >= deadline:
                    raise SwitchUnreachable(
                        f"switch {self.name}: could not reconnect to {self.address} "
                        f"before the deadline: {err}"
                    ) from err
                self.close()
                time.sleep(0.05)  # back-off between attempts, not a readiness wait

    def close(self) -> None:
        """End the stream and the channel (idempotent)."""
        self._alive.clear()
        self.arbitration.stop()
        self._requests.put(None)
        if self._channel is not None:
            self._channel.close()
        if self._reader is not None:
            self._reader.join(5.0)
        self._channel, self._stub, self._reader = None, None, None
        self._requests = queue.Queue()
        self._alive.clear()

    def __enter__(self) -> SwitchConnection:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- stream -----------------------------------------------------------------------------

    def _open_stream(self) -> None:
        assert self._stub is not None
        requests = self._requests
        announcements = self.arbitration.new_stream()
        self._stream_error = None

        def outgoing() -> Iterator[p4runtime_pb2.StreamMessageRequest]:
            while (item := requests.get()) is not None:
                yield item

        stream = self._stub.StreamChannel(outgoing())
        self._alive.set()

        def read() -> None:
            try:
                for msg in stream:
                    self._dispatch(msg, announcements)
            except grpc.RpcError as err:
                self._stream_error = err
            finally:
                was_alive = self._alive.is_set()
                self._alive.clear()
                self.arbitration.primary.clear()
                announcements.end()
                if was_alive and self._channel is not None:
                    log.warning("switch %s: stream channel ended (%s)", self.name, self._ended())

        self._reader = threading.Thread(target=read, name=f"p4rt-{self.name}", daemon=True)
        self._reader.start()

    def _dispatch(
        self, msg: p4runtime_pb2.StreamMessageResponse, announcements: Announcements
    ) -> None:
        kind = msg.WhichOneof("update")
        if kind == "arbitration":
            self.arbitration.update(msg.arbitration, announcements)
        elif kind == "packet":
            meta = (
                self.schema.packet_metadata_names("packet_in", msg.packet.metadata)
                if self.schema is not None
                else {
                    str(m.metadata_id): int.from_bytes(m.value, "big") for m in msg.packet.metadata
                }
            )
            try:
                self.packet_ins.put_nowait(PacketIn(msg.packet.payload, meta))
            except queue.Full:
                log.warning("switch %s: packet-in dropped, %d unread", self.name, PACKET_IN_BACKLOG)
        elif kind == "error":
            err = msg.error
            log.warning(
                "switch %s: stream error %s: %s",
                self.name,
                code_name(err.canonical_code),
                err.message,
            )

    def _ended(self) -> str:
        err = self._stream_error
        if err is None:
            return "closed by the switch"
        return f"{err.code().name}: {err.details()}"

    def claim_primary(self, deadline: float) -> bool:
        """Ask to be primary now unless a live primary holds the switch; True if primary.

        False while another client is primary (it is not fought); ArbitrationError if the
        switch ends the stream or does not answer before `deadline`.
        """
        if self.primary:
            return True
        if not self.alive:
            raise ConnectionLost(f"switch {self.name}: the stream is closed; reconnect first")
        return self.arbitration.claim(deadline)

    # --- RPCs -------------------------------------------------------------------------------

    def _rpc_stub(self) -> p4runtime_pb2_grpc.P4RuntimeStub:
        if self._stub is None:
            raise ConnectionLost(f"switch {self.name}: not connected; call connect() first")
        return self._stub

    def _failed(self, what: str, err: grpc.RpcError) -> P4RuntimeError:
        return rpc_failure(self.name, what, err)

    def _election(self) -> p4runtime_pb2.Uint128:
        return p4runtime_pb2.Uint128(high=self.election_id[0], low=self.election_id[1])

    def set_pipeline(self, p4info: p4info_pb2.P4Info, device_config: bytes) -> None:
        """SetForwardingPipelineConfig with VERIFY_AND_COMMIT: the switch starts empty."""
        request = _SetRequest(
            device_id=self.device_id,
            election_id=self._election(),
            action=_SetRequest.VERIFY_AND_COMMIT,
        )
        request.config.p4info.CopyFrom(p4info)
        request.config.p4_device_config = device_config
        try:
            self._rpc_stub().SetForwardingPipelineConfig(request, timeout=self.rpc_timeout)
        except grpc.RpcError as err:
            raise self._failed("setting the pipeline", err) from None
        self.schema = Schema(p4info)
        log.info("switch %s: pipeline set", self.name)

    def get_p4info(self) -> p4info_pb2.P4Info | None:
        """The P4Info of the switch's pipeline, or None before any pipeline is set."""
        request = p4runtime_pb2.GetForwardingPipelineConfigRequest(
            device_id=self.device_id,
            response_type=p4runtime_pb2.GetForwardingPipelineConfigRequest.P4INFO_AND_COOKIE,
        )
        try:
            reply = self._rpc_stub().GetForwardingPipelineConfig(request, timeout=self.rpc_timeout)
        except grpc.RpcError as err:
            raise self._failed("reading the pipeline", err) from None
        if not reply.HasField("config") or not reply.config.HasField("p4info"):
            return None
        self.schema = Schema(reply.config.p4info)
        return reply.config.p4info

    def write(self, updates: Sequence[p4runtime_pb2.Update], atomic: bool = False) -> None:
        """Apply updates in order; WriteError lists each refused one with its code.

        `atomic` asks for ROLLBACK_ON_ERROR (the switch undoes the batch at the first failure;
        BMv2 does not implement it); otherwise CONTINUE_ON_ERROR applies what it can.
        """
        if not updates:
            return
        atomicity = (
            p4runtime_pb2.WriteRequest.ROLLBACK_ON_ERROR
            if atomic
            else p4runtime_pb2.WriteRequest.CONTINUE_ON_ERROR
        )
        request = p4runtime_pb2.WriteRequest(
            device_id=self.device_id, election_id=self._election(), atomicity=atomicity
        )
        request.updates.extend(updates)
        try:
            self._rpc_stub().Write(request, timeout=self.rpc_timeout)
        except grpc.RpcError as err:
            errors = detail_errors(err)
            if err.code() != grpc.StatusCode.UNKNOWN or not errors:
                raise write_failure(self.name, f"a write of {len(updates)} updates", err) from None
            if len(errors) < len(updates):  # a summarised report: the rest's outcome is unknown
                raise partial_report(self.name, len(updates), errors, err) from None
            failures, succeeded = [], []
            for index, (update, error) in enumerate(zip(updates, errors, strict=True)):
                if error.canonical_code == code_pb2.OK:
                    succeeded.append(index)
                else:
                    failures.append(
                        UpdateFailure(index, update, error.canonical_code, error.message)
                    )
            describe = self.schema.describe if self.schema is not None else None
            raise WriteError(self.name, failures, succeeded, describe) from None

    def read(self, entities: Sequence[p4runtime_pb2.Entity]) -> list[p4runtime_pb2.Entity]:
        """Every entity matching the given (wildcard) entities, gathered from the reply stream."""
        request = p4runtime_pb2.ReadRequest(device_id=self.device_id)
        request.entities.extend(entities)
        try:
            stream = self._rpc_stub().Read(request, timeout=self.rpc_timeout)
            return [entity for reply in stream for entity in reply.entities]
        except grpc.RpcError as err:
            errors = detail_errors(err) or []
            bad = "; ".join(
                f"#{i}: {code_name(e.canonical_code)}: {e.message}"
                for i, e in enumerate(errors)
                if e.canonical_code != code_pb2.OK
            )
            if not bad:  # no per-entity error (BMv2 refuses register reads so): the status
                raise self._failed("a read", err) from None
            raise P4RuntimeError(f"switch {self.name}: read refused: {bad}") from None

    def packet_out(self, payload: bytes, metadata: Mapping[str, Value] | None = None) -> None:
        """Send a PacketOut on the stream; `metadata` by packet_out header field name."""
        if not self.alive:
            raise ConnectionLost(f"switch {self.name}: the stream is closed; reconnect first")
        packet = p4runtime_pb2.PacketOut(payload=payload)
        if metadata:
            if self.schema is None:
                raise P4RuntimeError(f"switch {self.name}: set or fetch the pipeline first")
            packet.metadata.extend(self.schema.packet_metadata_values("packet_out", metadata))
        self._requests.put(p4runtime_pb2.StreamMessageRequest(packet=packet))
