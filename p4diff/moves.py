"""The innet frames of a generated case: contributions chosen for what they do to the edge's
slots, and NACKs, RECOVERs and contributions the edge refuses (`p4diff.script`).

Every contribution is put to the slot model first (`p4diff.slotmodel`): one whose outcome
depends on time is never sent, and the moves that want a particular outcome (a slot conflict,
a stale claim, a late copy, a result sent again) look for a chunk that has it. Chunks
colliding in a slot are c and c + 2 x SLOTS k, or the same chunk of another group or round.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING

from p4diff.oddframes import Sent
from p4diff.slotmodel import Cell, Contribution, GroupAtEdge, Outcome
from workers.packets import Flag

if TYPE_CHECKING:
    from p4diff.script import CaseScript

Ctx = tuple[int, int, int]
Key = tuple[Ctx, int]  # a chunk: its context (job, round, group) and number
TRIES = 40
MERGING = (Outcome.CLAIMED, Outcome.COMPLETED, Outcome.STALE_CLAIM, Outcome.MERGED)


def flag_names(flags: int) -> list[str]:
    return [name for name, bit in Flag.__members__.items() if flags & bit]


class SlotMoves:
    """Draws the innet steps of a `CaseScript`, remembering the chunks they begin."""

    def __init__(self, script: CaseScript) -> None:
        self.script, self.rng, self.model = script, script.rng, script.model
        self.begun: dict[Key, set[int]] = {}  # chunk: the contributors merged
        self.lost: set[Key] = set()
        self.sent: list[tuple[Contribution, list[int]]] = []  # merged or claimed
        self.bounced: list[tuple[Contribution, list[int]]] = []
        self.draws: dict[str, Callable[[], bool]] = {
            "member": self._member,
            "boundary": lambda: self._member(boundary=True),
            "loss": self._loss,
            "stale": lambda: self._collide(Outcome.STALE_CLAIM, "stale"),
            "conflict": lambda: self._collide(Outcome.CONFLICT, "conflict"),
            "late_copy": self._late_copy,
            "duplicate": self._duplicate,
            "retransmit": self._retransmit,
            "replay": self._replay,
            "non_member": self._non_member,
            "spoofed": self._spoofed,
            "transit": self._transit,
            "unknown": self._unknown,
            "nack": lambda: self._signal("NACK"),
            "recover": lambda: self._signal("RECOVER"),
        }
        self.kinds = tuple(self.draws)

    def draw(self, kind: str) -> bool:
        return self.draws[kind]()

    # --- sending ----------------------------------------------------------------------------

    def send(
        self,
        kind: str,
        c: Contribution,
        values: list[int],
        note: str = "",
        repeat: int = 1,
        packet_type: str = "CONTRIBUTION",
    ) -> Outcome | None:
        """Append the step; a contribution's outcome (None, and no step, if time decides it)."""
        outcome = Outcome.PASSED
        if packet_type == "CONTRIBUTION":
            outcome = self.model.predict(c)
            if outcome is Outcome.UNCERTAIN:
                return None
            for _ in range(repeat):
                self.model.apply(c)
            self._remember(c, values, outcome)
        script = self.script
        innet = {"round": c.round, "group": c.group, "chunk": c.chunk, "flags": flag_names(c.flags)}
        if packet_type != "CONTRIBUTION":
            innet = {"type": packet_type, **innet}
        if c.job != script.edge.job:
            innet["job"] = c.job
        body = {
            "port": c.port,
            "frame": script.frame(c.src),
            "with": {"innet": {**innet, "values": values}},
        }
        if repeat > 1:
            body["repeat"] = repeat
        what = f"{packet_type.lower()} from {script.who(c.src)} on port {c.port}"
        flags = "+".join(flag_names(c.flags)) or "no flags"
        where = f"round {c.round} group {c.group} chunk {c.chunk} {flags}"
        said = f": {outcome.value}" if packet_type == "CONTRIBUTION" else ""
        named = outcome.name if packet_type == "CONTRIBUTION" else ""
        script.add(kind, {"send": body}, f"{kind}: {what}, {where}{said}{note}", named)
        return outcome

    def _remember(self, c: Contribution, values: list[int], outcome: Outcome) -> None:
        key = (c.ctx, c.chunk)
        if outcome in (Outcome.CLAIMED, Outcome.STALE_CLAIM) or (
            outcome is Outcome.COMPLETED and key not in self.begun
        ):
            self.begun[key] = set()
            self.lost.discard(key)
        if outcome in MERGING:
            self.begun.setdefault(key, set()).add(c.src)
            self.sent.append((c, values))
        if outcome is Outcome.CONFLICT:
            self.bounced.append((c, values))

    def port_of(self, group: GroupAtEdge, src: int) -> int | None:
        """Where `src`'s contributions of `group` enter: its stream's port (the host ports
        for the edge's own island)."""
        ports = group.stream_ports(src)
        return self.rng.choice(ports) if ports else None

    def flags_of(self, group: GroupAtEdge, src: int) -> int:
        rng, wan, local = self.rng, Flag.WAN, Flag.LOCAL
        if 1 << src == group.my_bit:
            choices = [wan | local, local, wan | Flag.REMOTE, local | Flag.RETRANSMIT]
            return int(rng.choices(choices, weights=[6, 2, 1, 1])[0])
        choices = [wan | local, wan | Flag.REMOTE, local, Flag.REMOTE]
        return int(rng.choices(choices, weights=[6, 2, 1, 1])[0])

    def chunks(self, index: int | None = None) -> Iterator[int]:
        """Chunk numbers to try: small, near 2^32, anywhere; all in cell `index` if given."""
        rng, cells = self.rng, 2 * self.model.slots
        for _ in range(TRIES):
            chunk = rng.choices(
                [rng.randrange(4 * cells), rng.randrange(2**32), 2**32 - 1 - rng.randrange(cells)],
                weights=[7, 2, 1],
            )[0]
            yield chunk if index is None else chunk - chunk % cells + index

    def _contribution(self, group: GroupAtEdge, src: int, chunk: int) -> Contribution | None:
        port = self.port_of(group, src)
        if port is None:
            return None
        return Contribution(port, *group.ctx, src, chunk, self.flags_of(group, src))

    def _new_chunk(
        self, group: GroupAtEdge, src: int, wanted: tuple[Outcome, ...], index: int | None = None
    ) -> Contribution | None:
        """A contribution of `src` to a chunk not begun whose outcome is one of `wanted`."""
        for chunk in self.chunks(index):
            c = self._contribution(group, src, chunk)
            if c is None or (c.ctx, chunk) in self.begun:
                continue
            if self.model.predict(c) in wanted:
                return c
        return None

    # --- contributions that go into slots ----------------------------------------------------

    def _open(self) -> list[tuple[Key, list[int]]]:
        """Chunks begun whose group is installed, with the members still missing."""
        found = []
        for key, seen in self.begun.items():
            group = self.model.groups.get(key[0])
            missing = [m for m in group.members if m not in seen] if group else []
            if missing and (key not in self.lost or self.rng.random() < 0.3):
                found.append((key, missing))
        return found

    def _member(self, boundary: bool = False) -> bool:
        groups = self.script.member_groups()
        if not groups:
            return False
        values = self.script.values(boundary)
        kind = "boundary" if boundary else "member"
        opened = self._open()
        if opened and self.rng.random() < 0.7:
            recent = opened[-3:] if self.rng.random() < 0.7 else opened  # so that chunks complete
            (ctx, chunk), missing = self.rng.choice(recent)
            c = self._contribution(self.model.groups[ctx], self.rng.choice(missing), chunk)
        else:
            group = self.rng.choice(groups)
            wanted = (Outcome.CLAIMED, Outcome.COMPLETED)
            c = self._new_chunk(group, self.rng.choice(group.members), wanted)
        return c is not None and self.send(kind, c, values) is not None

    def _loss(self) -> bool:
        groups = [g for g in self.script.member_groups() if len(g.members) > 1]
        if not groups:
            return False
        group = self.rng.choice(groups)
        c = self._new_chunk(group, self.rng.choice(group.members), (Outcome.CLAIMED,))
        if c is None:
            return False
        note = "; the others' contributions are lost, the slot stays busy"
        if self.send("loss", c, self.script.values(), note) is None:
            return False
        self.lost.add((c.ctx, c.chunk))
        return True

    def _collide(self, wanted: Outcome, kind: str) -> bool:
        """Another chunk into a busy slot: a conflict while it is fresh, a claim once stale."""
        stale = wanted is Outcome.STALE_CLAIM
        cells = [(k, c) for k, c in self.model.busy_cells() if self.model.staleness(c) is stale]
        groups = self.script.member_groups()
        if not cells or not groups:
            return False
        index, cell = self.rng.choice(cells)
        group = self.rng.choice(groups)
        c = self._new_chunk(group, self.rng.choice(group.members), (wanted,), index)
        note = f" (slot {index} held by round {cell.ctx[1]} group {cell.ctx[2]} chunk {cell.chunk})"
        return c is not None and self.send(kind, c, self.script.values(), note) is not None

    def _late_copy(self) -> bool:
        cells = 2 * self.model.slots
        held = [
            cell
            for cell in self.model.cells.values()
            if cell.chunk >= cells
            and cell.ctx in self.model.groups
            and self.model.groups[cell.ctx].my_bit  # a member's group: its slots are ours
        ]
        if not held:
            return False
        cell = self.rng.choice(held)
        group = self.model.groups[cell.ctx]
        chunk = cell.chunk - cells * self.rng.randint(1, min(4, cell.chunk // cells))
        c = self._contribution(group, self.rng.choice(group.members), chunk)
        if c is None or self.model.predict(c) is not Outcome.LATE_COPY:
            return False
        return self.send("late_copy", c, self.script.values()) is not None

    def _duplicate(self) -> bool:
        if not self.sent:
            return False
        c, values = self.rng.choice(self.sent)
        repeat = self.rng.choice([1, 1, 2])
        return self.send("duplicate", c, values, " (sent before)", repeat) is not None

    def _retransmit(self) -> bool:
        """The island's leader resends a chunk whose result it has (RETRANSMIT)."""
        done = [cell for cell in self.model.cells.values() if self._own_complete(cell)]
        if not done:
            return False
        cell = self.rng.choice(done)
        port = self.rng.randint(1, self.script.edge.hosts)
        flags = int(Flag.WAN | Flag.LOCAL | Flag.RETRANSMIT)
        c = Contribution(port, *cell.ctx, self.script.edge.island, cell.chunk, flags)
        return self.send("retransmit", c, self.script.values()) is not None

    def _own_complete(self, cell: Cell) -> bool:
        group = self.model.groups.get(cell.ctx)
        return group is not None and cell.complete and bool(cell.seen & group.my_bit)

    def _replay(self) -> bool:
        """The leader replays a bounced contribution, or heals a slot with another member's."""
        flags = int(Flag.LOCAL | Flag.RETRANSMIT)
        choices: list[tuple[Contribution, list[int]]] = []
        for c, values in self.bounced:
            group = self.model.groups.get(c.ctx)
            if group is not None:
                ports = group.replay_ports(c.src) or group.stream_ports(c.src)
                port = self.rng.choice(ports)
                choices.append((Contribution(port, *c.ctx, c.src, c.chunk, flags), values))
        for (ctx, chunk), missing in self._open():
            group = self.model.groups[ctx]
            for m in missing:
                if group.replay_ports(m):
                    port = self.rng.choice(group.replay_ports(m))
                    choices.append(
                        (Contribution(port, *ctx, m, chunk, flags), self.script.values())
                    )
        if not choices:
            return False
        c, values = self.rng.choice(choices)
        return self.send("replay", c, values) is not None

    # --- frames the edge refuses or only passes on --------------------------------------------

    def _non_member(self) -> bool:
        groups = self.script.member_groups()
        if not groups:
            return False
        group = self.rng.choice(groups)
        outside = [i for i in range(self.script.edge.wan.n) if i not in group.members]
        src = self.rng.choice([*outside, self.rng.randint(self.script.edge.wan.n, 31)])
        flags = self.flags_of(group, src)
        c = Contribution(self.script.port(), *group.ctx, src, self.rng.randrange(64), flags)
        return self.send("non_member", c, self.script.values()) is not None

    def _spoofed(self) -> bool:
        groups = self.script.member_groups()
        if not groups:
            return False
        group = self.rng.choice(groups)
        for _ in range(TRIES):
            src, port = self.rng.choice(group.members), self.script.port()
            flags = int(Flag.WAN) | self.flags_of(group, src)
            c = Contribution(port, *group.ctx, src, self.rng.randrange(64), flags)
            if self.model.predict(c) is Outcome.SPOOFED:
                kind = self.rng.choice(["CONTRIBUTION", "CONTRIBUTION", "NACK"])
                values = self.script.values() if kind != "NACK" else []
                return self.send("spoofed", c, values, packet_type=kind) is not None
        return False

    def _transit(self) -> bool:
        groups = sorted(self.model.transit_groups(), key=lambda g: g.ctx)
        if not groups:
            return False
        group = self.rng.choice(groups)
        src = self.rng.choice(group.members)
        port = self.port_of(group, src) or self.script.port()
        flags = self.rng.choice(
            [Flag.WAN | Flag.LOCAL, Flag.WAN, Flag.LOCAL, Flag.WAN | Flag.REMOTE]
        )
        c = Contribution(port, *group.ctx, src, self.rng.randrange(64), int(flags))
        return self.send("transit", c, self.script.values()) is not None

    def _unknown(self) -> bool:
        edge = self.script.edge
        job, number = edge.job, self.rng.randrange(2**16)
        if self.rng.random() < 0.4:
            job = (job + self.rng.randint(1, 2**16 - 1)) % 2**16
        if (job, number) in {(ctx[0], ctx[1]) for ctx in self.model.groups}:
            return False
        src = self.rng.randrange(edge.wan.n)
        flags = int(Flag.WAN | Flag.LOCAL)
        c = Contribution(self.script.port(), job, number, self.rng.randrange(4), src, 0, flags)
        return self.send("unknown", c, self.script.values()) is not None

    def _signal(self, packet_type: str) -> bool:
        """A NACK or a RECOVER of a member's stream, on its port: never merged."""
        groups = sorted(self.model.groups.values(), key=lambda g: g.ctx)
        if not groups:
            return False
        group = self.rng.choice(groups)
        src = self.rng.choice(group.members)
        port = self.port_of(group, src)
        if port is None:
            return False
        flags = int(self.rng.choice([Flag.WAN, Flag.WAN, Flag(0)]))
        c = Contribution(port, *group.ctx, src, self.rng.randrange(64), flags)
        values = [] if packet_type == "NACK" else self.script.values()
        return self.send(packet_type.lower(), c, values, packet_type=packet_type) is not None

    def plausible(self) -> Sent:
        """A well-formed contribution a member could send, to break (`p4diff.oddframes`)."""
        groups = self.script.member_groups()
        group = self.rng.choice(groups) if groups else None
        src = self.rng.choice(group.members) if group else self.script.edge.island
        port = (self.port_of(group, src) if group else None) or self.script.port()
        ctx = group.ctx if group else (self.script.edge.job, self.script.first_round or 0, 0)
        name = self.script.frame(src)
        innet = {
            "round": ctx[1],
            "group": ctx[2],
            "chunk": self.rng.randrange(64),
            "flags": ["WAN", "LOCAL"],
            "values": self.script.values(),
        }
        if ctx[0] != self.script.edge.job:
            innet["job"] = ctx[0]
        return Sent(port, name, self.script.frames[name]["layers"], innet)
