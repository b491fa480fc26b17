"""Fabric and RoundDriver against three real p4switch P4Runtime servers running innet.p4."""

from __future__ import annotations

import threading
import time
from collections.abc import Mapping

import pytest

from controller.p4rt import Fabric, InstallError, Schema, deadline_after
from controller.p4rt.fabric import entity_key
from controller.p4rt.schema import Lpm, modify, to_int
from controller.planner.schedule import Round, Schedule
from controller.rounds import (
    MEMBERSHIP,
    Addressing,
    RoundDriver,
    SwitchEntries,
    TableWrite,
    base_entries,
    install_changes,
    round_entries,
    to_updates,
)
from tests.unit.controller.conftest import Innet, Switch, snapshot, triangle

W = 1
WAN = triangle()


class RoundTimeout(TimeoutError):
    """Islands that did not report a round done before the deadline."""

    def __init__(self, number: int, missing: list[int], names: tuple[str, ...]) -> None:
        self.number, self.missing = number, tuple(missing)
        who = ", ".join(f"{names[i]} ({i})" for i in missing)
        super().__init__(f"round {number}: no done report before the deadline from {who}")


class DoneBoard:
    """Which islands reported which round done (any thread), and a wait with a deadline: how
    a controller driving rounds by done reports would pace the driver."""

    def __init__(self, names: tuple[str, ...]) -> None:
        self.names = names
        self.done: dict[int, set[int]] = {}
        self.cond = threading.Condition()

    def report_done(self, island: int, number: int) -> None:
        with self.cond:
            self.done.setdefault(number, set()).add(island)
            self.cond.notify_all()

    def wait_done(self, number: int, deadline: float) -> None:
        """Until every island reported `number` done; RoundTimeout at `deadline` (monotonic)."""
        want = set(range(len(self.names)))
        with self.cond:
            while not want <= self.done.get(number, set()):
                left = deadline - time.monotonic()
                if left <= 0:
                    missing = sorted(want - self.done.get(number, set()))
                    raise RoundTimeout(number, missing, self.names)
                self.cond.wait(left)


NAMES = ("s0", "s1", "s2")
SCHEDULE = Schedule("test", 3, (Round.of([[0, 1, 2]]), Round.of([[0, 2], [1]])))


def expected(schema: Schema, *plans: Mapping[int, SwitchEntries]) -> dict[str, dict]:
    """The snapshot each switch should show with these plans installed."""
    out: dict[str, dict] = {}
    for u, name in enumerate(NAMES):
        tables: dict[str, list] = {t.preamble.name: [] for t in schema.p4info.tables}
        groups = {}
        for plan in plans:
            for t in plan.get(u, SwitchEntries()).tables:
                tables[t.table].append(_entry(schema, t))
            for g in plan.get(u, SwitchEntries()).groups:
                groups[g.group_id] = tuple(sorted(g.replicas))
        out[name] = {"tables": {k: sorted(v) for k, v in tables.items()}, "groups": groups}
    return out


def _entry(schema: Schema, t: TableWrite) -> tuple:
    widths = {m.name: m.bitwidth for m in schema.table(t.table).match_fields}
    match = []
    for name, value in t.match:
        bits = widths[name]
        if isinstance(value, Lpm):
            mask = ((1 << value.prefix_len) - 1) << (bits - value.prefix_len)
            match.append((to_int(value.value) & mask, mask))
        else:
            match.append((to_int(value), (1 << bits) - 1))
    args = tuple(to_int(v) for _, v in t.params)
    return (tuple(match), 0, t.action, args)


def snapshots(switches: list[Switch]) -> dict[str, dict]:
    return {sw.name: snapshot(sw) for sw in switches}


def install_plan(fabric: Fabric, changes: Mapping[int, tuple]) -> None:
    fabric.install({NAMES[u]: to_updates(fabric.schema, c) for u, c in changes.items()})


def test_a_round_installs_on_every_switch_and_reads_back(
    fabric: Fabric, switches: list[Switch]
) -> None:
    base = base_entries(WAN, Addressing.default(3, W))
    plan = round_entries(WAN, SCHEDULE.rounds[1], job=1, number=0, hosts_per_island=W)
    install_plan(fabric, install_changes(base))
    install_plan(fabric, install_changes(plan, [base]))
    assert snapshots(switches) == expected(fabric.schema, base, plan)
    # the fabric remembers what it installed, and the switches say the same over P4Runtime
    for name in NAMES:
        conn = fabric.connection(name)
        on_switch = conn.read([fabric.schema.table_query(MEMBERSHIP)])
        remembered = [
            e
            for e in fabric.installed(name)
            if e.table_entry.table_id == fabric.schema.table(MEMBERSHIP).preamble.id
        ]
        assert sorted(map(entity_key, on_switch)) == sorted(map(entity_key, remembered))
        assert len(on_switch) == (2 if name == "s1" else 1)  # s1: its group, transit of A-C


def test_all_or_none_rolls_back_the_switches_written_before_the_refusal(
    fabric: Fabric, switches: list[Switch]
) -> None:
    schema = fabric.schema
    base = base_entries(WAN, Addressing.default(3, W))
    install_plan(fabric, install_changes(base))
    plan = round_entries(WAN, SCHEDULE.rounds[0], job=1, number=4, hosts_per_island=W)
    # someone else put an entry with round 4's key on s2: the controller's insert will clash
    clash = to_updates(schema, install_changes(plan, [base])[2])[-1]
    fabric.connection("s2").write([clash])
    before = snapshots(switches)
    changes = {NAMES[u]: to_updates(schema, c) for u, c in install_changes(plan, [base]).items()}
    # s0 also modifies a base entry: the rollback must restore the entry it held before
    host = schema.table_entry(
        "InnetEgress.host_port",
        {"standard_metadata.egress_port": 1},
        "InnetEgress.to_host",
        {"mac": 1, "ip": 2, "gateway": 3},
    )
    changes["s0"].append(modify(host))
    with pytest.raises(InstallError) as caught:
        fabric.install(changes)
    err = caught.value
    assert err.switch == "s2" and err.rolled_back == ("s2", "s1", "s0") and not err.unrestored
    assert [f.code_name for f in err.failures] == ["ALREADY_EXISTS"]
    assert "installation refused by switch s2" in str(err) and "InnetIngress.tree" in str(err)
    assert snapshots(switches) == before
    assert len(fabric.installed("s0")) == len(expected(schema, base)["s0"]["groups"]) + sum(
        len(v) for v in expected(schema, base)["s0"]["tables"].values()
    )


def test_a_restarted_switch_gets_its_entries_back(fabric: Fabric, switches: list[Switch]) -> None:
    driver = RoundDriver(fabric, WAN, SCHEDULE, job=2, addressing=Addressing.default(3, W))
    driver.install(0)
    before = snapshots(switches)
    switches[1].restart()
    assert switches[1].entry_count(MEMBERSHIP) == 0
    deadline = deadline_after(5)
    while fabric.lost() != ("s1",):
        assert time.monotonic() < deadline, "the fabric did not notice s1's restart"
        time.sleep(0.01)
    assert fabric.heal(deadline_after(10)) == ("s1",)
    assert snapshots(switches) == before
    driver.install(1)  # and it goes on as before
    driver.retire(0)


def test_the_driver_overlaps_rounds_and_retires_exactly(
    fabric: Fabric, switches: list[Switch]
) -> None:
    addressing = Addressing.default(3, W)
    driver = RoundDriver(fabric, WAN, SCHEDULE, job=2, addressing=addressing)
    base = base_entries(WAN, addressing)
    plans = [
        round_entries(WAN, SCHEDULE.round_at(n), job=2, number=n, hosts_per_island=W)
        for n in range(3)
    ]
    driver.install(0)
    driver.install(1)
    assert snapshots(switches) == expected(fabric.schema, base, plans[0], plans[1])
    board = DoneBoard(WAN.names)
    reporters = [threading.Thread(target=board.report_done, args=(i, 0)) for i in range(3)]
    for t in reporters:
        t.start()
    board.wait_done(0, deadline_after(5))
    driver.retire(0)
    assert snapshots(switches) == expected(fabric.schema, base, plans[1])
    driver.install(2)  # same partition as round 0, new keys, shared groups
    driver.retire(1)
    assert snapshots(switches) == expected(fabric.schema, base, plans[2])
    assert driver.installed == (2,)


def test_a_missed_deadline_names_the_silent_islands(fabric: Fabric) -> None:
    driver = RoundDriver(fabric, WAN, SCHEDULE, job=2, addressing=Addressing.default(3, W))
    driver.install(0)
    board = DoneBoard(WAN.names)
    board.report_done(1, 0)
    with pytest.raises(RoundTimeout, match=r"round 0: .* from A \(0\), C \(2\)") as caught:
        board.wait_done(0, deadline_after(0.2))
    assert caught.value.missing == (0, 2)


def test_innet_is_what_the_driver_installs(innet: Innet) -> None:
    """The names the pure plan uses exist in innet.p4 (a P4Info change would show here)."""
    schema = Schema(innet.p4info)
    base = base_entries(WAN, Addressing.default(3, W))
    plan = round_entries(WAN, SCHEDULE.rounds[0], job=1, number=0, hosts_per_island=W)
    for changes in (install_changes(base), install_changes(plan, [base])):
        for c in changes.values():
            assert to_updates(schema, c)
