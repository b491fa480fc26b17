"""The parser's LALR tables are kept in p4switch's cache directory and read back; a damaged
file costs a rebuild, never a wrong parse."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from p4switch import EXAMPLES
from p4switch.frontend import parser
from p4switch.program import compile_file

L2 = EXAMPLES / "l2.p4"


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    monkeypatch.setenv("P4SWITCH_CACHE", str(tmp_path))
    parser._lark.cache_clear()
    yield tmp_path
    parser._lark.cache_clear()  # later tests build (or read) their own


def tables(cache: Path) -> list[Path]:
    return sorted(cache.glob("p4-grammar-*.lark"))


def test_the_tables_are_written_once_and_read_back(cache: Path) -> None:
    expected = compile_file(L2).p4info
    [written] = tables(cache)
    stamp = written.stat().st_mtime_ns
    parser._lark.cache_clear()
    assert compile_file(L2).p4info == expected
    assert written.stat().st_mtime_ns == stamp  # read, not written again


def test_a_damaged_tables_file_is_rebuilt(cache: Path) -> None:
    expected = compile_file(L2).p4info
    [written] = tables(cache)
    written.write_bytes(written.read_bytes()[:1000])
    parser._lark.cache_clear()
    assert compile_file(L2).p4info == expected


def test_no_cache_directory_still_parses(cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    blocker = cache / "a-file"
    blocker.write_text("not a directory")
    monkeypatch.setenv("P4SWITCH_CACHE", str(blocker / "p4switch"))
    parser._lark.cache_clear()
    assert compile_file(L2).p4info.tables
