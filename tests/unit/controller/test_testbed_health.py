"""Testbed health and heal in the two ways a testbed used to wedge while saying `healthy`: a
write applied after its deadline, and a primary taken by another client. A real Testbed on
in-process p4switch P4Runtime servers (real gRPC, no Mininet)."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator

import pytest

from controller.p4rt import ArbitrationError, InstallError, SwitchConnection, deadline_after
from controller.p4rt.schema import insert
from controller.planner.cost import CostParams
from controller.planner.schedule import Round, Schedule
from controller.testbed import RECONCILE_ATTEMPTS, SwitchHealth, Testbed
from innet.packetformat import PacketFormat
from tests.unit.controller.conftest import DEVICE_ID, InProcessNetwork, Switch, triangle
from tests.unit.controller.held import HeldWrites, direct_write, groups, tree_round, trees
from topo.siteplan import SlotPool

PARAMS = CostParams(update_bytes=10**8, memory_bytes=2**20, access_bps=1e9)
SCHEDULE = Schedule("test", 3, (Round.of([[0, 1], [2]]), Round.of([[0, 1, 2]])))
TIMEOUT_S = 0.5  # s1's deadline while its writes are held
RPC_TIMEOUT_S = 30.0  # the connection's own, once they run again


class StoppableNetwork(InProcessNetwork):
    """The in-process network, able to stop one switch (as the Mininet network stops a
    process) so that `restart` starts it afresh."""

    def __init__(self, switches: list[Switch]) -> None:
        super().__init__(switches, 2)
        self.stopped_switches: list[int] = []

    def stop_switch(self, city: int) -> None:
        self.stopped_switches.append(city)
        self.switches[city].stop()


@pytest.fixture
def testbed(switches: list[Switch]) -> Iterator[Testbed]:
    pool = SlotPool(64, 1, PacketFormat())
    tb = Testbed.start(triangle(), StoppableNetwork(switches), PARAMS, pool=pool, schedule=SCHEDULE)
    try:
        yield tb
    finally:
        tb.close()


def until(condition: Callable[[], bool], what: str, seconds: float = 5.0) -> None:
    deadline = deadline_after(seconds)
    while not condition():
        assert time.monotonic() < deadline, what
        time.sleep(0.01)


def of(testbed: Testbed, switch: str) -> SwitchHealth:
    return next(h for h in testbed.health() if h.switch == switch)


def install_everywhere(testbed: Testbed) -> None:
    testbed.fabric.install({name: tree_round(testbed.fabric.schema) for name in ("s0", "s1", "s2")})


def test_a_healthy_testbed_says_so_field_by_field(testbed: Testbed) -> None:
    for h in testbed.health():
        assert (h.primary, h.state, h.write, h.reason) == ("ok", "ok", "ok", "")
        assert h.ok


def test_a_stolen_primary_shows_in_health_and_is_taken_back_once_the_client_leaves(
    testbed: Testbed, switches: list[Switch]
) -> None:
    other = SwitchConnection("other", switches[1].address, DEVICE_ID, (9, 0))
    other.connect(deadline_after(10))
    try:
        until(lambda: of(testbed, "s1").primary == "lost", "health did not see the loss")
        seen = of(testbed, "s1")
        assert not seen.ok and seen.p4runtime and seen.process  # before: ok, all fields up
        assert "another client is primary" in seen.reason and str(9 << 64) in seen.reason
        with pytest.raises(ArbitrationError, match="another client is primary"):
            install_everywhere(testbed)
        assert [trees(sw) for sw in switches] == [0, 0, 0]  # nothing written anywhere
        assert testbed.heal() == []  # a live primary is not fought
        assert of(testbed, "s1").primary == "lost"
    finally:
        other.close()
    until(lambda: testbed.fabric.connection("s1").primary, "the controller is not primary again")
    assert of(testbed, "s1").state == "diverged"  # the other client could write meanwhile
    assert testbed.heal() == ["B"]  # read back and reconciled
    assert all(h.ok for h in testbed.health())
    install_everywhere(testbed)
    assert [trees(sw) for sw in switches] == [1, 1, 1]


def test_a_write_applied_after_its_deadline_shows_in_health_until_reconciled(
    testbed: Testbed, switches: list[Switch], monkeypatch: pytest.MonkeyPatch
) -> None:
    testbed.fabric.connection("s1").rpc_timeout = TIMEOUT_S
    held = HeldWrites(switches[1], monkeypatch)
    with pytest.raises(InstallError):
        install_everywhere(testbed)
    seen = of(testbed, "s1")
    assert (seen.write, seen.state, seen.ok) == ("timed out", "diverged", False)
    assert "DEADLINE_EXCEEDED" in seen.reason
    held.release()
    assert held.ran.wait(10)
    testbed.fabric.connection("s1").rpc_timeout = RPC_TIMEOUT_S  # a busy machine is not a fault
    assert 2 in groups(switches[1])  # the expired write landed
    assert not of(testbed, "s1").ok  # still unknown until it is read back
    assert testbed.heal() == ["B"]
    assert all(h.ok for h in testbed.health())
    install_everywhere(testbed)  # before: ALREADY_EXISTS for multicast group 2, for good
    assert [set(groups(sw)) >= {2, 3} for sw in switches] == [True] * 3


def test_a_switch_that_stays_diverged_is_restarted_as_a_last_resort(
    testbed: Testbed, switches: list[Switch], monkeypatch: pytest.MonkeyPatch
) -> None:
    network = testbed.network
    assert isinstance(network, StoppableNetwork)
    schema = testbed.fabric.schema
    direct_write(switches[1], [insert(schema.multicast_group(9, [(2, 0)]))])  # not the fabric's
    testbed.fabric.connection("s1").rpc_timeout = TIMEOUT_S
    held = HeldWrites(switches[1], monkeypatch)  # s1 runs no write any more: wedged
    try:
        with pytest.raises(InstallError):
            install_everywhere(testbed)
        for attempt in range(1, RECONCILE_ATTEMPTS):
            assert testbed.heal() == []  # the reconcile's delete of group 9 times out
            assert testbed.fabric.status("s1").reconcile_failures == attempt
            assert of(testbed, "s1").state == "diverged"
        assert network.stopped_switches == []
        assert testbed.heal() == ["B"]  # the last resort: a fresh switch, entries replayed
        assert network.stopped_switches == [1]
    finally:
        held.release()
    testbed.fabric.connection("s1").rpc_timeout = RPC_TIMEOUT_S
    assert all(h.ok for h in testbed.health())
    assert 9 not in groups(switches[1])
    install_everywhere(testbed)
    assert [trees(sw) for sw in switches] == [1, 1, 1]
