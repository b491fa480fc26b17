"""One slot pool for one memory and scale, whichever way it is asked for: `innet net up` (the
service's options), `innet run` (a scenario, and what --check prints), the API's experiments
and `innet status` (the topology view). Before the site plan the service counted one bank only
and gave 256 slots per bank for 64 MB at scale 1000, twice the memory it was told."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any, cast

import pytest

from controller.planner.schedule import Round, Schedule
from controller.runner.emulation import resolve
from controller.runner.scenario import Training, parse_scenario
from controller.service import views
from controller.service.cli import service_argv
from controller.service.experiment import ServiceExperiment
from controller.service.options import ServiceConfig
from controller.testbed import Testbed
from innet.packetformat import PacketFormat
from innet_cli import build_parser
from tests.unit.controller.conftest import InProcessNetwork, Switch, triangle
from topo.siteplan import SlotPool

MEMORY, SCALE = "64MB", 1000
POOL = SlotPool(128, SCALE, PacketFormat())  # 2 banks x 128 slots x 128 B = 32 kB <= 64 MB / 1000
ALL = Schedule("all", 3, (Round.of([[0, 1, 2]]),))


@pytest.fixture
def service_config() -> ServiceConfig:
    args = build_parser()["main"].parse_args(
        ["net", "up", "--memory", MEMORY, "--scale", str(SCALE)]
    )
    return ServiceConfig.from_args(args)


@pytest.fixture
def testbed(switches: list[Switch], service_config: ServiceConfig) -> Iterator[Testbed]:
    tb = Testbed.start(
        triangle(),
        InProcessNetwork(switches, 1),
        service_config.params,
        pool=service_config.pool,
        schedule=ALL,
    )
    try:
        yield tb
    finally:
        tb.close()


def test_net_up_builds_the_pool_both_banks_fit_in(service_config: ServiceConfig) -> None:
    assert service_config.pool == POOL
    assert service_config.spec.slots == 128 and service_config.spec.scale == SCALE
    assert service_config.params.memory_bytes == POOL.memory_bytes == 32_768_000
    assert service_config.params.slot_bytes == POOL.slot_bytes


def test_net_up_takes_the_lanes_for_its_switches_and_its_service(tmp_path: Path) -> None:
    args = build_parser()["main"].parse_args(
        ["net", "up", "--memory", MEMORY, "--scale", str(SCALE), "--lanes", "256"]
    )
    config = ServiceConfig.from_args(args)
    assert config.pool == SlotPool(16, SCALE, PacketFormat(256))  # slots of 1 kB
    assert config.spec.packet_format == PacketFormat(256)
    assert config.params.slot_bytes == 1024 * SCALE
    argv = service_argv(args, tmp_path)
    assert argv[argv.index("--lanes") + 1] == "256"  # the background service builds the same
    with pytest.raises(SystemExit):
        build_parser()["main"].parse_args(["net", "up", "--lanes", "48"])


def test_innet_run_and_its_check_give_the_same_pool(service_config: ServiceConfig) -> None:
    em = resolve(parse_scenario(f"name: t\nscale: {SCALE}\nmemory: {MEMORY}\n"))
    (point,) = em.points
    assert point.pool == service_config.pool
    assert point.params.memory_bytes == service_config.params.memory_bytes
    assert all(
        "memory 64 MB -> pool 32.8 MB (128 slots/bank)" in line for line in em.predictions()[1:]
    )


def test_experiments_and_status_report_the_testbeds_pool(testbed: Testbed) -> None:
    # the experiment needs a running Mininet testbed only to start island processes
    up = cast(Any, object())
    scenario = ServiceExperiment(testbed, up).scenario("t", Training(rounds=1), 1, 60.0)
    (point,) = resolve(scenario, schedule=testbed.schedule).points
    assert point.pool == POOL
    topology = views.topology(testbed)
    assert (topology["slots"], topology["memory_bytes"]) == (128, POOL.memory_bytes)
