"""Table entries and the tables that hold them, with a lookup suited to their match kinds."""

from __future__ import annotations

import builtins
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from p4switch.exceptions import (
    AlreadyExists,
    InvalidArgument,
    NotFound,
    PermissionDenied,
    ResourceExhausted,
)
from p4switch.runtime.meters import MeterCell
from p4switch.runtime.specs import ActionCall, ActionSpec, FieldMatch, ProfileRef, TableSpec

if TYPE_CHECKING:
    from p4switch.runtime.profiles import ProfileState


@dataclass
class TableEntry:
    match: tuple[FieldMatch, ...]
    action: ActionCall | ProfileRef  # a ProfileRef in a table with an action profile
    priority: int = 0
    packets: int = 0  # direct counter
    bytes: int = 0  # in this class body `bytes` is this field: the type below is builtins.bytes
    metadata: builtins.bytes = b""  # opaque to the switch: the controller's cookie, read back
    controller_metadata: int = 0
    meter: MeterCell | None = None  # direct meter: this entry's cell, None: unconfigured
    idle_timeout_ns: int = 0  # a table with support_timeout: idle this long, it is reported
    last_hit: int | None = None  # such a table: when last hit (or inserted), on the state's clock

    @property
    def key(self) -> tuple[tuple[FieldMatch, ...], int]:
        return self.match, self.priority


def exact(value: int, bitwidth: int) -> FieldMatch:
    return FieldMatch(value, (1 << bitwidth) - 1)


def lpm(value: int, prefix_len: int, bitwidth: int) -> FieldMatch:
    if not 0 <= prefix_len <= bitwidth:
        raise InvalidArgument(f"prefix length {prefix_len} outside 0..{bitwidth}")
    mask = ((1 << prefix_len) - 1) << (bitwidth - prefix_len)
    return FieldMatch(value, mask)


def range_match(low: int, high: int) -> FieldMatch:
    return FieldMatch(low, 0, high)


def prefix_len(m: FieldMatch) -> int:
    """The prefix length of an lpm field's mask."""
    return bin(m.mask).count("1")


class TableState:
    """The entries of one table, with a lookup suited to its match kinds."""

    def __init__(
        self,
        spec: TableSpec,
        actions: Mapping[str, ActionSpec],
        clock: Callable[[], int] = time.monotonic_ns,
    ) -> None:
        """`clock` (nanoseconds) stamps the entries of a table with support_timeout when they
        are inserted; the data plane stamps them on the same clock when it hits them."""
        self.spec = spec
        self.clock = clock
        self._actions = actions
        self.profile: ProfileState | None = None  # spec.implementation's (set by SwitchState)
        self.default = spec.default_action
        self.default_packets = 0
        self.default_bytes = 0
        self.version = 0  # bumped by every change of entries or default: a copy knows it is stale
        self._entries: dict[tuple[tuple[FieldMatch, ...], int], TableEntry] = {}
        self._exact_only = all(k.match_kind == "exact" for k in spec.keys)
        self._has_ranges = any(k.match_kind == "range" for k in spec.keys)
        self._by_values: dict[tuple[int, ...], TableEntry] = {}  # exact-only tables
        self._ordered: list[TableEntry] = []  # others: by priority, then longest prefix
        for e in spec.static_entries:
            self._add(TableEntry(e.match, e.action, e.priority))

    # the packet path
    def lookup(self, values: Sequence[int]) -> tuple[ActionCall | ProfileRef, TableEntry | None]:
        """The action to run for these key values, and the entry hit (None: the default).

        Exact tables use a dictionary; the others scan entries in order of priority, then of
        prefix length (a linear scan: fine for the tables innet installs, tens of entries).
        """
        if self._exact_only:
            entry = self._by_values.get(tuple(values))
            return (entry.action, entry) if entry is not None else (self.default, None)
        if self._has_ranges:
            for entry in self._ordered:
                if all(m.matches(v) for v, m in zip(values, entry.match, strict=True)):
                    return entry.action, entry
            return self.default, None
        for entry in self._ordered:
            if all((v & m.mask) == m.value for v, m in zip(values, entry.match, strict=True)):
                return entry.action, entry
        return self.default, None

    # the control path
    def entries(self) -> Iterator[TableEntry]:
        return iter(list(self._entries.values()))

    def entry_count(self) -> int:
        return len(self._entries)

    def insert(self, entry: TableEntry) -> None:
        self._check_mutable()
        self._add(entry)

    def _add(self, entry: TableEntry) -> None:
        if not self.spec.keys:
            raise InvalidArgument(f"{self.spec.name} has no key: only its default entry can be set")
        self._check(entry)
        if entry.key in self._entries:
            raise AlreadyExists(f"{self.spec.name}: an entry with this key is already installed")
        if len(self._entries) >= self.spec.size:
            raise ResourceExhausted(f"{self.spec.name}: table full ({self.spec.size} entries)")
        if self.spec.support_timeout and entry.last_hit is None:
            entry.last_hit = self.clock()
        self._entries[entry.key] = entry
        self._reorder()

    def modify(self, entry: TableEntry) -> None:
        self._check_mutable()
        self._check(entry)
        old = self._entries.get(entry.key)
        if old is None:
            raise NotFound(f"{self.spec.name}: no entry with this key to modify")
        old.action = entry.action
        self.version += 1

    def delete(self, match: tuple[FieldMatch, ...], priority: int) -> None:
        self._check_mutable()
        if self._entries.pop((match, priority), None) is None:
            raise NotFound(f"{self.spec.name}: no entry with this key to delete")
        self._reorder()

    def _check_mutable(self) -> None:
        if self.spec.const_entries:
            raise PermissionDenied(
                f"{self.spec.name} has const entries: the control plane cannot change them"
            )

    def clear(self) -> None:
        self._check_mutable()
        self._entries.clear()
        self._reorder()

    def set_default(self, action: ActionCall) -> None:
        if self.spec.const_default:
            raise PermissionDenied(f"{self.spec.name}: the default action is const")
        self.check_action(action, default=True)
        self.default = action
        self.version += 1

    def reset_default(self) -> None:
        self.default = self.spec.default_action
        self.version += 1

    def get(self, match: tuple[FieldMatch, ...], priority: int) -> TableEntry | None:
        return self._entries.get((match, priority))

    def check_action(self, action: ActionCall, default: bool) -> None:
        name = self.spec.name
        if action.name not in self.spec.actions:
            raise InvalidArgument(f"{name}: action {action.name!r} is not one of the table's")
        if default and action.name in self.spec.table_only:
            raise PermissionDenied(f"{name}: action {action.name!r} cannot be the default")
        if not default and action.name in self.spec.default_only:
            raise PermissionDenied(f"{name}: action {action.name!r} can only be the default")
        params = self._actions[action.name].params
        if len(action.args) != len(params):
            raise InvalidArgument(
                f"{name}: action {action.name!r} takes {len(params)} parameters, "
                f"got {len(action.args)}"
            )
        for p, v in zip(params, action.args, strict=True):
            if not 0 <= v < (1 << p.bitwidth):
                raise InvalidArgument(
                    f"{name}: parameter {p.name} of {action.name!r} is {p.bitwidth} bits wide, "
                    f"value {v} does not fit"
                )

    def _check(self, entry: TableEntry) -> None:
        spec = self.spec
        if len(entry.match) != len(spec.keys):
            raise InvalidArgument(
                f"{spec.name}: {len(spec.keys)} match fields expected, got {len(entry.match)}"
            )
        for k, m in zip(spec.keys, entry.match, strict=True):
            full = (1 << k.bitwidth) - 1
            if not (0 <= m.value <= full and 0 <= m.mask <= full):
                raise InvalidArgument(f"{spec.name}: {k.name} is {k.bitwidth} bits wide")
            if k.symbols and m.value >= len(k.symbols):
                raise InvalidArgument(f"{spec.name}: {k.name} has no value {m.value}")
            if m.value & ~m.mask and m.high is None:
                raise InvalidArgument(f"{spec.name}: {k.name} has value bits outside its mask")
            if k.match_kind == "exact" and m.mask != full:
                raise InvalidArgument(f"{spec.name}: {k.name} is an exact field")
            if k.match_kind == "lpm" and (m.mask | (m.mask - 1 if m.mask else full)) != full:
                raise InvalidArgument(f"{spec.name}: {k.name} mask is not a prefix")
            if k.match_kind == "optional" and m.mask not in (0, full):
                raise InvalidArgument(f"{spec.name}: {k.name} is optional: a value or nothing")
            if (k.match_kind == "range") != (m.high is not None):
                raise InvalidArgument(f"{spec.name}: {k.name} takes a range only if it is one")
            if m.high is not None and not (m.mask == 0 and m.value <= m.high <= full):
                what = f"range {m.value}..{m.high} is empty or too wide"
                raise InvalidArgument(f"{spec.name}: {k.name}: {what}")
        if spec.needs_priority and entry.priority <= 0:
            raise InvalidArgument(
                f"{spec.name}: entries of a table with ternary, range or optional keys need a"
                " priority > 0"
            )
        if not spec.needs_priority and entry.priority != 0:
            raise InvalidArgument(f"{spec.name}: entries of this table take no priority")
        if isinstance(entry.action, ProfileRef) or self.profile is not None:
            if not isinstance(entry.action, ProfileRef) or self.profile is None:
                what = "takes a member or group of its action profile" if self.profile else ""
                raise InvalidArgument(f"{spec.name} {what or 'has no action profile'}")
            self.profile.check_ref(entry.action, spec.name)
        else:
            self.check_action(entry.action, default=False)

    def _reorder(self) -> None:
        self.version += 1

        def rank(e: TableEntry) -> tuple[int, int]:
            return (-e.priority, -sum(bin(m.mask).count("1") for m in e.match))

        self._ordered = sorted(self._entries.values(), key=rank)
        self._by_values = (
            {tuple(m.value for m in e.match): e for e in self._entries.values()}
            if self._exact_only
            else {}
        )
