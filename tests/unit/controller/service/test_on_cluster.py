"""`innet net up --cluster` without a cluster: its options checked before anything starts (every
city placed once, on an IPv4 address; p4switch edges and link emulators only; --placement and
--clocks only with --cluster), passed on to the background service, a service that exits
refusing its input reported with exit status 2, and a service stopped by a signal signalling
each machine's island processes through its agent."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from controller.cluster.agent import NodeAgent
from controller.exceptions import CommandLineError
from controller.rundir import ProcessRecord
from controller.service import cli
from controller.service.exceptions import ServiceFailure, ServiceRefused
from controller.service.experiment import ServiceExperiment
from controller.service.options import SERVICE_ERROR, ServiceConfig
from innet.exceptions import InnetError
from innet.vocabulary import Shaping
from innet_cli import build_parser
from topo.loader import default_wan

WAN = default_wan()
HEAD = "10.250.0.1:6379"


def three_a_machine() -> list[str]:
    return [f"{city}=10.250.0.{1 + u // 3}" for u, city in enumerate(WAN.names)]


def net_up(*flags: str) -> Any:
    return build_parser()["main"].parse_args(["net", "up", *flags])


def config(*flags: str) -> ServiceConfig:
    return ServiceConfig.from_args(net_up(*flags))


def test_each_city_is_placed_on_its_machine_in_the_wan_s_order() -> None:
    given = three_a_machine()
    given[0] = given[0].replace("Tokyo", WAN.cities[0].code)  # a code names a city too
    shuffled = ",".join(reversed(given[:5]))
    got = config("--cluster", HEAD, "--placement", shuffled, "--placement", ",".join(given[5:]))
    assert got.placement == tuple(f"10.250.0.{1 + u // 3}" for u in range(WAN.n))
    assert got.cluster == HEAD and got.spec.shaping == Shaping.LINKS
    chosen = config("--cluster", HEAD)  # no placement: chosen on the cluster
    assert chosen.placement is None and chosen.spec.shaping == Shaping.LINKS
    assert config().cluster is None


@pytest.mark.parametrize(
    ("placed", "says"),
    [
        (["Atlantis=10.0.0.2"], "Atlantis"),
        (["Tokyo"], "write CITY=ADDRESS"),
        (["Tokyo="], "write CITY=ADDRESS"),
        (["Tokyo=10.0.0.2", f"{WAN.cities[0].code}=10.0.0.3"], "Tokyo is placed twice"),
        (["Tokyo=node-1"], "Tokyo='node-1' is not an IPv4 address"),
        (["Tokyo=10.0.0.2"], "Singapore, "),  # and the others: placed on no machine
    ],
)
def test_a_bad_placement_is_refused_naming_the_city(placed: list[str], says: str) -> None:
    with pytest.raises(CommandLineError, match="--placement") as refused:
        config("--cluster", HEAD, "--placement", ",".join(placed))
    assert says in str(refused.value)
    assert refused.value.exit_status == 2


@pytest.mark.parametrize(
    ("flags", "says"),
    [
        (["--placement", "Tokyo=10.0.0.2"], "add --cluster"),
        (["--clocks", "flag"], "add --cluster"),
        (["--cluster", HEAD, "--target", "bmv2"], "not --target bmv2"),
        (["--cluster", HEAD, "--shaping", "kernel"], "--shaping kernel"),
        (["--cluster", HEAD, "--log-console"], "--log-console"),
    ],
)
def test_what_a_cluster_cannot_do_is_refused(flags: list[str], says: str) -> None:
    with pytest.raises(CommandLineError, match=says):
        config(*flags)


def test_the_cluster_options_reach_the_background_service(tmp_path: Path) -> None:
    given = three_a_machine()
    args = net_up("--cluster", HEAD, "--clocks", "flag", "--placement", ",".join(given))
    argv = cli.service_argv(args, tmp_path)
    assert argv[argv.index("--cluster") + 1] == HEAD
    assert argv[argv.index("--clocks") + 1] == "flag"
    service = build_parser()["main"].parse_args(["serve", *argv[3:]])
    assert ServiceConfig.from_args(service) == ServiceConfig.from_args(args)
    alone = cli.service_argv(net_up(), tmp_path)
    assert "--cluster" not in alone and "--placement" not in alone


@pytest.mark.parametrize(("status", "error"), [(2, ServiceRefused), (1, ServiceFailure)])
def test_a_service_that_exits_refusing_its_input_makes_net_up_exit_2(
    tmp_path: Path, status: int, error: type[InnetError]
) -> None:
    log = tmp_path / "service.log"
    log.write_text(f"{SERVICE_ERROR}placement: Tokyo is placed on node '10.0.0.9'\n")
    proc = subprocess.Popen([sys.executable, "-c", f"raise SystemExit({status})"])
    proc.wait()
    args = net_up("--cluster", HEAD, "--timeout", "30")
    with pytest.raises(error, match=f"status {status}: placement: Tokyo") as failed:
        cli._wait_until_up(proc, ServiceConfig.from_args(args), args, time.monotonic(), (log, 0))
    assert failed.value.exit_status == status


class OnCluster:
    """A service testbed across machines, as the experiment slot sees it."""

    def __init__(self) -> None:
        self.terminated = 0

    def terminate_islands(self) -> None:
        self.terminated += 1


def test_an_aborted_experiment_signals_the_islands_on_every_machine() -> None:
    up = OnCluster()
    slot = ServiceExperiment(object(), up)  # type: ignore[arg-type]
    assert slot.abort(wait_s=0.0)["state"] == "idle"
    assert up.terminated == 1


class Running:
    """Island processes as an agent holds them: their records."""

    def __init__(self, processes: list[ProcessRecord]) -> None:
        self.processes = processes

    def record(self) -> list[ProcessRecord]:
        return self.processes


def test_an_agent_signals_exactly_its_island_processes_that_run() -> None:
    agent = NodeAgent("127.0.0.1")
    agent.islands_terminate()  # none run: nothing to do
    island = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    other = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        agent._islands = Running([ProcessRecord.of("island", island.pid)])  # type: ignore[assignment]
        agent.islands_terminate()
        assert island.wait(timeout=30) == -15  # SIGTERM
        assert other.poll() is None
        agent.islands_terminate()  # ended: not signalled again
    finally:
        other.kill()
        other.wait()
        island.kill()
        island.wait()
