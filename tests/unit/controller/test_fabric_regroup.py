"""A live switch healed with the pipeline pushed again gets each multicast group once.

BMv2 keeps a group's replication nodes across SetForwardingPipelineConfig (behavioral-model#891):
the same groups installed again then send every copy twice. BMv2 cannot run here, so the switch
below is p4switch's P4Runtime server with a loader that carries the old groups into the new
pipeline, as BMv2 does; p4switch itself starts every pipeline with no groups. A fabric made
with `clear_groups=True` (the testbed's, on the bmv2 target) deletes what the switch still has
before it pushes; one made without keeps p4switch's behaviour.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from p4.config.v1 import p4info_pb2
from p4switch.p4rt import LoadedProgram, P4RuntimeServer

from controller.p4rt import Fabric, SwitchConnection, deadline_after
from controller.p4rt.exceptions import WriteError
from controller.planner.schedule import Round
from controller.rounds import Addressing, base_entries, install_changes, round_entries, to_updates
from tests.unit.controller.conftest import DEVICE_ID, Innet, snapshot, triangle

WAN = triangle()


class GroupKeepingSwitch:
    """A P4Runtime server whose pipeline pushes keep the multicast groups already installed."""

    def __init__(self, innet: Innet) -> None:
        self.innet = innet
        self.pushes = 0

        def load(p4info: p4info_pb2.P4Info, device_config: bytes) -> LoadedProgram:
            fresh = innet.program.new_state()
            assert self.server.pipeline is not None
            fresh.pre.groups.update(self.server.pipeline.state.pre.groups)  # as BMv2 keeps them
            self.pushes += 1
            return LoadedProgram(p4info, device_config, fresh, lambda: None)

        initial = LoadedProgram(innet.p4info, innet.source, innet.program.new_state(), lambda: None)
        self.server = P4RuntimeServer(
            device_id=DEVICE_ID, loader=load, send_packet_out=lambda frame: None, initial=initial
        )
        self.port = self.server.start("127.0.0.1:0")

    @property
    def groups(self) -> dict[int, tuple[tuple[int, int], ...]]:
        assert self.server.pipeline is not None
        return snapshot(self.server.pipeline.state)["groups"]  # type: ignore[return-value]


@pytest.fixture
def switch(innet: Innet) -> Iterator[GroupKeepingSwitch]:
    sw = GroupKeepingSwitch(innet)
    try:
        yield sw
    finally:
        sw.server.stop(grace=0.2)


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
