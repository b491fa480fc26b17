"""Meters as BMv2 runs them: two-rate three-color markers (RFC 2698, color-blind).

A meter cell the control plane has not configured marks every packet GREEN. A configured one
has a committed bucket (CIR units per second, CBS units deep) and a peak bucket (PIR, PBS),
both full at first and refilled with the time since the cell last ran; units are bytes or
packets. A packet of `n` units is RED if the peak bucket holds fewer than `n`, else YELLOW if
the committed one does (the peak bucket pays), else GREEN (both pay).
"""

from __future__ import annotations

from dataclasses import dataclass

from p4switch.exceptions import InvalidArgument

GREEN, YELLOW, RED = 0, 1, 2


@dataclass(frozen=True)
class MeterConfig:
    cir: int  # committed rate, units per second
    cburst: int  # committed burst, units
    pir: int  # peak rate
    pburst: int  # peak burst

    def check(self, what: str) -> None:
        if min(self.cir, self.cburst, self.pir, self.pburst) < 0:
            raise InvalidArgument(f"{what}: meter rates and bursts cannot be negative")
        if self.cir > self.pir:
            raise InvalidArgument(f"{what}: the committed rate exceeds the peak rate")


class MeterCell:
    """One configured meter: its configuration and its two buckets."""

    def __init__(self, config: MeterConfig) -> None:
        self.config = config
        self.committed = float(config.cburst)
        self.peak = float(config.pburst)
        self.last_ns: int | None = None

    def execute(self, units: int, now_ns: int) -> int:
        c = self.config
        if self.last_ns is not None and now_ns > self.last_ns:
            seconds = (now_ns - self.last_ns) / 1e9
            self.committed = min(float(c.cburst), self.committed + c.cir * seconds)
            self.peak = min(float(c.pburst), self.peak + c.pir * seconds)
        self.last_ns = now_ns
        if self.peak < units:
            return RED
        self.peak -= units
        if self.committed < units:
            return YELLOW
        self.committed -= units
        return GREEN


@dataclass(frozen=True)
class MeterSpec:
    name: str
    size: int
    unit: str  # "packets" or "bytes"


class MeterState:
    """An indexed meter: a cell per index, None where the control plane set nothing."""

    def __init__(self, spec: MeterSpec) -> None:
        self.spec = spec
        self.cells: list[MeterCell | None] = [None] * spec.size

    def execute(self, index: int, length: int, now_ns: int) -> int:
        """The color of a packet of `length` bytes at `index` (GREEN out of range, as an
        unconfigured cell)."""
        cell = self.cells[index] if 0 <= index < self.spec.size else None
        if cell is None:
            return GREEN
        return cell.execute(length if self.spec.unit == "bytes" else 1, now_ns)

    def set(self, index: int, config: MeterConfig | None) -> None:
        """Configure a cell (None: back to unconfigured, every packet GREEN)."""
        if not 0 <= index < self.spec.size:
            raise InvalidArgument(
                f"{self.spec.name}: index {index} outside 0..{self.spec.size - 1}"
            )
        if config is not None:
            config.check(self.spec.name)
        self.cells[index] = MeterCell(config) if config is not None else None

    def config(self, index: int) -> MeterConfig | None:
        cell = self.cells[index]
        return cell.config if cell is not None else None


def direct_meter_color(cell: MeterCell | None, unit: str, length: int, now_ns: int) -> int:
    """A direct meter's color for a table entry's cell (None: unconfigured, GREEN)."""
    if cell is None:
        return GREEN
    return cell.execute(length if unit == "bytes" else 1, now_ns)
