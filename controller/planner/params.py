"""The parameters of one plan: update size, aggregator memory, access bandwidth, slot size,
send offsets, pacing and network mode (`CostParams`), and the rate bounds memory sets."""

from __future__ import annotations

import math
from dataclasses import dataclass

from controller.planner.exceptions import PlanError
from innet.packetformat import PacketFormat
from innet.vocabulary import PLANNED_NETWORKS, NetworkMode, Pacing, VocabularyError
from topo.siteplan import SlotPool

DEFAULT_SLOT_BYTES = PacketFormat().slot_bytes  # one chunk of innet's default format: 128 B


@dataclass(frozen=True)
class CostParams:
    update_bytes: int
    memory_bytes: int
    access_bps: float
    slot_bytes: int = DEFAULT_SLOT_BYTES
    align: bool = True  # allow per-island send offsets that align arrivals
    # "rate": members send at the planned rate and a slot is busy for the arrival skew (the model
    # below). "window": each leader keeps at most one bank of slots (half the memory) unanswered,
    # as the worker library does, so R <= (M / 2) / (time from sending a chunk to its result).
    pacing: Pacing = Pacing.RATE
    network: NetworkMode = (
        NetworkMode.INNA
    )  # one of PLANNED_NETWORKS: what the edges do for an exchange

    def __post_init__(self) -> None:
        if self.update_bytes <= 0:
            raise PlanError(f"update size must be positive, got {self.update_bytes} bytes")
        if self.access_bps <= 0:
            raise PlanError(f"bandwidth must be positive, got {self.access_bps} b/s")
        if self.slot_bytes <= 0:
            raise PlanError(f"slot size must be positive, got {self.slot_bytes} bytes")
        if self.pacing not in tuple(Pacing):
            raise PlanError(f"pacing must be 'rate' or 'window', got {self.pacing!r}")
        try:  # members, whether given as members or as their values
            object.__setattr__(self, "pacing", Pacing.parse(self.pacing))
            object.__setattr__(self, "network", NetworkMode.parse(self.network, PLANNED_NETWORKS))
        except VocabularyError as err:
            raise PlanError(str(err)) from None
        if self.memory_bytes < 2 * self.slot_bytes:  # rate pacing merges into one, keeps one
            raise PlanError(
                f"aggregator memory {self.memory_bytes} B is below one slot per bank "
                f"(2 x {self.slot_bytes} B): an aggregator has two banks of slots"
            )

    @classmethod
    def for_pool(cls, pool: SlotPool, update_bytes: int, access_bps: float) -> CostParams:
        """The parameters of an emulated site: the full-scale memory its slot pool stands for,
        and the full-scale size of one emulated slot (its format's slot x scale), so the bound
        R <= (M - slot) / skew keeps the slot being merged as the pool has it (with one slot
        per bank, that slot is half the memory)."""
        return cls(update_bytes, pool.memory_bytes, access_bps, slot_bytes=pool.slot_bytes)

    def window_rate_cap(self, latency: float) -> float:
        """Largest rate (b/s) a window of half the memory sustains over this send-to-result time."""
        if latency <= 0.0:
            return math.inf
        return self.memory_bytes / 2 * 8.0 / latency

    def headroom(self, rate_bps: float, skew: float) -> float:
        """Seconds of arrival misalignment beyond `skew` that the slot pool absorbs at this rate:
        (M - S) * 8 / R - skew, never below 0 (inf at no rate, or an infinite one)."""
        if not 0.0 < rate_bps < math.inf:
            return math.inf
        return max(0.0, (self.memory_bytes - self.slot_bytes) * 8.0 / rate_bps - skew)

    def memory_rate_cap(self, skew: float) -> float:
        """Largest rate (b/s) whose in-flight partial sums fit in memory for this skew."""
        if skew <= 0.0:
            return math.inf
        return (self.memory_bytes - self.slot_bytes) * 8.0 / skew
