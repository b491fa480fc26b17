"""A live switch healed with the pipeline pushed again gets each multicast group once.

BMv2 keeps a group's replication nodes across SetForwardingPipelineConfig (behavioral-model#891):
the same groups installed again then send every copy twice. BMv2 cannot run here, so the switch
below is an in-process p4switch served over P4Runtime whose pipeline pushes carry the old
groups into the new pipeline, as BMv2 does; p4switch itself starts every pipeline with no groups.
A fabric made with `clear_groups=True` (the testbed's, on the bmv2 target) deletes what the
switch still has before it pushes; one made without keeps p4switch's behaviour.
"""

from __future__ import annotations

from collections.abc import Iterator

import grpc
import pytest
from p4.v1 import p4runtime_pb2
from p4switch import InProcessSwitch

from controller.p4rt import Fabric, SwitchConnection, deadline_after
from controller.p4rt.exceptions import WriteError
from controller.p4rt.schema import insert
from controller.planner.schedule import Round
from controller.rounds import Addressing, base_entries, install_changes, round_entries, to_updates
from tests.unit.controller.conftest import DEVICE_ID, Hooks, Innet, handled_by, triangle

WAN = triangle()


class GroupKeepingSwitch:
    """A P4Runtime server whose pipeline pushes keep the multicast groups already installed."""

    def __init__(self, innet: Innet) -> None:
        self.innet = innet
        self.pushes = 0
        self.device = InProcessSwitch(innet.program, "python")
        hooks = Hooks({"SetForwardingPipelineConfig": self.keeping_groups})
        self.port = self.device.serve("127.0.0.1:0", device_id=DEVICE_ID, interceptors=[hooks])

    def read_groups(self) -> list[p4runtime_pb2.Entity]:
        query = p4runtime_pb2.Entity()
        query.packet_replication_engine_entry.multicast_group_entry.SetInParent()
        return self.device.read([query])

    @property
    def groups(self) -> dict[int, tuple[tuple[int, int], ...]]:
        return {
            e.packet_replication_engine_entry.multicast_group_entry.multicast_group_id: tuple(
                sorted(
                    (r.egress_port, r.instance)
                    for r in e.packet_replication_engine_entry.multicast_group_entry.replicas
                )
            )
            for e in self.read_groups()
        }

    def keeping_groups(self, handler: grpc.RpcMethodHandler) -> grpc.RpcMethodHandler:
        """Each SetForwardingPipelineConfig: the groups before it are written again after it."""

        def set_pipeline(
            request: p4runtime_pb2.SetForwardingPipelineConfigRequest,
            context: grpc.ServicerContext,
        ) -> p4runtime_pb2.SetForwardingPipelineConfigResponse:
            kept = self.read_groups()
            response = handler.unary_unary(request, context)
            self.pushes += 1
            self.device.write([insert(e) for e in kept])  # as BMv2 keeps them
            return response

        return handled_by(handler, set_pipeline)


@pytest.fixture
def switch(innet: Innet) -> Iterator[GroupKeepingSwitch]:
    sw = GroupKeepingSwitch(innet)
    try:
        yield sw
    finally:
        sw.device.stop(grace=0.2)


def programmed(innet: Innet, switch: GroupKeepingSwitch, clear_groups: bool) -> Fabric:
    """A one-switch fabric (city 1 of the triangle) with the base entries and one round."""
    conn = SwitchConnection("s1", f"127.0.0.1:{switch.port}", DEVICE_ID)
    fabric = Fabric([conn], innet.p4info, innet.source, clear_groups=clear_groups)
    fabric.connect(deadline_after(10))
    base = base_entries(WAN, Addressing.default(3, 1))
    plan = round_entries(WAN, Round.of([[0, 1, 2]]), job=1, number=0, hosts_per_island=1)
    for changes in (install_changes(base), install_changes(plan, [base])):
        fabric.install({"s1": to_updates(fabric.schema, changes[1])})
    return fabric


def test_clearing_the_groups_first_heals_a_live_switch_with_each_group_once(
    innet: Innet, switch: GroupKeepingSwitch
) -> None:
    fabric = programmed(innet, switch, clear_groups=True)
    try:
        before = switch.groups
        assert before, "the round installs multicast groups on s1"
        fabric.reinstall("s1", deadline_after(10))  # the stream is alive: the process runs
        assert switch.pushes == 2  # connect's push, then the heal's
        assert switch.groups == before
    finally:
        fabric.close()


def test_without_clearing_the_kept_groups_refuse_the_replay(
    innet: Innet, switch: GroupKeepingSwitch
) -> None:
    """What the testbed did on BMv2 before: the replayed groups meet the kept ones (on BMv2
    they are accepted and every copy is then sent twice; this server refuses the duplicate)."""
    fabric = programmed(innet, switch, clear_groups=False)
    try:
        with pytest.raises(WriteError, match="ALREADY_EXISTS"):
            fabric.reinstall("s1", deadline_after(10))
    finally:
        fabric.close()
