"""What an aggregation round is to a worker: its group, how to send, what it counted, what failed.

`GroupSpec` names the (job, round, group) the controller installed, the island ids of the members
and the packet format the switches were built with; `SendPolicy` says how a leader paces and
recovers; `AggregatorStats` counts what it did.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

import numpy as np

from innet.packetformat import PacketFormat
from topo.siteplan import MAX_ISLANDS
from workers.exceptions import AggregationError, AggregationTimeout, PolicyError, QuantiseError
from workers.quantise import to_chunks


def describe_ranges(numbers: Iterable[int], limit: int = 8) -> str:
    """'0-15, 18, 20-31' for sorted chunk numbers (at most `limit` ranges, then '...')."""
    ranges: list[tuple[int, int]] = []
    for n in sorted(numbers):
        if ranges and n == ranges[-1][1] + 1:
            ranges[-1] = (ranges[-1][0], n)
        else:
            ranges.append((n, n))
    text = [f"{a}" if a == b else f"{a}-{b}" for a, b in ranges[:limit]]
    if len(ranges) > limit:
        text.append(f"... ({len(ranges) - limit} more ranges)")
    return ", ".join(text) if text else "none"


@dataclass(frozen=True)
class GroupSpec:
    """One group of one round, as installed on the switches: who contributes, and who I am."""

    job: int
    round: int
    group: int
    me: int
    members: tuple[int, ...]  # island ids
    packet_format: PacketFormat  # the switches' (their -D LANES): every packet's values

    def __post_init__(self) -> None:
        if not self.members:
            raise PolicyError("a group needs at least one member")
        if len(set(self.members)) != len(self.members):
            raise PolicyError(f"members {self.members} name an island twice")
        bad = [m for m in self.members if not 0 <= m < MAX_ISLANDS]
        if bad:
            raise PolicyError(f"island ids {bad} outside 0..{MAX_ISLANDS - 1}")
        if self.me not in self.members:
            raise PolicyError(f"island {self.me} is not a member of {self.members}")
        for name, value, bits in (("job", self.job, 16), ("round", self.round, 16)):
            if not 0 <= value < 1 << bits:
                raise PolicyError(f"{name} {value} does not fit in {bits} bits")
        if not 0 <= self.group < 256:
            raise PolicyError(f"group {self.group} does not fit in 8 bits")

    @property
    def key(self) -> tuple[int, int, int]:
        return (self.job, self.round, self.group)

    @property
    def others(self) -> tuple[int, ...]:
        return tuple(m for m in self.members if m != self.me)

    @property
    def bitmap(self) -> int:
        """The contributor bitmap of a complete RESULT (the switch's `expected`)."""
        return sum(1 << m for m in self.members)


@dataclass(frozen=True, kw_only=True)
class SendPolicy:
    """How a leader streams its chunks and recovers loss (times in seconds of the clock given)."""

    window: int  # chunks sent beyond the lowest unanswered one (<= SLOTS: loss-safe, see protocol)
    rate_bps: float | None = None  # pace chunks (186-byte frames) at this rate; None: window only
    start_s: float = 0.0  # the planner's send offset: the first chunk leaves this long after begin
    # None: each chunk goes out once, WAN|LOCAL. A number: the chunk goes out WAN only, and a
    # LOCAL-only copy follows this long after it (negative: before it), so that the own
    # contribution enters the own edge's slot when the first remote one arrives (just in time).
    local_lag_s: float | None = None
    timeout_s: float
    backoff: float = 2.0
    max_timeout_s: float
    nack_after: int = 2  # resends without a result before a NACK
    deadline_s: float  # give up on one allreduce after this long
    linger_s: float | None = None  # after the sum: answer NACKs until this long without one
    # the own edge's slot cells (2 x SLOTS): a RESULT of chunk c frees cell c mod cells, and a
    # contribution held for that cell is replayed at once. None: bounces wait their timers only
    cells: int | None = None

    def __post_init__(self) -> None:
        if self.window < 1:
            raise PolicyError(f"window {self.window}: at least one chunk must be in flight")
        if self.cells is not None and self.cells < 1:
            raise PolicyError(f"cells {self.cells}: an edge has at least one slot cell")
        if self.rate_bps is not None and not self.rate_bps > 0:
            raise PolicyError(f"rate_bps {self.rate_bps} must be positive (or None: unpaced)")
        if not self.start_s >= 0.0:
            raise PolicyError(f"start_s {self.start_s} must be >= 0 (an offset after begin)")
        if self.local_lag_s is not None and self.rate_bps is None:
            raise PolicyError("local_lag_s needs rate_bps: a just-in-time copy follows a schedule")
        if not 0 < self.timeout_s <= self.max_timeout_s:
            raise PolicyError(
                f"need 0 < timeout_s ({self.timeout_s}) <= max_timeout_s ({self.max_timeout_s})"
            )
        if self.backoff < 1.0:
            raise PolicyError(f"backoff {self.backoff} < 1 would shorten timeouts")
        if self.nack_after < 0:
            raise PolicyError(f"nack_after {self.nack_after} must be >= 0")
        if not self.deadline_s > 0:
            raise PolicyError(f"deadline_s {self.deadline_s} must be positive")
        if self.linger_s is not None and self.linger_s < 0:
            raise PolicyError(f"linger_s {self.linger_s} must be >= 0")

    @property
    def quiet_s(self) -> float:
        """How long to keep answering NACKs after the sum: long enough for a peer's NACK."""
        if self.linger_s is not None:
            return self.linger_s
        return self.max_timeout_s * (self.nack_after + 2)


@dataclass
class AggregatorStats:
    """What one Aggregator did (counters; `elapsed_s` is the last allreduce's duration)."""

    sent: int = 0  # contributions sent the first time
    retransmitted: int = 0  # contributions resent (RETRANSMIT)
    nacks_sent: int = 0
    recovers_sent: int = 0  # RECOVER copies of the own contribution, answering NACKs
    heals_sent: int = 0  # contributions replayed to the own edge after a recovery
    recovered_chunks: int = 0  # chunks summed in software from RECOVER copies
    bounced: int = 0  # contributions the own edge's busy slot sent back (BOUNCE), replayed
    overtaken: int = 0  # chunks a later chunk of their cell overtook at the own edge
    duplicates_ignored: int = 0  # RESULTs or RECOVERs for chunks already done
    results: int = 0  # RESULTs that completed a chunk
    foreign: int = 0  # packets of another job, round or group, or not for a host
    malformed: int = 0  # UDP payloads that are not innet packets
    elapsed_s: float = 0.0


def contribution_chunks(
    values: np.ndarray, group: GroupSpec, first: int, unfinished: int | None
) -> np.ndarray:
    """An int32 contribution cut into chunks of the group's lanes numbered from `first`, or why
    it cannot start: not int32, the previous collective (from chunk `unfinished`) still running,
    or beyond the 32-bit chunk numbers. What every exchange's `begin` checks."""
    values, key = np.asarray(values), group.key
    if values.dtype != np.int32:
        raise QuantiseError(f"contributions are int32, got {values.dtype}: quantise first")
    if unfinished is not None:
        raise AggregationError(
            f"the collective of chunks {unfinished}.. in {key} is unfinished; step it to the "
            f"end before beginning another"
        )
    chunks = to_chunks(values, group.packet_format.lanes)
    if first + chunks.shape[0] > 1 << 32:
        raise AggregationError(f"{key} ran out of 32-bit chunk numbers")
    return chunks


def check_deadline(
    group: GroupSpec,
    policy: SendPolicy,
    elapsed_s: float,
    missing: Callable[[], tuple[tuple[int, ...], tuple[int, ...], str]],
) -> None:
    """AggregationTimeout, naming what is missing, once `policy.deadline_s` has passed without
    the sum: what every exchange's `step` checks."""
    if elapsed_s > policy.deadline_s:
        chunks, members, text = missing()
        raise AggregationTimeout(
            f"island {group.me} gave up after {elapsed_s:.3f} s "
            f"(deadline_s {policy.deadline_s}): {text}",
            chunks,
            members,
        )
