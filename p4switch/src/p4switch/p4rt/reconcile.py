"""RECONCILE_AND_COMMIT: carrying the forwarding state of the running program into a new one.

Action profile members and groups move to the profile of the same name (members in their
handle order, so a group picks the same member for the same hash), then table entries (with
their direct counters and metadata) and modified default actions move to
the table of the same name, through the new table's own checks; multicast groups and clone
sessions move as they are; registers and counters keep their cells where the declaration is
unchanged (otherwise they start from zero). If any table entry or default action cannot be
kept, nothing changes and the request fails: the specification asks for the state to be
preserved, not approximated.
"""

from __future__ import annotations

from google.rpc import code_pb2

from p4switch.exceptions import P4RTError, StateError
from p4switch.p4rt.codec import InstalledPipeline
from p4switch.runtime import ProfileState, TableEntry, TableState


def carry_over(old: InstalledPipeline, new: InstalledPipeline) -> None:
    """Copy `old`'s state into `new` (freshly loaded); raise P4RTError if it cannot all be kept.

    The caller holds `old.state.lock`; nobody else uses `new` yet.
    """
    problems: list[str] = []
    for name, profile in old.state.profiles.items():
        _carry_profile(profile, new.state.profiles.get(name), problems)
    for name, table in old.state.tables.items():
        _carry_table(table, new.state.tables.get(name), problems)
    if problems:
        raise P4RTError(
            code_pb2.INVALID_ARGUMENT,
            "the forwarding state cannot be kept with the new program: " + "; ".join(problems),
        )
    for name, register in old.state.registers.items():
        target = new.state.registers.get(name)
        if target is not None and target.spec == register.spec:
            target.cells[:] = register.cells
    for name, counter in old.state.counters.items():
        target_counter = new.state.counters.get(name)
        if target_counter is not None and target_counter.spec == counter.spec:
            target_counter.packets[:] = counter.packets
            target_counter.bytes[:] = counter.bytes
    new.state.pre.groups.update(old.state.pre.groups)
    new.state.pre.sessions.update(old.state.pre.sessions)
    new.pre_records.update(old.pre_records)


def _carry_profile(profile: ProfileState, target: ProfileState | None, problems: list[str]) -> None:
    if target is None:
        if profile.members:
            problems.append(f"action profile {profile.spec.name} is not in the new program")
        return
    try:
        for member_id in sorted(profile.members, key=profile.handles.__getitem__):
            target.insert_member(member_id, profile.members[member_id])
        for group_id, group in profile.groups.items():
            target.insert_group(group_id, group.members, group.max_size)
    except StateError as err:
        problems.append(str(err))


def _carry_table(table: TableState, target: TableState | None, problems: list[str]) -> None:
    name = table.spec.name
    entries = list(table.entries())
    modified_default = table.default != table.spec.default_action
    if target is None:
        if entries or modified_default:
            problems.append(f"table {name} is not in the new program")
        return
    if entries and target.spec.keys != table.spec.keys:
        problems.append(f"table {name}: its key changed and it holds {len(entries)} entries")
        return
    for e in entries:
        copy = TableEntry(
            e.match, e.action, e.priority, e.packets, e.bytes, e.metadata, e.controller_metadata
        )
        if target.spec.support_timeout:  # it ages on: idle since the same instant
            copy.idle_timeout_ns, copy.last_hit = e.idle_timeout_ns, e.last_hit
        elif e.idle_timeout_ns:
            problems.append(
                f"table {name}: has an entry with an idle timeout, the new one ages none"
            )
            continue
        try:
            target.insert(copy)
        except StateError as err:
            problems.append(str(err))
    if modified_default:
        try:
            target.set_default(table.default)
        except StateError as err:
            problems.append(f"default action: {err}")
    if target.spec.direct_counter == table.spec.direct_counter:
        target.default_packets, target.default_bytes = table.default_packets, table.default_bytes
