"""The switch's run-time state: table entries, registers, counters, the packet replication engine.

Both sides of the switch use it: the compiled pipeline reads it on every packet (table lookups,
register and counter updates, multicast and clone replication) and the P4Runtime server changes
it. Objects are named as in P4Info (fully qualified, e.g. `MyIngress.ipv4_lpm`); the server maps
P4Info ids to these names. Every change is checked here, so the server only translates, and a bad
write raises a `p4switch.exceptions.StateError` whose `code` is the P4Runtime canonical code to
report.

All access goes through `SwitchState.lock` (the packet path holds it for one packet). A
compiled pipeline keeps references to the `TableState` objects and to the lists
`RegisterState.cells`, `CounterState.packets` and `CounterState.bytes`: change those lists in
place (`cells[:] = ...`), never replace them.

`specs` holds what a program declares (and the values entries are made of), `tables` the
tables and their entries, `replication` multicast groups and clone sessions, `meters` meters,
`digests` digest lists, `profiles` action profiles and selectors (members and groups),
`state` registers, counters and `SwitchState`, `ageing` idle timeouts. Every name is exported
here.
"""

from p4switch.runtime.ageing import AgeingMonitor, IdleEntries
from p4switch.runtime.digests import (
    DigestConfig,
    DigestCounts,
    DigestEngine,
    DigestList,
    DigestSpec,
)
from p4switch.runtime.meters import (
    GREEN,
    RED,
    YELLOW,
    MeterCell,
    MeterConfig,
    MeterSpec,
    MeterState,
    direct_meter_color,
)
from p4switch.runtime.profiles import EMPTY_GROUP, Group, ProfileSpec, ProfileState
from p4switch.runtime.replication import CloneSession, PacketReplication, Replica
from p4switch.runtime.specs import (
    ActionCall,
    ActionSpec,
    CounterSpec,
    FieldMatch,
    KeySpec,
    ParamSpec,
    ProfileRef,
    RegisterSpec,
    StaticEntry,
    TableSpec,
    ValueSetSpec,
    group,
    member,
)
from p4switch.runtime.state import CounterState, RegisterState, SwitchState, ValueSetState
from p4switch.runtime.tables import (
    TableEntry,
    TableState,
    exact,
    lpm,
    prefix_len,
    range_match,
)

__all__ = [
    "EMPTY_GROUP",
    "GREEN",
    "RED",
    "YELLOW",
    "ActionCall",
    "ActionSpec",
    "AgeingMonitor",
    "CloneSession",
    "CounterSpec",
    "CounterState",
    "DigestConfig",
    "DigestCounts",
    "DigestEngine",
    "DigestList",
    "DigestSpec",
    "FieldMatch",
    "Group",
    "IdleEntries",
    "KeySpec",
    "MeterCell",
    "MeterConfig",
    "MeterSpec",
    "MeterState",
    "PacketReplication",
    "ParamSpec",
    "ProfileRef",
    "ProfileSpec",
    "ProfileState",
    "RegisterSpec",
    "RegisterState",
    "Replica",
    "StaticEntry",
    "SwitchState",
    "TableEntry",
    "TableSpec",
    "TableState",
    "ValueSetSpec",
    "ValueSetState",
    "direct_meter_color",
    "exact",
    "group",
    "lpm",
    "member",
    "prefix_len",
    "range_match",
]
