"""Run the C preprocessor over a P4 program and keep track of where each line came from.

`cpp` keeps its `# line "file"` markers (no `-P`), so every line of the output maps back to the
file and line it came from; the markers themselves are blanked so output line numbers stay put.
cpp collapses runs of blanks inside a line, so columns are mapped back by finding the same token
in the original line.

`confined=True` is for programs the switch did not choose (sent over P4Runtime): every
`#include` is checked first by `p4switch.frontend.includes` (only p4switch's include directory,
the program's own directory and the given include directories; regular files only), and source
lines for column mapping come only from the files so checked, never from disk.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from p4switch.exceptions import P4CompileError
from p4switch.frontend.includes import scan_includes
from p4switch.ir import Loc

_MACRO_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
INCLUDE_DIR = Path(__file__).resolve().parent.parent / "include"

_MARKER = re.compile(r'^#\s*(\d+)\s+"((?:[^"\\]|\\.)*)"')
_CPP_ERROR = re.compile(r"^(.*?):(\d+):(\d+): (?:fatal )?error: (.*)$")


@dataclass(frozen=True)
class Preprocessed:
    """The preprocessed text and, for each of its lines, the (file, line) it came from."""

    text: str
    origins: tuple[tuple[str, int], ...]
    _sources: dict[str, list[str]] = field(default_factory=dict, compare=False, repr=False)
    _lines: list[str] = field(default_factory=list, compare=False, repr=False)
    _read_disk: bool = field(default=True, compare=False, repr=False)

    def locate(self, line: int, col: int, token: str | None = None) -> Loc:
        """The user's file:line:col for a 1-based position in the preprocessed text."""
        if not 1 <= line <= len(self.origins):
            path, orig = self.origins[-1] if self.origins else ("<input>", 1)
            return Loc(path, orig, col)
        path, orig = self.origins[line - 1]
        return Loc(path, orig, self._column(line, col, path, orig, token))

    def _column(self, line: int, col: int, path: str, orig: int, token: str | None) -> int:
        if not token:
            return col
        if not self._lines:
            self._lines.extend(self.text.split("\n"))
        out_line = self._lines[line - 1] if 0 < line <= len(self._lines) else ""
        nth = out_line[: col - 1].count(token)
        source = self._source_line(path, orig)
        at = -1
        for _ in range(nth + 1):
            at = source.find(token, at + 1)
            if at < 0:
                return col
        return at + 1

    def _source_line(self, path: str, line: int) -> str:
        lines = self._sources.get(path)
        if lines is None and not self._read_disk:
            lines = []  # a file outside what was checked (e.g. named by #line): never opened
        if lines is None:
            try:
                lines = Path(path).read_text(errors="replace").split("\n")
            except OSError:
                lines = []
            self._sources[path] = lines
        return lines[line - 1] if 0 < line <= len(lines) else ""


def cpp_command(
    path: Path, include_dirs: Sequence[Path] = (), defines: Mapping[str, str] | None = None
) -> list[str]:
    """The preprocessor's argument list: p4switch's own include directory first, then the
    caller's, then `-D NAME=VALUE` for each define (as p4c's -D)."""
    cpp = shutil.which("cpp")
    if cpp is None:
        raise P4CompileError(str(path), 0, 0, "the C preprocessor `cpp` is not installed")
    args = [cpp, "-undef", "-nostdinc", "-x", "c", "-I", str(INCLUDE_DIR)]
    for d in include_dirs:
        args += ["-I", str(d)]
    for name, value in (defines or {}).items():
        if not _MACRO_NAME.fullmatch(name):
            raise P4CompileError(str(path), 0, 0, f"-D {name!r}: not a macro name")
        args.append(f"-D{name}={value}")
    args.append(str(path))
    return args


def preprocess(
    path: Path,
    include_dirs: Sequence[Path] = (),
    defines: Mapping[str, str] | None = None,
    *,
    confined: bool = False,
) -> Preprocessed:
    if not path.is_file():
        raise P4CompileError(str(path), 0, 0, "no such P4 source file")
    checked: dict[str, str] | None = None
    if confined:
        roots = [INCLUDE_DIR, path.parent, *include_dirs]
        checked = scan_includes(path, roots, [INCLUDE_DIR, *include_dirs])
    try:
        run = subprocess.run(
            cpp_command(path, include_dirs, defines), capture_output=True, text=True, timeout=60
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise P4CompileError(str(path), 0, 0, f"the C preprocessor failed: {exc}") from None
    if run.returncode != 0:
        for line in run.stderr.splitlines():
            m = _CPP_ERROR.match(line)
            if m:
                raise P4CompileError(m[1], int(m[2]), int(m[3]), m[4])
        raise P4CompileError(str(path), 0, 0, f"the C preprocessor failed: {run.stderr.strip()}")
    pre = split_markers(run.stdout, str(path))
    if checked is None:
        return pre
    sources = {name: text.split("\n") for name, text in checked.items()}
    return Preprocessed(pre.text, pre.origins, sources, _read_disk=False)


def split_markers(output: str, path: str) -> Preprocessed:
    """Blank cpp's line markers, remembering the origin of every other line."""
    lines = output.split("\n")
    origins: list[tuple[str, int]] = []
    current, number = path, 1
    for i, line in enumerate(lines):
        m = _MARKER.match(line) if line.startswith("#") else None
        if m:
            current = m[2].encode().decode("unicode_escape")
            number = int(m[1])
            lines[i] = ""
            origins.append((current, number))
            continue
        if line.startswith("#"):  # e.g. `#pragma` passed through
            origins.append((current, number))
            number += 1
            continue
        origins.append((current, number))
        number += 1
    return Preprocessed("\n".join(lines), tuple(origins))
