"""A small builder for the Python source the compiler generates."""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager


class Source:
    """Lines of Python with indentation, and fresh temporary names."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self._depth = 0
        self._temps = 0

    def line(self, text: str) -> None:
        self.lines.append("    " * self._depth + text)

    @contextmanager
    def block(self, header: str) -> Iterator[None]:
        """`header:` followed by an indented body (`pass` when the body is empty)."""
        self.line(header)
        self._depth += 1
        start = len(self.lines)
        try:
            yield
        finally:
            if len(self.lines) == start:
                self.line("pass")
            self._depth -= 1

    def temp(self, prefix: str = "_t") -> str:
        self._temps += 1
        return f"{prefix}{self._temps}"

    def text(self) -> str:
        return "\n".join(self.lines) + "\n"


_DEF = re.compile(r"^def \w+\(S\b")
_FIELD = re.compile(r"\bS\[(\d+)\]")
_STORE = re.compile(r"^\s*S\[(\d+)\]\s*(?:[-+*/%&|^]|<<|>>|//)?=(?!=)")
_PASSES_S = re.compile(r"[(,]\s*S\s*[,)]")  # S handed to another function, which may write it
_SLICE_STORE = re.compile(r"^\s*S\[\d*:\d*\]\s*=")


def hoist_invariant_fields(text: str, min_uses: int = 3) -> str:
    """Read `S[k]` once into a local in functions that use it often and never write it.

    A generated function (an action, say) that reads the same header or metadata field many times
    (a register index, typically) pays a list lookup each time; when the function neither
    assigns `S[k]` nor hands `S` to anything that might, the value cannot change inside it, so
    one read at the top is the same program.
    """
    lines = text.split("\n")
    out: list[str] = []
    i = 0
    while i < len(lines):
        if not _DEF.match(lines[i]):
            out.append(lines[i])
            i += 1
            continue
        end = i + 1
        while end < len(lines) and (lines[end].startswith(" ") or not lines[end]):
            end += 1
        out.extend(_hoist(lines[i], lines[i + 1 : end], min_uses))
        i = end
    return "\n".join(out)


def _hoist(header: str, body: list[str], min_uses: int) -> list[str]:
    if any(_PASSES_S.search(b) or _SLICE_STORE.match(b) for b in body):
        return [header, *body]
    stored = {int(m.group(1)) for b in body if (m := _STORE.match(b))}
    uses: dict[int, int] = {}
    for b in body:
        for m in _FIELD.finditer(b):
            uses[int(m.group(1))] = uses.get(int(m.group(1)), 0) + 1
    hoisted = sorted(k for k, n in uses.items() if n >= min_uses and k not in stored)
    if not hoisted:
        return [header, *body]

    def local(m: re.Match[str]) -> str:
        k = int(m.group(1))
        return f"_s{k}" if k in hoisted else m.group(0)

    return [
        header,
        *(f"    _s{k} = S[{k}]" for k in hoisted),
        *(_FIELD.sub(local, b) for b in body),
    ]
