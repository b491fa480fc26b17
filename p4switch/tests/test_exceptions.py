"""p4switch's exceptions: one module, one root (P4SwitchError), builtin bases kept, exit statuses by
kind."""

from __future__ import annotations

import inspect

import pytest

from p4switch import exceptions
from p4switch.compiler.support import ControlExit, ParserReject
from p4switch.exceptions import InputError, P4SwitchError

CLASSES = [
    c
    for _, c in inspect.getmembers(exceptions, inspect.isclass)
    if c.__module__ == exceptions.__name__
]

INPUT = {
    "InputError",
    "UnitError",
    "P4CompileError",
    "UsageError",
    "ShapeError",
    "PcapError",
    "P4InfoError",
    "P4InfoMismatchError",
    "UnknownPortError",
}
BUILTIN_BASES = {
    "CompilerBug": RuntimeError,
    "P4InfoMismatchError": ValueError,
    "PacketInError": ValueError,
    "UnknownPortError": LookupError,
    "ShapeError": ValueError,
    "PcapError": ValueError,
    "P4InfoError": ValueError,
    "UnitError": ValueError,
}


def test_every_class_is_a_p4switch_error() -> None:
    assert len(CLASSES) >= 22
    assert all(issubclass(c, P4SwitchError) for c in CLASSES)


@pytest.mark.parametrize("cls", CLASSES, ids=lambda c: c.__name__)
def test_exit_status_follows_the_kind(cls: type[P4SwitchError]) -> None:
    assert issubclass(cls, InputError) == (cls.__name__ in INPUT)
    bug = cls.__name__ == "CompilerBug"  # p4switch's own failure: apart from both
    assert cls.exit_status == (2 if cls.__name__ in INPUT else 3 if bug else 1)


@pytest.mark.parametrize(("name", "base"), sorted(BUILTIN_BASES.items()))
def test_builtin_bases_are_kept(name: str, base: type[Exception]) -> None:
    assert issubclass(getattr(exceptions, name), base)


def test_pipeline_signals_are_not_errors() -> None:
    assert not issubclass(ParserReject, P4SwitchError)
    assert not issubclass(ControlExit, P4SwitchError)


def test_a_compile_error_says_where() -> None:
    assert str(exceptions.P4CompileError("x.p4", 3, 7, "no")) == "x.p4:3:7: error: no"
    assert str(exceptions.P4CompileError.at(None, "no")) == "<program>: error: no"
