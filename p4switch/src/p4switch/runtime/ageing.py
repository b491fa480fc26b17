"""Idle timeouts: the entries of tables with support_timeout that have been idle too long.

The data plane stamps an entry of such a table with the state's clock when it hits it (the
table stamps it when it is inserted). `AgeingMonitor.sweep` finds the entries whose idle time
(the clock now, less that stamp) reached their `idle_timeout_ns` (0: the entry never ages). An
aged entry is not deleted: the controller is told, and deletes it if it wants. As BMv2's ageing
monitor does, a sweep reports an aged entry unless the sweep before reported it: an entry that
stays idle is reported every second sweep.
"""

from __future__ import annotations

from dataclasses import dataclass

from p4switch.runtime.state import SwitchState
from p4switch.runtime.tables import TableEntry


@dataclass(frozen=True)
class IdleEntries:
    """The entries of one table a sweep reports."""

    table: str
    entries: tuple[TableEntry, ...]


class AgeingMonitor:
    """Sweeps the ageing tables of one state; keeps what the last sweep reported."""

    def __init__(self, state: SwitchState) -> None:
        self.state = state
        self.tables = [t for t in state.tables.values() if t.spec.support_timeout]
        # per table, the entries the last sweep reported (by id: the objects are kept alive)
        self._reported: dict[str, dict[int, TableEntry]] = {t.spec.name: {} for t in self.tables}

    def sweep(self) -> list[IdleEntries]:
        """The entries idle for their timeout or longer, as of the state's clock now, less
        those the previous sweep reported; one `IdleEntries` per table with some."""
        out: list[IdleEntries] = []
        with self.state.lock:  # a native data path gives its hits back when it is taken
            now = self.state.clock()
            for table in self.tables:
                before = self._reported[table.spec.name]
                aged = [
                    e
                    for e in table.entries()
                    if e.idle_timeout_ns > 0
                    and e.last_hit is not None
                    and now - e.last_hit >= e.idle_timeout_ns
                ]
                fresh = [e for e in aged if id(e) not in before]
                self._reported[table.spec.name] = {id(e): e for e in fresh}
                if fresh:
                    out.append(IdleEntries(table.spec.name, tuple(fresh)))
        return out
