"""Real p4switch P4Runtime servers running innet.p4 in this process, for the controller tests."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from p4.config.v1 import p4info_pb2
from p4switch.p4rt import LoadedProgram, P4RuntimeServer
from p4switch.program import CompiledProgram, compile_file
from p4switch.runtime import SwitchState

from controller.network import NetworkFacts, SwitchSite
from controller.p4rt import Fabric, SwitchConnection, deadline_after
from topo.p4node import PortCounters, SwitchPipeline
from topo.wan import City, Wan, WanLink

REPO = Path(__file__).resolve().parents[3]
INNET_P4 = REPO / "p4src" / "innet.p4"
DEVICE_ID = 1


@dataclass(frozen=True)
class Innet:
    program: CompiledProgram
    source: bytes

    @property
    def p4info(self) -> p4info_pb2.P4Info:
        return self.program.p4info


@pytest.fixture(scope="session")
def innet() -> Innet:
    return Innet(compile_file(INNET_P4, defines={"SLOTS": "64"}), INNET_P4.read_bytes())


@dataclass
class Switch:
    """One p4switch P4Runtime server on a loopback port; restart() keeps the port, not the state."""

    name: str
    innet: Innet
    port: int = 0
    server: P4RuntimeServer | None = None
    packets_out: list[bytes] = field(default_factory=list)

    def start(self) -> None:
        def load(p4info: p4info_pb2.P4Info, device_config: bytes) -> LoadedProgram:
            if device_config != self.innet.source:
                raise ValueError("this test switch runs innet.p4 only")
            return LoadedProgram(p4info, device_config, self.innet.program.new_state(), _noop)

        initial = LoadedProgram(
            self.innet.p4info, self.innet.source, self.innet.program.new_state(), _noop
        )
        self.server = P4RuntimeServer(
            device_id=DEVICE_ID,
            loader=load,
            send_packet_out=self.packets_out.append,
            initial=initial,
        )
        self.port = self.server.start(f"127.0.0.1:{self.port}")

    def stop(self) -> None:
        if self.server is not None:
            self.server.stop(grace=0.2)
            self.server = None

    def restart(self) -> None:
        self.stop()
        self.start()

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    @property
    def state(self) -> SwitchState:
        assert self.server is not None and self.server.pipeline is not None
        return self.server.pipeline.state


def _noop() -> None:
    return None


@pytest.fixture
def switches(innet: Innet) -> Iterator[list[Switch]]:
    started = [Switch(f"s{i}", innet) for i in range(3)]
    try:
        for sw in started:
            sw.start()
        yield started
    finally:
        for sw in started:
            sw.stop()


@pytest.fixture
def fabric(innet: Innet, switches: list[Switch]) -> Iterator[Fabric]:
    conns = [SwitchConnection(sw.name, sw.address, DEVICE_ID) for sw in switches]
    fab = Fabric(conns, innet.p4info, innet.source)
    fab.connect(deadline_after(10))
    try:
        yield fab
    finally:
        fab.close()


def triangle() -> Wan:
    """Three cities, every pair linked, A-C the slowest (so A's tree to C may go through B)."""
    cities = tuple(City(n, n, "X", 0.0, float(i)) for i, n in enumerate("ABC"))
    links = (
        WanLink("A", "B", 0.010, 1e9, "test"),
        WanLink("B", "C", 0.010, 1e9, "test"),
        WanLink("A", "C", 0.030, 1e9, "test"),
    )
    return Wan("triangle", cities, links)


def snapshot(state: SwitchState) -> dict[str, object]:
    """Every table entry (by table) and multicast group of a switch, order-free."""
    tables = {
        name: sorted(
            (tuple((m.value, m.mask) for m in e.match), e.priority, e.action.name, e.action.args)
            for e in table.entries()
        )
        for name, table in state.tables.items()
    }
    groups = {
        gid: tuple(sorted((r.egress_port, r.instance) for r in replicas))
        for gid, replicas in state.pre.groups.items()
    }
    return {"tables": tables, "groups": groups}


class InProcessNetwork:
    """conftest's P4Runtime servers as a testbed Network (no processes, no control channel):
    a test double for the Mininet network, whose switches are separate processes."""

    def __init__(self, switches: list[Switch], hosts: int = 2) -> None:
        self.switches = switches
        self.hosts_per_city = hosts
        self.sites = tuple(
            SwitchSite(i, sw.name, sw.address, DEVICE_ID) for i, sw in enumerate(switches)
        )
        self.stopped = False

    def pipeline(self) -> SwitchPipeline:
        innet = self.switches[0].innet
        return SwitchPipeline(innet.p4info, innet.source)

    def port_counters(self, city: int, reset_peaks: bool = False) -> None:
        return None

    def control_alive(self, city: int) -> None:
        return None

    def link_counters(self, reset_peaks: bool = False) -> dict[str, PortCounters]:
        return {}

    def restart_links(self, deadline: float) -> list[str]:
        return []

    def facts(self) -> NetworkFacts:
        return NetworkFacts("p4switch", "none", 1.0, "")

    def process_alive(self, city: int) -> bool:
        return self.switches[city].server is not None

    def restart(self, city: int, deadline: float) -> None:
        if self.switches[city].server is None:
            self.switches[city].start()

    def stop(self) -> None:
        self.stopped = True
