"""The steps of one generated case, drawn one after another (`p4diff.generate`).

A `CaseScript` holds what the steps so far have done at the edge: the slots and installed
groups (`p4diff.slotmodel.EdgeSlots`), the routes and multicast groups (`p4diff.randomwrites`),
the chunks begun, lost and bounced, and the frames defined. Each draw appends one step of a
kind (`KINDS`) as the case file writes it, with a note saying what the step is and, for a
contribution, what the model says it does to its slot. Moves that need something the edge does
not have at that point (a busy slot to collide with, a complete one to resend) are not drawn.

    >>> import random
    >>> from topo.loader import default_wan
    >>> from p4diff.innetround import InnetEdge
    >>> edge = InnetEdge(default_wan(), island=0, hosts=2, job=1)
    >>> script = CaseScript(random.Random(7), edge, slots=4, settle=0.2,
    ...                     packet_format=PacketFormat())
    >>> script.install(7, [[0, 1, 2], [3, 4, 5], [6, 7, 8]], step=False)
    >>> script.draw("member")
    True
    >>> script.kinds, list(script.steps[0])
    (['member'], ['send', 'note'])
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from typing import Any

from innet.packetformat import PacketFormat
from p4diff import oddframes
from p4diff.innetround import InnetEdge
from p4diff.moves import SlotMoves
from p4diff.randomwrites import EdgeTables
from p4diff.slotmodel import EdgeSlots, GroupAtEdge, Role
from topo.siteplan import gateway_ip, gateway_mac, host_ip, host_mac

STATS = "InnetIngress.stats"
# Every kind of step a family covers, and how often each is drawn (when it can be).
WEIGHTS = {
    # contributions, and what moves a slot
    "member": 26,
    "boundary": 4,
    "loss": 4,
    "stale": 3,
    "conflict": 5,
    "late_copy": 2,
    "duplicate": 4,
    "retransmit": 3,
    "replay": 3,
    "non_member": 2,
    "spoofed": 3,
    "transit": 2,
    "unknown": 2,
    "nack": 2,
    "recover": 2,
    # innet frames broken one way or another
    "truncated": 2,
    "wrong_udp_port": 1,
    "wrong_length": 2,
    "bad_header": 2,
    # frames that are no innet frame
    "random_bytes": 1,
    "non_ip": 1,
    "vlan": 1,
    "ipv4": 4,
    # the control plane
    "write": 2,
    "refused": 2,
    "read_counters": 2,
}
KINDS = (*WEIGHTS, "install_round", "retire_round")
Step = dict[str, Any]


class CaseScript:
    """The steps drawn so far, and what they have left at the edge."""

    def __init__(
        self,
        rng: random.Random,
        edge: InnetEdge,
        slots: int,
        settle: float,
        packet_format: PacketFormat,
    ) -> None:
        self.rng, self.edge, self.packet_format = rng, edge, packet_format
        self.model = EdgeSlots(edge, slots, settle)
        self.tables = EdgeTables.of(edge)
        self.steps: list[Step] = []
        self.kinds: list[str] = []
        self.outcomes: list[str] = []  # a contribution's outcome by the model, else ""
        self.frames: dict[str, dict[str, Any]] = {}
        self.first_round: int | None = None
        self.slot_moves = SlotMoves(self)

    # --- writing steps ----------------------------------------------------------------------

    def add(self, kind: str, step: Step, note: str, outcome: str = "") -> None:
        self.steps.append({**step, "note": note})
        self.kinds.append(kind)
        self.outcomes.append(outcome)
        self.model.step_done(send="send" in step)

    def who(self, island: int) -> str:
        names = self.edge.wan.names
        return names[island] if island < len(names) else f"island {island}"

    def frame(self, src: int) -> str:
        """The name of `src`'s contribution frame, defined on first use: its leader to its
        edge, as that edge replicates it unchanged (Ethernet and IPv4 as the host sent them)."""
        name = "".join(self.who(src).lower().split())
        if name not in self.frames:
            innet = {"type": "CONTRIBUTION", "flags": ["WAN", "LOCAL"], "job": self.edge.job}
            innet |= {"round": self.first_round or 0, "group": 0, "src": src, "chunk": 0}
            self.frames[name] = {
                "layers": [
                    {"ethernet": {"dst": gateway_mac(src), "src": host_mac(src, 1)}},
                    {"ipv4": {"src": host_ip(src, 1), "dst": gateway_ip(src)}},
                    {"udp": {"sport": 40000}},
                    {"innet": innet},
                ]
            }
        return name

    def values(self, boundary: bool = False) -> list[int]:
        """int32 values: none, a few, or every lane of the format; at the boundaries if asked,
        and now and then otherwise."""
        rng = self.rng
        count = rng.choices([0, rng.randint(1, 8), self.packet_format.lanes], weights=[1, 13, 6])[0]
        edges = (2**31 - 1, -(2**31), 0, -1, -(2**31 - 1), 1)
        if boundary:
            return [rng.choice(edges) for _ in range(max(count, 1))]
        pick: list[Callable[[], int]] = [
            lambda: rng.randint(-1000, 1000),
            lambda: rng.randint(-(2**31), 2**31 - 1),
            lambda: rng.choice(edges),
        ]
        return [rng.choices(pick, weights=[5, 3, 2])[0]() for _ in range(count)]

    def port(self) -> int:
        return self.rng.choice(self.edge.ports)

    # --- drawing ----------------------------------------------------------------------------

    def draw(self, kind: str) -> bool:
        """Append a step of `kind` if the edge's state allows one; False if it does not."""
        if kind in self.slot_moves.kinds:
            return self.slot_moves.draw(kind)
        if kind in oddframes.INNET_KINDS:
            return self._broken(kind)
        if kind in oddframes.OTHER_KINDS:
            body, note = oddframes.other(
                self.rng, kind, self.port(), self.edge.island, self.packet_format
            )
            self.add(kind, {"send": body}, note)
            return True
        draws: dict[str, Callable[[], bool]] = {
            "ipv4": self._ipv4,
            "write": self._write,
            "refused": self._refused,
            "read_counters": self.read_counters,
        }
        return draws[kind]()

    def read_counters(self) -> bool:
        self.add("read_counters", {"read_counters": STATS}, "the stats counter, every cell")
        return True

    def install(self, number: int, groups: Sequence[Sequence[int]], step: bool = True) -> None:
        """Round `number` from the controller's code: a step, or the case's first round."""
        self.model.install(number, groups)
        ids = [g.group_id for g in self.edge.round(number, groups).groups]
        self.tables.installed(number, ids)
        if not step:
            self.first_round = number
            return
        listed = [list(g) for g in groups]
        note = f"round {number} installed by the controller's code: groups {listed}"
        self.add("install_round", {"install_round": {"number": number, "groups": listed}}, note)

    def retire(self, number: int) -> None:
        self.model.retire(number)
        self.tables.retired(number)
        note = f"round {number} retired; its slots stay as they are"
        self.add("retire_round", {"retire_round": number}, note)

    def _broken(self, kind: str) -> bool:
        base = self.slot_moves.plausible()
        body, note = oddframes.broken(self.rng, kind, base, self.packet_format)
        self.add(kind, {"send": body}, f"{kind}: a contribution ({base.frame}), {note}")
        return True

    def _ipv4(self) -> bool:
        own = sorted(set(self.tables.routes) - self.tables.base)
        routes = own or sorted(self.tables.routes)
        body, note = oddframes.ipv4(
            self.rng, self.port(), self.edge.island, self.edge.wan.n, routes
        )
        self.add("ipv4", {"send": body}, note)
        return True

    def _write(self) -> bool:
        op, updates, note = self.tables.valid(self.rng)
        action, expected = self.tables.membership_miss
        self.model.miss = (None if action == "unknown" else Role(action), expected)
        self.add("write", {op: updates}, note)
        return True

    def _refused(self) -> bool:
        installed = sorted(g.ctx for g in self.model.groups.values())
        op, batch, note = self.tables.refused(self.rng, installed)
        self.add("refused", {op: batch}, note)
        return True

    def member_groups(self) -> list[GroupAtEdge]:
        return sorted(self.model.member_groups(), key=lambda g: g.ctx)
