"""The native I/O tests need the library built (gcc): they skip, saying why, when it is not."""

from __future__ import annotations

import pytest

from p4switch.nativeio import available


@pytest.fixture(scope="session", autouse=True)
def native_io_built() -> None:
    reason = available()
    if reason is not None:
        pytest.skip(f"native I/O loop unavailable: {reason}")
