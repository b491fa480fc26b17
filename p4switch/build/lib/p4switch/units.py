"""The rates and durations a shaping spec states (`rate=10Gbps,delay=35ms`): parsed and printed.

Parsing is strict: every quantity needs a unit, units are case-sensitive as listed, and a value
must be positive (a delay or jitter may be zero). A rejected text raises `UnitError`, whose
message quotes the text, says what is wrong and lists the accepted units.

Rates are in *bits* per second whatever the spelling: `Gbps`, `Gb/s`, `Gbit/s` and tc's `gbit`
all mean 10**9 bit/s. tc's own `bps`/`kbps`/`mbps` mean *bytes* per second there; here only the
capitalised `Kbps`, `Mbps`, `Gbps`, `Tbps` (and `bps`) are accepted, as bits, so a lowercase
`mbps` copied from a tc command line is rejected rather than silently misread.
"""

from __future__ import annotations

import math
import re
from decimal import Decimal

from p4switch.exceptions import UnitError

RATE_UNITS: dict[str, float] = {
    **{"bps": 1.0, "Kbps": 1e3, "Mbps": 1e6, "Gbps": 1e9, "Tbps": 1e12},
    **{"b/s": 1.0, "kb/s": 1e3, "Kb/s": 1e3, "Mb/s": 1e6, "Gb/s": 1e9, "Tb/s": 1e12},
    **{"bit/s": 1.0, "kbit/s": 1e3, "Kbit/s": 1e3, "Mbit/s": 1e6, "Gbit/s": 1e9, "Tbit/s": 1e12},
    **{"bit": 1.0, "kbit": 1e3, "Kbit": 1e3, "mbit": 1e6, "Mbit": 1e6, "gbit": 1e9, "Gbit": 1e9},
    **{"tbit": 1e12, "Tbit": 1e12},
}

DURATION_UNITS: dict[str, float] = {
    "s": 1.0,
    "ms": 1e-3,
    "us": 1e-6,
    "µs": 1e-6,  # MICRO SIGN
    "μs": 1e-6,  # GREEK SMALL LETTER MU, which looks the same
    "ns": 1e-9,
}

_QUANTITY = re.compile(r"\s*([+-]?(?:\d+\.?\d*|\.\d+))\s*(\S*)\s*")


def _split(text: str, kind: str, units: dict[str, float]) -> tuple[Decimal, str]:
    """Split `text` into a number and a known unit, or raise `UnitError`."""
    accepted = ", ".join(units)
    if not isinstance(text, str):
        raise UnitError(f"{text!r}: a {kind} must be a string with a unit (accepted: {accepted})")
    match = _QUANTITY.fullmatch(text)
    if match is None:
        raise UnitError(f"{text!r}: not a {kind}; write a number and a unit (accepted: {accepted})")
    number, unit = match.groups()
    if not unit:
        raise UnitError(f"{text!r}: {kind} has no unit (accepted: {accepted})")
    if unit not in units:
        raise UnitError(f"{text!r}: unknown {kind} unit {unit!r} (accepted: {accepted})")
    return Decimal(number), unit


def _positive(text: str, kind: str, value: Decimal, allow_zero: bool = False) -> None:
    if value < 0 or (value == 0 and not allow_zero):
        bound = "must not be negative" if allow_zero else "must be positive"
        raise UnitError(f"{text!r}: a {kind} {bound}")


def parse_rate(text: str) -> float:
    """Bits per second in `text` such as "10Gbps", "10 Gb/s", "10Gbit/s" or tc's "10gbit"."""
    number, unit = _split(text, "rate", RATE_UNITS)
    _positive(text, "rate", number)
    return float(number) * RATE_UNITS[unit]


def parse_duration(text: str, *, allow_zero: bool = False) -> float:
    """Seconds in `text` such as "35ms", "2.5 s", "850us" or "850 µs"."""
    number, unit = _split(text, "duration", DURATION_UNITS)
    _positive(text, "duration", number, allow_zero)
    return float(number) * DURATION_UNITS[unit]


def _three_digits(value: float, prefixes: tuple[str, ...]) -> tuple[float, int]:
    """Mantissa rounded to 3 significant digits and the index of its prefix (step 1000)."""
    index = 0
    mantissa = abs(value)
    while True:
        if mantissa == 0 or not math.isfinite(mantissa):
            return math.copysign(mantissa, value), index
        digits = 2 - math.floor(math.log10(mantissa))
        mantissa = round(mantissa, digits)
        if mantissa < 1000 or index == len(prefixes) - 1:
            return math.copysign(mantissa, value), index
        mantissa /= 1000
        index += 1


def _compact(mantissa: float) -> str:
    """3 significant digits without trailing zeros: 64, 1.5, 800, 12.3."""
    if abs(mantissa) >= 100 and math.isfinite(mantissa):
        return f"{mantissa:.0f}"
    return f"{mantissa:.3g}"


def format_rate(bps: float) -> str:
    """Bits per second as SI with 3 significant digits: "10 Gb/s", "2.5 Mb/s"."""
    units = ("b/s", "kb/s", "Mb/s", "Gb/s", "Tb/s")
    mantissa, index = _three_digits(float(bps), units)
    return f"{_compact(mantissa)} {units[index]}"


def format_duration(s: float) -> str:
    """Seconds with 3 significant digits kept: "35.0 ms", "2.41 s", "850 µs", "12.0 ns"."""
    seconds = float(s)
    if seconds == 0 or not math.isfinite(seconds):
        return f"{seconds:g} s"
    scaled = abs(seconds)
    units = (("s", 1.0), ("ms", 1e-3), ("µs", 1e-6), ("ns", 1e-9))
    for unit, factor in units:
        value = round(scaled / factor, 2 - math.floor(math.log10(scaled / factor)))
        if value >= 1 or unit == "ns":
            break
    decimals = max(0, 2 - math.floor(math.log10(value))) if value > 0 else 0
    return f"{math.copysign(value, seconds):.{decimals}f} {unit}"
