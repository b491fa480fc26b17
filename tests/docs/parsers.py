"""Commands read by their programs' own argument parsers (nothing is run but `--help` of
programs without one in process), and synopses whose commands and options must exist."""

from __future__ import annotations

import argparse
import contextlib
import functools
import importlib
import importlib.util
import io
import re
import subprocess
import sys
from pathlib import Path

from tests.docs.blocks import OUTPUT_OPTIONS, REPO, Command, command_env

# --- the programs' own argument parsers ---------------------------------------------------------


def _quiet_parse(parser: argparse.ArgumentParser, args: list[str]) -> tuple[object, str]:
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        try:
            return parser.parse_args(args), ""
        except SystemExit as exit_:
            return None, err.getvalue().strip() or f"argparse exited {exit_.code}"


def innet_parser(args: list[str]) -> tuple[argparse.ArgumentParser, list[str]]:
    """The parser `innet ARGS` is read with, and the arguments it reads (as innet_cli.main
    dispatches: `plan sweep`, `plan simulate` and `plan bandwidth` have parsers of their own)."""
    from innet_cli.main import PLAN_COMMANDS, build_parser

    parsers = build_parser()
    if len(args) >= 2 and args[0] == "plan" and args[1] in PLAN_COMMANDS:
        return parsers[args[1]], args[2:]
    return parsers["main"], args


def p4switch_parser() -> argparse.ArgumentParser:
    from p4switch import build_parser

    return build_parser()


def _subcommands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def _input_paths(ns: object, dests: tuple[str, ...]) -> list[Path]:
    found = []
    for dest in dests:
        value = getattr(ns, dest, None)
        for item in value if isinstance(value, list) else [value]:
            if isinstance(item, str | Path):
                found.append(Path(item))
    return found


def _missing(paths: list[Path]) -> list[str]:
    return [
        f"{p} does not exist" for p in paths if not (p if p.is_absolute() else REPO / p).exists()
    ]


def _words_read(args: list[str]) -> list[Path]:
    """Arguments that name files the command reads: paths, not placeholders or outputs."""
    found = []
    for k, word in enumerate(args):
        if word.startswith("-") or (k and args[k - 1] in OUTPUT_OPTIONS):
            continue
        if ("/" in word or re.search(r"\.(ya?ml|p4|py|json|txt)$", word)) and not placeholder(word):
            found.append(Path(word))
    return found


def placeholder(word: str) -> bool:
    """SCENARIO, TOPOLOGY.yaml, <workdir>/s0.sock: words that stand for something."""
    return "<" in word or "$" in word or bool(re.search(r"(^|/)[A-Z][A-Z0-9_]*(\.|$|/)", word))


@functools.cache
def help_text(argv: tuple[str, ...]) -> str:
    done = subprocess.run(
        [*argv, "--help"],
        cwd=REPO,
        env=command_env(),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    return done.stdout + done.stderr if done.returncode == 0 else ""


def _flags_in_help(argv: tuple[str, ...], args: list[str]) -> list[str]:
    flags = [a.split("=", 1)[0] for a in args if a.startswith("-") and a not in ("-", "--")]
    if not flags:
        return []
    text = help_text(argv)
    if not text:
        return [f"`{' '.join(argv)} --help` fails"]
    return [
        f"{' '.join(argv)} has no option {f}"
        for f in flags
        if not re.search(rf"(?<![\w-]){re.escape(f)}(?![\w-])", text)
    ]


def _module_argv(argv: tuple[str, ...]) -> tuple[tuple[str, ...], list[str]] | None:
    """(the program, its arguments) of `python -m MODULE ...` or `python SCRIPT ...`."""
    if len(argv) >= 3 and argv[1] == "-m":
        return (sys.executable, "-m", argv[2]), list(argv[3:])
    if len(argv) >= 2 and not argv[1].startswith("-"):
        return (sys.executable, str(REPO / argv[1])), list(argv[2:])
    return None


def parse_problems(cmd: Command) -> list[str]:
    """Why `cmd` would not start: refused by its program's argument parser, or naming input
    files that do not exist. Nothing is run but `--help` of programs without an in-process
    parser."""
    prog, args = cmd.program, list(cmd.argv[1:])
    where = f"{cmd.where}: `{cmd.text}`"
    if prog == "innet":
        parser, rest = innet_parser(args)
        ns, error = _quiet_parse(parser, rest)
        if ns is None:
            return [f"{where}: {error}"]
        read = _input_paths(ns, ("scenario", "topology", "file", "schedule", "token_file"))
        return [f"{where}: {m}" for m in _missing(read)]
    if prog in ("python", "python3") and args[:2] == ["-m", "p4switch"]:
        prog, args = "p4switch", args[2:]
    if prog == "p4switch":
        ns, error = _quiet_parse(p4switch_parser(), args)
        if ns is None:
            return [f"{where}: {error}"]
        return [f"{where}: {m}" for m in _missing(_input_paths(ns, ("p4", "include")))]
    if prog == "make":
        makefile = (REPO / "Makefile").read_text()
        return [
            f"{where}: the Makefile has no target {t!r}"
            for t in args
            if "=" not in t
            and not t.startswith("-")
            and not re.search(rf"^{re.escape(t)}:", makefile, re.M)
        ]
    if prog in ("python", "python3"):
        split = _module_argv(cmd.argv)
        if split is None:
            return [f"{where}: cannot tell which module or script this runs"]
        program, rest = split
        problems = _program_exists(program)
        if not problems:
            problems = _flags_in_help(program, rest) + _missing(_words_read(rest))
        return [f"{where}: {p}" for p in problems]
    return [f"{where}: the docs test cannot parse {prog!r} commands: mark the block skip"]


def _program_exists(program: tuple[str, ...]) -> list[str]:
    if program[1] == "-m":
        try:
            spec = importlib.util.find_spec(program[2])
        except ModuleNotFoundError:
            spec = None
        return [] if spec is not None else [f"no module {program[2]}"]
    return [] if Path(program[1]).exists() else [f"{program[1]} does not exist"]


# --- synopses ---------------------------------------------------------------------------------


def synopsis_problems(text: str, where: str) -> list[str]:
    """A usage line (`innet net up [TOPOLOGY] [--hosts 1] [--shaping auto|kernel|switch]`):
    every command and option it names must exist, every choice it lists must be accepted."""
    text = re.split(r"\s#\s", f" {text} ", maxsplit=1)[0].strip()
    words = text.replace("[", " ").replace("]", " ").split()
    if words[:1] == ["sudo"]:
        words = words[1:]
    if not words:
        return []
    prog = Path(words[0]).name
    if prog in ("python", "python3") and words[1:3] == ["-m", "p4switch"]:
        prog, words = "p4switch", ["p4switch", *words[3:]]
    if prog == "innet":
        rest = " ".join(words[1:])
        return [p for alt in rest.split(" | ") for p in _innet_synopsis(alt.split(), where)]
    if prog == "p4switch":
        return _option_problems(p4switch_parser(), words[1:], f"{where}: p4switch")
    if prog in ("python", "python3"):
        split = _module_argv(tuple(words))
        if split is None:
            return [f"{where}: cannot tell which module `{text}` runs"]
        problems = _program_exists(split[0])
        return [f"{where}: {p}" for p in problems or _flags_in_help(split[0], split[1])]
    return [f"{where}: the docs test cannot check {prog!r} synopses: mark the block skip"]


def _innet_synopsis(words: list[str], where: str) -> list[str]:
    parser, rest = innet_parser(words)
    name = "innet" if rest is words else f"innet plan {words[1]}"
    while rest:
        subs = _subcommands(parser)
        alternatives = rest[0].split("|")
        if not subs or rest[0].startswith("-") or placeholder(rest[0]) or rest[0] == "...":
            break
        unknown = [a for a in alternatives if a not in subs]
        if unknown:
            return [f"{where}: {name} has no command {unknown[0]!r}; known: {', '.join(subs)}"]
        parser, name, rest = subs[alternatives[0]], f"{name} {alternatives[0]}", rest[1:]
    return _option_problems(parser, rest, f"{where}: {name}")


def _option_problems(parser: argparse.ArgumentParser, words: list[str], who: str) -> list[str]:
    problems = []
    options = parser._option_string_actions
    for k, word in enumerate(words):
        if not word.startswith("-") or word in ("-", "--") or re.fullmatch(r"-\d.*", word):
            continue
        flag = word.split("=", 1)[0]
        if flag not in options:
            problems.append(f"{who} has no option {flag}")
            continue
        choices = options[flag].choices
        value = words[k + 1] if k + 1 < len(words) else ""
        if choices is not None and "|" in value:
            takes = ", ".join(map(str, choices))
            problems += [
                f"{who} {flag} does not take {v!r}; it takes {takes}"
                for v in value.split("|")
                if not _takes(options[flag], v)
            ]
    return problems


def _takes(action: argparse.Action, text: str) -> bool:
    """Whether the option accepts `text` as argparse reads it: its type first (a word made a
    number, a member), then its choices."""
    convert = action.type if callable(action.type) else str
    try:
        value = convert(text)
    except (TypeError, ValueError, argparse.ArgumentTypeError):
        return False
    return action.choices is None or value in action.choices


# --- commands and options in prose ------------------------------------------------------------

SPAN = re.compile(r"`([^`\n]+)`")
COMMAND_SPAN = re.compile(r"(?:sudo )?(?:\.venv/bin/)?(?:innet|p4switch|python -m|python) .*")
OPTION_SPAN = re.compile(r"(--?[A-Za-z][\w-]*)(?:[ =].*)?")


def _all_options(parser: argparse.ArgumentParser) -> set[str]:
    found = set(parser._option_string_actions)
    for sub in _subcommands(parser).values():
        found |= _all_options(sub)
    return found


@functools.cache
def known_options() -> frozenset[str]:
    """Every option of innet's commands and of p4switch."""
    from innet_cli import build_parser

    found = set(_all_options(p4switch_parser()))
    for parser in build_parser().values():
        found |= _all_options(parser)
    return frozenset(found)


def _prose(text: str) -> str:
    """Markdown without its fenced blocks."""
    return re.sub(r"^```.*?^```[ \t]*$", "", text, flags=re.M | re.S)


def inline_problems(text: str, where: str, options: bool = True) -> list[str]:
    """Commands in `code spans` (`innet plan sweep --memory LOW..HIGH`) checked as synopses; with
    `options`, an option on its own (`--scale`) must be one of innet's commands' or p4switch's."""
    problems = []
    spans = set(SPAN.findall(_prose(text)))
    for span in sorted(s for s in spans if COMMAND_SPAN.fullmatch(s)):
        problems += synopsis_problems(span, f"{where}: `{span}`")
    flags = {m[1] for s in spans if (m := OPTION_SPAN.fullmatch(s))}
    if options:
        problems += [
            f"{where}: no innet command and not p4switch has the option {flag}"
            for flag in sorted(flags - known_options())
        ]
    return problems
