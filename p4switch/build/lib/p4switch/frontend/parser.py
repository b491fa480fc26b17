"""Parse preprocessed P4 text into the syntax tree of `p4switch.frontend.syntax` (lark, LALR(1)).

Building the LALR tables from the grammar takes over a second of CPU, in every process that
parses (each switch of a testbed parses its program as it starts), so the tables are kept in
p4switch's cache directory (`p4switch.cbuild.cache_dir`), one file per grammar, lark and Python
version, read and written under a lock on a file beside it: two processes starting at once never
read half a file. A damaged file is built and written again.
"""

from __future__ import annotations

import dataclasses
import fcntl
import hashlib
import sys
from collections.abc import Iterator
from functools import lru_cache
from pathlib import Path

import lark
from lark import Lark, Token
from lark.exceptions import (
    UnexpectedCharacters,
    UnexpectedEOF,
    UnexpectedInput,
    UnexpectedToken,
    VisitError,
)
from lark.lark import PostLex

from p4switch.exceptions import P4CompileError
from p4switch.frontend import syntax as s
from p4switch.frontend.annotations import raw_bodies
from p4switch.frontend.astdecls import DeclBuilder
from p4switch.frontend.preprocess import Preprocessed

GRAMMAR = Path(__file__).resolve().parent / "p4.lark"


# packet methods that may be called with an explicit type argument: `p.extract<H>(h)`
GENERIC_METHODS = ("extract", "emit")
# extern functions called with one as a statement: `digest<T>(receiver, {...});`
GENERIC_FUNCTIONS = ("digest",)
_STATEMENT_START = ("SEMICOLON", "LBRACE", "RBRACE", "RPAR", "ELSE")


class _PostLexer(PostLex):
    """Turns names declared by `typedef` into TYPE_NAME, `.lookahead` into LOOKAHEAD,
    `.extract`/`.emit` into GENERIC_METHOD and `digest` starting a statement into
    GENERIC_FUNCTION (so a `<` after them opens type arguments).
    (It sees one token at a time: the contextual lexer lexes the next one for the parser's
    state after this one.)

    It keeps its state in the generator, so one parser serves every program.
    """

    always_accept = ("NAME",)

    def process(self, stream: Iterator[Token]) -> Iterator[Token]:
        typedefs: set[str] = set()
        in_typedef = False
        last_name = ""
        previous = ""
        for tok in stream:
            if tok.type == "NAME":
                if tok.value in typedefs:
                    tok.type = "TYPE_NAME"
                elif tok.value == "lookahead" and previous == "DOT":
                    tok.type = "LOOKAHEAD"
                elif tok.value in GENERIC_METHODS and previous == "DOT":
                    tok.type = "GENERIC_METHOD"
                elif tok.value in GENERIC_FUNCTIONS and previous in _STATEMENT_START:
                    tok.type = "GENERIC_FUNCTION"
            if tok.type in ("TYPEDEF", "TYPE"):
                in_typedef = True
            elif in_typedef and tok.type in ("NAME", "TYPE_NAME"):
                last_name = tok.value
            elif in_typedef and tok.type == "SEMICOLON":
                typedefs.add(last_name)
                in_typedef = False
            previous = tok.type
            yield tok


@lru_cache(maxsize=1)
def _lark() -> Lark:
    grammar = GRAMMAR.read_text()
    cached = _tables_file(grammar)
    if cached is None:
        return _build(grammar, None)
    # lark reads the file, or builds the tables and writes it, under an exclusive lock: no
    # process reads a file another is still writing
    with open(cached.with_suffix(".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        return _build(grammar, cached)


def _build(grammar: str, cache: Path | None) -> Lark:
    """The parser; its tables read from `cache` when it holds them, else built and written."""
    return Lark(
        grammar,
        parser="lalr",
        lexer="contextual",
        postlex=_PostLexer(),
        propagate_positions=True,
        maybe_placeholders=True,
        cache=False if cache is None else str(cache),
    )


def _tables_file(grammar: str) -> Path | None:
    """Where this grammar's tables are kept; None when the cache directory cannot be made."""
    from p4switch.cbuild import cache_dir

    key = f"{grammar}{lark.__version__}{sys.version_info[:2]}".encode()
    directory = cache_dir()
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except OSError:
        return None
    return directory / f"p4-grammar-{hashlib.sha256(key).hexdigest()[:16]}.lark"


def parse(pre: Preprocessed) -> tuple[s.Decl, ...]:
    """Parse the whole preprocessed program; syntax errors point at the user's source."""
    pre = dataclasses.replace(pre, text=raw_bodies(pre.text), _lines=[])
    try:
        tree = _lark().parse(pre.text)
    except UnexpectedInput as exc:
        raise _syntax_error(pre, exc) from None
    try:
        return tuple(DeclBuilder(pre).transform(tree))
    except VisitError as exc:  # lark wraps what a rule's method raises
        if isinstance(exc.orig_exc, P4CompileError):
            raise exc.orig_exc from None
        raise


def _syntax_error(pre: Preprocessed, exc: UnexpectedInput) -> P4CompileError:
    at_end = isinstance(exc, UnexpectedToken) and exc.token.type == "$END"
    if at_end or isinstance(exc, UnexpectedEOF):
        loc = pre.locate(len(pre.origins), 1)
        return P4CompileError.at(loc, "syntax error: unexpected end of input")
    if isinstance(exc, UnexpectedToken):
        tok = exc.token
        loc = pre.locate(tok.line or 1, tok.column or 1, str(tok))
        hidden = ("TYPE_NAME", "LOOKAHEAD", "GENERIC_METHOD", "GENERIC_FUNCTION")
        expected = sorted(_pretty(t) for t in exc.expected if t not in hidden)
        hint = f"; expected {', '.join(expected[:8])}" if expected else ""
        if len(expected) > 8:
            hint += ", ..."
        return P4CompileError.at(loc, f"syntax error: unexpected {str(tok)!r}{hint}")
    if isinstance(exc, UnexpectedCharacters):
        loc = pre.locate(exc.line, exc.column, exc.char)
        return P4CompileError.at(loc, f"syntax error: unexpected character {exc.char!r}")
    return P4CompileError.at(pre.locate(exc.line, exc.column), f"syntax error: {exc}")


def _pretty(terminal: str) -> str:
    try:
        pattern = _lark().get_terminal(terminal).pattern
    except KeyError:
        return terminal.lower()
    if pattern.type == "str":
        return repr(pattern.value)
    return {"NAME": "a name", "INT": "an integer", "STRING": "a string"}.get(terminal, terminal)
