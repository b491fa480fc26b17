"""The options of the testbed service, shared by `innet net up`, `innet serve` and
`python -m controller.service`, and what they say once checked (`ServiceConfig`). Light to
import: the CLI builds its parser from them, and `innet net up` checks them before it starts
the service in the background."""

from __future__ import annotations

import argparse
import ipaddress
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from controller.cluster.clocks import ClockMode
from controller.exceptions import CommandLineError
from controller.flags import (
    MAX_PORT,
    number,
    port,
    power_of_two,
    rate_flag,
    size_flag,
    whole,
)
from controller.planner.cost import CostParams
from innet.exceptions import InputError
from innet.packetformat import DEFAULT_LANES, LANE_CHOICES, PacketFormat
from innet.units import parse_size
from innet.vocabulary import P4Target, Shaping
from topo.exceptions import UnknownCityError
from topo.loader import default_wan, load_wan
from topo.mininet_net import NetworkSpec
from topo.shaping import SHAPING_HELP
from topo.siteplan import GRPC_BASE_PORT, MAX_HOSTS_PER_ISLAND, MAX_SLOTS, SlotPool
from topo.wan import Wan

DEFAULT_PORT = 8700
SERVICE_ERROR = "innet service: error: "  # how the service's last line says why it exited
MAX_SCALE = 1e9  # 64 MB at this scale is below one slot: no larger scale is of use
MAX_TOKEN_BYTES = 4096  # a bearer token is one line; a larger file is not one


def service_options(p: argparse.ArgumentParser) -> None:
    """Options shared by `innet net up`, `innet serve` and this module."""
    p.add_argument("topology", nargs="?", type=Path, help="topology YAML (default: nine cities)")
    p.add_argument(
        "--hosts",
        type=whole(1, MAX_HOSTS_PER_ISLAND),
        default=1,
        help=f"hosts per city, 1..{MAX_HOSTS_PER_ISLAND} (default 1)",
    )
    p.add_argument("--memory", default="64MB", help="aggregator memory per site (default 64MB)")
    p.add_argument("--update-size", default="1GB", help="bytes each island sends per round")
    p.add_argument("--bandwidth", default="10Gbps", help="each island's access bandwidth")
    p.add_argument(
        "--scale",
        type=number(1, MAX_SCALE),
        default=1000.0,
        help=f"divide link rates and memory by this, 1..{MAX_SCALE:g} (default 1000)",
    )
    p.add_argument(
        "--slots",
        type=power_of_two(MAX_SLOTS),
        help=f"slots per bank on the switches, a power of two up to {MAX_SLOTS} (default: the "
        "largest whose two banks of 128 B slots fit in memory / scale)",
    )
    p.add_argument(
        "--shaping",
        type=Shaping.argument,
        choices=tuple(Shaping),
        default=Shaping.AUTO,
        help=SHAPING_HELP,
    )
    p.add_argument(
        "--target",
        type=P4Target.argument,
        choices=tuple(P4Target),
        default=P4Target.P4SWITCH,
        help="edge switches: p4switch (default) or bmv2 (simple_switch_grpc)",
    )
    p.add_argument(
        "--log-console",
        action="store_true",
        help="bmv2 only: BMv2's per-packet log on its console (slow)",
    )
    p.add_argument(
        "--lanes",
        type=int,
        choices=LANE_CHOICES,
        default=DEFAULT_LANES,
        help="int32 values in one innet packet (default %(default)s): the switches' "
        "-D LANES and the slot size",
    )
    p.add_argument("--port", type=port(), default=DEFAULT_PORT, help="API port on 127.0.0.1")
    p.add_argument("--host", default="127.0.0.1", help="address the API binds (default loopback)")
    p.add_argument("--token-file", type=Path, help="file holding a bearer token the API requires")
    p.add_argument(
        "--run-dir",
        type=Path,
        help="state directory (default $INNET_RUN_DIR, "
        "/run/innet for root, else $XDG_RUNTIME_DIR/innet)",
    )
    p.add_argument(
        "--grpc-base-port",
        type=port(),
        default=GRPC_BASE_PORT,
        help=f"P4Runtime port of the first city's switch (default {GRPC_BASE_PORT})",
    )
    p.add_argument(
        "--cluster",
        metavar="HEAD",
        help="build the testbed on the Ray cluster whose head is at HEAD[:PORT], each city on "
        "one of its machines (docs/cluster.md); the edges are p4switch, the links in link "
        "emulators",
    )
    p.add_argument(
        "--placement",
        action="append",
        metavar="CITY=ADDRESS[,...]",
        help="with --cluster, each city's machine by its address in the cluster, every city "
        "once (repeat the option or separate with commas; default: chosen)",
    )
    p.add_argument(
        "--clocks",
        type=ClockMode.argument,
        choices=tuple(ClockMode),
        default=ClockMode.REFUSE,
        help="with --cluster, a machine whose clock offset is known more loosely than the "
        "plan's smallest timing headroom: refuse (default) starts nothing; flag serves and "
        "flags every experiment round 'clocks'",
    )


@dataclass(frozen=True, slots=True)
class ServiceConfig:
    """What the service's options say, checked: the testbed to build and how to serve it."""

    wan: Wan
    pool: SlotPool
    params: CostParams
    spec: NetworkSpec
    token: str | None
    cluster: str | None = None  # the Ray cluster's head to build on (None: this machine)
    placement: tuple[str, ...] | None = None  # per city (WAN order): its machine's address
    clocks: ClockMode = ClockMode.REFUSE

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> ServiceConfig:
        """InputError (exit status 2) for any option innet cannot use."""
        wan = default_wan() if args.topology is None else load_wan(args.topology)
        check_ports(wan, args.port, args.grpc_base_port)
        shaping = check_cluster(args)
        placement = None if args.placement is None else placement_flag(args.placement, wan)
        update = size_flag("--update-size", args.update_size)
        bandwidth = rate_flag("--bandwidth", args.bandwidth)
        size_flag("--memory", args.memory)
        pool = slot_pool(args.memory, args.scale, args.slots, PacketFormat(args.lanes))
        params = CostParams.for_pool(pool, update, bandwidth)
        spec = NetworkSpec(
            wan,
            args.hosts,
            slots=pool.slots_per_bank,
            scale=pool.scale,
            shaping=shaping,
            target=args.target,
            grpc_base_port=args.grpc_base_port,
            packet_format=pool.packet_format,
            log_console=args.log_console,
        )
        token = read_token(args.token_file)
        return cls(wan, pool, params, spec, token, args.cluster, placement, args.clocks)


def check_cluster(args: argparse.Namespace) -> Shaping:
    """The shaping the network is built with: on a cluster its WAN links are in link
    emulators (the crossing ones carried between machines), its edges p4switch; --placement
    and a --clocks other than the default only mean something with --cluster."""
    if args.cluster is None:
        if args.placement is not None:
            raise CommandLineError("--placement places cities on a cluster: add --cluster")
        if args.clocks != ClockMode.REFUSE:
            raise CommandLineError("--clocks judges a cluster's clocks: add --cluster")
        return Shaping(args.shaping)
    if args.target != P4Target.P4SWITCH or args.shaping not in (Shaping.AUTO, Shaping.LINKS):
        raise CommandLineError(
            "--cluster builds p4switch edges with their WAN links in link emulators (--target "
            f"p4switch, --shaping links), not --target {args.target} --shaping {args.shaping}"
        )
    if args.log_console:
        raise CommandLineError("--log-console is BMv2's; --cluster builds p4switch edges")
    return Shaping.LINKS


def placement_flag(given: Sequence[str], wan: Wan) -> tuple[str, ...]:
    """`--placement CITY=ADDRESS[,CITY=ADDRESS...]` (repeatable): every city of the WAN once,
    by name or code, each to a machine's IPv4 address; each city's address in WAN order."""
    where: dict[int, str] = {}
    for item in (part.strip() for text in given for part in text.split(",")):
        city, sep, address = item.partition("=")
        if not sep or not city.strip() or not address.strip():
            raise CommandLineError(
                f"--placement {item!r}: write CITY=ADDRESS (for example Tokyo=10.0.0.2)"
            )
        try:
            island = wan.index(city.strip())
        except UnknownCityError as err:
            raise CommandLineError(f"--placement: {err}") from None
        if island in where:
            raise CommandLineError(
                f"--placement: {wan.names[island]} is placed twice: give each city once"
            )
        try:
            ipaddress.IPv4Address(address.strip())
        except ValueError:
            raise CommandLineError(
                f"--placement: {wan.names[island]}={address.strip()!r} is not an IPv4 address: "
                "give the machine's address in the cluster"
            ) from None
        where[island] = address.strip()
    missing = [wan.names[u] for u in range(wan.n) if u not in where]
    if missing:
        raise CommandLineError(
            f"--placement: {', '.join(missing)} {'is' if len(missing) == 1 else 'are'} placed on "
            "no machine: give every city a machine, or leave --placement out to have it chosen"
        )
    return tuple(where[u] for u in range(wan.n))


def slot_pool(
    memory: str, scale: float, slots: int | None, packet_format: PacketFormat
) -> SlotPool:
    """The switches' slot pool of `packet_format`'s slots: `slots` per bank when given, else the
    largest pool that fits in `memory` at `scale` (both banks counted, topo/siteplan.py)."""
    if slots is not None:
        return SlotPool(slots, scale, packet_format)
    return SlotPool.for_memory(parse_size(memory), scale, packet_format)


def check_ports(wan: Wan, api_port: int, grpc_base_port: int) -> None:
    """City u's switch serves P4Runtime on grpc_base_port + u: every one a port, none the API's."""
    last = grpc_base_port + wan.n - 1
    if last > MAX_PORT:
        raise CommandLineError(
            f"--grpc-base-port {grpc_base_port}: the {wan.n} switches would need ports up to "
            f"{last}, above {MAX_PORT}; give at most {MAX_PORT - wan.n + 1}"
        )
    if grpc_base_port <= api_port <= last:
        raise CommandLineError(
            f"--port {api_port} is one of the switches' P4Runtime ports "
            f"({grpc_base_port}..{last}, from --grpc-base-port): choose another"
        )


def read_token(path: Path | None) -> str | None:
    """The token in `path`: a regular file (not a FIFO or device) of one short line."""
    if path is None:
        return None
    if path.exists() and not path.is_file():
        raise InputError(f"token file {path} is not a regular file")
    try:
        with path.open("rb") as file:
            data = file.read(MAX_TOKEN_BYTES + 1)
    except OSError as err:
        raise InputError(f"cannot read token file {path}: {err.strerror}") from err
    if len(data) > MAX_TOKEN_BYTES:
        raise InputError(f"token file {path} is larger than {MAX_TOKEN_BYTES} bytes")
    try:
        token = data.decode("utf-8").strip()
    except UnicodeDecodeError:
        raise InputError(f"token file {path} is not UTF-8 text") from None
    if not token:
        raise InputError(f"token file {path} is empty")
    if not (token.isascii() and token.isprintable()) or any(c.isspace() for c in token):
        raise InputError(
            f"token file {path}: a bearer token is one word of printable ASCII (an HTTP header "
            "carries it); write it without spaces, tabs or line breaks"
        )
    return token
