"""Fabric: a write whose outcome is unknown is never taken as "nothing applied"; the switch is
read back and reconciled before the next install (real gRPC, in-process p4switch servers)."""

from __future__ import annotations

import grpc
import pytest
from google.rpc import code_pb2
from p4.v1 import p4runtime_pb2

from controller.p4rt import (
    ArbitrationError,
    ConnectionLost,
    Fabric,
    InstallError,
    P4RuntimeError,
    Reconciled,
    WriteOutcomeUnknown,
)
from controller.p4rt.entities import entity_key
from controller.p4rt.exceptions import WriteLost
from controller.p4rt.reconcile import differences
from controller.p4rt.schema import Schema, delete, insert, modify
from controller.p4rt.status import NOTHING_APPLIED, partial_report, write_failure
from tests.unit.controller.conftest import Switch, snapshot
from tests.unit.controller.held import HeldWrites, direct_write, groups, tree_round, trees

NAMES = ("s0", "s1", "s2")
TIMEOUT_S = 0.5  # the controller's deadline for each RPC in these tests


def everywhere(updates: list[p4runtime_pb2.Update]) -> dict[str, list[p4runtime_pb2.Update]]:
    return {name: list(updates) for name in NAMES}


def test_a_write_applied_after_its_deadline_is_reconciled_before_the_next_install(
    fabric: Fabric, switches: list[Switch], monkeypatch: pytest.MonkeyPatch
) -> None:
    changes = everywhere(tree_round(fabric.schema))
    fabric.connection("s1").rpc_timeout = TIMEOUT_S
    held = HeldWrites(switches[1], monkeypatch)
    with pytest.raises(InstallError) as caught:
        fabric.install(changes)
    err = caught.value
    assert err.switch == "s1" and err.rolled_back == ("s0",) and "s1" in err.unrestored
    assert "DEADLINE_EXCEEDED" in str(err) and "reconciled before the next install" in str(err)
    status = fabric.status("s1")
    assert status.diverged and status.write_timed_out and "DEADLINE_EXCEEDED" in status.reason
    assert groups(switches[0]) == {} and trees(switches[0]) == 0  # s0 rolled back
    held.release()  # the switch carries out the expired write now
    assert held.ran.wait(10), "the held write never ran"
    assert 2 in groups(switches[1]) and trees(switches[1]) == 1  # applied late, undone nowhere
    fabric.install(changes)  # before: refused with ALREADY_EXISTS for multicast group 2
    assert not fabric.status("s1").diverged and not fabric.status("s1").write_timed_out
    views = [snapshot(sw) for sw in switches]
    assert views[0] == views[1] == views[2]
    assert trees(switches[1]) == 1 and set(groups(switches[1])) == {2, 3}


def test_a_rollback_that_times_out_leaves_its_switch_diverged_and_reconciled_later(
    fabric: Fabric, switches: list[Switch], monkeypatch: pytest.MonkeyPatch
) -> None:
    schema = fabric.schema
    changes = everywhere(tree_round(schema))
    # another program put round 2's tree entry on s2: the install is refused there
    direct_write(switches[2], [tree_round(schema)[2]])
    fabric.connection("s0").rpc_timeout = TIMEOUT_S
    held = HeldWrites(switches[0], monkeypatch, after=1)  # s0's install goes, its rollback hangs
    with pytest.raises(InstallError) as caught:
        fabric.install(changes)
    err = caught.value
    assert err.switch == "s2" and [f.code_name for f in err.failures] == ["ALREADY_EXISTS"]
    assert err.rolled_back == ("s2", "s1") and "s0" in err.unrestored
    assert fabric.status("s0").diverged and fabric.status("s0").write_timed_out
    assert fabric.status("s2").diverged  # its refusal showed it holds what it should not
    held.release()
    assert held.ran.wait(10)
    fabric.install(changes)  # s0 and s2 are read back and reconciled first
    assert [trees(sw) for sw in switches] == [1, 1, 1]
    assert all(set(groups(sw)) == {2, 3} for sw in switches)
    assert fabric.diverged() == ()


def test_reconcile_deletes_extras_inserts_what_is_missing_and_modifies_what_differs(
    fabric: Fabric, switches: list[Switch]
) -> None:
    schema = fabric.schema
    fabric.install({"s0": tree_round(schema)})
    wanted = snapshot(switches[0])
    tree = tree_round(schema)[2].entity
    changed = p4runtime_pb2.Entity()
    changed.CopyFrom(tree)
    changed.table_entry.action.action.params[0].value = b"\x07"
    direct_write(
        switches[0],
        [
            insert(schema.multicast_group(9, [(2, 0)])),  # extra
            delete(schema.multicast_group(3, [])),  # missing
            modify(changed),  # different
        ],
    )
    assert snapshot(switches[0]) != wanted
    assert fabric.reconcile("s0") == Reconciled(deleted=1, inserted=1, modified=1)
    assert snapshot(switches[0]) == wanted
    assert fabric.reconcile("s0") == Reconciled()  # nothing left to do


def test_differences_delete_entries_before_groups_and_add_groups_before_entries(
    fabric: Fabric,
) -> None:
    schema = fabric.schema
    old = {entity_key(u.entity): u.entity for u in tree_round(schema, 2)}
    new = {entity_key(u.entity): u.entity for u in tree_round(schema, 4)}
    batches, counts = differences(new, old)
    assert counts == Reconciled(deleted=3, inserted=3, modified=0)
    kinds = [[(u.type, u.entity.WhichOneof("entity")) for u in b] for b in batches]
    table, pre = "table_entry", "packet_replication_engine_entry"
    assert kinds == [
        [(p4runtime_pb2.Update.DELETE, table)],
        [(p4runtime_pb2.Update.DELETE, pre)] * 2,
        [(p4runtime_pb2.Update.INSERT, pre)] * 2,
        [(p4runtime_pb2.Update.INSERT, table)],
    ]
    assert differences(new, new) == ([], Reconciled())


class Failed(grpc.RpcError):
    """A failed RPC as grpc raises it: a code, details, no trailer."""

    def __init__(self, code: grpc.StatusCode) -> None:
        self._code = code

    def code(self) -> grpc.StatusCode:
        return self._code

    def details(self) -> str:
        return "what the server said"

    def trailing_metadata(self) -> tuple[()]:
        return ()


@pytest.mark.parametrize(
    ("code", "kind"),
    [
        (grpc.StatusCode.DEADLINE_EXCEEDED, WriteOutcomeUnknown),
        (grpc.StatusCode.RESOURCE_EXHAUSTED, WriteOutcomeUnknown),  # a trailer too big to send
        (grpc.StatusCode.UNKNOWN, WriteOutcomeUnknown),  # without per-update errors
        (grpc.StatusCode.INTERNAL, WriteOutcomeUnknown),
        (grpc.StatusCode.UNAVAILABLE, WriteLost),
        (grpc.StatusCode.PERMISSION_DENIED, ArbitrationError),  # refused before anything ran
        (grpc.StatusCode.INVALID_ARGUMENT, P4RuntimeError),
    ],
)
def test_only_a_write_refused_before_it_ran_counts_as_nothing_applied(
    code: grpc.StatusCode, kind: type[P4RuntimeError]
) -> None:
    err = write_failure("s1", "a write of 3 updates", Failed(code))
    assert type(err) is kind and "switch s1" in str(err) and code.name in str(err)
    assert isinstance(err, WriteOutcomeUnknown) == (code not in NOTHING_APPLIED)
    if isinstance(err, WriteOutcomeUnknown):
        assert "reconciled before the next install" in str(err)
    assert isinstance(err, ConnectionLost) == (code == grpc.StatusCode.UNAVAILABLE)


def test_a_report_with_fewer_details_than_updates_leaves_the_rest_unknown() -> None:
    # the specification asks one detail per update; a switch that sends fewer (p4switch did,
    # to stay under gRPC's metadata limit) leaves the updates past them unknown
    errors = [p4runtime_pb2.Error(canonical_code=code_pb2.OK)] * 2 + [
        p4runtime_pb2.Error(canonical_code=code_pb2.ALREADY_EXISTS, message="taken")
    ]
    err = partial_report("s1", 10, errors, Failed(grpc.StatusCode.UNKNOWN))
    assert isinstance(err, WriteOutcomeUnknown)
    assert "a write of 10 updates" in str(err) and "details for the first 3 only" in str(err)
    assert "#2: ALREADY_EXISTS: taken" in str(err) and "reconciled before" in str(err)


def _trees(schema: Schema, count: int) -> list[p4runtime_pb2.Update]:
    key = {"hdr.innet.job": 1, "hdr.innet.group": 0, "hdr.innet.src": 0}
    replicate = {"wan_grp": 2, "wan_local_grp": 3}
    return [
        insert(
            schema.table_entry(
                "InnetIngress.tree",
                {**key, "hdr.innet.round": r},
                "InnetIngress.replicate",
                replicate,
            )
        )
        for r in range(count)
    ]


def test_a_write_too_large_to_report_leaves_the_switch_unknown_and_is_reconciled(
    fabric: Fabric, switches: list[Switch]
) -> None:
    # another program holds 100 of the 300 entries: one p4.v1.Error per update would not fit
    # gRPC's metadata limit, so the switch refuses the whole batch with RESOURCE_EXHAUSTED
    updates = _trees(fabric.schema, 300)
    direct_write(switches[0], updates[200:])
    with pytest.raises(InstallError) as caught:
        fabric.install({"s0": updates})
    assert "RESOURCE_EXHAUSTED" in str(caught.value)
    assert isinstance(caught.value.__cause__, WriteOutcomeUnknown)
    assert fabric.status("s0").diverged  # not rolled back on a guess: read back instead
    fabric.install({"s0": updates})
    assert trees(switches[0]) == 300 and fabric.diverged() == ()
