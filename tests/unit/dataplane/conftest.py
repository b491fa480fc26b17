"""Every test here runs on both back ends (see tests/unit/backends.py)."""

import pytest

from tests.unit.backends import backend

__all__ = ["backend", "both_backends"]


@pytest.fixture(autouse=True)
def both_backends(backend: str) -> str:
    return backend
