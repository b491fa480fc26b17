"""A real Testbed for the API tests: the controller and real p4switch P4Runtime servers running
innet.p4 in this process (tests/unit/controller/conftest.py), without Mininet or ports."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from fastapi.testclient import TestClient

from controller.planner.cost import CostParams
from controller.planner.schedule import Round, Schedule
from controller.service.api import create_app
from controller.testbed import Testbed
from innet.packetformat import PacketFormat
from tests.unit.controller.conftest import InProcessNetwork, Switch, triangle
from topo.siteplan import SlotPool

W = 2
PARAMS = CostParams(update_bytes=10**8, memory_bytes=2**20, access_bps=1e9)
# round 0: A and B together, C alone; round 1: all three
PAIRS_THEN_ALL = Schedule("test", 3, (Round.of([[0, 1], [2]]), Round.of([[0, 1, 2]])))


@pytest.fixture
def testbed(switches: list[Switch]) -> Iterator[Testbed]:
    tb = Testbed.start(
        triangle(),
        InProcessNetwork(switches, W),
        PARAMS,
        pool=SlotPool(64, 1, PacketFormat()),
        schedule=PAIRS_THEN_ALL,
    )
    try:
        yield tb
    finally:
        tb.close()


@pytest.fixture
def client(testbed: Testbed) -> TestClient:
    return TestClient(create_app(testbed))
