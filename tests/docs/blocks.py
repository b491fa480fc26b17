"""README.md's and docs/*.md's (innet's and p4switch's) fenced blocks and their markers, the
commands in them, running them in a copy of the checkout; module docstrings' blocks (the rules:
tests/docs/__init__.py)."""

from __future__ import annotations

import ast
import importlib
import importlib.util
import inspect
import os
import pkgutil
import re
import shlex
import subprocess
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
VENV_BIN = REPO / ".venv" / "bin"
PACKAGES = ("innet", "innet_cli", "controller", "workers", "topo", "p4switch", "p4diff")
# innet's and p4switch's (a project of its own in p4switch/); paths in both are from the checkout
DOCS = (
    REPO / "README.md",
    *sorted((REPO / "docs").glob("*.md")),
    REPO / "p4switch" / "README.md",
    *sorted((REPO / "p4switch" / "docs").glob("*.md")),
)

MODES = ("run", "netns", "parse", "options", "skip")
LANGUAGES = ("sh", "python", "yaml", "text")
MARKER = re.compile(r"<!-- docs-test: (?P<mode>[a-z-]+)(?::\s*(?P<reason>.*?))?\s*-->")
VM_MARKER = "<!-- vm-commands:"
FENCE = re.compile(r"^```(?P<lang>\S*)\s*$")
# a line that starts a shell command (in a block that should be fenced and checked)
COMMAND = re.compile(
    r"^(\$ |sudo |\.venv/bin/|(innet|p4switch|python3?|make|vagrant|simple_switch_grpc|"
    r"apt-get|curl|mn|ip|tc|ethtool)( |$))"
)
# options whose value a command writes rather than reads
OUTPUT_OPTIONS = frozenset(
    {"--out", "--plot", "--p4info-out", "--p4info", "--control", "--pcap", "--workdir", "--run-dir"}
)
EXIT_STATUS = re.compile(r"#.*\bexit status (\d+)")


# --- markdown ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Block:
    """One fenced block of a markdown file and what its marker says to do with it."""

    path: Path
    line: int  # the opening fence, 1-based
    lang: str
    text: str
    mode: str  # one of MODES, or "vm" (the README's provisioning list)
    reason: str

    @property
    def where(self) -> str:
        return f"{_rel(self.path)}:{self.line}"


def _rel(path: Path) -> Path:
    return path.relative_to(REPO) if path.is_relative_to(REPO) else path


def markdown(path: Path) -> tuple[list[Block], list[str]]:
    """The fenced blocks of a markdown file, and every breach of the rules above."""
    lines = path.read_text(encoding="utf-8").splitlines()
    rel = _rel(path)
    blocks: list[Block] = []
    problems: list[str] = []
    i = 0
    while i < len(lines):
        fence = FENCE.match(lines[i])
        if fence is None:
            i += 1
            continue
        start, lang = i, fence["lang"]
        i += 1
        body = []
        while i < len(lines) and lines[i].rstrip() != "```":
            body.append(lines[i])
            i += 1
        if i == len(lines):
            problems.append(f"{rel}:{start + 1}: the block is never closed")
        i += 1
        mode, reason = _marker(lines, start)
        where = f"{rel}:{start + 1}"
        text = "\n".join(body) + "\n"
        if lang not in LANGUAGES:
            problems.append(
                f"{where}: a fenced block must name its language, one of {', '.join(LANGUAGES)}"
                f" (got {lang!r})"
            )
        elif lang in ("yaml", "text") and mode != "run":
            problems.append(f"{where}: a {lang} block needs no docs-test marker")
        if mode not in (*MODES, "vm"):
            problems.append(f"{where}: unknown docs-test mode {mode!r}; known: {', '.join(MODES)}")
        elif mode not in ("run", "vm") and not reason:
            problems.append(f"{where}: the docs-test marker must say why ({mode}: REASON)")
        blocks.append(Block(path, start + 1, lang, text, mode, reason))
    problems += _orphan_markers(lines, rel)
    problems += _unfenced_code(lines, rel)
    return blocks, problems


def _marker(lines: list[str], fence: int) -> tuple[str, str]:
    """The marker on the line right above a fence (blank lines between are allowed)."""
    j = fence - 1
    while j >= 0 and not lines[j].strip():
        j -= 1
    above = lines[j].strip() if j >= 0 else ""
    if above.startswith(VM_MARKER):
        return "vm", above
    found = MARKER.fullmatch(above)
    if found is None:
        return "run", ""
    return found["mode"], (found["reason"] or "").strip()


def _orphan_markers(lines: list[str], rel: Path) -> list[str]:
    problems = []
    for n, line in enumerate(lines):
        if MARKER.fullmatch(line.strip()):
            k = n + 1
            while k < len(lines) and not lines[k].strip():
                k += 1
            if k == len(lines) or FENCE.match(lines[k]) is None:
                problems.append(f"{rel}:{n + 1}: a docs-test marker must stand right above a block")
    return problems


def _unfenced_code(lines: list[str], rel: Path) -> list[str]:
    """Indented code blocks (outside fences) that hold a command or Python code."""
    problems = []
    in_fence = False
    n = 0
    while n < len(lines):
        if FENCE.match(lines[n]) or (in_fence and lines[n].rstrip() == "```"):
            in_fence = not in_fence
            n += 1
            continue
        starts = (
            lines[n].startswith("    ")
            and lines[n].strip()
            and (n == 0 or not lines[n - 1].strip())
        )
        if in_fence or not starts:
            n += 1
            continue
        first, body = n, []
        while n < len(lines) and (lines[n].startswith("    ") or not lines[n].strip()):
            body.append(lines[n])
            n += 1
        text = textwrap.dedent("\n".join(body))
        if any(COMMAND.match(line.strip()) for line in text.splitlines()) or python_code(text):
            problems.append(
                f"{rel}:{first + 1}: code in an indented block: fence it (```sh or ```python) so "
                "that the docs test runs it, or marks why it cannot"
            )
    return problems


def python_code(text: str) -> ast.Module | None:
    """The module if `text` is Python that does something (a call, a with, an import)."""
    try:
        tree = ast.parse(textwrap.dedent(text))
    except SyntaxError:
        return None
    acts = (ast.Call, ast.With, ast.Import, ast.ImportFrom)
    return tree if any(isinstance(node, acts) for node in ast.walk(tree)) else None


def all_blocks() -> tuple[list[Block], list[str]]:
    blocks, problems = [], []
    for path in DOCS:
        found, wrong = markdown(path)
        blocks += found
        problems += wrong
    return blocks, problems


# --- commands ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Command:
    where: str
    text: str  # as written, continuation lines joined
    argv: tuple[str, ...]  # without a leading sudo, without the comment
    status: int  # the exit status the doc expects

    @property
    def program(self) -> str:
        return Path(self.argv[0]).name if self.argv else ""


def commands(block: Block) -> list[Command]:
    """The block's commands, one per logical line (backslash continuations joined)."""
    found = []
    lines = block.text.replace("\\\n", " ").splitlines()
    for n, line in enumerate(lines):
        text = line.strip()
        if not text or text.startswith("#"):
            continue
        argv = shlex.split(text, comments=True)
        if argv[:1] == ["sudo"]:
            argv = argv[1:]
        status = EXIT_STATUS.search(text)
        found.append(
            Command(f"{block.where} (+{n + 1})", text, tuple(argv), int(status[1]) if status else 0)
        )
    return found


def workdir(tmp: Path) -> Path:
    """A directory that looks like the checkout to a command (every top-level entry linked),
    except that results/ and build/, which commands write, are its own."""
    for entry in REPO.iterdir():
        if entry.name not in ("results", "build"):
            (tmp / entry.name).symlink_to(entry)
    return tmp


def command_env(**extra: str) -> dict[str, str]:
    return {**os.environ, "PATH": f"{VENV_BIN}{os.pathsep}{os.environ.get('PATH', '')}", **extra}


def run_command(
    cmd: Command, cwd: Path, env: dict[str, str], timeout: float = 180
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        list(cmd.argv),
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def needs_marking(cmd: Command) -> str | None:
    """Why a command must not run in the unit docs test (it needs root, builds a network or
    takes minutes): its block must be marked. None when it may run."""
    args = cmd.argv[1:]
    if cmd.text.startswith("sudo "):
        return "runs as root"
    if cmd.program in ("make", "vagrant", "simple_switch_grpc"):
        return f"{cmd.program} commands take minutes or need the VM"
    quick = args[:1] in (("plan",), ("topo",)) or (args[:1] == ("run",) and "--check" in args)
    if cmd.program == "innet" and not quick and "--help" not in args:
        return "talks to or builds the emulated WAN"
    if cmd.program == "p4switch" and "--check" not in args and "--help" not in args:
        return "binds network interfaces (root)"
    if args[:2] == ("-m", "topo.mininet_net") and "--help" not in args:
        return "builds a Mininet network (root)"
    return None


# what a python block must not do in the unit docs test (it would need root, or start a network)
ROOT_ONLY = re.compile(r"\b(build_network|running_testbed|Mininet|mininet|subprocess|os\.system)\b")


def python_needs_marking(block: Block) -> str | None:
    found = ROOT_ONLY.search(block.text)
    return f"uses {found[1]} (root, a network or processes)" if found else None


def outcome(cmd: Command, done: subprocess.CompletedProcess[str]) -> str | None:
    """None when the command ended as the doc says, else what went wrong."""
    if done.returncode == cmd.status:
        return None
    return (
        f"{cmd.where}: `{cmd.text}` exited {done.returncode}, the doc expects {cmd.status}\n"
        f"{done.stdout[-2000:]}{done.stderr[-2000:]}"
    )


# --- module docstrings ------------------------------------------------------------------------


def package_modules() -> list[str]:
    """Every module of innet's packages but `__main__` ones (importing those runs them)."""
    names = []
    for package in PACKAGES:
        module = importlib.import_module(package)
        names.append(package)
        for info in pkgutil.walk_packages(module.__path__, prefix=f"{package}."):
            if info.name.rsplit(".", 1)[-1] != "__main__":
                names.append(info.name)
    return sorted(names)


def docstring_blocks(doc: str | None) -> list[str]:
    """The indented blocks of a docstring (dedented), in order."""
    if not doc:
        return []
    lines = inspect.cleandoc(doc).splitlines()
    blocks, n = [], 0
    while n < len(lines):
        if not lines[n].startswith("    "):
            n += 1
            continue
        body = []
        while n < len(lines) and (lines[n].startswith("    ") or not lines[n].strip()):
            body.append(lines[n])
            n += 1
        blocks.append(textwrap.dedent("\n".join(body)).strip("\n") + "\n")
    return blocks


def command_lines(block: str) -> list[str]:
    """The command lines of a docstring block, continuation lines (indented deeper, or after a
    backslash) joined to their command."""
    found: list[str] = []
    depth = -1
    for line in block.replace("\\\n", " ").splitlines():
        indent = len(line) - len(line.lstrip())
        if COMMAND.match(line.strip()):
            found.append(line.strip())
            depth = indent
        elif found and depth >= 0 and indent > depth and line.strip():
            found[-1] += " " + line.strip()
        else:
            depth = -1
    return found


# --- running python blocks ------------------------------------------------------------------------


def run_python(block: Block, cwd: Path, env: dict[str, str], timeout: float = 120) -> str | None:
    """Run a python block as a script in `cwd`; None when it exits 0, else its output."""
    script = cwd / f"doc_example_{block.line}.py"
    script.write_text(block.text, encoding="utf-8")
    done = subprocess.run(
        [sys.executable, str(script)],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    if done.returncode == 0:
        return None
    return f"{block.where}: exited {done.returncode}\n{done.stdout[-2000:]}{done.stderr[-3000:]}"
