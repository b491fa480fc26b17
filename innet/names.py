"""The names clients give innet: schedules, experiments, schedule families, cities.

A name is 1 to 64 characters: ASCII letters, digits and `-_.:`, with single spaces between
words ("Hong Kong", "cliques-3", "api:ring"). Nothing else (no control character, no newline,
no NUL, no bidirectional override) so a name can be logged, printed and put in a file name
as it is.

>>> name_problem("Hong Kong", "city") is None
True
>>> print(name_problem("a\\nb", "schedule name").split(": use")[0])
schedule name 'a\\nb' is not a valid name
"""

from __future__ import annotations

import re

NAME_MAX_LENGTH = 64
NAME_PATTERN = r"^[A-Za-z0-9_.:-]+( [A-Za-z0-9_.:-]+)*$"
NAME_RULE = (
    f"1 to {NAME_MAX_LENGTH} ASCII letters, digits and -_.: with single spaces between words"
)

_NAME = re.compile(NAME_PATTERN)


def printable(text: str, limit: int = 300) -> str:
    """`text` with every character that is not printable (control, format, surrogate, line
    separator) written as an escape, cut to `limit` characters: safe to log or answer with."""
    out = "".join(c if c.isprintable() else ascii(c)[1:-1] for c in text[:limit])
    return out if len(text) <= limit else out + "..."


def name_problem(name: object, what: str) -> str | None:
    """None if `name` is a good name; else what is wrong with it (the name quoted safely)."""
    if not isinstance(name, str):
        return f"{what} must be a string, got {type(name).__name__}"
    if _NAME.fullmatch(name) is not None and len(name) <= NAME_MAX_LENGTH:
        return None
    shown = printable(name, NAME_MAX_LENGTH)
    return f"{what} '{shown}' is not a valid name: use {NAME_RULE}"
