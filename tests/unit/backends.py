"""The `backend` fixture: run a test on the python back end and on the native (C) one.

It makes `CompiledProgram.pipeline` build pipelines of the given back end by default, so tests
that build pipelines through `program.pipeline(...)` run on both unchanged. The native one is
skipped, saying why, where it cannot be built (no C compiler).
"""

from __future__ import annotations

import functools

import pytest
from p4switch import native
from p4switch.program import CompiledProgram

BACKENDS = ("python", "native")


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    name: str = request.param
    if name == "native":
        reason = native.available()
        if reason is not None:
            pytest.skip(f"native back end: {reason}")
        by_default = functools.partialmethod(CompiledProgram.pipeline, backend="native")
        monkeypatch.setattr(CompiledProgram, "pipeline", by_default)
    return name
