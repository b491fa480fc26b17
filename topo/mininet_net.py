"""The Mininet testbed: one p4switch edge per city, W hosts behind each, WAN links between edges.

    with build_network(default_wan(), hosts_per_city=2, workdir=Path("/tmp/run")) as net:
        net.hosts[0][0].cmd("ping -c1 10.0.3.1")      # city 0's leader pings city 3's
        net.grpc_addresses[3]                          # "127.0.0.1:50003": city 3's edge

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
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

from mininet.link import Link, TCLink
from mininet.net import Mininet
from mininet.node import Host

from topo.bmv2 import THRIFT_BASE_PORT, Bmv2Switch, missing_tools
from topo.exceptions import NetworkBuildError, SwitchStartError
from topo.p4node import IFNAMSIZ, P4Switch
from topo.shaping import ShapingMode, choose_shaping, kernel_link_params, switch_shape
from topo.siteplan import (
    GRPC_BASE_PORT,
    MAX_HOSTS_PER_ISLAND,
    MAX_SITES,
    SUPERNET,
    device_id,
    gateway_ip,
    gateway_mac,
    grpc_address,
    host_ip,
    host_mac,
    host_ports,
    wan_ports,
)
from topo.wan import Wan

log = logging.getLogger(__name__)

REPO = Path(__file__).resolve().parents[1]
DEFAULT_PROGRAM = REPO / "p4src" / "innet.p4"
TARGETS = ("p4switch", "bmv2")


@dataclass(frozen=True)
class HostSpec:
    """One emulated host: Mininet name, switch port, addresses."""

    name: str
    port: int
    ip: str
    mac: str


def host_specs(city: int, hosts_per_city: int, prefix: str = "") -> tuple[HostSpec, ...]:
    """City `city`'s hosts in port order; host 1 is the island's leader."""
    return tuple(
        HostSpec(f"{prefix}h{city}_{k}", port, host_ip(city, k), host_mac(city, k))
        for k, port in enumerate(host_ports(hosts_per_city), start=1)
    )


def switch_name(city: int, prefix: str = "") -> str:
    return f"{prefix}s{city}"


@dataclass
class TestbedNet:
    """A running testbed. `stop()` (or leaving the `with` block) tears it down, once."""

    __test__: ClassVar[bool] = False  # a testbed, not a pytest test class

    wan: Wan
    mininet: Mininet
    hosts: tuple[tuple[Host, ...], ...]  # city -> its hosts, in port order (leader first)
    switches: tuple[P4Switch, ...]  # city -> its edge
    shaping: ShapingMode
    scale: float
    workdir: Path
    stopped: bool = False

    @property
    def grpc_addresses(self) -> tuple[str, ...]:
        return tuple(sw.grpc_addr for sw in self.switches)

    @property
    def device_ids(self) -> tuple[int, ...]:
        return tuple(sw.device_id for sw in self.switches)

    @property
    def switch_pids(self) -> tuple[int | None, ...]:
        return tuple(sw.switch_pid for sw in self.switches)

    def leader(self, city: int) -> Host:
        return self.hosts[city][0]

    def stop(self) -> None:
        """Stop the p4switch processes this testbed started, then Mininet (idempotent)."""
        if self.stopped:
            return
        self.stopped = True
        try:
            for sw in self.switches:  # signal them all first: they shut down in parallel
                if sw.process is not None and sw.process.poll() is None:
                    sw.process.terminate()
            for sw in self.switches:
                sw.stop_process()
        finally:
            self.mininet.stop()

    def __enter__(self) -> TestbedNet:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def _check_names(wan: Wan, hosts_per_city: int, prefix: str) -> list[str]:
    """Every root-namespace interface name the testbed will create; raise if one is too long."""
    names = []
    for u in range(wan.n):
        last_port = hosts_per_city + len(wan.neighbours(u))
        names += [f"{switch_name(u, prefix)}-eth{p}" for p in range(1, last_port + 1)]
        host_if = f"{host_specs(u, hosts_per_city, prefix)[-1].name}-eth0"
        if len(host_if) > IFNAMSIZ:
            raise NetworkBuildError(f"host interface name {host_if!r} is longer than {IFNAMSIZ}")
    too_long = [n for n in names if len(n) > IFNAMSIZ]
    if too_long:
        raise NetworkBuildError(
            f"interface names longer than {IFNAMSIZ} characters: {too_long[:3]}; "
            "use a shorter name prefix or fewer hosts per city"
        )
    return names


def _existing_interfaces(names: Sequence[str]) -> list[str]:
    return [n for n in names if Path("/sys/class/net", n).exists()]


def _run_in(host: Host, argv: list[str]) -> None:
    """Run a command in a host's namespace (an argument list); raise with its stderr on failure."""
    _out, err, code = host.pexec(argv)
    if code != 0:
        raise NetworkBuildError(f"{host.name}: {' '.join(argv)} failed ({code}): {err.strip()}")


def _configure_host(host: Host, city: int, island: Sequence[HostSpec], me: HostSpec) -> None:
    dev = host.defaultIntf().name
    gw_ip, gw_mac = gateway_ip(city), gateway_mac(city)
    _run_in(host, ["sysctl", "-q", "-w", "net.ipv6.conf.all.disable_ipv6=1"])
    _run_in(host, ["ethtool", "-K", dev, "tx", "off", "rx", "off"])
    neighbours = [(gw_ip, gw_mac)] + [(h.ip, h.mac) for h in island if h != me]
    for ip, mac in neighbours:
        _run_in(host, ["ip", "neigh", "replace", ip, "lladdr", mac, "dev", dev, "nud", "permanent"])
    _run_in(host, ["ip", "route", "replace", SUPERNET, "via", gw_ip, "dev", dev])


def build_network(
    wan: Wan,
    hosts_per_city: int,
    workdir: Path,
    program: Path = DEFAULT_PROGRAM,
    slots: int | None = None,
    scale: float = 1.0,
    shaping: str = "auto",
    *,
    name_prefix: str = "",
    grpc_base_port: int = GRPC_BASE_PORT,
    startup_timeout: float = 90.0,
    target: str = "p4switch",
    log_console: bool = False,
    loss: float = 0.0,
) -> TestbedNet:
    """Build and start the testbed: Mininet (controller=None), one P4Switch per city.

    `slots` is passed to the program as `-D SLOTS=..` (the caller divides real aggregator
    memory by `scale`); link rates are capacities divided by `scale`, delays are kept.
    `shaping` is `auto`, `kernel` or `switch` (see topo/shaping.py); the mode used is
    `TestbedNet.shaping`. City u's edge has device id u + 1 and P4Runtime at
    127.0.0.1:(grpc_base_port + u).

    `loss` makes every WAN link lose that share of its frames, each way, at random.
    `target` `bmv2` runs each edge on simple_switch_grpc instead (topo/bmv2.py): no program at
    start (the controller pushes p4c's JSON), links shaped by the kernel only, BMv2's console
    log only with `log_console`.
    """
    if target not in TARGETS:
        raise NetworkBuildError(f"unknown target {target!r}; known: {', '.join(TARGETS)}")
    if not 1 <= hosts_per_city <= MAX_HOSTS_PER_ISLAND or wan.n > MAX_SITES:
        raise NetworkBuildError(f"no addressing for {wan.n} cities of {hosts_per_city} hosts")
    if not scale > 0:
        raise NetworkBuildError(f"scale must be positive, got {scale!r}")
    if target == "bmv2":
        missing = missing_tools()
        if missing:
            raise NetworkBuildError(
                f"the bmv2 target needs {', '.join(missing)} (the VM has them: vagrant up)"
            )
        if shaping == "switch":
            raise NetworkBuildError("BMv2 cannot shape its ports: use --shaping kernel (netem)")
        shaping = "kernel"
    mode = choose_shaping(shaping)
    names = _check_names(wan, hosts_per_city, name_prefix)
    in_the_way = _existing_interfaces(names)
    if in_the_way:
        raise NetworkBuildError(
            f"interfaces {in_the_way[:5]} already exist in the root namespace (another testbed, "
            "or one left over): stop it, or delete them with 'ip link del NAME', or pass "
            "another name_prefix"
        )
    workdir = Path(workdir).resolve()
    workdir.mkdir(parents=True, exist_ok=True)
    defines = {"SLOTS": str(slots)} if slots is not None else {}
    shapes: list[dict[int, str]] = [{} for _ in range(wan.n)]
    if mode == "switch":
        for link in wan.links:
            u, v = wan.index(link.a), wan.index(link.b)
            shapes[u][wan_ports(wan, u, hosts_per_city)[v]] = switch_shape(link, scale, loss)
            shapes[v][wan_ports(wan, v, hosts_per_city)[u]] = switch_shape(link, scale, loss)

    net = Mininet(topo=None, controller=None, switch=P4Switch, host=Host, link=Link,
                  build=False, autoSetMacs=False, autoStaticArp=False)  # fmt: skip
    started = time.monotonic()
    try:
        switches: list[P4Switch] = []
        hosts: list[tuple[Host, ...]] = []
        for u in range(wan.n):
            extra: dict[str, object] = {}
            cls: type[P4Switch] = P4Switch
            if target == "bmv2":
                cls = Bmv2Switch
                extra = {"thrift_port": THRIFT_BASE_PORT + u, "log_console": log_console}
            switch = net.addSwitch(
                switch_name(u, name_prefix), cls=cls, dpid=f"{u + 1:x}",
                program=Path(program).resolve(), rundir=workdir,
                grpc_addr=grpc_address(u, grpc_base_port), device_id=device_id(u),
                defines=defines, shapes=shapes[u], startup_timeout=startup_timeout, **extra,
            )  # fmt: skip
            switches.append(switch)
        for u in range(wan.n):
            island = host_specs(u, hosts_per_city, name_prefix)
            city_hosts = []
            for spec in island:  # host k on port k
                host = net.addHost(spec.name, ip=f"{spec.ip}/24", mac=spec.mac)
                net.addLink(host, switches[u], port1=0, port2=spec.port, cls=Link)
                city_hosts.append(host)
            hosts.append(tuple(city_hosts))
        # ascending u, then ascending neighbour v > u: each edge meets its links in neighbour
        # order, so Mininet's own numbering agrees with the explicit W+1+k ports
        for u in range(wan.n):
            for v in wan.neighbours(u):
                if v < u:
                    continue
                link = wan.link(u, v)
                params = kernel_link_params(link, scale, loss) if mode == "kernel" else {}
                net.addLink(switches[u], switches[v], cls=TCLink if mode == "kernel" else Link,
                            port1=wan_ports(wan, u, hosts_per_city)[v],
                            port2=wan_ports(wan, v, hosts_per_city)[u], **params)  # fmt: skip
        net.build()
        for u, city_hosts in enumerate(hosts):
            island = host_specs(u, hosts_per_city, name_prefix)
            for host, spec in zip(city_hosts, island, strict=True):
                _configure_host(host, u, island, spec)
        net.start()  # starts every p4switch, then P4Switch.batchStartup waits for them all
    except BaseException:
        for sw in net.switches:
            sw.stop_process()
        net.stop()
        raise
    testbed = TestbedNet(wan, net, tuple(hosts), tuple(switches), mode, scale, workdir)
    log.info("testbed up in %.1f s: %d cities x %d hosts, %s shaping, scale %g",
             time.monotonic() - started, wan.n, hosts_per_city, mode, scale)  # fmt: skip
    return testbed


# --- the script --------------------------------------------------------------------------------


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m topo.mininet_net",
        description="Start the innet testbed in Mininet (one p4switch per city running "
        "innet.p4) and open Mininet's CLI. The switches start with empty tables: program "
        f"them over P4Runtime ({grpc_address(0)} + city index) from another terminal.",
    )
    parser.add_argument("topology", nargs="?", type=Path, default=None,
                        help="WAN model YAML (default: the nine-city WAN)")  # fmt: skip
    parser.add_argument("--hosts", type=int, default=1, metavar="W", help="hosts per city")
    parser.add_argument("--scale", type=float, default=1.0,
                        help="emulation scale: link rates are divided by it")  # fmt: skip
    parser.add_argument("--slots", type=int, default=None, help="SLOTS for innet.p4")
    parser.add_argument("--program", type=Path, default=DEFAULT_PROGRAM, help="P4 program")
    parser.add_argument("--shaping", choices=("auto", "kernel", "switch"), default="auto")
    parser.add_argument(
        "--target",
        choices=TARGETS,
        default="p4switch",
        help="edge switches: p4switch (default) or bmv2 (simple_switch_grpc)",
    )
    parser.add_argument(
        "--log-console",
        action="store_true",
        help="bmv2 only: BMv2's per-packet log on its console (slow)",
    )
    parser.add_argument("--workdir", type=Path, default=Path("/tmp/innet-testbed"),
                        help="control sockets and p4switch logs (default %(default)s)")  # fmt: skip
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    from mininet.cli import CLI
    from mininet.log import setLogLevel

    from topo.exceptions import ShapingError, TopologyError
    from topo.loader import default_wan, load_wan

    setLogLevel("info")
    try:
        wan = default_wan() if args.topology is None else load_wan(args.topology)
        net = build_network(wan, args.hosts, args.workdir, program=args.program,
                            slots=args.slots, scale=args.scale, shaping=args.shaping,
                            target=args.target, log_console=args.log_console)  # fmt: skip
    except (NetworkBuildError, ShapingError, SwitchStartError, TopologyError, OSError) as err:
        print(f"topo.mininet_net: error: {err}", file=sys.stderr)
        return 2
    with net:
        for u, sw in enumerate(net.switches):
            ports = ", ".join(f"{p}={i}" for p, i in sorted(sw.port_interfaces().items()))
            print(f"{wan.names[u]:>12} {sw.name}: P4Runtime {sw.grpc_addr} device {sw.device_id}"
                  f" [{ports}]")  # fmt: skip
        print(f"shaping: {net.shaping}, scale {net.scale:g}; logs in {net.workdir}")
        CLI(net.mininet)
    return 0


if __name__ == "__main__":
    sys.exit(main())
