"""What a run records: one `RoundRecord` per round played, and the single-process `Baseline`.

A round record is written as one JSON object (a line of rounds.jsonl) and read back into the
same record; its keys are its fields. Non-finite numbers (a diverged loss) are written as null.

    >>> rec = RoundRecord.failed(25_600_000, 1, "cliques-3", 4, (("Tokyo",),), 0.9, 12.5, "dead")
    >>> RoundRecord.from_json(rec.to_json()) == rec
    True
    >>> rec.status
    'failed: dead'
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from innet.jsontypes import JSONObject, JSONValue
from innet.vocabulary import NetworkMode

Groups = tuple[tuple[str, ...], ...]
# fields records written before the network modes do not have (they were all inna)
_LATER = (
    "network",
    "sent_bytes",
    "received_bytes",
    "predicted_wan_bytes",
    "predicted_sent_bytes",
    "predicted_received_bytes",
    "flags",
    "lag_ms",
    "leader_cpu_ms",
    "compute_s",
    "local_s",
    "sums",
)


@dataclass(frozen=True, slots=True)
class RoundRecord:
    """One round of one schedule at one memory point; measured figures are None when the
    round did not finish."""

    memory: int  # full-scale aggregator memory per site, bytes (as the scenario gives it)
    slots: int  # slots per bank on the switches
    schedule: str  # family name, e.g. "cliques-3"
    round: int  # 0-based index within this schedule's run
    groups: Groups  # each group a tuple of city names
    started: float | None  # unix time of the synchronised start
    time_s: float | None  # measured: synchronised start to the last leader done
    predicted_s: float  # the planner's round time
    wall_s: float  # seconds since this schedule's run began, at the end of the round
    wan_bytes: Mapping[str, int] = field(default_factory=dict)  # "A->B": bytes on that link
    drops: Mapping[str, int] = field(default_factory=dict)  # switch drop counter: count, summed
    retransmissions: int | None = None
    nacks: int | None = None
    slot_conflicts: int | None = None
    slots_needed: int | None = None  # the planner's memory need, in slots
    train_loss: float | None = None
    test_loss: float | None = None
    accuracy: float | None = None  # fraction of test samples classified right, 0..1
    cpu_lag_ms: float | None = None  # worst switch or leader processing lag seen in the round
    cpu_bound: bool | None = None  # the CPU, not the network, limited the round
    status: str = "ok"  # "ok" or "failed: <reason>"
    network: str = NetworkMode.INNA  # the scenario's network: plain, multicast, inna or gloo
    sent_bytes: Mapping[str, int] = field(default_factory=dict)  # city: bytes its leader sent
    received_bytes: Mapping[str, int] = field(default_factory=dict)  # city: ... was delivered
    predicted_wan_bytes: float | None = None  # the planner's, on the wire at emulation scale
    predicted_sent_bytes: float | None = None  # ... per leader (the busiest group's)
    predicted_received_bytes: float | None = None
    # why the round does not measure the network: flag -> reason (controller/runner/flags.py)
    flags: Mapping[str, str] = field(default_factory=dict)
    # where that lag was seen, ms: "switches" (the worst shaped port) and each city's leader
    lag_ms: Mapping[str, float] = field(default_factory=dict)
    # each city's leader: its thread's CPU time in the exchange, ms (the machine check's load)
    leader_cpu_ms: Mapping[str, float] = field(default_factory=dict)
    compute_s: float | None = None  # the emulated system's compute of the round (full scale)
    local_s: float | None = None  # this machine's time for the slowest island's local steps
    # each exchanging city: the digest of the int32 sum its leader got (workers.quantise
    # sum_digest), the same for every member of a group; none for gloo and groups of one
    sums: Mapping[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not (self.status == "ok" or self.status.startswith("failed: ")):
            raise ValueError(
                f"round status must be 'ok' or 'failed: <reason>', got {self.status!r}"
            )

    @property
    def series(self) -> str:
        """The (network, schedule) this round belongs to, as plots and tables name it."""
        return f"{self.network} {self.schedule}"

    @property
    def ok(self) -> bool:
        """The round finished (flagged or not)."""
        return self.status == "ok" and self.time_s is not None

    @property
    def flagged(self) -> Mapping[str, str]:
        """The round's flags; a record written before flags existed gives `cpu_bound` from its
        own field."""
        if self.cpu_bound and "cpu_bound" not in self.flags:
            lag = "" if self.cpu_lag_ms is None else f" ({self.cpu_lag_ms:.1f} ms lag)"
            return {**self.flags, "cpu_bound": f"a switch or leader fell behind{lag}"}
        return self.flags

    @property
    def measures_network(self) -> bool:
        """The round finished and carries no flag: its time is the network's."""
        return self.ok and not self.flagged

    @classmethod
    def failed(
        cls,
        memory: int,
        slots: int,
        schedule: str,
        number: int,
        groups: Groups,
        predicted_s: float,
        wall_s: float,
        reason: str,
    ) -> RoundRecord:
        """A round that did not finish: what was planned, and why it failed (on one line)."""
        return cls(
            memory,
            slots,
            schedule,
            number,
            groups,
            None,
            None,
            predicted_s,
            wall_s,
            status=f"failed: {' '.join(reason.split())}",
        )

    def to_json(self) -> JSONObject:
        out: JSONObject = {}
        for f in dataclasses.fields(self):
            out[f.name] = _plain(getattr(self, f.name))
        return out

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> RoundRecord:
        """The record written as `data`; ValueError naming what is missing or malformed."""
        names = [f.name for f in dataclasses.fields(cls)]
        missing = [n for n in names if n not in data and n not in _LATER]
        if missing:
            raise ValueError(f"round record without {', '.join(missing)}")
        unknown = sorted(set(data) - set(names))
        if unknown:
            raise ValueError(f"round record with unknown keys {', '.join(unknown)}")
        values = dict(data)
        values["groups"] = tuple(tuple(str(c) for c in g) for g in data["groups"])
        values["wan_bytes"] = {str(k): int(v) for k, v in (data["wan_bytes"] or {}).items()}
        values["drops"] = {str(k): int(v) for k, v in (data["drops"] or {}).items()}
        values["flags"] = {str(k): str(v) for k, v in (data.get("flags") or {}).items()}
        for key in ("sent_bytes", "received_bytes"):
            values[key] = {str(k): int(v) for k, v in (data.get(key) or {}).items()}
        values["sums"] = {str(k): str(v) for k, v in (data.get("sums") or {}).items()}
        for key in ("lag_ms", "leader_cpu_ms"):
            values[key] = {str(k): float(v) for k, v in (data.get(key) or {}).items()}
        try:
            return cls(**values)
        except TypeError as err:
            raise ValueError(f"not a round record: {err}") from None


@dataclass(frozen=True, slots=True)
class Baseline:
    """The same training in one process, every island averaged exactly every round."""

    train_loss: float
    test_loss: float
    accuracy: float
    rounds: tuple[Mapping[str, float | int], ...]  # one row per round (workers.train)

    def to_json(self) -> JSONObject:
        return {
            "train_loss": _plain(self.train_loss),
            "test_loss": _plain(self.test_loss),
            "accuracy": _plain(self.accuracy),
            "rounds": [_plain(dict(r)) for r in self.rounds],
        }


def _plain(value: Any) -> JSONValue:
    """JSON-ready: tuples as lists, numpy scalars as Python numbers, non-finite as None."""
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    if hasattr(value, "item") and not isinstance(value, str | bytes):
        value = value.item()  # a numpy scalar
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if value is None or isinstance(value, bool | int | float | str):
        return value
    raise TypeError(f"{type(value).__name__} is not JSON")
