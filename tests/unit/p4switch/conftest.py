"""The `backend` fixture (tests/unit/backends.py) for the pipeline tests that use it."""

from tests.unit.backends import backend

__all__ = ["backend"]
