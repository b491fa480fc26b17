"""Tests of the same P4 program, controller and experiment on BMv2 (simple_switch_grpc) and p4c.

They run where both are installed (`make test-bmv2`, which fails when either is missing; the
Vagrant VM has both: `vagrant up`, docs in the README) and are skipped elsewhere, saying which
command is missing and how to install it.
"""

from __future__ import annotations

import pytest

from topo.bmv2 import require_tools
from topo.exceptions import Bmv2Error


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    try:
        require_tools()
    except Bmv2Error as err:
        skip = pytest.mark.skip(reason=f"BMv2 test skipped: {err}")
        for item in items:
            if "bmv2" in item.keywords:
                item.add_marker(skip)
