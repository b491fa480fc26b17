"""The Mininet testbed: one p4switch edge per city, W hosts behind each, WAN links between edges.

    with build_network(NetworkSpec(default_wan(), hosts_per_city=2), Path("/tmp/run")) as net:
        net.hosts[0][0].cmd("ping -c1 10.0.3.1")      # city 0's leader pings city 3's
        net.grpc_addresses[3]                          # "127.0.0.1:9562": city 3's edge

Ports and addresses are the site plan's (topo/siteplan.py): the edge of city u has port k for
host k, then port W+1+j for the link to its j-th neighbour in `wan.neighbours(u)`; island u is
10.0.u.0/24, host k is 10.0.u.k, the edge (each host's gateway) is 10.0.u.254. Hosts hold
static neighbour entries for their gateway and their island's other hosts (the edge forwards
IPv4 only, so ARP never crosses it), checksum offload off, IPv6 off.

Run `python -m topo.mininet_net --help` to explore a network with Mininet's CLI. See
docs/testbed.md.
"""

from __future__ import annotations

import argparse
import logging
import math
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar

from mininet.cli import CLI
from mininet.link import Link, TCLink
from mininet.log import setLogLevel
from mininet.net import Mininet
from mininet.node import Host

from innet.exceptions import InnetError, one_line
from innet.packetformat import DEFAULT_LANES, LANE_CHOICES, PacketFormat
from innet.paths import INNET_P4
from innet.stopping import held
from innet.vocabulary import Backend, P4Target, Shaping, VocabularyError
from topo.bmv2 import THRIFT_BASE_PORT, Bmv2Switch, require_tools
from topo.exceptions import NetworkBuildError
from topo.linknode import LinkEmulator, add_link_emulator
from topo.linknode import interface_names as link_interface_names
from topo.loader import default_wan, load_wan
from topo.mininet_hosts import (
    HostSpec,
    check_names,
    check_nothing_in_the_way,
    configure_host,
    host_specs,
    switch_name,
)
from topo.p4node import P4Switch, PortCounters, SwitchPipeline, SwitchProcess, wait_all_ready
from topo.shaping import (
    SHAPING_HELP,
    choose_shaping,
    kernel_link_params,
    switch_shape,
)
from topo.siteplan import (
    GRPC_BASE_PORT,
    ISLAND_PREFIX_LENGTH,
    LOOPBACK,
    MAX_HOSTS_PER_ISLAND,
    MAX_SITES,
    SlotPool,
    device_id,
    grpc_address,
    program_defines,
    wan_ports,
)
from topo.split import Split
from topo.wan import Wan

log = logging.getLogger(__name__)


@dataclass
class TestbedNet:
    """A running testbed. `stop()` (or leaving the `with` block) tears it down, once."""

    __test__: ClassVar[bool] = False  # a testbed, not a pytest test class

    wan: Wan
    mininet: Mininet
    hosts: tuple[tuple[Host, ...], ...]  # city -> its hosts, in port order (leader first)
    switches: tuple[P4Switch, ...]  # city -> its edge
    shaping: Shaping
    scale: float
    workdir: Path
    target: P4Target = P4Target.P4SWITCH
    links: tuple[LinkEmulator, ...] = ()  # shaping `links`: the emulator of every WAN link
    cities: tuple[int, ...] = ()  # the WAN's cities built here, in the order of `switches` and
    # `hosts`: every city, or this machine's share of a network split across machines
    stopped: bool = False

    def __post_init__(self) -> None:
        if not self.cities:
            self.cities = tuple(range(self.wan.n))

    def _at(self, city: int) -> int:
        """Where city `city`'s edge and hosts are in `switches` and `hosts`."""
        try:
            return self.cities.index(city)
        except ValueError:
            raise NetworkBuildError(
                f"city {city} ({self.wan.names[city]}) is not built on this machine"
            ) from None

    @property
    def grpc_addresses(self) -> tuple[str, ...]:
        return tuple(sw.grpc_addr for sw in self.switches)

    @property
    def device_ids(self) -> tuple[int, ...]:
        return tuple(sw.device_id for sw in self.switches)

    @property
    def switch_pids(self) -> tuple[int | None, ...]:
        return tuple(sw.switch_pid for sw in self.switches)

    def switch(self, city: int) -> P4Switch:
        """City `city`'s edge (NetworkBuildError when it is built on another machine)."""
        return self.switches[self._at(city)]

    def leader(self, city: int) -> Host:
        return self.hosts[self._at(city)][0]

    # --- what the controller cannot ask over P4Runtime ----------------------------------------

    def pipeline(self) -> SwitchPipeline:
        """The program every edge runs, as the controller pushes it (the same for all edges)."""
        return self.switches[0].pipeline(self.workdir / "build")

    def port_counters(self, city: int, reset_peaks: bool = False) -> PortCounters:
        """City `city`'s edge: its port counters (SwitchControlError when it cannot be read)."""
        return self.switches[self._at(city)].port_counters(reset_peaks)

    def control_alive(self, city: int) -> bool | None:
        """Whether city `city`'s edge answers on its control channel (None: it has none)."""
        return self.switches[self._at(city)].control_alive()

    def process_alive(self, city: int) -> bool:
        proc = self.switches[self._at(city)].process
        return proc is not None and proc.poll() is None

    def restart(self, city: int, deadline: float) -> None:
        """Start city `city`'s switch process again (if it has exited) and wait until it is
        ready or `deadline` (time.monotonic()) passes."""
        switch = self.switches[self._at(city)]
        switch.start([])  # starts a new process only when the old one has exited
        wait_all_ready([switch], deadline)
        log.info("switch %s restarted as PID %s", switch.name, switch.switch_pid)

    def link_counters(self, reset_peaks: bool = False) -> dict[str, PortCounters]:
        """The link emulator's port counters by node name (topo/linknode.py numbers its
        ports); empty without one. SwitchControlError when it cannot be read."""
        return {node.name: node.port_counters(reset_peaks) for node in self.links}

    def restart_links(self, deadline: float) -> list[str]:
        """Start every link emulator whose process has exited again; their names."""
        dead = [n for n in self.links if n.process is None or n.process.poll() is not None]
        for node in dead:
            log.warning("link emulator %s: process gone, restarting it", node.name)
            node.start([])
        wait_all_ready(dead, deadline)
        return [node.name for node in dead]

    def processes(self) -> list[tuple[str, int]]:
        """(role, PID) of every process this network started: switches, link emulators, then
        host shells."""
        started = [
            (f"{self.target} {sw.name}", pid)
            for sw in self.switches
            if (pid := sw.switch_pid) is not None
        ]
        started += [
            (f"link emulator {node.name}", pid)
            for node in self.links
            if (pid := node.switch_pid) is not None
        ]
        started += [(f"host {h.name}", h.pid) for hosts in self.hosts for h in hosts]
        return started

    def interfaces(self) -> list[str]:
        """Every root-namespace interface this network created (switches' and emulators')."""
        nodes: list[SwitchProcess] = [*self.switches, *self.links]
        return sorted(i.name for node in nodes for i in node.intfList() if i.name != "lo")

    def stop(self) -> None:
        """Stop the processes this testbed started, then Mininet (idempotent)."""
        if self.stopped:
            return
        self.stopped = True
        nodes: list[SwitchProcess] = [*self.switches, *self.links]
        try:
            for node in nodes:  # signal them all first: they shut down in parallel
                if node.process is not None and node.process.poll() is None:
                    node.process.terminate()
            for node in nodes:
                node.stop_process()
        finally:
            self.mininet.stop()

    def __enter__(self) -> TestbedNet:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


@dataclass(frozen=True, slots=True)
class NetworkSpec:
    """The emulated network as data; `build_network` builds it.

    `slots` is innet.p4's SLOTS (`-D SLOTS=..`: the slot pool per bank, at emulation scale);
    link rates are capacities divided by `scale`, delays are kept. `shaping` is `auto`,
    `kernel`, `switch` or `links` (topo/shaping.py). `loss` makes every WAN link lose that share
    of its frames, each way, at random. `target` `bmv2` runs each edge on simple_switch_grpc
    instead (topo/bmv2.py): no program at start (the controller pushes p4c's JSON), links shaped
    by the kernel or by link emulators, BMv2's console log only with `log_console`. City u's
    edge has device id u + 1 and P4Runtime at 127.0.0.1:(grpc_base_port + u) (the site plan).
    With `split` (topo/split.py) only this machine's cities are built, their P4Runtime served
    on this machine's address, and the WAN links are carried by a link emulator (shaping
    `links`), those crossing to another machine over UDP tunnels.
    """

    wan: Wan
    hosts_per_city: int
    slots: int | None = None  # None: the program's own default
    scale: float = 1.0
    shaping: Shaping = Shaping.AUTO
    program: Path = INNET_P4
    target: P4Target = P4Target.P4SWITCH
    backend: Backend | None = None  # p4switch's --backend (None: native where it can run)
    grpc_base_port: int = GRPC_BASE_PORT
    packet_format: PacketFormat = field(default_factory=PacketFormat)  # innet.p4 -D LANES
    loss: float = 0.0
    log_console: bool = False
    name_prefix: str = ""
    startup_timeout: float = 90.0
    split: Split | None = None  # this machine's share of a network split across machines

    def __post_init__(self) -> None:
        try:  # the choices as members, whether given as members or as their values
            object.__setattr__(self, "target", P4Target.parse(self.target))
            object.__setattr__(self, "shaping", Shaping.parse(self.shaping))
            if self.backend is not None:
                object.__setattr__(self, "backend", Backend.parse(self.backend))
        except VocabularyError as err:
            raise NetworkBuildError(str(err)) from None
        if self.backend is not None and self.target != P4Target.P4SWITCH:
            raise NetworkBuildError(f"--backend is for p4switch, not target {self.target}")
        if not 1 <= self.hosts_per_city <= MAX_HOSTS_PER_ISLAND or self.wan.n > MAX_SITES:
            raise NetworkBuildError(
                f"no addressing for {self.wan.n} cities of {self.hosts_per_city} hosts"
            )
        if not 0 < self.scale < math.inf:
            raise NetworkBuildError(f"scale must be finite and positive, got {self.scale!r}")
        if self.slots is not None:
            # SlotPoolError unless innet.p4 compiles with it
            SlotPool(self.slots, self.scale, self.packet_format)
        if self.split is not None:
            if self.shaping not in (Shaping.AUTO, Shaping.LINKS):
                raise NetworkBuildError(
                    f"a network split across machines carries its WAN links in link "
                    f"emulators (shaping links), not shaping {self.shaping}"
                )
            self.split.crossing(self.wan)  # NetworkBuildError for a split that cannot be

    @property
    def cities(self) -> tuple[int, ...]:
        """The cities built here: all, or this machine's share."""
        return tuple(range(self.wan.n)) if self.split is None else self.split.cities

    @property
    def grpc_host(self) -> str:
        """Where the switches serve P4Runtime: loopback, or this machine's address."""
        return LOOPBACK if self.split is None else self.split.here

    def shaping_mode(self) -> Shaping:
        """Who shapes WAN links here (topo/shaping.py); raises, naming what is missing, when
        the target or the shaping asked for cannot run on this machine."""
        if self.split is not None:
            return preflight(Shaping.LINKS, self.target)
        return preflight(self.shaping, self.target)

    def switch_shapes(self, mode: Shaping) -> list[dict[int, str]]:
        """Per city: WAN port -> the egress shape its switch applies (none: kernel shaping)."""
        wan, w = self.wan, self.hosts_per_city
        shapes: list[dict[int, str]] = [{} for _ in range(wan.n)]
        if mode == Shaping.SWITCH:
            for link in wan.links:
                u, v = wan.index(link.a), wan.index(link.b)
                shapes[u][wan_ports(wan, u, w)[v]] = switch_shape(link, self.scale, self.loss)
                shapes[v][wan_ports(wan, v, w)[u]] = switch_shape(link, self.scale, self.loss)
        return shapes

    def hosts(self, city: int) -> tuple[HostSpec, ...]:
        return host_specs(city, self.hosts_per_city, self.name_prefix)

    def listening_ports(self) -> dict[int, str]:
        """The TCP ports the switches will listen on, each with what it is for."""
        names, here = self.wan.names, self.cities
        ports = {self.grpc_base_port + u: f"{names[u]}'s P4Runtime" for u in here}
        if self.target == P4Target.BMV2:
            ports.update({THRIFT_BASE_PORT + u: f"{names[u]}'s BMv2 Thrift" for u in here})
        return ports


def preflight(shaping: Shaping, target: P4Target) -> Shaping:
    """What `build_network` checks first: the target's tools are installed and the shaping asked
    for works here. The shaping mode it will use."""
    if target == P4Target.BMV2:
        require_tools()
    return choose_shaping(shaping, target)


def build_network(spec: NetworkSpec, workdir: Path) -> TestbedNet:
    """Build and start the network: Mininet (controller=None), one switch process per city."""
    wan, here = spec.wan, spec.cities
    mode = spec.shaping_mode()
    names = check_names(wan, spec.hosts_per_city, spec.name_prefix, here)
    if mode == Shaping.LINKS:
        names += link_interface_names(wan, spec.name_prefix, spec.split)
    check_nothing_in_the_way(names, spec.listening_ports())
    workdir = Path(workdir).resolve()
    workdir.mkdir(parents=True, exist_ok=True)
    shapes = spec.switch_shapes(mode)
    net = Mininet(
        topo=None,
        controller=None,
        switch=P4Switch,
        host=Host,
        link=Link,
        build=False,
        autoSetMacs=False,
        autoStaticArp=False,
    )
    started = time.monotonic()
    try:
        switches = {u: _add_switch(net, spec, u, workdir, shapes[u]) for u in here}
        hosts = [_add_hosts(net, spec, u, switches[u]) for u in here]
        links: tuple[LinkEmulator, ...] = ()
        if mode == Shaping.LINKS:
            links = (
                add_link_emulator(
                    net,
                    wan,
                    spec.hosts_per_city,
                    switches,
                    scale=spec.scale,
                    loss=spec.loss,
                    rundir=workdir,
                    prefix=spec.name_prefix,
                    startup_timeout=spec.startup_timeout,
                    split=spec.split,
                ),
            )
        else:
            _add_wan_links(net, spec, mode, list(switches.values()))
        net.build()
        for u, city_hosts in zip(here, hosts, strict=True):
            island = spec.hosts(u)
            for host, me in zip(city_hosts, island, strict=True):
                configure_host(host, u, island, me)
        net.start()  # starts every process, then each class's batchStartup waits for them all
    except BaseException:
        for node in net.switches:
            node.stop_process()
        net.stop()
        raise
    testbed = TestbedNet(
        wan,
        net,
        tuple(hosts),
        tuple(switches.values()),
        mode,
        spec.scale,
        workdir,
        spec.target,
        links,
        here,
    )
    log.info(
        "testbed up in %.1f s: %d cities x %d hosts, %s shaping, scale %g",
        time.monotonic() - started,
        wan.n,
        spec.hosts_per_city,
        mode,
        spec.scale,
    )
    return testbed


def _add_switch(
    net: Mininet, spec: NetworkSpec, u: int, workdir: Path, shapes: dict[int, str]
) -> P4Switch:
    extra: dict[str, object] = {}
    cls: type[P4Switch] = P4Switch
    if spec.target == P4Target.BMV2:
        cls = Bmv2Switch
        extra = {"thrift_port": THRIFT_BASE_PORT + u, "log_console": spec.log_console}
    elif spec.backend is not None:
        extra = {"backend": spec.backend}
    defines = program_defines(spec.packet_format, spec.slots)
    with held():  # Mininet starts the node's shell: held, so that it is never left unrecorded
        switch: P4Switch = net.addSwitch(
            switch_name(u, spec.name_prefix),
            cls=cls,
            dpid=f"{u + 1:x}",
            program=Path(spec.program).resolve(),
            rundir=workdir,
            grpc_addr=grpc_address(u, spec.grpc_base_port, spec.grpc_host),
            device_id=device_id(u),
            defines=defines,
            shapes=shapes,
            startup_timeout=spec.startup_timeout,
            **extra,
        )
    return switch


def _add_hosts(net: Mininet, spec: NetworkSpec, u: int, switch: P4Switch) -> tuple[Host, ...]:
    hosts = []
    for me in spec.hosts(u):  # host k on port k
        with held():  # its shell and veth pair, recorded in `net` before a stop signal counts
            host = net.addHost(me.name, ip=f"{me.ip}/{ISLAND_PREFIX_LENGTH}", mac=me.mac)
            net.addLink(host, switch, port1=0, port2=me.port, cls=Link)
        hosts.append(host)
    return tuple(hosts)


def _add_wan_links(
    net: Mininet, spec: NetworkSpec, mode: Shaping, switches: Sequence[P4Switch]
) -> None:
    """Ascending u, then ascending neighbour v > u: each edge meets its links in neighbour
    order, so Mininet's own numbering agrees with the explicit W+1+k ports."""
    wan, w, kernel = spec.wan, spec.hosts_per_city, mode == Shaping.KERNEL
    for u in range(wan.n):
        for v in wan.neighbours(u):
            if v < u:
                continue
            link = wan.link(u, v)
            params = kernel_link_params(link, spec.scale, spec.loss) if kernel else {}
            with held():  # the veth pair is recorded in `net` before a stop signal counts
                net.addLink(
                    switches[u],
                    switches[v],
                    cls=TCLink if kernel else Link,
                    port1=wan_ports(wan, u, w)[v],
                    port2=wan_ports(wan, v, w)[u],
                    **params,
                )


# --- the script --------------------------------------------------------------------------------


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m topo.mininet_net",
        description="Start the innet testbed in Mininet (one p4switch per city running "
        "innet.p4) and open Mininet's CLI. The switches start with empty tables: program "
        f"them over P4Runtime ({grpc_address(0)} + city index) from another terminal.",
    )
    parser.add_argument(
        "topology",
        nargs="?",
        type=Path,
        default=None,
        help="WAN model YAML (default: the nine-city WAN)",
    )
    parser.add_argument("--hosts", type=int, default=1, metavar="W", help="hosts per city")
    parser.add_argument(
        "--scale", type=float, default=1.0, help="emulation scale: link rates are divided by it"
    )
    parser.add_argument("--slots", type=int, default=None, help="SLOTS for innet.p4")
    parser.add_argument(
        "--lanes",
        type=int,
        choices=LANE_CHOICES,
        default=DEFAULT_LANES,
        help="int32 values in one innet packet: innet.p4's LANES",
    )
    parser.add_argument("--program", type=Path, default=INNET_P4, help="P4 program")
    parser.add_argument(
        "--shaping",
        type=Shaping.argument,
        choices=tuple(Shaping),
        default=Shaping.AUTO,
        help=SHAPING_HELP,
    )
    parser.add_argument(
        "--target",
        type=P4Target.argument,
        choices=tuple(P4Target),
        default=P4Target.P4SWITCH,
        help="edge switches: p4switch (default) or bmv2 (simple_switch_grpc)",
    )
    parser.add_argument(
        "--log-console",
        action="store_true",
        help="bmv2 only: BMv2's per-packet log on its console (slow)",
    )
    parser.add_argument(
        "--workdir",
        type=Path,
        default=Path("/tmp/innet-testbed"),
        help="control sockets and p4switch logs (default %(default)s)",
    )
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    setLogLevel("info")
    try:
        wan = default_wan() if args.topology is None else load_wan(args.topology)
        spec = NetworkSpec(
            wan,
            args.hosts,
            slots=args.slots,
            scale=args.scale,
            shaping=args.shaping,
            program=args.program,
            target=args.target,
            packet_format=PacketFormat(args.lanes),
            log_console=args.log_console,
        )
        net = build_network(spec, args.workdir)
    except InnetError as err:
        print(f"topo.mininet_net: error: {one_line(err)}", file=sys.stderr)
        return err.exit_status
    except OSError as err:  # the machine refused something (an interface, a namespace, a file)
        print(f"topo.mininet_net: error: {err}", file=sys.stderr)
        return 1
    with net:
        for u, sw in enumerate(net.switches):
            ports = ", ".join(f"{p}={i}" for p, i in sorted(sw.port_interfaces().items()))
            print(
                f"{wan.names[u]:>12} {sw.name}: P4Runtime {sw.grpc_addr} device {sw.device_id}"
                f" [{ports}]"
            )
        print(f"shaping: {net.shaping}, scale {net.scale:g}; logs in {net.workdir}")
        CLI(net.mininet)
    return 0


if __name__ == "__main__":
    sys.exit(main())
