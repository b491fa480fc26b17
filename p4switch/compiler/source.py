"""A small builder for the Python source the compiler generates."""

from __future__ import annotations

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
