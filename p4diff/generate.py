"""Families of generated cases for innet.p4: from a seed, case files that p4diff plays on
several targets like any other (docs/p4diff.md, "Generated families").

Case k of the family of seed S is drawn from a random source seeded with (S, k) alone, so it
is the same whatever the family's size, on any machine. Each case plays the edge of a random
island of the nine cities, with 1 to 3 hosts, a small SLOTS (2, 4 or 8: slots collide) and a
random first round (`innet_round`); then 30 to 90 steps drawn by `p4diff.script`, a second
round installed and one retired now and then, the stats counter read now and then and at the
end. The case is YAML text, read back by `p4diff.case.load_case` as a hand-written one is: the
text is the one source of truth, and written to a folder it can be replayed and read by hand.

    >>> from pathlib import Path
    >>> case = generate_case(seed=1, index=0, folder=Path("cases"))
    >>> case.name, case.text == generate_case(1, 0, Path("cases")).text
    ('seed1-case000', True)
    >>> len(case.kinds) == case.text.count("\\n  - ")  # a kind for every step
    True
"""

from __future__ import annotations

import os
import random
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from innet.packetformat import PacketFormat
from p4diff.case import DEFAULT_SETTLE_S
from p4diff.innetround import InnetEdge
from p4diff.script import KINDS, WEIGHTS, CaseScript
from topo.loader import default_wan
from topo.siteplan import JOB

INNET_P4 = Path(__file__).resolve().parents[1] / "p4src" / "innet.p4"
STEPS = (30, 90)  # steps per case, at least and at most (and the counters read at the end)
SLOTS = (2, 4, 8)
PACKET_FORMAT = PacketFormat()  # innet.p4's default: the cases set no LANES
__all__ = ["KINDS", "GeneratedCase", "case_name", "generate_case", "generate_family"]


@dataclass(frozen=True)
class GeneratedCase:
    """One generated case: its name, its case file's text, the kind of each step and, for a
    contribution, what the slot model says it does (an `Outcome`'s name; "" for other steps)."""

    name: str
    text: str
    kinds: tuple[str, ...]
    outcomes: tuple[str, ...]

    def write(self, folder: Path) -> Path:
        path = folder / f"{self.name}.yaml"
        path.write_text(self.text, encoding="utf-8")
        return path


def case_name(seed: int, index: int) -> str:
    return f"seed{seed}-case{index:03d}"


def generate_family(
    seed: int, count: int, folder: Path, *, settle: float = DEFAULT_SETTLE_S
) -> list[GeneratedCase]:
    """Cases 0..count-1 of seed `seed`, for case files in `folder`."""
    return [generate_case(seed, k, folder, settle=settle) for k in range(count)]


def generate_case(
    seed: int,
    index: int,
    folder: Path,
    *,
    settle: float = DEFAULT_SETTLE_S,
    program: Path = INNET_P4,
    steps: tuple[int, int] = STEPS,
) -> GeneratedCase:
    """Case `index` of seed `seed`: its file is meant for `folder` (the program's path is
    relative to it). `settle` is the least a step lasts: the stale claims count on it."""
    rng = random.Random(f"p4diff {seed} {index}")
    wan = default_wan()
    island, hosts, slots = rng.randrange(wan.n), rng.randint(1, 3), rng.choice(SLOTS)
    job = rng.choice([JOB, JOB, rng.randrange(2**16)])
    number = rng.randrange(2**16)
    groups = random_round(rng, wan.n, island)
    script = CaseScript(rng, InnetEdge(wan, island, hosts, job), slots, settle, PACKET_FORMAT)
    script.install(number, groups, step=False)
    _play(rng, script, rng.randint(*steps), number)
    edge = script.edge
    doc: dict[str, Any] = {
        "description": f"{case_name(seed, index)}: {edge.name}'s edge, {hosts} host(s), "
        f"SLOTS {slots}, {len(script.steps)} steps",
        "program": _program_path(program, folder),
        "defines": {"SLOTS": slots},
        "settle": settle,
        "innet_round": {
            "island": island,
            "hosts": hosts,
            "job": job,
            "number": number,
            "groups": groups,
        },
        "frames": script.frames,
        "steps": script.steps,
    }
    text = render(doc, seed, index)
    return GeneratedCase(case_name(seed, index), text, tuple(script.kinds), tuple(script.outcomes))


def _program_path(program: Path, folder: Path) -> str:
    """The program's path as the case file gives it: relative to the case's folder when both
    are in one checkout, absolute otherwise (a folder anywhere else)."""
    checkout = program.resolve().parents[1]
    if folder.resolve().is_relative_to(checkout):
        return os.path.relpath(program.resolve(), folder.resolve())
    return str(program.resolve())


def random_round(rng: random.Random, n: int, island: int) -> list[list[int]]:
    """A random partition of the islands into 1 to 6 groups; `island`'s group has another
    member most of the time."""
    while True:
        order = rng.sample(range(n), n)
        cuts = sorted(rng.sample(range(1, n), rng.choice([0, 1, 2, 2, 3, 3, 4, 4, 5])))
        groups = [order[a:b] for a, b in zip([0, *cuts], [*cuts, n], strict=True)]
        own = next(g for g in groups if island in g)
        if len(own) > 1 or rng.random() < 0.15:
            return [sorted(g) for g in groups]


def _play(rng: random.Random, script: CaseScript, total: int, first: int) -> None:
    """Draw steps until there are `total`, a second round and a retirement among them now and
    then; the counters read last."""
    rounds = [first]
    install_at = rng.randint(total // 5, total * 3 // 5) if rng.random() < 0.6 else total
    retire_at = rng.randint(total // 2, total - 2) if rng.random() < 0.5 else total
    kinds, weights = list(WEIGHTS), list(WEIGHTS.values())
    tries = 0
    while len(script.steps) < total - 1 and tries < 50 * total:
        tries += 1
        if len(script.steps) >= install_at and len(rounds) == 1:
            number = (first + rng.choice([1, 1, rng.randint(2, 2**16 - 1)])) % 2**16
            script.install(number, random_round(rng, script.edge.wan.n, script.edge.island))
            rounds.append(number)
        elif len(script.steps) >= retire_at and len(script.model.rounds) == len(rounds) > 0:
            script.retire(rng.choice(rounds))
        else:
            script.draw(rng.choices(kinds, weights)[0])
    script.read_counters()


# --- the case file's text ---------------------------------------------------------------------


def _flow(value: object) -> str:
    """`value` as one line of YAML flow style."""
    text = yaml.safe_dump([value], default_flow_style=True, width=2**16, sort_keys=False)
    return text.strip()[1:-1]


def render(doc: dict[str, Any], seed: int, index: int) -> str:
    """The case file: a header, the settings, every frame's layers and every step on a line
    of its own with its note."""
    lines = [
        f"# Generated by p4diff.generate: case {index} of seed {seed}",
        f"# (python -m p4diff --generate N --seed {seed}). docs/p4diff.md, 'Generated families'.",
    ]
    for key in ("description", "program", "defines", "settle", "innet_round"):
        lines.append(f"{key}: {_flow(doc[key])}")
    lines.append("frames:")
    for name, frame in doc["frames"].items():
        lines += [f"  {name}:", "    layers:"]
        lines += [f"      - {_flow(layer)}" for layer in frame["layers"]]
    lines.append("steps:")
    for step in doc["steps"]:
        ((kind, value), (_, note)) = step.items()
        lines += [f"  - {kind}: {_flow(value)}", f"    note: {_flow(note)}"]
    return "\n".join(lines) + "\n"
