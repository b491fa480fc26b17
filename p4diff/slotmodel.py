"""innet.p4's slots at one edge, as a generated case will leave them: the model the case
generator (`p4diff.generate`) steers by, so that chunks collide in slots on purpose and no
step's outcome depends on how long the steps before it took.

The model follows docs/protocol.md step by step for a well-formed CONTRIBUTION: membership,
the member check, the source check (`port_sources`), then the slot table ("Slots"). What it
cannot know is time. A busy slot is claimed over by another chunk once the packet's timestamp
is past the claim's time plus the group's `stale_us` (2 s at least, the controller's floor), and
a step lasts the case's settle time at least but has no upper bound. So the model keeps two
clocks: the least time the steps so far can have taken (the settle time each) and a generous
most (`SEND_SLACK_S` or `WRITE_SLACK_S` more each), and a slot is known stale only when even
the least time is past its bound, known fresh only when even the most is short of it, by
`MARGIN_S`. In between the outcome is `UNCERTAIN`, and the generator sends something else.

    >>> from topo.loader import default_wan
    >>> from p4diff.innetround import InnetEdge
    >>> edge = InnetEdge(default_wan(), island=0, hosts=2, job=1)
    >>> slots = EdgeSlots(edge, slots=4, settle=0.2)
    >>> slots.install(7, [[0, 1, 2], [3, 4, 5], [6, 7, 8]])
    >>> tokyo = Contribution(port=1, job=1, round=7, group=0, src=0, chunk=0, flags=3)
    >>> slots.apply(tokyo), slots.apply(tokyo)
    (<Outcome.CLAIMED: 'claims its slot'>, <Outcome.DUPLICATE: 'a duplicate'>)
    >>> slots.predict(Contribution(3, 1, 7, 0, src=1, chunk=8, flags=3))  # chunk 8: cell 0
    <Outcome.CONFLICT: 'a slot conflict, bounced to the hosts'>
    >>> for _ in range(12):
    ...     slots.step_done(send=True)
    >>> slots.predict(Contribution(3, 1, 7, 0, src=1, chunk=8, flags=3))  # 2.4 s on at least
    <Outcome.STALE_CLAIM: 'claims its slot over (stale)'>
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from controller.planner.schedule import Round
from controller.round_entries import MEMBERSHIP, SOURCES
from p4diff.innetround import InnetEdge
from workers.packets import Flag

SEND_SLACK_S = 0.6  # the most a send step may last beyond its settle time, by assumption
WRITE_SLACK_S = 2.0  # the same for a write or a counter read (P4Runtime round trips)
MARGIN_S = 0.3  # how far from a slot's bound the clocks must be for its fate to be known


class Role(enum.Enum):
    MEMBER = "member"
    TRANSIT = "transit"
    RELAY = "relay"  # replicates, never merges: a group's member in the multicast network


class Outcome(enum.Enum):
    """What a contribution does at the edge, slot-wise."""

    UNKNOWN = "unknown (no such round or job here)"
    NOT_MEMBER = "refused: not a member of the group"
    SPOOFED = "refused: its source may not enter on this port (spoofed)"
    PASSED = "not merged here"
    MERGED = "merged"
    COMPLETED = "completes the slot, the RESULT goes to the hosts"
    DUPLICATE = "a duplicate"
    RESENT = "a duplicate of the island's own, the RESULT sent again"
    CLAIMED = "claims its slot"
    STALE_CLAIM = "claims its slot over (stale)"
    LATE_COPY = "a late copy of an older chunk (a duplicate)"
    CONFLICT = "a slot conflict, bounced to the hosts"
    UNCERTAIN = "depends on how long the steps took"

    @property
    def reaches_slot(self) -> bool:
        return self not in (Outcome.UNKNOWN, Outcome.NOT_MEMBER, Outcome.SPOOFED, Outcome.PASSED)


@dataclass(frozen=True)
class GroupAtEdge:
    """One group of an installed round as the edge's tables see it."""

    job: int
    round: int
    group: int
    members: tuple[int, ...]
    role: Role
    my_bit: int = 0
    stale_s: float = 0.0  # a member's bound for an incomplete slot
    sources: dict[int, tuple[int, int]] = field(default_factory=dict)  # port: streams, replays

    @property
    def ctx(self) -> tuple[int, int, int]:
        return self.job, self.round, self.group

    @property
    def expected(self) -> int:
        return sum(1 << m for m in self.members)

    def stream_ports(self, src: int) -> list[int]:
        """The ports where `src`'s traffic may enter (its own edge: the host ports)."""
        return sorted(p for p, (streams, _) in self.sources.items() if streams >> src & 1)

    def replay_ports(self, src: int) -> list[int]:
        """The host ports where the island's leader may replay `src`'s contributions."""
        return sorted(p for p, (_, replays) in self.sources.items() if replays >> src & 1)


def groups_at_edge(
    edge: InnetEdge, number: int, groups: Sequence[Sequence[int]]
) -> list[GroupAtEdge]:
    """The groups of round `number` the edge has entries for: member or transit."""
    entries = edge.round(number, groups)
    members = Round.of(groups).groups
    sources: dict[int, dict[int, tuple[int, int]]] = {}
    for entry in entries.tables:
        if entry.table == SOURCES:
            key, params = _numbers(entry.match), _numbers(entry.params)
            ports = sources.setdefault(key["hdr.innet.group"], {})
            ports[key["standard_metadata.ingress_port"]] = (params["streams"], params["replays"])
    found = []
    for entry in entries.tables:
        if entry.table != MEMBERSHIP:
            continue
        g, params = _numbers(entry.match)["hdr.innet.group"], _numbers(entry.params)
        common = (edge.job, number, g, tuple(members[g]))
        if entry.action.endswith(".member"):
            bound = params["stale_us"] / 1e6
            found.append(
                GroupAtEdge(*common, Role.MEMBER, params["my_bit"], bound, sources.get(g, {}))
            )
        else:
            found.append(GroupAtEdge(*common, Role.TRANSIT, sources=sources.get(g, {})))
    return found


def _numbers(pairs: Iterable[tuple[str, object]]) -> dict[str, int]:
    """The integer values of an entry's match or parameters, by name."""
    return {name: value for name, value in pairs if isinstance(value, int)}


@dataclass(frozen=True)
class Contribution:
    """A well-formed CONTRIBUTION frame's fields, and the port it enters on."""

    port: int
    job: int
    round: int
    group: int
    src: int
    chunk: int
    flags: int  # workers.packets.Flag bits

    @property
    def ctx(self) -> tuple[int, int, int]:
        return self.job, self.round, self.group


@dataclass
class Cell:
    """One slot cell: its tag, contributors and the times of its claim (least, most)."""

    ctx: tuple[int, int, int]
    chunk: int
    seen: int
    expected: int
    claimed: tuple[float, float]
    stale_s: float

    @property
    def complete(self) -> bool:
        return self.seen == self.expected


class EdgeSlots:
    """The edge's installed groups and its 2 x `slots` cells, step by step."""

    def __init__(self, edge: InnetEdge, slots: int, settle: float) -> None:
        self.edge, self.slots, self.settle = edge, slots, settle
        self.groups: dict[tuple[int, int, int], GroupAtEdge] = {}
        self.rounds: dict[int, list[GroupAtEdge]] = {}
        self.cells: dict[int, Cell] = {}
        self.clock = (0.0, 0.0)  # the least and the most time the steps so far took
        # what a miss in `membership` makes of a packet: unknown (None), or the role (and the
        # expected bitmap) a case's write of the table's default action gave it
        self.miss: tuple[Role | None, int] = (None, 0)

    # --- rounds -----------------------------------------------------------------------------

    def install(self, number: int, groups: Sequence[Sequence[int]]) -> None:
        found = groups_at_edge(self.edge, number, groups)
        self.rounds[number] = found
        self.groups.update((g.ctx, g) for g in found)

    def retire(self, number: int) -> None:
        for g in self.rounds.pop(number):
            del self.groups[g.ctx]

    def member_groups(self) -> list[GroupAtEdge]:
        return [g for g in self.groups.values() if g.role is Role.MEMBER]

    def transit_groups(self) -> list[GroupAtEdge]:
        return [g for g in self.groups.values() if g.role is Role.TRANSIT]

    # --- time -------------------------------------------------------------------------------

    def step_done(self, send: bool) -> None:
        """A step ended: it took the settle time at least, and at most some slack more."""
        slack = SEND_SLACK_S if send else WRITE_SLACK_S
        least, most = self.clock
        self.clock = (least + self.settle, most + self.settle + slack)

    def staleness(self, cell: Cell) -> bool | None:
        """True if the busy cell is past its bound for sure, False if short of it for sure,
        None if that depends on how long the steps took."""
        least = self.clock[0] - cell.claimed[0]
        most = self.clock[1] - cell.claimed[1]
        if least > cell.stale_s + MARGIN_S:
            return True
        if most < cell.stale_s - MARGIN_S:
            return False
        return None

    # --- contributions ----------------------------------------------------------------------

    def index(self, chunk: int) -> int:
        """The cell of chunk c: c mod 2 x SLOTS (its bank, then its slot)."""
        return chunk % (2 * self.slots)

    def predict(self, c: Contribution) -> Outcome:
        group = self.groups.get(c.ctx)
        passed = self._admitted(c, group)
        if passed is not None:
            return passed
        assert group is not None
        cell = self.cells.get(self.index(c.chunk))
        bit = 1 << c.src
        if cell is None:
            return Outcome.COMPLETED if bit == group.expected else Outcome.CLAIMED
        if cell.ctx == c.ctx and cell.chunk == c.chunk:
            if cell.seen & bit:
                own = cell.complete and bit == group.my_bit
                return Outcome.RESENT if own else Outcome.DUPLICATE
            return Outcome.COMPLETED if cell.seen | bit == cell.expected else Outcome.MERGED
        if not cell.complete:
            stale = self.staleness(cell)
            if stale is None:
                return Outcome.UNCERTAIN
            if stale:
                return Outcome.STALE_CLAIM
        if cell.ctx == c.ctx and c.chunk < cell.chunk:
            return Outcome.LATE_COPY
        if cell.complete:
            return Outcome.COMPLETED if bit == group.expected else Outcome.CLAIMED
        return Outcome.CONFLICT

    def _admitted(self, c: Contribution, group: GroupAtEdge | None) -> Outcome | None:
        """Why the contribution never reaches a slot, or None if it does."""
        bit = 1 << c.src
        if group is None:  # no entry: no port_sources entry either
            role, expected = self.miss
            if role is None:
                return Outcome.UNKNOWN
            refused = role is Role.RELAY and not expected & bit
            return Outcome.NOT_MEMBER if refused else Outcome.SPOOFED
        member = group.role is Role.MEMBER
        if member and not group.expected & bit:
            return Outcome.NOT_MEMBER
        streams, replays = group.sources.get(c.port, (0, 0))
        replay = member and not c.flags & Flag.WAN and bool(replays & bit)
        if not streams & bit and not replay:
            return Outcome.SPOOFED
        merge_here = bool(c.flags & Flag.LOCAL) or (
            bool(c.flags & Flag.REMOTE) and bit != group.my_bit
        )
        return None if member and merge_here else Outcome.PASSED

    def apply(self, c: Contribution) -> Outcome:
        """The contribution's outcome, the cells updated as the switch will update them."""
        outcome = self.predict(c)
        if outcome is Outcome.UNCERTAIN:
            raise ValueError(f"{c}: its outcome depends on time; the generator must not send it")
        index, bit = self.index(c.chunk), 1 << c.src
        if outcome in (Outcome.MERGED, Outcome.COMPLETED) and index in self.cells:
            cell = self.cells[index]
            if cell.ctx == c.ctx and cell.chunk == c.chunk:
                cell.seen |= bit
                return outcome
        if outcome in (Outcome.CLAIMED, Outcome.STALE_CLAIM, Outcome.COMPLETED):
            group = self.groups[c.ctx]
            self.cells[index] = Cell(c.ctx, c.chunk, bit, group.expected, self.clock, group.stale_s)
        return outcome

    def busy_cells(self) -> list[tuple[int, Cell]]:
        return [(k, cell) for k, cell in sorted(self.cells.items()) if not cell.complete]
