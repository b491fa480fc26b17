"""What a program declares to the run-time state, and the values its entries are made of."""

from __future__ import annotations

from dataclasses import dataclass


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
    match_kind: str  # "exact", "lpm", "ternary", "range" or "optional"
    bitwidth: int
    # an error or enum key: its values' names (a value is its name's position), P4Info width 0
    symbols: tuple[str, ...] = ()


@dataclass(frozen=True)
class ActionCall:
    name: str
    args: tuple[int, ...] = ()


@dataclass(frozen=True)
class ProfileRef:
    """What an entry of a table with an action profile runs: a member of the profile, or (a
    selector) a group of members."""

    id: int
    group: bool = False


def member(member_id: int) -> ProfileRef:
    return ProfileRef(member_id)


def group(group_id: int) -> ProfileRef:
    return ProfileRef(group_id, group=True)


@dataclass(frozen=True)
class FieldMatch:
    """One key field of an entry as (value, mask); a wildcard is (0, 0). A range field is
    `value`..`high` (mask 0)."""

    value: int
    mask: int
    high: int | None = None  # range fields only: the largest value matched

    def matches(self, v: int) -> bool:
        if self.high is not None:
            return self.value <= v <= self.high
        return (v & self.mask) == self.value


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
    direct_meter: str | None = None  # name of the direct meter attached, if any
    direct_meter_unit: str = "packets"  # its unit: "packets" or "bytes"
    implementation: str | None = None  # its action profile: entries run a ProfileRef
    support_timeout: bool = False  # its entries record hits and may time out when idle

    @property
    def needs_priority(self) -> bool:
        return any(k.match_kind in PRIORITY_KINDS for k in self.keys)


# match kinds whose entries may overlap: their tables order entries by priority
PRIORITY_KINDS = ("ternary", "range", "optional")


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


@dataclass(frozen=True)
class ValueSetSpec:
    name: str
    bitwidth: int
    size: int
    # a value set of a struct: one key per field (name, match kind, width); none: one exact
    # field of `bitwidth` bits
    fields: tuple[KeySpec, ...] = ()

    @property
    def keys(self) -> tuple[KeySpec, ...]:
        return self.fields or (KeySpec("", "exact", self.bitwidth),)
