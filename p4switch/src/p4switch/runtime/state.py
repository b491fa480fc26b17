"""Registers, counters, and `SwitchState`: everything a P4Runtime client can read or write
(meters are in `meters`, digests in `digests`)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence

from p4switch.exceptions import InvalidArgument, NotFound, ResourceExhausted
from p4switch.runtime.digests import DigestEngine, DigestSpec
from p4switch.runtime.meters import MeterSpec, MeterState
from p4switch.runtime.profiles import ProfileSpec, ProfileState
from p4switch.runtime.replication import PacketReplication
from p4switch.runtime.specs import (
    ActionSpec,
    CounterSpec,
    FieldMatch,
    ProfileRef,
    RegisterSpec,
    TableSpec,
    ValueSetSpec,
)
from p4switch.runtime.tables import TableState


class RegisterState:
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


class CounterState:
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


class ValueSetState:
    """A parser value set: the values its select cases match, set as a whole. A member holds
    one match per key (`spec.keys`): a value and mask, or a range (`high` set)."""

    def __init__(self, spec: ValueSetSpec) -> None:
        self.spec = spec
        self.members: list[tuple[FieldMatch, ...]] = []

    def contains(self, *values: int) -> bool:
        return any(all(_hit(m, v) for m, v in zip(ms, values, strict=True)) for ms in self.members)

    def set(self, members: Sequence[FieldMatch | tuple[FieldMatch, ...]]) -> None:
        """Replace the members; a value set of one key takes plain FieldMatches too."""
        if len(members) > self.spec.size:
            raise ResourceExhausted(
                f"{self.spec.name}: {len(members)} members, it holds {self.spec.size}"
            )
        keys = self.spec.keys
        out = [m if isinstance(m, tuple) else (m,) for m in members]
        for member in out:
            if len(member) != len(keys):
                raise InvalidArgument(f"{self.spec.name}: a member matches {len(keys)} key(s)")
            for k, m in zip(keys, member, strict=True):
                full = (1 << k.bitwidth) - 1
                top = m.value if m.high is None else m.high
                fits = 0 <= m.value <= top <= full and 0 <= m.mask <= full
                if not fits or (m.value & ~m.mask and m.high is None):
                    raise InvalidArgument(
                        f"{self.spec.name}: a member does not fit bit<{k.bitwidth}>"
                    )
        self.members[:] = out


def _hit(m: FieldMatch, value: int) -> bool:
    if m.high is not None:
        return m.value <= value <= m.high
    return (value & m.mask) == m.value


class SwitchState:
    """Everything a P4Runtime client can read or write, for one loaded program."""

    def __init__(
        self,
        actions: Sequence[ActionSpec],
        tables: Sequence[TableSpec],
        registers: Sequence[RegisterSpec] = (),
        counters: Sequence[CounterSpec] = (),
        meters: Sequence[MeterSpec] = (),
        clock: Callable[[], int] = time.monotonic_ns,
        value_sets: Sequence[ValueSetSpec] = (),
        digests: Sequence[DigestSpec] = (),
        profiles: Sequence[ProfileSpec] = (),
    ) -> None:
        """`clock` gives the time in nanoseconds meters and digest lists run on (a test may
        give its own)."""
        self.lock = threading.RLock()
        self.meters = {m.name: MeterState(m) for m in meters}
        self.clock = clock
        self.value_sets = {v.name: ValueSetState(v) for v in value_sets}
        self.digests = DigestEngine(digests, clock)
        self.actions = {a.name: a for a in actions}
        self.tables = {t.name: TableState(t, self.actions, clock) for t in tables}
        self.registers = {r.name: RegisterState(r) for r in registers}
        self.counters = {c.name: CounterState(c) for c in counters}
        self.pre = PacketReplication()
        self.profiles = {p.name: ProfileState(p, self.actions) for p in profiles}
        for profile in self.profiles.values():
            self._attach(profile)
        for t in tables:
            missing = [a for a in t.actions if a not in self.actions]
            if missing:
                raise ValueError(f"table {t.name} names undeclared actions {missing}")

    def table(self, name: str) -> TableState:
        try:
            return self.tables[name]
        except KeyError:
            raise NotFound(f"no table {name!r}") from None

    def register(self, name: str) -> RegisterState:
        try:
            return self.registers[name]
        except KeyError:
            raise NotFound(f"no register {name!r}") from None

    def meter(self, name: str) -> MeterState:
        try:
            return self.meters[name]
        except KeyError:
            raise NotFound(f"no meter {name!r}") from None

    def value_set(self, name: str) -> ValueSetState:
        try:
            return self.value_sets[name]
        except KeyError:
            raise NotFound(f"no value set {name!r}") from None

    def _attach(self, profile: ProfileState) -> None:
        """Give the profile's tables their profile, and the profile its tables' entries."""
        tables = [self.tables[t] for t in profile.spec.tables]
        for table in tables:
            table.profile = profile
        profile.users = lambda: (
            e.action for t in tables for e in t.entries() if isinstance(e.action, ProfileRef)
        )

    def profile(self, name: str) -> ProfileState:
        """An action profile or selector, to program its members and groups."""
        try:
            return self.profiles[name]
        except KeyError:
            raise NotFound(f"no action profile {name!r}") from None

    def counter(self, name: str) -> CounterState:
        try:
            return self.counters[name]
        except KeyError:
            raise NotFound(f"no counter {name!r}") from None
