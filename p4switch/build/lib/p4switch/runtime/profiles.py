"""Action profiles and action selectors as BMv2 runs them.

A profile holds members (an action with its arguments, by member id) and, a selector, groups
of members. An entry of a table the profile implements points at a member or a group
(`ProfileRef`). A hit on a group runs the member at `hash % n` of its n members, where `hash`
is the selector's algorithm over the table's `selector` keys packed as a field list, and the
members are ordered as BMv2 orders them: by their handles, each member taking the lowest
handle free when it was inserted (creation order until a member is deleted). A hit on an
empty group runs nothing (BMv2's empty action); an entry cannot be pointed at an empty group.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

from p4switch.exceptions import (
    AlreadyExists,
    FailedPrecondition,
    InvalidArgument,
    NotFound,
    ResourceExhausted,
)
from p4switch.runtime.specs import ActionCall, ActionSpec, ProfileRef

EMPTY_GROUP = ActionCall("")  # what a hit on an empty group runs: nothing


@dataclass(frozen=True)
class ProfileSpec:
    name: str
    size: int  # the members it can hold
    tables: tuple[str, ...]  # the tables it implements
    actions: tuple[str, ...]  # the actions a member may run (its tables' actions)
    default_only: frozenset[str] = frozenset()  # @defaultonly: no member may run them
    selector: bool = False  # an action_selector: it holds groups too
    max_group_size: int = 0  # 0: no limit


@dataclass(frozen=True)
class Group:
    members: tuple[int, ...]  # member ids, in the order the control plane gave them
    max_size: int = 0  # 0: the profile's max_group_size (or no limit)


# a profile's members, their BMv2 handles and its groups, kept to undo an update
Saved = tuple[dict[int, ActionCall], dict[int, int], dict[int, Group]]


class ProfileState:
    """The members and groups of one action profile or selector."""

    def __init__(self, spec: ProfileSpec, actions: Mapping[str, ActionSpec]) -> None:
        self.spec = spec
        self._actions = actions
        self.members: dict[int, ActionCall] = {}
        self.handles: dict[int, int] = {}  # member id -> its BMv2 handle
        self.groups: dict[int, Group] = {}
        self._chosen: dict[int, tuple[int, ...]] = {}  # group id -> member ids by handle
        # every ProfileRef the tables' entries hold (set by SwitchState)
        self.users: Callable[[], Iterable[ProfileRef]] = lambda: ()

    # the packet path
    def member_action(self, ref: ProfileRef) -> ActionCall:
        return self.members[ref.id]

    def group_action(self, ref: ProfileRef, hash_value: int) -> ActionCall:
        """The action of the member `hash_value % n` of the group's n members (by handle)."""
        chosen = self._chosen[ref.id]
        if not chosen:
            return EMPTY_GROUP
        return self.members[chosen[hash_value % len(chosen)]]

    # the control path: members
    def insert_member(self, member_id: int, action: ActionCall) -> None:
        if member_id in self.members:
            raise AlreadyExists(f"{self.spec.name}: member {member_id} already exists")
        if len(self.members) >= self.spec.size:
            raise ResourceExhausted(f"{self.spec.name}: full ({self.spec.size} members)")
        self._check_action(action)
        taken = set(self.handles.values())
        self.handles[member_id] = next(h for h in range(len(taken) + 1) if h not in taken)
        self.members[member_id] = action

    def modify_member(self, member_id: int, action: ActionCall) -> None:
        self._member(member_id)
        self._check_action(action)
        self.members[member_id] = action

    def delete_member(self, member_id: int) -> None:
        self._member(member_id)
        holder = next((g for g, group in self.groups.items() if member_id in group.members), None)
        if holder is not None:
            what = f"member {member_id} is in group {holder}: take it out first"
            raise FailedPrecondition(f"{self.spec.name}: {what}")
        if ProfileRef(member_id) in set(self.users()):
            what = f"member {member_id} is used by table entries: delete them first"
            raise FailedPrecondition(f"{self.spec.name}: {what}")
        del self.members[member_id], self.handles[member_id]

    # the control path: groups
    def insert_group(self, group_id: int, members: Sequence[int], max_size: int = 0) -> None:
        if not self.spec.selector:
            raise InvalidArgument(f"{self.spec.name} is an action profile: it has no groups")
        if group_id in self.groups:
            raise AlreadyExists(f"{self.spec.name}: group {group_id} already exists")
        self._set_group(group_id, Group(tuple(members), max_size))

    def modify_group(self, group_id: int, members: Sequence[int], max_size: int = 0) -> None:
        self._group(group_id)
        self._set_group(group_id, Group(tuple(members), max_size))

    def delete_group(self, group_id: int) -> None:
        self._group(group_id)
        if ProfileRef(group_id, group=True) in set(self.users()):
            what = f"group {group_id} is used by table entries: delete them first"
            raise FailedPrecondition(f"{self.spec.name}: {what}")
        del self.groups[group_id], self._chosen[group_id]

    def _set_group(self, group_id: int, group: Group) -> None:
        name, limit = self.spec.name, self.spec.max_group_size
        if group.max_size < 0 or (limit and group.max_size > limit):
            raise InvalidArgument(f"{name}: group max_size {group.max_size} exceeds {limit}")
        most = group.max_size or limit
        if most and len(group.members) > most:
            what = f"group {group_id} holds at most {most} members, not {len(group.members)}"
            raise ResourceExhausted(f"{name}: {what}")
        if len(set(group.members)) != len(group.members):
            raise InvalidArgument(f"{name}: group {group_id} lists a member twice")
        for m in group.members:
            self._member(m)
        self.groups[group_id] = group
        self._chosen[group_id] = tuple(sorted(group.members, key=self.handles.__getitem__))

    # table entries
    def check_ref(self, ref: ProfileRef, table: str) -> None:
        """An entry of `table` may point at `ref`: it exists, and a group is not empty."""
        if not ref.group:
            self._member(ref.id)
            return
        if not self.spec.selector:
            raise InvalidArgument(f"{table}: {self.spec.name} is an action profile, no groups")
        if not self._group(ref.id).members:
            what = f"group {ref.id} is empty: BMv2 points no entry at an empty group"
            raise FailedPrecondition(f"{table}: {what}")

    # saving and restoring (an update undone)
    def snapshot(self) -> Saved:
        return dict(self.members), dict(self.handles), dict(self.groups)

    def restore(self, saved: Saved) -> None:
        members, handles, groups = saved
        self.members, self.handles, self.groups = dict(members), dict(handles), {}
        self._chosen = {}
        for group_id, group in groups.items():
            self.groups[group_id] = group
            self._chosen[group_id] = tuple(sorted(group.members, key=self.handles.__getitem__))

    def _member(self, member_id: int) -> ActionCall:
        found = self.members.get(member_id)
        if found is None:
            raise NotFound(f"{self.spec.name}: no member {member_id}")
        return found

    def _group(self, group_id: int) -> Group:
        found = self.groups.get(group_id)
        if found is None:
            raise NotFound(f"{self.spec.name}: no group {group_id}")
        return found

    def _check_action(self, action: ActionCall) -> None:
        name = self.spec.name
        if action.name not in self.spec.actions or action.name in self.spec.default_only:
            raise InvalidArgument(f"{name}: a member cannot run action {action.name!r}")
        params = self._actions[action.name].params
        if len(action.args) != len(params):
            what = f"action {action.name!r} takes {len(params)} parameters"
            raise InvalidArgument(f"{name}: {what}, got {len(action.args)}")
        for p, v in zip(params, action.args, strict=True):
            if not 0 <= v < (1 << p.bitwidth):
                what = f"parameter {p.name} of {action.name!r} is {p.bitwidth} bits wide"
                raise InvalidArgument(f"{name}: {what}, value {v} does not fit")
