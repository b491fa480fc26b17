"""Tests of the same P4 program, controller and experiment on BMv2 (simple_switch_grpc) and p4c.

They run where both are installed (the Vagrant VM: `vagrant up`, docs in the README) and are
skipped elsewhere, saying which command is missing.
"""

from __future__ import annotations

import pytest

from topo.bmv2 import missing_tools


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    missing = missing_tools()
    if not missing:
        return
    reason = (
        f"BMv2 test skipped: {', '.join(missing)} not installed here; these tests run in the VM "
        "(vagrant up; then make p4 && make test inside it)"
    )
    for item in items:
        if "bmv2" in item.keywords:
            item.add_marker(pytest.mark.skip(reason=reason))
