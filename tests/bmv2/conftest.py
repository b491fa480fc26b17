"""Tests of the same P4 program, controller and experiment on BMv2 (simple_switch_grpc) and p4c.

They run where both are installed (`make test-bmv2`, which fails when either is missing; the
Vagrant VM has both: `vagrant up`, docs in the README) and are skipped elsewhere, saying which
command is missing and how to install it; with INNET_REQUIRE_BMV2 set (CI sets it where it
installs BMv2) a missing tool fails the run instead.
"""

from __future__ import annotations

import os

import pytest

from topo.bmv2 import require_tools
from topo.exceptions import Bmv2Error

REQUIRE = "INNET_REQUIRE_BMV2"  # set (CI, where it installs BMv2): a missing tool fails


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    try:
        require_tools()
    except Bmv2Error as err:
        if os.environ.get(REQUIRE) and any("bmv2" in item.keywords for item in items):
            raise pytest.UsageError(f"{REQUIRE} is set, but {err}") from None
        skip = pytest.mark.skip(reason=f"BMv2 test skipped: {err}")
        for item in items:
            if "bmv2" in item.keywords:
                item.add_marker(skip)
