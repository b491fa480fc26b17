"""The gRPC face of the P4Runtime server: request checks, status codes, error details.

`P4RuntimeService` implements the p4.v1.P4Runtime service on top of a `Device` (what
`p4switch.p4rt.server.P4RuntimeServer` is): it checks device id, role and primary status as the
specification orders them, hands the device the client's deadline (as an instant on the
service's clock, `time.monotonic` unless given another), then turns the device's `P4RTError`s
into gRPC statuses; per-item failures of Write and Read become UNKNOWN with p4.v1.Error details
in the `grpc-status-details-bin` trailer, one per item, within gRPC's metadata limit
(`p4switch.p4rt.report`); a batch whose report cannot fit is refused whole with
RESOURCE_EXHAUSTED.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from typing import NoReturn, Protocol

import grpc
from google.rpc import code_pb2
from p4.v1 import p4runtime_pb2, p4runtime_pb2_grpc

from p4switch.exceptions import ArbitrationRefusedError, P4RTError
from p4switch.p4rt.arbitration import CLOSE, Arbiter, Session, election_id
from p4switch.p4rt.deadline import Clock
from p4switch.p4rt.report import batch_status, status_message, unreportable
from p4switch.p4rt.write import ReportCheck

API_VERSION = "1.4.1"  # the P4Runtime version implemented
_READ_CHUNK = 512  # entities per ReadResponse message
_NO_DEADLINE = 86400.0 * 365  # seconds: a deadline further away than this is no deadline


class Device(Protocol):
    """What the service serves: one device's pipeline, state and streams (a P4RuntimeServer).

    Each method raises P4RTError for a request it refuses.
    """

    @property
    def device_id(self) -> int: ...

    @property
    def arbiter(self) -> Arbiter: ...

    def set_pipeline(
        self,
        request: p4runtime_pb2.SetForwardingPipelineConfigRequest,
        deadline: float | None = None,
    ) -> None: ...

    def get_pipeline(
        self, request: p4runtime_pb2.GetForwardingPipelineConfigRequest
    ) -> p4runtime_pb2.GetForwardingPipelineConfigResponse: ...

    def write(
        self,
        request: p4runtime_pb2.WriteRequest,
        deadline: float | None = None,
        check_report: ReportCheck | None = None,
    ) -> list[P4RTError | None]: ...

    def read(
        self, request: p4runtime_pb2.ReadRequest, deadline: float | None = None
    ) -> tuple[list[p4runtime_pb2.Entity], list[P4RTError | None]]: ...

    def open_session(self) -> Session: ...

    def serve_stream(
        self, session: Session, requests: Iterator[p4runtime_pb2.StreamMessageRequest]
    ) -> None: ...

    def close_session(self, session: Session) -> None: ...


def _grpc_code(code: int) -> grpc.StatusCode:
    return next(c for c in grpc.StatusCode if c.value[0] == code)


def _abort(context: grpc.ServicerContext, err: P4RTError) -> NoReturn:
    context.abort(_grpc_code(err.code), status_message(err.message))
    raise AssertionError("unreachable")  # context.abort raises


def _deadline(context: grpc.ServicerContext, clock: Clock) -> float | None:
    """The client's deadline as an instant on `clock` (None: the client set none)."""
    remaining = context.time_remaining()
    if remaining is None or remaining > _NO_DEADLINE:  # grpc reports "none" as centuries left
        return None
    return clock() + float(remaining)


def _fail_batch(context: grpc.ServicerContext, errors: list[P4RTError | None], what: str) -> None:
    """Report per-item failures: UNKNOWN, one p4.v1.Error per item (`errors` are reportable)."""
    status = batch_status(errors, what)
    context.set_trailing_metadata((("grpc-status-details-bin", status.SerializeToString()),))
    context.set_code(grpc.StatusCode.UNKNOWN)
    context.set_details(status.message)


class P4RuntimeService(p4runtime_pb2_grpc.P4RuntimeServicer):  # type: ignore[misc]  # no stubs
    """The gRPC face of a device: request checks, then the device's methods. `clock` is what
    the device's deadlines are instants of (the device's own)."""

    def __init__(self, server: Device, clock: Clock = time.monotonic) -> None:
        self._server = server
        self._clock = clock

    def _check(
        self, context: grpc.ServicerContext, device_id: int, role: str, role_id: int
    ) -> None:
        if device_id != self._server.device_id:
            _abort(context, P4RTError(code_pb2.NOT_FOUND, f"no device {device_id} here"))
        if role or role_id:
            _abort(context, P4RTError(code_pb2.NOT_FOUND, "p4switch has the default role only"))

    def _check_primary(
        self, context: grpc.ServicerContext, eid: p4runtime_pb2.Uint128 | None
    ) -> None:
        if not self._server.arbiter.is_primary(election_id(eid) if eid is not None else None):
            denied = P4RTError(code_pb2.PERMISSION_DENIED, "only the primary client may do this")
            _abort(context, denied)

    def Capabilities(
        self, request: p4runtime_pb2.CapabilitiesRequest, context: grpc.ServicerContext
    ) -> p4runtime_pb2.CapabilitiesResponse:
        return p4runtime_pb2.CapabilitiesResponse(p4runtime_api_version=API_VERSION)

    def SetForwardingPipelineConfig(
        self,
        request: p4runtime_pb2.SetForwardingPipelineConfigRequest,
        context: grpc.ServicerContext,
    ) -> p4runtime_pb2.SetForwardingPipelineConfigResponse:
        self._check(context, request.device_id, request.role, request.role_id)
        self._check_primary(
            context, request.election_id if request.HasField("election_id") else None
        )
        try:
            self._server.set_pipeline(request, _deadline(context, self._clock))
        except P4RTError as err:
            _abort(context, err)
        return p4runtime_pb2.SetForwardingPipelineConfigResponse()

    def GetForwardingPipelineConfig(
        self,
        request: p4runtime_pb2.GetForwardingPipelineConfigRequest,
        context: grpc.ServicerContext,
    ) -> p4runtime_pb2.GetForwardingPipelineConfigResponse:
        self._check(context, request.device_id, "", 0)
        try:
            return self._server.get_pipeline(request)
        except P4RTError as err:
            _abort(context, err)

    def Write(
        self, request: p4runtime_pb2.WriteRequest, context: grpc.ServicerContext
    ) -> p4runtime_pb2.WriteResponse:
        self._check(context, request.device_id, request.role, request.role_id)
        self._check_primary(
            context, request.election_id if request.HasField("election_id") else None
        )
        try:
            results = self._server.write(
                request, _deadline(context, self._clock), lambda r: unreportable(r, "Write")
            )
        except P4RTError as err:
            _abort(context, err)
        if any(r is not None for r in results):
            _fail_batch(context, results, "Write")
        return p4runtime_pb2.WriteResponse()

    def Read(
        self, request: p4runtime_pb2.ReadRequest, context: grpc.ServicerContext
    ) -> Iterator[p4runtime_pb2.ReadResponse]:
        self._check(context, request.device_id, request.role, 0)
        try:
            entities, errors = self._server.read(request, _deadline(context, self._clock))
        except P4RTError as err:
            _abort(context, err)
        refusal = unreportable(errors, "Read")
        if refusal is not None:
            _abort(context, refusal)
        for start in range(0, len(entities), _READ_CHUNK):
            yield p4runtime_pb2.ReadResponse(entities=entities[start : start + _READ_CHUNK])
        if any(e is not None for e in errors):
            _fail_batch(context, errors, "Read")

    def StreamChannel(
        self,
        request_iterator: Iterator[p4runtime_pb2.StreamMessageRequest],
        context: grpc.ServicerContext,
    ) -> Iterator[p4runtime_pb2.StreamMessageResponse]:
        server = self._server
        session = server.open_session()
        context.add_callback(session.close)  # the client cancelled or went away
        reader = threading.Thread(
            target=server.serve_stream, args=(session, request_iterator), daemon=True
        )
        reader.start()
        try:
            while True:
                item = session.outbox.get()
                if item is CLOSE:
                    return
                if isinstance(item, ArbitrationRefusedError):
                    context.abort(_grpc_code(item.code), status_message(item.message))
                if isinstance(item, p4runtime_pb2.StreamMessageResponse):
                    yield item
        finally:
            server.close_session(session)
