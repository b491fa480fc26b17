"""Building the native I/O library: cached by source hash, atomic, and clear when it fails."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from p4switch import cbuild
from p4switch.nativeio import build
from p4switch.nativeio.errors import NativeIOBuildError


@pytest.fixture
def sources(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A copy of the C sources the build reads instead of the package's own."""
    here = tmp_path / "src"
    here.mkdir()
    for name in build.SOURCES:
        shutil.copyfile(Path(build.__file__).parent / name, here / name)
    monkeypatch.setattr(build, "_HERE", here)
    return here


def test_a_build_is_cached_by_its_source_and_loads(sources: Path, tmp_path: Path):
    cache = tmp_path / "cache"
    first = build.build(cache)
    assert first.name == f"nativeio-{build.source_hash()}.so"
    stamp = first.stat().st_mtime_ns
    assert build.build(cache) == first and first.stat().st_mtime_ns == stamp  # not rebuilt
    assert hasattr(build.load(cache), "nio_run")
    assert [p.name for p in cache.iterdir() if ".so." in p.name] == []  # no temporary left
    (sources / "loop.c").write_text((sources / "loop.c").read_text() + "\n/* changed */\n")
    assert build.build(cache) != first


def test_a_failed_build_names_the_kept_source_and_the_first_error(sources: Path, tmp_path: Path):
    (sources / "queue.c").write_text("int broken(void) { return missing; }\n")
    cache = tmp_path / "cache"
    with pytest.raises(NativeIOBuildError) as caught:
        build.build(cache)
    message = str(caught.value)
    kept = cache / f"nativeio-{build.source_hash()}"
    assert str(kept) in message
    assert "queue.c:1:" in message and "missing" in message
    assert (kept / "queue.c").exists()
    assert list(cache.glob("*.so*")) == []


def test_no_compiler_is_a_clear_error(sources: Path, tmp_path: Path, monkeypatch):
    monkeypatch.setattr(cbuild, "COMPILER", "no-such-cc")
    with pytest.raises(NativeIOBuildError, match=r"no C compiler \(no-such-cc\) on PATH"):
        build.build(tmp_path / "cache")


def test_an_unwritable_cache_says_what_to_set(sources: Path, tmp_path: Path):
    blocker = tmp_path / "file"
    blocker.write_text("")
    with pytest.raises(NativeIOBuildError, match="P4SWITCH_CACHE"):
        build.build(blocker / "cache")


def test_the_cache_directory_follows_the_environment(monkeypatch):
    assert build.cache_dir({"P4SWITCH_CACHE": "/a", "XDG_CACHE_HOME": "/b"}) == Path("/a")
    assert build.cache_dir({"XDG_CACHE_HOME": "/b"}) == Path("/b/p4switch")
    monkeypatch.setenv("HOME", "/home/someone")
    assert build.cache_dir({}) == Path("/home/someone/.cache/p4switch")


def test_missing_sources_are_a_clear_error(sources: Path, tmp_path: Path):
    (sources / "ring.c").unlink()
    with pytest.raises(NativeIOBuildError, match=r"ring\.c is missing"):
        build.build(tmp_path / "cache")
