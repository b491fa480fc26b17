"""innet.p4's entries from the project's own controller code, for one edge switch.

A case that says `innet_round:` plays the edge of one island of a WAN (the nine cities unless
it names a topology file): the batches are what `controller.rounds` gives for that edge, the
base entries (`base_entries`) and then round `number` (`round_entries`, `install_changes`),
turned into P4Runtime updates by `to_updates` against each target's P4Info. Later steps may
install another round or retire one (`retire_changes`), as `RoundDriver` does.

    >>> from topo.loader import default_wan
    >>> edge = InnetEdge(default_wan(), island=0, hosts=2, job=1)
    >>> edge.ports  # Tokyo: two hosts, then its links to Singapore, Hong Kong, Los Angeles
    (1, 2, 3, 4, 5)
    >>> rounds = InstalledRounds(edge)
    >>> len(rounds.base().updates)  # host ports, routes, the local multicast group
    13
    >>> changes = rounds.install(7, [[0, 1, 2], [3, 4, 5], [6, 7, 8]]).updates
    >>> len(changes)  # 2 multicast groups; membership, tree, and 4 ports' sources (port_sources)
    8
    >>> [change.op for change in rounds.retire(7).updates] == ["delete"] * 8
    True
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from controller.planner.exceptions import ScheduleError
from controller.planner.schedule import Round
from controller.rounds import (
    Addressing,
    Changes,
    SwitchEntries,
    base_entries,
    install_changes,
    retire_changes,
    round_entries,
)
from innet.exceptions import InputError
from p4diff.exceptions import P4DiffError
from p4diff.writes import Batch
from topo.siteplan import host_ports, wan_port
from topo.wan import Wan


class RoundError(InputError, ValueError):
    """A round the controller code refuses for this edge (the loader adds where)."""


@dataclass(frozen=True)
class InnetEdge:
    """The edge switch of `island` in `wan`, with `hosts` hosts per island, running job `job`."""

    wan: Wan
    island: int
    hosts: int
    job: int

    def __post_init__(self) -> None:
        if not 0 <= self.island < self.wan.n:
            raise RoundError(f"island {self.island}: the WAN has islands 0..{self.wan.n - 1}")

    @property
    def name(self) -> str:
        return self.wan.names[self.island]

    @property
    def ports(self) -> tuple[int, ...]:
        """Host ports, then one port per WAN link (the site plan's numbering)."""
        links = [
            wan_port(self.wan, self.island, v, self.hosts) for v in self.wan.neighbours(self.island)
        ]
        return tuple(sorted({*host_ports(self.hosts), *links}))

    def base(self) -> SwitchEntries:
        addressing = Addressing.default(self.wan.n, self.hosts)
        return base_entries(self.wan, addressing)[self.island]

    def round(self, number: int, groups: Sequence[Sequence[int]]) -> SwitchEntries:
        """This edge's entries of round `number` (none if the round's trees miss it)."""
        try:
            entries = round_entries(
                self.wan, Round.of(groups), job=self.job, number=number, hosts_per_island=self.hosts
            )
        except (ScheduleError, InputError) as err:
            raise RoundError(f"round {number}: {err}") from None
        return entries.get(self.island, SwitchEntries())


@dataclass
class InstalledRounds:
    """What the controller has installed on the edge so far, as the case's steps go."""

    edge: InnetEdge
    _base: SwitchEntries | None = None
    _rounds: dict[int, SwitchEntries] = field(default_factory=dict)

    def base(self) -> Batch:
        if self._base is not None:
            raise P4DiffError("the base entries are installed once")
        self._base = self.edge.base()
        return self._batch(install_changes({0: self._base}))

    def install(self, number: int, groups: Sequence[Sequence[int]]) -> Batch:
        if number in self._rounds:
            raise RoundError(f"round {number} is installed already")
        entries = self.edge.round(number, groups)
        present = [{0: e} for e in self._present()]
        self._rounds[number] = entries
        return self._batch(install_changes({0: entries}, present))

    def retire(self, number: int) -> Batch:
        if number not in self._rounds:
            raise RoundError(f"round {number} is not installed (installed: {sorted(self._rounds)})")
        entries = self._rounds.pop(number)
        return self._batch(retire_changes({0: entries}, [{0: e} for e in self._present()]))

    def _present(self) -> list[SwitchEntries]:
        return [e for e in (self._base, *self._rounds.values()) if e is not None]

    @staticmethod
    def _batch(changes: Changes) -> Batch:
        found = changes.get(0, ())
        if not found:
            raise RoundError("the controller has nothing to write for this edge")
        return Batch(found)
