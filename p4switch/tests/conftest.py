"""The `backend` fixture (tests/backends.py) for the pipeline tests that use it."""

from tests.backends import backend

__all__ = ["backend"]
