"""The one error the front-end raises: what is wrong, and where in the user's P4 source."""

from __future__ import annotations

from p4switch.ir import Loc


class P4CompileError(Exception):
    """A program p4switch refuses; `str()` reads `file:line:col: error: what`."""

    def __init__(self, path: str, line: int, col: int, what: str) -> None:
        self.path = path
        self.line = line
        self.col = col
        self.what = what
        where = f"{path}:{line}:{col}" if line > 0 else path  # line 0: the file as a whole
        super().__init__(f"{where}: error: {what}")

    @classmethod
    def at(cls, loc: Loc | None, what: str) -> P4CompileError:
        if loc is None:
            return cls("<program>", 0, 0, what)
        return cls(loc.path, loc.line, loc.col, what)
