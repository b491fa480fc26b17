"""The P4Runtime service's gRPC method table, with requests that cannot be decoded refused as
INVALID_ARGUMENT.

grpc-python decodes each request before the service sees it and answers bytes that are no
message of the method's type (a truncated field, a string that is not UTF-8) with INTERNAL,
"Exception deserializing request!": the client cannot tell its own mistake from the switch's.
Here the unary methods decode leniently: what does not decode reaches the method as
`Undecodable`, and the client gets INVALID_ARGUMENT naming the message type and why. The
StreamChannel keeps grpc's own decoding: a stream message that does not decode ends that stream.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import grpc
from google.protobuf.message import DecodeError, Message
from p4.v1 import p4runtime_pb2

from p4switch.p4rt.report import status_message

SERVICE = "p4.v1.P4Runtime"


@dataclass(frozen=True)
class Undecodable:
    """Bytes a method received that are no message of its request type."""

    type_name: str
    reason: str


def _lenient(message: type[Message]) -> Callable[[bytes], Message | Undecodable]:
    def decode(data: bytes) -> Message | Undecodable:
        try:
            return message.FromString(data)
        except (DecodeError, UnicodeDecodeError, ValueError) as err:
            return Undecodable(message.DESCRIPTOR.full_name, str(err) or type(err).__name__)

    return decode


def _refusing(method: Callable[[Any, grpc.ServicerContext], Any]) -> Callable[..., Any]:
    def handle(request: Message | Undecodable, context: grpc.ServicerContext) -> Any:
        if isinstance(request, Undecodable):
            context.abort(
                grpc.StatusCode.INVALID_ARGUMENT,
                status_message(f"the request is not a valid {request.type_name}: {request.reason}"),
            )
        return method(request, context)

    return handle


def add_to_server(servicer: Any, server: grpc.Server) -> None:
    """Serve `servicer`'s P4Runtime methods on `server`."""
    p = p4runtime_pb2
    unary = {
        "Write": (p.WriteRequest, p.WriteResponse),
        "SetForwardingPipelineConfig": (
            p.SetForwardingPipelineConfigRequest,
            p.SetForwardingPipelineConfigResponse,
        ),
        "GetForwardingPipelineConfig": (
            p.GetForwardingPipelineConfigRequest,
            p.GetForwardingPipelineConfigResponse,
        ),
        "Capabilities": (p.CapabilitiesRequest, p.CapabilitiesResponse),
    }
    handlers = {
        name: grpc.unary_unary_rpc_method_handler(
            _refusing(getattr(servicer, name)),
            request_deserializer=_lenient(request),
            response_serializer=response.SerializeToString,
        )
        for name, (request, response) in unary.items()
    }
    handlers["Read"] = grpc.unary_stream_rpc_method_handler(
        _refusing(servicer.Read),
        request_deserializer=_lenient(p.ReadRequest),
        response_serializer=p.ReadResponse.SerializeToString,
    )
    handlers["StreamChannel"] = grpc.stream_stream_rpc_method_handler(
        servicer.StreamChannel,
        request_deserializer=p.StreamMessageRequest.FromString,
        response_serializer=p.StreamMessageResponse.SerializeToString,
    )
    server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler(SERVICE, handlers),))
