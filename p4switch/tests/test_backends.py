"""Choosing the back end and the I/O loop: native where it can run, python with a reason."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from p4switch import backends
from p4switch.backends import BackendChoice, BackendError, build_pipeline, choose, log_choice
from p4switch.exceptions import P4SwitchError


def test_native_is_the_default_where_it_can_run() -> None:
    assert choose(None, lambda: None) == BackendChoice("native", "")


def test_without_native_the_default_is_python_with_the_reason() -> None:
    assert choose(None, lambda: "no C compiler (gcc) on PATH") == BackendChoice(
        "python", "no C compiler (gcc) on PATH"
    )


def test_python_asked_for_never_looks_at_native() -> None:
    def never() -> str | None:
        raise AssertionError("native was probed although python was asked for")

    assert choose("python", never) == BackendChoice("python", "asked for")


def test_native_asked_for_but_unavailable_is_an_error_naming_why() -> None:
    with pytest.raises(BackendError, match="cannot run here: no C compiler"):
        choose("native", lambda: "no C compiler (gcc) on PATH")


def test_an_unknown_back_end_is_refused() -> None:
    with pytest.raises(BackendError, match="unknown back end 'fpga'"):
        choose("fpga", lambda: None)


class Unsupported(P4SwitchError):
    pass


class FakeProgram:
    """Stands in for a CompiledProgram whose native build fails (the choice is under test)."""

    def __init__(self) -> None:
        self.asked: list[str] = []

    def pipeline(self, state: Any, *, backend: str = "python", **kwargs: Any) -> str:
        self.asked.append(backend)
        if backend == "native":
            raise Unsupported("a 128-bit field (prog.p4:3:5) is not supported")
        return "python pipeline"


def test_a_program_native_does_not_cover_runs_on_python_with_the_reason(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(backends, "_native_unavailable", lambda: None)
    program = FakeProgram()
    built = build_pipeline(program, None, None, cpu_port=None, parser_reject="ingress")  # type: ignore[arg-type]
    assert program.asked == ["native", "python"]
    assert built.pipeline == "python pipeline"
    assert built.choice == BackendChoice("python", "a 128-bit field (prog.p4:3:5) is not supported")


def test_a_program_native_does_not_cover_is_an_error_when_native_is_asked_for(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(backends, "_native_unavailable", lambda: None)
    with pytest.raises(BackendError, match="cannot run this program: a 128-bit field"):
        build_pipeline(FakeProgram(), None, "native", cpu_port=None, parser_reject="ingress")  # type: ignore[arg-type]


def test_the_choice_is_logged_in_one_line(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.INFO, logger="p4switch.backends"):
        log_choice("program p.p4", BackendChoice("python", "no C compiler (gcc) on PATH"))
        log_choice("program p.p4", BackendChoice("native", ""))
    assert [r.getMessage() for r in caplog.records] == [
        "program p.p4: python, because no C compiler (gcc) on PATH",
        "program p.p4: native",
    ]
    assert caplog.records[0].levelno == logging.WARNING


def test_a_native_code_generator_failure_runs_the_program_on_python_saying_why(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from p4switch import EXAMPLES, native
    from p4switch.native import pipeline
    from p4switch.program import compile_file

    if native.available() is not None:
        pytest.skip(f"native back end: {native.available()}")

    def broken(program: object) -> None:
        raise KeyError("a test stand-in")

    monkeypatch.setattr(pipeline, "generate_c", broken)
    program = compile_file(EXAMPLES / "l2.p4")
    built = build_pipeline(program, program.new_state(), None, cpu_port=None, parser_reject="drop")
    assert built.choice.name == "python" and built.pipeline.process(1, bytes(64)) == []
    assert built.choice.reason.startswith("internal error in the p4switch compiler: KeyError")
