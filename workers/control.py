"""The channel between a training script's ranks and `innet run`: one collective at a time.

Under `innet run` with a `training: {script: ...}` scenario, every rank's innet backend
(workers/distributed.py) connects to the runner's Unix socket, named by `INNET_CONTROL`, and
asks before each exact sum: `Want` (its rank, its own count of asks, the operation, the group's
global ranks, the int32 values). Once every member of the group has asked, the runner installs
the group's round entries on the switches (controller/runner/script.py) and answers each member
with a `Grant`: the round number and group id its packets carry, the collective the network
mode plays (`inna`, `multicast`, `ring`, `direct`), the planner's send policy and a common
start time. The member sums through its edge or its peers, and says `Finished` with its time.
Over gloo (the baseline: torch's own collectives), a rank only says what it `Observed`.
A `Denied` answer ends the operation with the runner's reason (a member of the group is gone,
the run is stopped). One JSON object a line, each way:

    >>> want = Want(rank=1, seq=3, op="all_reduce", members=(0, 1, 2), values=4096)
    >>> decode(encode(want)) == want
    True
    >>> encode(Denied(seq=3, error="rank 2 exited with status 1"))
    '{"kind": "denied", "seq": 3, "error": "rank 2 exited with status 1"}'
"""

from __future__ import annotations

import dataclasses
import json
import select
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeAlias

from workers.exceptions import AggregationError, ProtocolError
from workers.group import SendPolicy

CONTROL_VARIABLE = "INNET_CONTROL"  # the runner's socket, in a rank's environment
POLL_S = 0.02  # how often a rank waiting for its grant serves its last exchange's NACKs


@dataclass(frozen=True)
class Hello:
    """A rank's first line: who it is."""

    rank: int


@dataclass(frozen=True)
class Want:
    """A rank asks for one exact sum over `members` (global ranks) of `values` int32 values;
    `seq` counts this rank's asks from 1."""

    rank: int
    seq: int
    op: str  # what the script called: all_reduce, broadcast, ... (an all_reduce's vote apart)
    members: tuple[int, ...]
    values: int


@dataclass(frozen=True)
class Grant:
    """The runner's answer to a `Want`: how the group sums, from `start_at` (Unix time)."""

    seq: int
    number: int  # the round number the group's entries were installed as
    group: int  # the group's id in that round
    collective: str
    policy: SendPolicy
    order: tuple[int, ...]
    start_at: float


@dataclass(frozen=True)
class Finished:
    """A rank's sum is in, `elapsed_s` after the common start."""

    rank: int
    seq: int
    elapsed_s: float
    done_at: float
    retransmitted: int
    lag_s: float = 0.0  # how far its pacing fell behind its schedule (a busy CPU)


@dataclass(frozen=True)
class Observed:
    """A collective a rank ran over torch's own gloo (the gloo baseline), as this rank saw it:
    from its call (`began`) to its result (`ended`), Unix times. Nothing is granted."""

    rank: int
    op: str
    members: tuple[int, ...]
    values: int  # the input's bytes in int32 words, as innet's sums count them
    began: float
    ended: float


@dataclass(frozen=True)
class Denied:
    """The runner will not grant the `Want` with this `seq`, and why."""

    seq: int
    error: str


Message: TypeAlias = Hello | Want | Grant | Finished | Observed | Denied
_KINDS: dict[str, type[Message]] = {
    "hello": Hello,
    "want": Want,
    "grant": Grant,
    "finished": Finished,
    "observed": Observed,
    "denied": Denied,
}
_NAMES = {kind: name for name, kind in _KINDS.items()}


def encode(message: Message) -> str:
    return json.dumps({"kind": _NAMES[type(message)], **dataclasses.asdict(message)})


def decode(line: str) -> Message:
    """The message on one line; ProtocolError for anything else."""
    try:
        data = json.loads(line)
        kind = _KINDS[data.pop("kind")]
        if kind is Grant:
            data["policy"] = SendPolicy(**data["policy"])
            data["order"] = tuple(data["order"])
        if kind is Want or kind is Observed:
            data["members"] = tuple(data["members"])
        return kind(**data)
    except (ValueError, KeyError, TypeError, AttributeError) as err:
        raise ProtocolError(f"not a control message: {line[:200]!r} ({err})") from None


class ControlError(AggregationError):
    """The runner denied a collective, or its channel is gone."""


class ControlClient:
    """A rank's end of the channel (one thread uses it: the backend's engine)."""

    def __init__(self, path: str, rank: int) -> None:
        self.rank = rank
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            self.sock.connect(path)
        except OSError as err:
            self.sock.close()
            raise ControlError(
                f"{CONTROL_VARIABLE}={path}: cannot reach the runner: {err}"
            ) from None
        self._buffer = b""
        self._lock = threading.Lock()  # gloo's observations are sent from its threads
        self.send(Hello(rank))

    def send(self, message: Message) -> None:
        try:
            with self._lock:
                self.sock.sendall((encode(message) + "\n").encode())
        except OSError as err:
            raise ControlError(f"the runner's channel is gone: {err}") from None

    def ask(self, want: Want, timeout_s: float, between: Callable[[], None]) -> Grant:
        """The runner's grant for `want`; `between` is called while waiting (about every
        POLL_S). ControlError when denied, when the runner is gone or after `timeout_s`."""
        self.send(want)
        deadline = time.monotonic() + timeout_s
        while True:
            line = self._line(POLL_S)
            if line is None:
                if time.monotonic() > deadline:
                    raise ControlError(
                        f"no grant from the runner within {timeout_s:.0f} s (the group's "
                        "timeout): a member never asked"
                    )
                between()
                continue
            answer = decode(line)
            if isinstance(answer, Denied) and answer.seq == want.seq:
                raise ControlError(answer.error)
            if isinstance(answer, Grant) and answer.seq == want.seq:
                return answer
            raise ProtocolError(f"the runner answered ask {want.seq} with {line[:200]!r}")

    def _line(self, timeout: float) -> str | None:
        while b"\n" not in self._buffer:
            ready, _, _ = select.select([self.sock], [], [], timeout)
            if not ready:
                return None
            data = self.sock.recv(65536)
            if not data:
                raise ControlError("the runner closed the channel (the run stopped)")
            self._buffer += data
        line, self._buffer = self._buffer.split(b"\n", 1)
        return line.decode()

    def close(self) -> None:
        self.sock.close()


def read_lines(buffer: bytes, data: bytes) -> tuple[list[str], bytes]:
    """Whole lines of `buffer + data`, and what is left of an unfinished one."""
    *lines, rest = (buffer + data).split(b"\n")
    return [line.decode(errors="replace") for line in lines if line.strip()], rest
