"""The switch's run-time state: table entries, registers, counters, the packet replication engine.

Both sides of the switch use it: the compiled pipeline reads it on every packet (table lookups,
register and counter updates, multicast and clone replication) and the P4Runtime server changes
it. Objects are named as in P4Info (fully qualified, e.g. `MyIngress.ipv4_lpm`); the server maps
P4Info ids to these names. Every change is checked here, so the server only translates, and a bad
write raises a `p4switch.exceptions.StateError` whose `code` is the P4Runtime canonical code to
report.

All access goes through `SwitchState.lock` (the packet path holds it for one packet). A
compiled pipeline keeps references to the `Table` objects and to the lists `Register.cells`,
`Counter.packets` and `Counter.bytes`: change those lists in place (`cells[:] = ...`), never
replace them.
"""

from __future__ import annotations

import builtins
import threading
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field

from p4switch.exceptions import (
    AlreadyExists,
    InvalidArgument,
    NotFound,
    PermissionDenied,
    ResourceExhausted,
)

# --- what the program declares -------------------------------------------------------------


@dataclass(frozen=True)
class ParamSpec:
    name: str
    bitwidth: int


@dataclass(frozen=True)
class ActionSpec:
    name: str  # fully qualified, e.g. "MyIngress.forward"; "NoAction" for the core action
    params: tuple[ParamSpec, ...] = ()


@dataclass(frozen=True)
class KeySpec:
    name: str  # as P4Info names match fields, e.g. "hdr.ipv4.dstAddr"
    match_kind: str  # "exact", "lpm" or "ternary"
    bitwidth: int


@dataclass(frozen=True)
class ActionCall:
    name: str
    args: tuple[int, ...] = ()


@dataclass(frozen=True)
class StaticEntry:
    """An entry the program itself declares (`entries` or `const entries`)."""

    match: tuple[FieldMatch, ...]
    action: ActionCall
    priority: int = 0


@dataclass(frozen=True)
class TableSpec:
    name: str
    keys: tuple[KeySpec, ...]
    actions: tuple[str, ...]  # every action the table may run
    default_action: ActionCall
    const_default: bool = False
    size: int = 1024
    table_only: frozenset[str] = frozenset()  # @tableonly: not as default
    default_only: frozenset[str] = frozenset()  # @defaultonly: only as default
    direct_counter: str | None = None  # name of the direct counter attached, if any
    static_entries: tuple[StaticEntry, ...] = ()  # installed when the state is created
    const_entries: bool = False  # `const entries`: the control plane may not change them

    @property
    def needs_priority(self) -> bool:
        return any(k.match_kind == "ternary" for k in self.keys)


@dataclass(frozen=True)
class RegisterSpec:
    name: str
    bitwidth: int
    size: int


@dataclass(frozen=True)
class CounterSpec:
    name: str
    size: int
    unit: str = "packets_and_bytes"  # "packets", "bytes" or "packets_and_bytes"


# --- entries ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class FieldMatch:
    """One key field of an entry as (value, mask); a wildcard is (0, 0)."""

    value: int
    mask: int


@dataclass
class TableEntry:
    match: tuple[FieldMatch, ...]
    action: ActionCall
    priority: int = 0
    packets: int = 0  # direct counter
    bytes: int = 0  # in this class body `bytes` is this field: the type below is builtins.bytes
    metadata: builtins.bytes = b""  # opaque to the switch: the controller's cookie, read back
    controller_metadata: int = 0

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


def prefix_len(m: FieldMatch) -> int:
    """The prefix length of an lpm field's mask."""
    return bin(m.mask).count("1")


@dataclass(frozen=True)
class Replica:
    egress_port: int
    instance: int  # the replica id (egress_rid in v1model)


@dataclass(frozen=True)
class CloneSession:
    id: int
    replicas: tuple[Replica, ...]
    class_of_service: int = 0
    packet_length_bytes: int = 0  # 0: no truncation


# --- state ------------------------------------------------------------------------------------


class Table:
    """The entries of one table, with a lookup suited to its match kinds."""

    def __init__(self, spec: TableSpec, actions: Mapping[str, ActionSpec]) -> None:
        self.spec = spec
        self._actions = actions
        self.default = spec.default_action
        self.default_packets = 0
        self.default_bytes = 0
        self._entries: dict[tuple[tuple[FieldMatch, ...], int], TableEntry] = {}
        self._exact_only = all(k.match_kind == "exact" for k in spec.keys)
        self._by_values: dict[tuple[int, ...], TableEntry] = {}  # exact-only tables
        self._ordered: list[TableEntry] = []  # others: by priority, then longest prefix
        for e in spec.static_entries:
            self._add(TableEntry(e.match, e.action, e.priority))

    # the packet path
    def lookup(self, values: Sequence[int]) -> tuple[ActionCall, TableEntry | None]:
        """The action to run for these key values, and the entry hit (None: the default).

        Exact tables use a dictionary; the others scan entries in order of priority, then of
        prefix length (a linear scan: fine for the tables innet installs, tens of entries).
        """
        if self._exact_only:
            entry = self._by_values.get(tuple(values))
            return (entry.action, entry) if entry is not None else (self.default, None)
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
        self._entries[entry.key] = entry
        self._reorder()

    def modify(self, entry: TableEntry) -> None:
        self._check_mutable()
        self._check(entry)
        old = self._entries.get(entry.key)
        if old is None:
            raise NotFound(f"{self.spec.name}: no entry with this key to modify")
        old.action = entry.action

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

    def reset_default(self) -> None:
        self.default = self.spec.default_action

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
            if m.value & ~m.mask:
                raise InvalidArgument(f"{spec.name}: {k.name} has value bits outside its mask")
            if k.match_kind == "exact" and m.mask != full:
                raise InvalidArgument(f"{spec.name}: {k.name} is an exact field")
            if k.match_kind == "lpm" and (m.mask | (m.mask - 1 if m.mask else full)) != full:
                raise InvalidArgument(f"{spec.name}: {k.name} mask is not a prefix")
        if spec.needs_priority and entry.priority <= 0:
            raise InvalidArgument(f"{spec.name}: entries of a ternary table need a priority > 0")
        if not spec.needs_priority and entry.priority != 0:
            raise InvalidArgument(f"{spec.name}: entries of this table take no priority")
        self.check_action(entry.action, default=False)

    def _reorder(self) -> None:
        def rank(e: TableEntry) -> tuple[int, int]:
            return (-e.priority, -sum(bin(m.mask).count("1") for m in e.match))

        self._ordered = sorted(self._entries.values(), key=rank)
        self._by_values = (
            {tuple(m.value for m in e.match): e for e in self._entries.values()}
            if self._exact_only
            else {}
        )


class Register:
    def __init__(self, spec: RegisterSpec) -> None:
        self.spec = spec
        self.cells = [0] * spec.size

    def read(self, index: int) -> int:
        self._index(index)
        return self.cells[index]

    def write(self, index: int, value: int) -> None:
        self._index(index)
        if not 0 <= value < (1 << self.spec.bitwidth):
            raise InvalidArgument(
                f"{self.spec.name}: value {value} does not fit in {self.spec.bitwidth} bits"
            )
        self.cells[index] = value

    def _index(self, index: int) -> None:
        if not 0 <= index < self.spec.size:
            raise InvalidArgument(
                f"{self.spec.name}: index {index} outside 0..{self.spec.size - 1}"
            )


class Counter:
    def __init__(self, spec: CounterSpec) -> None:
        self.spec = spec
        self.packets = [0] * spec.size
        self.bytes = [0] * spec.size

    def count(self, index: int, length: int) -> None:
        if 0 <= index < self.spec.size:  # out of range: ignored, as BMv2 does
            self.packets[index] += 1
            self.bytes[index] += length

    def set(self, index: int, packets: int, nbytes: int) -> None:
        if not 0 <= index < self.spec.size:
            raise InvalidArgument(
                f"{self.spec.name}: index {index} outside 0..{self.spec.size - 1}"
            )
        if packets < 0 or nbytes < 0:
            raise InvalidArgument(f"{self.spec.name}: counts cannot be negative")
        self.packets[index], self.bytes[index] = packets, nbytes


@dataclass
class PacketReplication:
    """Multicast groups and clone sessions (the packet replication engine's configuration)."""

    groups: dict[int, tuple[Replica, ...]] = field(default_factory=dict)
    sessions: dict[int, CloneSession] = field(default_factory=dict)

    def insert_group(self, group_id: int, replicas: Sequence[Replica]) -> None:
        self._check_group(group_id, replicas)
        if group_id in self.groups:
            raise AlreadyExists(f"multicast group {group_id} exists")
        self.groups[group_id] = tuple(replicas)

    def modify_group(self, group_id: int, replicas: Sequence[Replica]) -> None:
        self._check_group(group_id, replicas)
        if group_id not in self.groups:
            raise NotFound(f"no multicast group {group_id}")
        self.groups[group_id] = tuple(replicas)

    def delete_group(self, group_id: int) -> None:
        if self.groups.pop(group_id, None) is None:
            raise NotFound(f"no multicast group {group_id}")

    def insert_session(self, session: CloneSession) -> None:
        self._check_session(session)
        if session.id in self.sessions:
            raise AlreadyExists(f"clone session {session.id} exists")
        self.sessions[session.id] = session

    def modify_session(self, session: CloneSession) -> None:
        self._check_session(session)
        if session.id not in self.sessions:
            raise NotFound(f"no clone session {session.id}")
        self.sessions[session.id] = session

    def delete_session(self, session_id: int) -> None:
        if self.sessions.pop(session_id, None) is None:
            raise NotFound(f"no clone session {session_id}")

    @staticmethod
    def _check_group(group_id: int, replicas: Sequence[Replica]) -> None:
        if group_id <= 0:
            raise InvalidArgument(f"multicast group id must be positive, got {group_id}")
        if len(set(replicas)) != len(replicas):
            raise InvalidArgument(f"multicast group {group_id} lists a replica twice")

    @staticmethod
    def _check_session(session: CloneSession) -> None:
        if session.id <= 0:
            raise InvalidArgument(f"clone session id must be positive, got {session.id}")
        if len(set(session.replicas)) != len(session.replicas):
            raise InvalidArgument(f"clone session {session.id} lists a replica twice")
        if session.packet_length_bytes < 0:
            raise InvalidArgument(f"clone session {session.id}: negative truncation length")


class SwitchState:
    """Everything a P4Runtime client can read or write, for one loaded program."""

    def __init__(
        self,
        actions: Sequence[ActionSpec],
        tables: Sequence[TableSpec],
        registers: Sequence[RegisterSpec] = (),
        counters: Sequence[CounterSpec] = (),
    ) -> None:
        self.lock = threading.RLock()
        self.actions = {a.name: a for a in actions}
        self.tables = {t.name: Table(t, self.actions) for t in tables}
        self.registers = {r.name: Register(r) for r in registers}
        self.counters = {c.name: Counter(c) for c in counters}
        self.pre = PacketReplication()
        for t in tables:
            missing = [a for a in t.actions if a not in self.actions]
            if missing:
                raise ValueError(f"table {t.name} names undeclared actions {missing}")

    def table(self, name: str) -> Table:
        try:
            return self.tables[name]
        except KeyError:
            raise NotFound(f"no table {name!r}") from None

    def register(self, name: str) -> Register:
        try:
            return self.registers[name]
        except KeyError:
            raise NotFound(f"no register {name!r}") from None

    def counter(self, name: str) -> Counter:
        try:
            return self.counters[name]
        except KeyError:
            raise NotFound(f"no counter {name!r}") from None
