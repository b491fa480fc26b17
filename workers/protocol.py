"""What the experiment runner and an island's leader say to each other: one JSON object a line.

The runner writes commands on the leader's stdin; the leader answers with events on its stdout
(its log goes to stderr). Both sides use these classes, so neither builds or reads a message by
hand:

    >>> decode_command(encode(Prepare(round=3)))
    Prepare(round=3)
    >>> decode_event('{"event": "reset", "island": 2}')
    ResetDone(island=2)

    runner -> leader                           leader -> runner
    Reset      fresh model and optimisers      ResetDone
    Prepare    every worker's local phase      Prepared (train_loss, compute_s)
    Go         the group average through the   Done (elapsed_s, done_at, test_loss, accuracy,
               network, from start_at (a Unix   clipped, pacing_lag_s, stats, sums) or Failed
               time), rate-paced by `policy`,
               by the group's `collective`
    Join       join the gloo world, with a      Joined, or Failed
               process group per group given
    Stop       exit
    (any)      a command it cannot take        Refused; Failed when it cannot go on
    (start-up) the island's workers are in     Ready (params: the model's size)

A line that is not a message raises `ProtocolError`.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar, TypeAlias, TypeVar

from innet.jsontypes import JSONObject
from innet.vocabulary import Collective
from workers.exceptions import ProtocolError
from workers.group import AggregatorStats, SendPolicy

# JSON values a peer sent are checked by the message classes themselves (SendPolicy validates).

# --- commands -----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Reset:
    """Start the schedule afresh: a new model and new optimisers on every host."""

    tag: ClassVar[str] = "reset"


@dataclass(frozen=True, slots=True)
class Prepare:
    """Run the island's local phase of round `round` (every worker's inner steps)."""

    round: int
    tag: ClassVar[str] = "prepare"


@dataclass(frozen=True, slots=True)
class Go:
    """Average the proposals of the group through the network, starting at Unix time
    `start_at`; `policy` is None for a group of one (nothing to exchange)."""

    round: int
    number: int  # the round number the switches' entries carry (mod 2**16 on the wire)
    group: int
    members: tuple[int, ...]
    start_at: float
    policy: SendPolicy | None = None
    # how the group exchanges (docs/protocol.md): inna (the edges merge), multicast (the
    # edges replicate, the hosts sum), ring or direct (a plain WAN), or gloo
    collective: Collective = Collective.INNA
    order: tuple[int, ...] = ()  # the ring's order of the members

    def __post_init__(self) -> None:
        collective = Collective.parse(self.collective, among=COLLECTIVES)  # a member, or refused
        object.__setattr__(self, "collective", collective)
        if collective == Collective.RING and sorted(self.order) != sorted(self.members):
            raise ValueError(f"ring order {self.order} is not an order of {self.members}")

    tag: ClassVar[str] = "go"


@dataclass(frozen=True, slots=True)
class Join:
    """Join the `gloo` baseline's world (every leader a rank, its island id) and make one
    process group per group here, in this order, on every leader alike."""

    groups: tuple[tuple[int, ...], ...]
    tag: ClassVar[str] = "join"


@dataclass(frozen=True, slots=True)
class Stop:
    tag: ClassVar[str] = "stop"


Command: TypeAlias = Reset | Prepare | Go | Join | Stop
COLLECTIVES = tuple(c for c in Collective if c != Collective.LOCAL)  # what a Go may name

# --- events -------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Ready:
    """The leader and its island's workers are up; `params` is the model's parameter count."""

    island: int
    params: int
    tag: ClassVar[str] = "ready"


@dataclass(frozen=True, slots=True)
class ResetDone:
    island: int
    tag: ClassVar[str] = "reset"


@dataclass(frozen=True, slots=True)
class Joined:
    island: int
    tag: ClassVar[str] = "joined"


@dataclass(frozen=True, slots=True)
class Prepared:
    island: int
    round: int
    train_loss: float  # the local phase's mean loss over the island's workers
    compute_s: float
    tag: ClassVar[str] = "prepared"


@dataclass(frozen=True, slots=True)
class Done:
    island: int
    round: int
    elapsed_s: float  # from start_at to the group's sum being in
    done_at: float  # Unix time
    test_loss: float
    accuracy: float
    clipped: int = 0  # values clipped to the encoding's bound
    pacing_lag_s: float = 0.0  # the worst a paced send fell behind its schedule
    stats: AggregatorStats = field(default_factory=AggregatorStats)
    exchange_cpu_s: float = 0.0  # the leader thread's CPU time in the exchange
    # the group's int32 sum as this leader got it (workers.quantise.sum_digest); "" where the
    # round has none: a group of one, or gloo's float all_reduce
    sums: str = ""
    tag: ClassVar[str] = "done"


@dataclass(frozen=True, slots=True)
class Failed:
    """The round (or the island) cannot go on; `error` says why."""

    island: int
    error: str
    round: int | None = None
    tag: ClassVar[str] = "failed"


@dataclass(frozen=True, slots=True)
class Refused:
    """A command the leader did not understand; it goes on waiting for the next one."""

    island: int
    error: str
    tag: ClassVar[str] = "error"


Event: TypeAlias = Ready | ResetDone | Joined | Prepared | Done | Failed | Refused

_COMMANDS: dict[str, type[Command]] = {c.tag: c for c in (Reset, Prepare, Go, Join, Stop)}
_EVENTS: dict[str, type[Event]] = {
    e.tag: e for e in (Ready, ResetDone, Joined, Prepared, Done, Failed, Refused)
}


def encode(message: Command | Event) -> str:
    """One line of JSON (no newline): the message's fields and its kind."""
    key = "cmd" if isinstance(message, Reset | Prepare | Go | Join | Stop) else "event"
    data: JSONObject = {key: message.tag}
    for f in dataclasses.fields(message):
        value = getattr(message, f.name)
        if isinstance(value, SendPolicy | AggregatorStats):
            data[f.name] = dataclasses.asdict(value)
        elif isinstance(value, tuple):
            data[f.name] = [list(v) if isinstance(v, tuple) else v for v in value]
        else:
            data[f.name] = value
    return json.dumps(data, allow_nan=False)


def decode_command(line: str) -> Command:
    """The command on one line; ProtocolError if it is not one."""
    data = _object(line)
    return _build(_COMMANDS, data, data.pop("cmd", None), "command")


def decode_event(line: str) -> Event:
    """The event on one line; ProtocolError if it is not one."""
    data = _object(line)
    return _build(_EVENTS, data, data.pop("event", None), "event")


def _object(line: str) -> dict[str, Any]:
    try:
        data = json.loads(line)
    except ValueError as err:
        raise ProtocolError(f"not JSON: {err}: {line[:200]!r}") from None
    if not isinstance(data, dict):
        raise ProtocolError(f"a message is a JSON object, got {line[:200]!r}")
    return data


M = TypeVar("M")


def _build(kinds: Mapping[str, type[M]], data: dict[str, Any], tag: object, what: str) -> M:
    if not isinstance(tag, str) or tag not in kinds:
        raise ProtocolError(f"unknown {what} {tag!r}; known: {', '.join(kinds)}")
    cls = kinds[tag]
    try:
        for key in ("members", "order"):
            if key in data:
                data[key] = tuple(int(m) for m in data[key])
        if "groups" in data:
            data["groups"] = tuple(tuple(int(m) for m in g) for g in data["groups"])
        if isinstance(data.get("policy"), dict):
            data["policy"] = SendPolicy(**data["policy"])
        if isinstance(data.get("stats"), dict):
            data["stats"] = AggregatorStats(**data["stats"])
        return cls(**data)
    except (TypeError, ValueError) as err:
        raise ProtocolError(f"bad {tag!r} {what}: {err}") from None
