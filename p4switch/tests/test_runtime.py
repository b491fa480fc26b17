"""The switch's run-time state: lookups, entry checks, registers, counters, replication."""

from __future__ import annotations

import pytest

from p4switch.exceptions import (
    AlreadyExists,
    InvalidArgument,
    NotFound,
    PermissionDenied,
    ResourceExhausted,
)
from p4switch.runtime import (
    ActionCall,
    ActionSpec,
    CloneSession,
    CounterSpec,
    FieldMatch,
    KeySpec,
    ParamSpec,
    RegisterSpec,
    Replica,
    SwitchState,
    TableEntry,
    TableSpec,
    exact,
    lpm,
    prefix_len,
)

FORWARD = ActionSpec("forward", (ParamSpec("port", 9),))
DROP = ActionSpec("drop")
NOACTION = ActionSpec("NoAction")


def fwd(port: int) -> ActionCall:
    return ActionCall("forward", (port,))


def table(name: str, *keys: KeySpec, **spec: object) -> TableSpec:
    fields = {
        "actions": ("forward", "drop", "NoAction"),
        "default_action": ActionCall("NoAction"),
        **spec,
    }
    return TableSpec(name, keys, **fields)  # type: ignore[arg-type]


@pytest.fixture
def state() -> SwitchState:
    return SwitchState(
        [FORWARD, DROP, NOACTION],
        [
            table("l2", KeySpec("dst", "exact", 48), size=2),
            table("routes", KeySpec("ip", "lpm", 32)),
            table(
                "acl",
                KeySpec("src", "ternary", 32),
                KeySpec("proto", "exact", 8),
                default_only=frozenset({"NoAction"}),
            ),
            table("fixed", KeySpec("k", "exact", 8), const_default=True),
            table("keyless", table_only=frozenset({"forward"})),
        ],
        [RegisterSpec("reg", 8, 4)],
        [CounterSpec("rx", 4)],
    )


def test_exact_lookup_hits_or_runs_the_default(state: SwitchState) -> None:
    l2 = state.table("l2")
    l2.insert(TableEntry((exact(0xAABB, 48),), fwd(3)))
    action, entry = l2.lookup([0xAABB])
    assert action == fwd(3) and entry is not None
    assert l2.lookup([0xAABC]) == (ActionCall("NoAction"), None)


def test_longest_prefix_wins(state: SwitchState) -> None:
    routes = state.table("routes")
    routes.insert(TableEntry((lpm(0x0A000000, 8, 32),), fwd(1)))
    routes.insert(TableEntry((lpm(0x0A000100, 24, 32),), fwd(2)))
    routes.insert(TableEntry((lpm(0, 0, 32),), fwd(3)))
    assert routes.lookup([0x0A000105])[0] == fwd(2)
    assert routes.lookup([0x0A020305])[0] == fwd(1)
    assert routes.lookup([0x0B000000])[0] == fwd(3)


def test_highest_priority_wins_among_ternary_matches(state: SwitchState) -> None:
    acl = state.table("acl")
    acl.insert(TableEntry((FieldMatch(0x0A000000, 0xFF000000), exact(6, 8)), fwd(1), 10))
    acl.insert(TableEntry((FieldMatch(0x0A010000, 0xFFFF0000), exact(6, 8)), fwd(2), 20))
    acl.insert(TableEntry((FieldMatch(0, 0), exact(6, 8)), fwd(3), 5))
    assert acl.lookup([0x0A010203, 6])[0] == fwd(2)
    assert acl.lookup([0x0A020203, 6])[0] == fwd(1)
    assert acl.lookup([0x0B000000, 6])[0] == fwd(3)
    assert acl.lookup([0x0B000000, 17])[0] == ActionCall("NoAction")


def test_same_key_other_priority_is_another_entry(state: SwitchState) -> None:
    acl = state.table("acl")
    key = (FieldMatch(0x0A000000, 0xFF000000), exact(6, 8))
    acl.insert(TableEntry(key, fwd(1), 10))
    acl.insert(TableEntry(key, fwd(2), 11))
    with pytest.raises(AlreadyExists):
        acl.insert(TableEntry(key, fwd(3), 10))
    assert acl.entry_count() == 2


def test_default_action_set_reset_and_const(state: SwitchState) -> None:
    routes = state.table("routes")
    routes.set_default(ActionCall("drop"))
    assert routes.lookup([1])[0] == ActionCall("drop")
    routes.reset_default()
    assert routes.default == ActionCall("NoAction")
    with pytest.raises(PermissionDenied):
        state.table("fixed").set_default(ActionCall("drop"))


def test_action_scopes(state: SwitchState) -> None:
    with pytest.raises(PermissionDenied):  # @defaultonly
        state.table("acl").insert(
            TableEntry((FieldMatch(0, 0), exact(1, 8)), ActionCall("NoAction"), 1)
        )
    with pytest.raises(PermissionDenied):  # @tableonly
        state.table("keyless").set_default(fwd(1))
    state.table("acl").set_default(ActionCall("NoAction"))


def test_full_missing_and_keyless(state: SwitchState) -> None:
    l2 = state.table("l2")
    l2.insert(TableEntry((exact(1, 48),), fwd(1)))
    l2.insert(TableEntry((exact(2, 48),), fwd(1)))
    with pytest.raises(ResourceExhausted):
        l2.insert(TableEntry((exact(3, 48),), fwd(1)))
    with pytest.raises(NotFound):
        l2.modify(TableEntry((exact(3, 48),), fwd(2)))
    with pytest.raises(NotFound):
        l2.delete((exact(3, 48),), 0)
    l2.modify(TableEntry((exact(2, 48),), fwd(5)))
    assert l2.lookup([2])[0] == fwd(5)
    l2.delete((exact(1, 48),), 0)
    assert l2.lookup([1])[1] is None
    with pytest.raises(InvalidArgument, match="no key"):
        state.table("keyless").insert(TableEntry((), fwd(1)))


@pytest.mark.parametrize(
    ("name", "entry"),
    [
        ("l2", TableEntry((FieldMatch(1 << 48, (1 << 48) - 1),), fwd(1))),  # key too wide
        ("l2", TableEntry((FieldMatch(1, 0xFF),), fwd(1))),  # exact with a partial mask
        ("l2", TableEntry((exact(1, 48), exact(1, 48)), fwd(1))),  # too many fields
        ("l2", TableEntry((exact(1, 48),), fwd(512))),  # argument wider than bit<9>
        ("l2", TableEntry((exact(1, 48),), ActionCall("forward"))),  # missing argument
        ("l2", TableEntry((exact(1, 48),), ActionCall("mystery"))),  # not the table's
        ("l2", TableEntry((exact(1, 48),), fwd(1), priority=3)),  # priority on exact table
        ("routes", TableEntry((FieldMatch(0x0A000001, 0xFF000000),), fwd(1))),  # outside mask
        ("routes", TableEntry((FieldMatch(0, 0xFF00FF00),), fwd(1))),  # not a prefix
        ("acl", TableEntry((FieldMatch(0, 0), exact(1, 8)), fwd(1))),  # ternary, no priority
    ],
)
def test_bad_entries_are_refused(state: SwitchState, name: str, entry: TableEntry) -> None:
    with pytest.raises(InvalidArgument):
        state.table(name).insert(entry)
    assert state.table(name).entry_count() == 0


def test_lpm_helpers() -> None:
    m = lpm(0x0A000000, 8, 32)
    assert m == FieldMatch(0x0A000000, 0xFF000000) and prefix_len(m) == 8
    assert prefix_len(lpm(0, 0, 32)) == 0
    with pytest.raises(InvalidArgument):
        lpm(0, 33, 32)


def test_registers(state: SwitchState) -> None:
    reg = state.register("reg")
    reg.write(3, 255)
    assert reg.read(3) == 255 and reg.cells == [0, 0, 0, 255]
    with pytest.raises(InvalidArgument):
        reg.write(4, 1)
    with pytest.raises(InvalidArgument):
        reg.write(0, 256)
    with pytest.raises(InvalidArgument):
        reg.read(-1)


def test_counters(state: SwitchState) -> None:
    rx = state.counter("rx")
    rx.count(1, 100)
    rx.count(1, 60)
    rx.count(9, 60)  # out of range: ignored, as BMv2 does
    assert (rx.packets, rx.bytes) == ([0, 2, 0, 0], [0, 160, 0, 0])
    rx.set(1, 0, 0)
    assert rx.packets[1] == 0
    with pytest.raises(InvalidArgument):
        rx.set(4, 1, 1)
    with pytest.raises(InvalidArgument):
        rx.set(0, -1, 0)


def test_multicast_groups(state: SwitchState) -> None:
    pre = state.pre
    pre.insert_group(1, [Replica(1, 0), Replica(2, 0)])
    with pytest.raises(AlreadyExists):
        pre.insert_group(1, [Replica(3, 0)])
    pre.modify_group(1, [Replica(3, 1)])
    assert pre.groups[1] == (Replica(3, 1),)
    with pytest.raises(InvalidArgument):
        pre.insert_group(0, [])
    with pytest.raises(InvalidArgument):
        pre.insert_group(2, [Replica(1, 0), Replica(1, 0)])
    with pytest.raises(NotFound):
        pre.modify_group(5, [])
    pre.delete_group(1)
    with pytest.raises(NotFound):
        pre.delete_group(1)


def test_clone_sessions(state: SwitchState) -> None:
    pre = state.pre
    pre.insert_session(CloneSession(4, (Replica(64, 0),), packet_length_bytes=128))
    with pytest.raises(AlreadyExists):
        pre.insert_session(CloneSession(4, ()))
    pre.modify_session(CloneSession(4, (Replica(1, 0),)))
    assert pre.sessions[4].replicas == (Replica(1, 0),)
    for bad in (CloneSession(0, ()), CloneSession(5, (), packet_length_bytes=-1)):
        with pytest.raises(InvalidArgument):
            pre.insert_session(bad)
    pre.delete_session(4)
    with pytest.raises(NotFound):
        pre.delete_session(4)


def test_state_lookups_by_name(state: SwitchState) -> None:
    for get in (state.table, state.register, state.counter):
        with pytest.raises(NotFound):
            get("nope")
    with pytest.raises(ValueError, match="undeclared"):
        SwitchState([DROP], [table("t", KeySpec("k", "exact", 8))])
