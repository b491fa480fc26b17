from __future__ import annotations

import pytest

from topo.loader import default_wan


@pytest.fixture(scope="session")
def nine():
    return default_wan()
