"""A push of the program the switch was started with is not compiled again (`Started`); any
other push, or the same bytes once an include has changed, is compiled as before."""

from __future__ import annotations

from pathlib import Path

import pytest

from p4switch import EXAMPLES
from p4switch.p4rt import compiling
from p4switch.p4rt.compiling import SourceLoader, Started
from p4switch.program import CompiledProgram, compile_file

L2 = EXAMPLES / "l2.p4"
MAIN = b'#include "body.p4"\n'  # the started program: l2.p4 through an include


@pytest.fixture
def program_dir(tmp_path: Path) -> Path:
    (tmp_path / "main.p4").write_bytes(MAIN)
    (tmp_path / "body.p4").write_text(L2.read_text())
    return tmp_path


@pytest.fixture
def compiles(monkeypatch: pytest.MonkeyPatch) -> list[bytes]:
    """The sources `compile_pushed` was asked to compile (it still compiles them)."""
    seen: list[bytes] = []
    real = compiling.compile_pushed

    def counted(source: bytes, *args: object, **kwargs: object) -> CompiledProgram:
        seen.append(source)
        return real(source, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(compiling, "compile_pushed", counted)
    return seen


def started_loader(program_dir: Path) -> tuple[SourceLoader, CompiledProgram]:
    """A loader as p4switch --p4 main.p4 builds it, and the program it started with."""
    program = compile_file(program_dir / "main.p4")
    started = Started.of(MAIN, program, (program_dir,), {})
    assert started is not None
    return SourceLoader(lambda pipeline: None, (program_dir,), started=started), program


def test_the_started_program_pushed_again_is_not_compiled(
    program_dir: Path, compiles: list[bytes]
) -> None:
    loader, program = started_loader(program_dir)
    first = loader(program.p4info, MAIN)
    second = loader(program.p4info, MAIN)
    assert compiles == []
    assert first.device_config == MAIN
    assert first.state is not second.state  # a fresh state each time, as after any push
    assert "L2Ingress.dmac" in first.state.tables


def test_a_changed_include_makes_the_same_bytes_compile_again(
    program_dir: Path, compiles: list[bytes]
) -> None:
    loader, program = started_loader(program_dir)
    body = program_dir / "body.p4"
    body.write_text(body.read_text().replace("dmac", "dst_mac"))
    loaded = loader(program.p4info, MAIN)
    assert compiles == [MAIN]
    assert "L2Ingress.dst_mac" in loaded.state.tables


def test_other_bytes_are_compiled(program_dir: Path, compiles: list[bytes]) -> None:
    loader, program = started_loader(program_dir)
    other = MAIN + b"// the same program, other bytes\n"
    loader(program.p4info, other)
    assert compiles == [other]


def test_a_program_that_does_not_preprocess_as_a_pushed_one_is_not_kept(tmp_path: Path) -> None:
    """Its include lies outside the directories a pushed program may include from, so a push of
    it is compiled (and refused, naming the include) like any other."""
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "body.p4").write_text(L2.read_text())
    program_dir = tmp_path / "programs"
    program_dir.mkdir()
    source = f'#include "{outside / "body.p4"}"\n'.encode()
    (program_dir / "main.p4").write_bytes(source)
    program = compile_file(program_dir / "main.p4")
    assert Started.of(source, program, (program_dir,), {}) is None
