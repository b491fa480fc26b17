"""What the service accepts: the range of every planner parameter, the sizes of schedules and
request bodies. Shared by the API's request models and the commands that check the same
values before they send them.

Numbers are finite and in range, and a boolean is not a number. A size is a whole number of
bytes or a text with a unit ("64MB"); a rate is bits per second or a text ("10Gbps").

>>> byte_count("64MB", "memory", MAX_MEMORY_BYTES)
64000000
>>> bit_rate(float("nan"), "bandwidth")
Traceback (most recent call last):
controller.service.exceptions.LimitError: bandwidth must be finite, got nan
"""

from __future__ import annotations

import math
import re

from controller.planner.params import DEFAULT_SLOT_BYTES
from controller.service.exceptions import LimitError
from innet.exceptions import UnitError
from innet.names import printable
from innet.units import RATE_UNITS, SIZE_UNITS, format_rate, format_size, parse_rate, parse_size
from topo.siteplan import MAX_ISLANDS

MAX_BODY_BYTES = 1 << 20  # a request body, checked before it is parsed (413 beyond)
MAX_ROUNDS = 1024  # rounds in one schedule
MAX_GROUPS = MAX_ISLANDS  # groups in one round: every island alone at most
MAX_GROUP_CITIES = MAX_ISLANDS  # cities in one group
MAX_FAMILIES = 64  # schedule families in one plan request
MIN_MEMORY_BYTES = 2 * DEFAULT_SLOT_BYTES  # memory per switch: a slot merging, one filling
MAX_MEMORY_BYTES = 10**12  # ... to 1 TB
MAX_UPDATE_BYTES = 10**15  # a model update: 1 PB
MIN_BANDWIDTH_BPS = 1e3  # an island's access link: 1 Kb/s ...
MAX_BANDWIDTH_BPS = 1e13  # ... to 10 Tb/s
MAX_SEED = 2**32 - 1  # what numpy and torch take
QUANTITY_TEXT_LENGTH = 32  # "64MB", "10 Gbps": a number and a unit

_NUMBER = r"(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)"
SIZE_TEXT_PATTERN = rf"^{_NUMBER} ?(?:{'|'.join(SIZE_UNITS)})$"
RATE_TEXT_PATTERN = rf"^{_NUMBER} ?(?:{'|'.join(re.escape(u) for u in RATE_UNITS)})$"


def _number(value: object, what: str) -> float | int:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise LimitError(f"{what} must be a number, got {type(value).__name__}")
    if isinstance(value, float) and not math.isfinite(value):
        raise LimitError(f"{what} must be finite, got {value}")
    return value


def _text(value: str, what: str, pattern: str, example: str) -> str:
    if len(value) > QUANTITY_TEXT_LENGTH:
        raise LimitError(f"{what} text is {len(value)} characters, at most {QUANTITY_TEXT_LENGTH}")
    if re.fullmatch(pattern, value) is None:
        shown = printable(value)
        raise LimitError(f"{what} '{shown}' is not a number and a unit such as {example!r}")
    return value


def _shown(count: int) -> str:
    return str(count) if count < 10**20 else f"about 2^{count.bit_length()}"


def finite(value: object, what: str, low: float, high: float) -> float:
    """`value` as a float if it is a finite number in [low, high]."""
    number = _number(value, what)
    if not low <= number <= high:
        raise LimitError(f"{what} must be from {low:g} to {high:g}, got {number:g}")
    return float(number)


def byte_count(value: object, what: str, high: int, low: int = 1) -> int:
    """Bytes from a whole number or a size text ("64MB"), from `low` to `high`."""
    if isinstance(value, str):
        try:
            count = parse_size(_text(value, what, SIZE_TEXT_PATTERN, "64MB"))
        except UnitError as err:
            raise LimitError(f"{what}: {err}") from None
    else:
        number = _number(value, what)
        if not isinstance(number, int):
            raise LimitError(f"{what} must be a whole number of bytes, got {number:g}")
        count = number
    if not low <= count <= high:
        span = f"{format_size(low)} to {format_size(high)}"
        raise LimitError(f"{what} must be from {span}, got {_shown(count)} B")
    return count


def bit_rate(value: object, what: str) -> float:
    """Bits per second from a number or a rate text ("10Gbps"), within the bandwidth range."""
    if isinstance(value, str):
        try:
            rate = parse_rate(_text(value, what, RATE_TEXT_PATTERN, "10Gbps"))
        except UnitError as err:
            raise LimitError(f"{what}: {err}") from None
    else:
        rate = float(_number(value, what))
    if not MIN_BANDWIDTH_BPS <= rate <= MAX_BANDWIDTH_BPS:
        raise LimitError(
            f"{what} must be from {format_rate(MIN_BANDWIDTH_BPS)} to "
            f"{format_rate(MAX_BANDWIDTH_BPS)}, got {rate:.3g} b/s"
        )
    return rate


def epsilon(value: object, what: str = "epsilon") -> float:
    """The planner's consensus error: a finite number, 0 or more and below 1."""
    number = float(_number(value, what))
    if not 0.0 <= number < 1.0:
        raise LimitError(f"{what} must be at least 0 and below 1, got {number:g}")
    return number
