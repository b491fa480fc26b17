"""The `backend` fixture: run a test on the python back end and on the native (C) one.

It makes the harness's Triangles (tests/unit/dataplane/harness.py) run on the given back end, so
tests that build them run on both unchanged; a test that makes its own `InProcessSwitch` passes
`backend` to it. The native one is skipped, saying why, where it cannot run (no C compiler).
"""

from __future__ import annotations

import functools

import pytest
from p4switch import EXAMPLES, InProcessSwitch, P4SwitchError, compile_file

from tests.unit.dataplane.harness import Pipelines

BACKENDS = ("python", "native")


@functools.cache
def native_unavailable() -> str | None:
    """Why the native back end cannot run a program here, or None if it can."""
    try:
        InProcessSwitch(compile_file(EXAMPLES / "l2.p4"), "native")
    except P4SwitchError as err:
        return str(err)
    return None


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    name: str = request.param
    if name == "native":
        reason = native_unavailable()
        if reason is not None:
            pytest.skip(f"native back end: {reason}")
    monkeypatch.setattr(Pipelines, "backend", name)
    return name
