"""A refused read says why: per-entity errors when the switch gives them, else the status itself.

BMv2 refuses a register read as a whole: UNIMPLEMENTED, "Register reads are not supported yet",
with a `grpc-status-details-bin` trailer whose Status holds no per-entity error. p4switch reads
registers, and its whole-request refusals carry no trailer at all, so no real server here gives
that form: `Bmv2LikeRead` below is an interceptor on an in-process p4switch served over P4Runtime
(arbitration, pipeline and all) that replaces only Read by that refusal.
"""

from __future__ import annotations

from collections.abc import Iterator

import grpc
import pytest
from google.rpc import code_pb2, status_pb2
from p4.config.v1 import p4info_pb2
from p4.v1 import p4runtime_pb2
from p4switch import InProcessSwitch

from controller.p4rt import P4RuntimeError, SwitchConnection, deadline_after
from tests.unit.controller.conftest import DEVICE_ID, Hooks, Innet, Switch, handled_by

BMV2_MESSAGE = "Register reads are not supported yet"


def refused_read(
    request: p4runtime_pb2.ReadRequest, context: grpc.ServicerContext
) -> Iterator[p4runtime_pb2.ReadResponse]:
    """A Read refused as BMv2 refuses a register read."""
    status = status_pb2.Status(code=code_pb2.UNIMPLEMENTED, message=BMV2_MESSAGE)
    context.set_trailing_metadata((("grpc-status-details-bin", status.SerializeToString()),))
    context.abort(grpc.StatusCode.UNIMPLEMENTED, BMV2_MESSAGE)
    yield from ()  # unreachable: abort raises; a generator, as the streaming RPC expects


BMV2_LIKE_READS = Hooks({"Read": lambda handler: handled_by(handler, refused_read)})


@pytest.fixture
def bmv2_like(innet: Innet) -> Iterator[str]:
    """The address of a P4Runtime server running innet.p4 whose reads are all refused."""
    device = InProcessSwitch(innet.program, "python")
    port = device.serve("127.0.0.1:0", device_id=DEVICE_ID, interceptors=[BMV2_LIKE_READS])
    try:
        yield f"127.0.0.1:{port}"
    finally:
        device.stop(grace=0.2)


def register_query(p4info: p4info_pb2.P4Info) -> p4runtime_pb2.Entity:
    register = p4info.registers[0].preamble.id
    return p4runtime_pb2.Entity(register_entry=p4runtime_pb2.RegisterEntry(register_id=register))


def test_a_read_refused_without_details_carries_the_status_code_and_message(
    innet: Innet, bmv2_like: str
) -> None:
    with SwitchConnection("s0", bmv2_like, DEVICE_ID) as conn:
        conn.connect(deadline_after(10))
        with pytest.raises(P4RuntimeError) as caught:
            conn.read([register_query(innet.p4info)])
    assert str(caught.value) == f"switch s0: a read failed: UNIMPLEMENTED: {BMV2_MESSAGE}"


def test_a_read_refused_per_entity_keeps_each_entitys_error(
    innet: Innet, switches: list[Switch]
) -> None:
    unknown_table = p4runtime_pb2.Entity(table_entry=p4runtime_pb2.TableEntry(table_id=0x0200FFFF))
    with SwitchConnection("s0", switches[0].address, DEVICE_ID) as conn:
        conn.connect(deadline_after(10))
        with pytest.raises(P4RuntimeError) as caught:
            conn.read([register_query(innet.p4info), unknown_table])
    text = str(caught.value)
    assert text.startswith("switch s0: read refused: #1: NOT_FOUND: "), text
    assert "#0" not in text  # the register read succeeded: only the refused entity is named


def test_a_read_refused_as_a_whole_by_p4switch_says_why(switches: list[Switch]) -> None:
    with SwitchConnection("s0", switches[0].address, DEVICE_ID) as conn:
        conn.connect(deadline_after(10))
        with pytest.raises(P4RuntimeError, match=r"a read failed: NOT_FOUND: no device 7"):
            conn.device_id = 7  # the request names a device the server does not have
            conn.read([p4runtime_pb2.Entity(table_entry=p4runtime_pb2.TableEntry())])
