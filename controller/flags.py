"""Numbers and quantities on the command line, checked before anything runs.

    >>> whole(1, 253)("2"), number(1, 1e9)("1000"), power_of_two(65536)("64")
    (2, 1000.0, 64)
    >>> number(1, 1e9)("inf")
    Traceback (most recent call last):
    argparse.ArgumentTypeError: must be a finite number in [1, 1e+09], got 'inf'
    >>> power_of_two(65536)("3")
    Traceback (most recent call last):
    argparse.ArgumentTypeError: must be a power of two from 1 to 65536, got 3
    >>> rate_flag("--bandwidth", "10Gbps")
    10000000000.0
    >>> duration(0, 1)("2ms")
    0.002
    >>> duration(0, 1)("2 s")
    Traceback (most recent call last):
    argparse.ArgumentTypeError: must be a duration in [0 s, 1 s], got '2 s'

The first five are argparse types (`type=whole(1, 253)`): NaN, infinities and values out of
range are a usage error of one line naming the flag, the range and the value (exit status 2).
Sizes and rates keep their text on the parsed namespace (the service is given it again), so
`size_flag` and `rate_flag` check them once parsed (CommandLineError, exit status 2).
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable
from typing import TypeVar

from controller.exceptions import CommandLineError
from innet.exceptions import UnitError
from innet.units import parse_duration, parse_rate, parse_size

T = TypeVar("T", int, float)

MAX_PORT = 65535
MAX_SIZE_BYTES = 10**15  # 1 PB: far above any model update or aggregator memory innet plans
MAX_RATE_BPS = 1e15  # 1 Pb/s: far above any access link or WAN link innet plans


def whole(low: int, high: int | None = None, why: str = "") -> Callable[[str], int]:
    """A whole number from `low` to `high` (inclusive; no upper bound when None); `why` the
    bounds are what they are, for the error."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"must be a whole number, got {text!r}") from None
        if value < low or (high is not None and value > high):
            bounds = f"from {low} to {high}" if high is not None else f"at least {low}"
            raise argparse.ArgumentTypeError(f"must be {bounds}{_why(why)}, got {value}")
        return value

    return parse


def number(
    low: float,
    high: float | None = None,
    *,
    above: bool = False,
    below: bool = False,
    why: str = "",
) -> Callable[[str], float]:
    """A finite number in [low, high]; `above` excludes low, `below` excludes high."""

    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"must be a number, got {text!r}") from None
        wrong = (
            not math.isfinite(value)
            or value < low
            or (above and value == low)
            or (high is not None and (value > high or (below and value == high)))
        )
        if wrong:
            bounds = _bounds(low, high, above, below)
            raise argparse.ArgumentTypeError(
                f"must be a finite number {bounds}{_why(why)}, got {text!r}"
            )
        return value

    return parse


def power_of_two(high: int) -> Callable[[str], int]:
    """A power of two from 1 to `high`."""
    whole_number = whole(1, high)

    def parse(text: str) -> int:
        value = whole_number(text)
        if value & (value - 1):
            raise argparse.ArgumentTypeError(
                f"must be a power of two from 1 to {high}, got {value}"
            )
        return value

    return parse


def duration(low: float, high: float, why: str = "") -> Callable[[str], float]:
    """Seconds in a duration with its unit ("2ms", "0 s", "850us"), in [low, high]."""

    def parse(text: str) -> float:
        try:
            value = parse_duration(text, allow_zero=True)
        except UnitError as err:
            raise argparse.ArgumentTypeError(str(err)) from None
        if not (math.isfinite(value) and low <= value <= high):
            bounds = f"in [{low:g} s, {high:g} s]"
            raise argparse.ArgumentTypeError(
                f"must be a duration {bounds}{_why(why)}, got {text!r}"
            )
        return value

    return parse


def port() -> Callable[[str], int]:
    """A TCP port, 1..65535 (0, "any free port", would leave the caller not knowing which)."""
    return whole(1, MAX_PORT)


def size_flag(flag: str, text: str) -> int:
    """Bytes in a size flag's text, at most MAX_SIZE_BYTES; CommandLineError names the flag."""
    return _quantity(flag, text, parse_size, MAX_SIZE_BYTES, "1 PB")


def rate_flag(flag: str, text: str) -> float:
    """Bit/s in a rate flag's text, finite and at most MAX_RATE_BPS; CommandLineError names
    the flag."""
    return _quantity(flag, text, parse_rate, MAX_RATE_BPS, "1 Pb/s")


def _quantity(flag: str, text: str, parse: Callable[[str], T], high: T, largest: str) -> T:
    try:
        value = parse(text)
    except UnitError as err:
        raise CommandLineError(f"{flag}: {err}") from None
    if not value <= high:  # also NaN and infinity, which a very long number gives
        shown = text if len(text) <= 40 else text[:37] + "..."
        raise CommandLineError(
            f"{flag}: {shown!r} is above the largest innet plans for ({largest})"
        )
    return value


def _why(why: str) -> str:
    return f" ({why})" if why else ""


def _bounds(low: float, high: float | None, above: bool = False, below: bool = False) -> str:
    if high is None:
        return f"above {low:g}" if above else f"at least {low:g}"
    left, right = ("(" if above else "["), (")" if below else "]")
    return f"in {left}{low:g}, {high:g}{right}"
