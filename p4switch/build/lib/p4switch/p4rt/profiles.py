"""P4Runtime's action profile members and groups, written (each update with its undo) and read
back as written, and the action of an entry of a table with an action profile: a member id or
(a selector) a group id, never an action. The one-shot ActionProfileActionSet is refused
UNIMPLEMENTED, and so are member weights above 1 and watch ports (PI's BMv2 target keeps
neither: p4switch picks a group's member as BMv2 does, one member, one share)."""

from __future__ import annotations

from collections.abc import Collection

from google.rpc import code_pb2
from p4.v1 import p4runtime_pb2

from p4switch.exceptions import P4RTError
from p4switch.p4rt.codec import InstalledPipeline, Undo, decode_action, encode_action, invalid
from p4switch.p4rt.profile_schema import ProfileInfo
from p4switch.p4rt.schema import TableInfo
from p4switch.runtime import ActionCall, ProfileRef, ProfileState

INSERT, MODIFY, DELETE = (
    p4runtime_pb2.Update.INSERT,
    p4runtime_pb2.Update.MODIFY,
    p4runtime_pb2.Update.DELETE,
)
Entities = list[p4runtime_pb2.Entity]


def entry_action(
    pipeline: InstalledPipeline, info: TableInfo, msg: p4runtime_pb2.TableAction
) -> ActionCall | ProfileRef:
    """What a written table entry runs: an action (a direct table), else a member or group of
    the table's profile (whether it exists is the state's to check)."""
    which = msg.WhichOneof("type")
    if which == "action_profile_action_set":
        what = "p4switch does not take one-shot action sets: write members and a group"
        raise P4RTError(code_pb2.UNIMPLEMENTED, what)
    if not info.profile_id:
        if which != "action":
            raise invalid(f"{info.name} is a direct table: {which} cannot be its action")
        return decode_action(pipeline.schema, info, msg.action)
    if which == "action":
        profile = pipeline.schema.profiles[info.profile_id].name
        what = f"{info.name} takes its actions from {profile}: give a member or group id"
        raise invalid(what)
    if which == "action_profile_group_id":
        return ProfileRef(msg.action_profile_group_id, group=True)
    return ProfileRef(msg.action_profile_member_id)


def _profile(pipeline: InstalledPipeline, profile_id: int) -> tuple[ProfileInfo, ProfileState]:
    if profile_id == 0:
        raise invalid("action profile id 0 is not valid in a write")
    info = pipeline.schema.profiles.get(profile_id)
    if info is None:
        raise P4RTError(code_pb2.NOT_FOUND, f"no action profile with id {profile_id:#x}")
    return info, pipeline.state.profile(info.name)


def member_entry(
    pipeline: InstalledPipeline, utype: int, msg: p4runtime_pb2.ActionProfileMember
) -> Undo:
    info, profile = _profile(pipeline, msg.action_profile_id)
    saved = profile.snapshot()
    if utype == DELETE:
        profile.delete_member(msg.member_id)
    else:
        if not info.table_ids:
            raise invalid(f"{info.name} implements no table: its members could run nothing")
        table = pipeline.schema.tables[info.table_ids[0]]  # its tables list the same actions
        action = decode_action(pipeline.schema, table, msg.action)
        change = profile.insert_member if utype == INSERT else profile.modify_member
        change(msg.member_id, action)
    return lambda: profile.restore(saved)


def group_entry(
    pipeline: InstalledPipeline, utype: int, msg: p4runtime_pb2.ActionProfileGroup
) -> Undo:
    info, profile = _profile(pipeline, msg.action_profile_id)
    saved = profile.snapshot()
    if utype == DELETE:
        profile.delete_group(msg.group_id)
        return lambda: profile.restore(saved)
    members = []
    for m in msg.members:
        if m.weight < 1:
            raise invalid(f"{info.name}: member {m.member_id} needs a weight of 1 or more")
        if m.weight > 1 or m.WhichOneof("watch_kind") is not None:
            what = f"{info.name}: p4switch takes members of weight 1 without a watch port"
            raise P4RTError(code_pb2.UNIMPLEMENTED, what)
        members.append(m.member_id)
    change = profile.insert_group if utype == INSERT else profile.modify_group
    change(msg.group_id, members, msg.max_size)
    return lambda: profile.restore(saved)


def _chosen(pipeline: InstalledPipeline, profile_id: int) -> list[ProfileInfo]:
    """Every profile for id 0 (a wildcard), else the one with this id."""
    profiles = pipeline.schema.profiles
    if profile_id == 0:
        return list(profiles.values())
    if profile_id not in profiles:
        raise P4RTError(code_pb2.NOT_FOUND, f"no action profile with id {profile_id:#x}")
    return [profiles[profile_id]]


def _wanted(
    info: ProfileInfo, profile_id: int, wanted: int, present: Collection[int], what: str
) -> list[int]:
    """The member or group ids a read selects in one profile: all of them for id 0; else that
    one, NOT_FOUND if the read named this profile, nothing if it named every profile."""
    if not wanted:
        return sorted(present)
    if wanted in present:
        return [wanted]
    if profile_id:
        raise P4RTError(code_pb2.NOT_FOUND, f"{info.name}: no {what} {wanted}")
    return []


def read_members(pipeline: InstalledPipeline, q: p4runtime_pb2.ActionProfileMember) -> Entities:
    out: Entities = []
    for info in _chosen(pipeline, q.action_profile_id):
        members = pipeline.state.profile(info.name).members
        for member_id in _wanted(info, q.action_profile_id, q.member_id, members, "member"):
            msg = p4runtime_pb2.ActionProfileMember(
                action_profile_id=info.id,
                member_id=member_id,
                action=encode_action(pipeline.schema, members[member_id]),
            )
            out.append(p4runtime_pb2.Entity(action_profile_member=msg))
    return out


def read_groups(pipeline: InstalledPipeline, q: p4runtime_pb2.ActionProfileGroup) -> Entities:
    out: Entities = []
    for info in _chosen(pipeline, q.action_profile_id):
        groups = pipeline.state.profile(info.name).groups
        for group_id in _wanted(info, q.action_profile_id, q.group_id, groups, "group"):
            group = groups[group_id]
            msg = p4runtime_pb2.ActionProfileGroup(
                action_profile_id=info.id, group_id=group_id, max_size=group.max_size
            )
            for member_id in group.members:
                msg.members.add(member_id=member_id, weight=1)
            out.append(p4runtime_pb2.Entity(action_profile_group=msg))
    return out
