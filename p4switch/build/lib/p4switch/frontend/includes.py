"""Confine a program's `#include`s to known directories before the preprocessor opens anything.

A program sent over P4Runtime is untrusted text: left to itself, cpp would open any path it
names (`#include "/etc/shadow"`, a device, a FIFO that never answers) with the switch's rights,
and a compile error would quote the file back. `scan_includes` walks the include graph itself,
resolving each directive the way cpp does (`"name"`: the including file's directory, then the
search directories; `<name>`: the search directories), and refuses:

- absolute names, names with a `..` component, computed includes (`#include MACRO`),
  `#include_next`, `__has_include`, `_Pragma` and `#pragma GCC dependency` (each would have
  cpp look for files the scan does not resolve);
- a file that resolves (symbolic links followed) outside the allowed roots;
- anything that is not a regular file: a FIFO, a device, a socket.

Nothing is opened before it passes `os.stat`; files are then opened non-blocking and checked
again with `fstat`, so even a file swapped for a FIFO cannot block. Errors name the directive
(file:line and the name as written) and why, and never quote the included file. Directives in
`#if 0` blocks and the like are checked too: the scan does not evaluate conditionals.
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Sequence
from pathlib import Path
from typing import NoReturn

from p4switch.exceptions import P4CompileError

MAX_FILES = 256  # files one program may pull in
MAX_FILE_BYTES = 16 << 20  # an included file larger than this is refused

_TOKEN = re.compile(
    r"//[^\n]*|/\*.*?(?:\*/|\Z)|\"(?:[^\"\\\n]|\\.)*\"|'(?:[^'\\\n]|\\.)*'", re.DOTALL
)
# `#`, its digraph `%:` and its trigraph `??=` all start a directive
_DIRECTIVE = re.compile(r"^[ \t\f\v]*(?:#|%:|\?\?=)[ \t\f\v]*([A-Za-z_]\w*)(.*)$")
_INCLUDE_NAME = re.compile(r'^[ \t\f\v]*(?:"([^"\n]*)"|<([^>\n]*)>)[ \t\f\v]*$')
_INCLUDES = frozenset({"include", "import", "embed"})
_PROBES = re.compile(r"\b(?:__has_include\w*|_Pragma)\b")
_DEPENDENCY = re.compile(r"^\s*GCC\s+dependency\b")


def scan_includes(main: Path, roots: Sequence[Path], search: Sequence[Path]) -> dict[str, str]:
    """Check every file `main` includes, transitively; return each file's text by path.

    `roots` are the directories files may come from (symbolic links resolved); `search` the
    preprocessor's `-I` directories, in order. Raises P4CompileError at the first refusal."""
    allowed = [Path(os.path.realpath(r)) for r in roots]
    texts: dict[str, str] = {}
    pending = [Path(main)]
    texts[str(main)] = _read(main, str(main), 0, main.name)
    while pending:
        current = pending.pop()
        for line, name, quoted in _directives(texts[str(current)], str(current)):
            found = _resolve(name, quoted, current.parent, search, str(current), line)
            if found is None or str(found) in texts:
                continue  # not there: cpp reports it if the directive is live
            _check_inside(found, allowed, str(current), line, name)
            if len(texts) >= MAX_FILES:
                _refuse(str(current), line, name, f"more than {MAX_FILES} files are included")
            texts[str(found)] = _read(found, str(current), line, name)
            pending.append(found)
    return texts


def _directives(text: str, path: str) -> list[tuple[int, str, bool]]:
    """(line, name, quoted) of every include directive; refuses what cannot be checked."""
    found: list[tuple[int, str, bool]] = []
    for number, logical in _logical_lines(text):
        m = _DIRECTIVE.match(logical)
        if _PROBES.search(logical):
            what = "__has_include and _Pragma are not accepted in a program sent to the switch"
            raise P4CompileError(path, number, 1, what)
        if m is None:
            continue
        kind, rest = m[1], m[2]
        if kind == "pragma" and _DEPENDENCY.match(rest):
            raise P4CompileError(path, number, 1, "#pragma GCC dependency names a file: refused")
        if kind == "include_next":  # it would search past where the checked file was found
            raise P4CompileError(path, number, 1, "#include_next is not accepted here")
        if kind not in _INCLUDES:
            continue
        arg = _INCLUDE_NAME.match(rest)
        if arg is None:
            what = f'#{kind} needs a literal "name" or <name> (computed includes are refused)'
            raise P4CompileError(path, number, 1, what)
        name = arg[1] if arg[1] is not None else arg[2]
        _check_name(name, path, number)
        found.append((number, name, arg[1] is not None))
    return found


def _logical_lines(text: str) -> list[tuple[int, str]]:
    """The lines cpp sees: continuations spliced, comments blanked (strings kept), each with the
    physical line it starts on. A block comment becomes as many line breaks as it spanned."""
    physical = text.replace("\r\n", "\n").split("\n")
    spliced: list[str] = []
    starts: list[int] = []
    joining = False
    for number, raw in enumerate(physical, start=1):
        body = raw[:-1] if raw.endswith("\\") else raw
        if joining:
            spliced[-1] += body
        else:
            spliced.append(body)
            starts.append(number)
        joining = raw.endswith("\\")

    def blank(m: re.Match[str]) -> str:
        token = m[0]
        if token.startswith("/*"):
            return " " + "\n" * token.count("\n")
        return " " if token.startswith("//") else token

    lines = _TOKEN.sub(blank, "\n".join(spliced)).split("\n")
    return [(starts[i] if i < len(starts) else starts[-1], line) for i, line in enumerate(lines)]


def _check_name(name: str, path: str, line: int) -> None:
    if not name:
        _refuse(path, line, name, "the name is empty")
    if "\0" in name or any(ord(c) < 0x20 for c in name):
        _refuse(path, line, name, "the name holds control characters")
    if name.startswith("/"):
        _refuse(path, line, name, "absolute paths are refused; name a file relative to the program")
    if ".." in Path(name).parts:
        _refuse(path, line, name, "'..' is refused; include only files beside the program")


def _resolve(
    name: str, quoted: bool, here: Path, search: Sequence[Path], path: str, line: int
) -> Path | None:
    """The file cpp would open for this directive, or None when no candidate exists."""
    for directory in [here, *search] if quoted else list(search):
        candidate = directory / name
        try:
            st = os.stat(candidate)
        except (FileNotFoundError, NotADirectoryError):
            continue
        except OSError as err:
            _refuse(path, line, name, f"cannot be examined ({err.strerror})")
        if stat.S_ISDIR(st.st_mode):
            continue  # cpp goes on searching past a directory
        if not stat.S_ISREG(st.st_mode):
            _refuse(path, line, name, f"{_kind(st.st_mode)}, not a regular file")
        return candidate
    return None


def _check_inside(found: Path, allowed: Sequence[Path], path: str, line: int, name: str) -> None:
    real = Path(os.path.realpath(found))
    if not any(real.is_relative_to(root) for root in allowed):
        why = "it resolves outside the directories a program may include from"
        _refuse(path, line, name, why + " (p4switch's include directory and the program's)")


def _read(file: Path, path: str, line: int, name: str) -> str:
    """A regular file's text, opened without blocking and checked again once open."""
    try:
        fd = os.open(file, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY)
    except OSError as err:
        _refuse(path, line, name, f"cannot be opened ({err.strerror})")
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            _refuse(path, line, name, f"{_kind(st.st_mode)}, not a regular file")
        if st.st_size > MAX_FILE_BYTES:
            _refuse(path, line, name, f"larger than {MAX_FILE_BYTES >> 20} MiB")
        with os.fdopen(os.dup(fd), "rb") as f:
            data = f.read(MAX_FILE_BYTES + 1)
    finally:
        os.close(fd)
    return data.decode("utf-8", errors="replace")


def _kind(mode: int) -> str:
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a plain file"


def _refuse(path: str, line: int, name: str, why: str) -> NoReturn:
    shown = name if name.isprintable() else ascii(name)[1:-1]
    raise P4CompileError(path, line, 1, f'#include "{shown}" refused: {why}')
