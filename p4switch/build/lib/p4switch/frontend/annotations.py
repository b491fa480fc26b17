"""Free-form annotation bodies, made parseable before the grammar sees them.

P4_16 lets an annotation's body be any balanced token sequence (`@pragma(a b c)`, `@foo(x =
1)`, structured `@foo[k = v]`). p4switch reads the arguments of a few annotations only (`@name`,
`@id`, `@field_list`, `@controller_header`); every other body is kept as written, for P4Info,
as one RAW_ANNOTATION token: its text between backquotes (which P4 never uses). Line breaks
inside a body move after it, so every line keeps its number.
"""

from __future__ import annotations

import re

# annotations whose arguments p4switch reads: their bodies are parsed as expressions
STRUCTURED = frozenset({"name", "id", "field_list", "controller_header"})

_START = re.compile(r"@\s*([A-Za-z_][A-Za-z0-9_]*)\s*([(\[])")
_CLOSE = {"(": ")", "[": "]"}


def raw_bodies(text: str) -> str:
    """`text` with the body of every annotation outside STRUCTURED as a RAW_ANNOTATION."""
    out: list[str] = []
    i = 0
    n = len(text)
    while i < n:
        c = text[i]
        if c == '"':
            j = _string_end(text, i)
            out.append(text[i:j])
            i = j
            continue
        m = _START.match(text, i) if c == "@" else None
        if m is None or m.group(1) in STRUCTURED:
            out.append(c)
            i += 1
            continue
        end = _balanced_end(text, m.end() - 1)
        if end is None:  # unbalanced: left to the parser, which reports it
            out.append(c)
            i += 1
            continue
        body = text[m.end() : end - 1]
        out.append(f"@{m.group(1)}(`{' '.join(body.split())}`)" + "\n" * body.count("\n"))
        i = end
    return "".join(out)


def _string_end(text: str, i: int) -> int:
    """The index after the string literal starting at `i` (or the end of the text)."""
    j = i + 1
    while j < len(text):
        if text[j] == "\\":
            j += 2
            continue
        if text[j] == '"':
            return j + 1
        j += 1
    return len(text)


def _balanced_end(text: str, i: int) -> int | None:
    """The index after the bracket closing the one at `i`, skipping strings; None if none."""
    stack = [_CLOSE[text[i]]]
    j = i + 1
    while j < len(text):
        c = text[j]
        if c == '"':
            j = _string_end(text, j)
            continue
        if c in _CLOSE:
            stack.append(_CLOSE[c])
        elif c in (")", "]"):
            if c != stack.pop():
                return None
            if not stack:
                return j + 1
        elif c == "`":
            return None
        j += 1
    return None
