"""Real p4switch P4Runtime servers running innet.p4 in this process (`p4switch.InProcessSwitch`
served on loopback ports), for the controller tests."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import grpc
import pytest
from p4.config.v1 import p4info_pb2
from p4.v1 import p4runtime_pb2
from p4switch import CompiledProgram, InProcessSwitch, compile_file

from controller.network import NetworkFacts, SwitchSite
from controller.p4rt import Fabric, SwitchConnection, deadline_after
from topo.p4node import PortCounters, SwitchPipeline
from topo.wan import City, Wan, WanLink

REPO = Path(__file__).resolve().parents[3]
INNET_P4 = REPO / "p4src" / "innet.p4"
DEVICE_ID = 1

Wrapper = Callable[[grpc.RpcMethodHandler], grpc.RpcMethodHandler]


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


class Hooks(grpc.ServerInterceptor):
    """Lets a test take over a P4Runtime method of a switch already serving: `wrap[method]`
    ("Write", "Read", ...) makes the handler of each call of it from the switch's own."""

    def __init__(self, wrap: dict[str, Wrapper] | None = None) -> None:
        self.wrap: dict[str, Wrapper] = dict(wrap or {})

    def intercept_service(
        self,
        continuation: Callable[[grpc.HandlerCallDetails], grpc.RpcMethodHandler | None],
        handler_call_details: grpc.HandlerCallDetails,
    ) -> grpc.RpcMethodHandler | None:
        handler = continuation(handler_call_details)
        method: str = handler_call_details.method
        wrap = self.wrap.get(method.rsplit("/", 1)[-1])
        return handler if wrap is None or handler is None else wrap(handler)


def handled_by(handler: grpc.RpcMethodHandler, behaviour: Callable) -> grpc.RpcMethodHandler:
    """A handler of `handler`'s kind and messages (unary or server-streaming) running
    `behaviour(request, context)` instead: what a hook returns."""
    make = (
        grpc.unary_stream_rpc_method_handler
        if handler.response_streaming
        else grpc.unary_unary_rpc_method_handler
    )
    return make(
        behaviour,
        request_deserializer=handler.request_deserializer,
        response_serializer=handler.response_serializer,
    )


@dataclass
class Switch:
    """innet.p4 on an in-process p4switch served over P4Runtime on a loopback port; restart()
    keeps the port, not the state (nor the hooks). The switch refuses a push of another
    program."""

    name: str
    innet: Innet
    port: int = 0
    device: InProcessSwitch | None = None
    packets_out: list[bytes] = field(default_factory=list)
    hooks: Hooks = field(default_factory=Hooks)

    def start(self) -> None:
        self.hooks = Hooks()  # a fresh server: what a test hooked into the last one is gone
        self.device = InProcessSwitch(self.innet.program, "python")
        self.port = self.device.serve(
            f"127.0.0.1:{self.port}",
            device_id=DEVICE_ID,
            packet_out=self.packets_out.append,
            interceptors=[self.hooks],
        )

    def stop(self) -> None:
        if self.device is not None:
            self.device.stop(grace=0.2)
            self.device = None

    def restart(self) -> None:
        self.stop()
        self.start()

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    def read(self, *queries: p4runtime_pb2.Entity) -> list[p4runtime_pb2.Entity]:
        """What a P4Runtime Read of the switch answers (in process, no arbitration)."""
        assert self.device is not None, f"{self.name} is stopped"
        return self.device.read(queries)

    def entry_count(self, table: str) -> int:
        """How many entries `table` holds."""
        (info,) = (t for t in self.innet.p4info.tables if t.preamble.name == table)
        query = p4runtime_pb2.TableEntry(table_id=info.preamble.id)
        return len(self.read(p4runtime_pb2.Entity(table_entry=query)))

    def groups(self) -> dict[int, tuple[tuple[int, int], ...]]:
        """Each multicast group's (egress port, replica id) pairs, sorted."""
        query = p4runtime_pb2.Entity()
        query.packet_replication_engine_entry.multicast_group_entry.SetInParent()
        return {
            e.packet_replication_engine_entry.multicast_group_entry.multicast_group_id: tuple(
                sorted(
                    (r.egress_port, r.instance)
                    for r in e.packet_replication_engine_entry.multicast_group_entry.replicas
                )
            )
            for e in self.read(query)
        }

    def write(self, updates: Sequence[p4runtime_pb2.Update]) -> None:
        """Apply one batch behind the controller's back (in process, no arbitration)."""
        assert self.device is not None, f"{self.name} is stopped"
        self.device.write(updates)


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


def snapshot(sw: Switch) -> dict[str, object]:
    """Every table entry (by table) and multicast group of a switch, order-free: an entry is
    ((value, mask) per key field, priority, action name, action arguments)."""
    p4info = sw.innet.p4info
    tables = {t.preamble.id: t for t in p4info.tables}
    actions = {a.preamble.id: a.preamble.name for a in p4info.actions}
    entries: dict[str, list[tuple[object, ...]]] = {t.preamble.name: [] for t in p4info.tables}
    for e in sw.read(p4runtime_pb2.Entity(table_entry=p4runtime_pb2.TableEntry())):
        entry = e.table_entry
        info = tables[entry.table_id]
        call = entry.action.action
        args = tuple(int.from_bytes(p.value, "big") for p in sorted(call.params, key=_param_id))
        key = (_key(info, entry), entry.priority, actions[call.action_id], args)
        entries[info.preamble.name].append(key)
    return {"tables": {n: sorted(e) for n, e in entries.items()}, "groups": sw.groups()}


def _param_id(param: p4runtime_pb2.Action.Param) -> int:
    return int(param.param_id)


def _key(info: p4info_pb2.Table, entry: p4runtime_pb2.TableEntry) -> tuple[tuple[int, int], ...]:
    """(value, mask) per key field, in the table's key order; a field left out matches all."""
    given = {m.field_id: m for m in entry.match}
    key = []
    for spec in info.match_fields:
        full = (1 << spec.bitwidth) - 1
        m = given.get(spec.id)
        kind = None if m is None else m.WhichOneof("field_match_type")
        if m is None:
            key.append((0, 0))
        elif kind == "exact":
            key.append((int.from_bytes(m.exact.value, "big"), full))
        elif kind == "lpm":
            mask = full ^ ((1 << (spec.bitwidth - m.lpm.prefix_len)) - 1)
            key.append((int.from_bytes(m.lpm.value, "big"), mask))
        elif kind == "ternary":
            value, mask = m.ternary.value, m.ternary.mask
            key.append((int.from_bytes(value, "big"), int.from_bytes(mask, "big")))
        else:
            raise AssertionError(f"{info.preamble.name}: a {kind} match, which innet.p4 has not")
    return tuple(key)


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
        return self.switches[city].device is not None

    def restart(self, city: int, deadline: float) -> None:
        if self.switches[city].device is None:
            self.switches[city].start()

    def stop(self) -> None:
        self.stopped = True
