"""A link emulator: a wire between two ports that delays, rate-limits and loses frames.

    python -m p4switch.linkemu -i 1@s0-eth3 -i 2@s3-eth2 \\
        --shape 1:delay=35ms,rate=10Mbit --shape 2:delay=35ms,rate=10Mbit --control l0x3.sock

Ports come in pairs, 1 with 2, 3 with 4, and so on: a frame received on one port of a pair is
sent out of the other, unchanged, through that port's egress shaping (p4switch.shaping: loss,
then serialisation at the rate with a drop-tail queue, then the delay line, jittered when the
spec has `jitter=`). So `--shape 2:...` shapes the direction from port 1 to port 2. Nothing is
parsed or looked up: the emulator runs the same I/O loop, shaping and control channel (`ping`,
`stats`, `shape`) as p4switch, with a wire in place of the P4 pipeline, so a switch that cannot
shape its own ports (BMv2) gets the same WAN links as p4switch's own shaping gives. SIGTERM or
SIGINT stops it; exit status 2 for bad arguments.

A port is an interface (`-i PORT@IFACE`) or a tunnel port (`-u PORT@LOCAL_IP:LOCAL_PORT=
PEER_IP:PEER_PORT`): a UDP socket bound to LOCAL, an IPv4 address of this machine, and connected
to PEER, the tunnel port of the emulator on another machine, whose datagrams alone it takes. One
datagram carries one Ethernet frame, unchanged, nothing added. Use tunnel ports for a link whose
two ends are on different machines: each machine runs an emulator with the interface of its end
paired with a tunnel port to the other machine's, and each direction is shaped once, on its
sending side, by the shape of the tunnel port it leaves by:

    machine A: python -m p4switch.linkemu -i 1@s0-eth3 -u 2@10.250.0.1:7000=10.250.0.2:7000 \\
        --shape 2:delay=30ms,rate=10Mbit
    machine B: python -m p4switch.linkemu -u 1@10.250.0.2:7000=10.250.0.1:7000 -i 2@s3-eth2 \\
        --shape 1:delay=30ms,rate=10Mbit

The datagrams cross the physical network between the machines, whose own delay (and jitter, and
losses) add to the shaped ones: whoever configures the shape takes the network's delay off it.
A frame too long for the network's MTU once in a datagram (28 bytes more) is fragmented by the
kernel; one longer than a datagram carries (65,507 bytes) is dropped, counted as a tx_error, as
is a datagram the peer refused (nothing listens there yet: start both sides).
"""

from __future__ import annotations

import argparse
import ipaddress
import logging
import signal
import sys
import threading
from collections.abc import Mapping, Sequence

from p4switch.commandline import OneLineParser
from p4switch.exceptions import ControlError, P4SwitchError, PortError, UsageError, one_line
from p4switch.ports import SocketAddress, UdpTunnel
from p4switch.shaping import ShapeSpec, parse_shape

log = logging.getLogger("p4switch.linkemu")


def peer(port: int) -> int:
    """The other port of `port`'s pair: 1 <-> 2, 3 <-> 4, ..."""
    return port + 1 if port % 2 else port - 1


class Wire:
    """The emulator's packet processor: every frame leaves by the other port of its pair."""

    def process(self, ingress_port: int, data: bytes) -> list[tuple[int, bytes]]:
        return [(peer(ingress_port), data)]


TUNNEL_FORM = "PORT@LOCAL_IP:LOCAL_PORT=PEER_IP:PEER_PORT"


def _socket_address(text: str) -> SocketAddress:
    """`IP:PORT` as an IPv4 address and a UDP port, or a ValueError saying what is wrong."""
    ip, sep, port = text.rpartition(":")
    if not sep:
        raise ValueError(f"{text!r} has no :PORT")
    try:
        address = ipaddress.IPv4Address(ip)
    except ValueError:
        raise ValueError(f"{ip!r} is not an IPv4 address") from None
    if not port.isdigit() or not 1 <= int(port) <= 65535:
        raise ValueError(f"{port!r} is not a UDP port (1 to 65535)")
    return str(address), int(port)


def tunnel_port(text: str) -> tuple[int, UdpTunnel]:
    """A `-u PORT@LOCAL_IP:LOCAL_PORT=PEER_IP:PEER_PORT` argument as its port and tunnel."""
    number, _, ends = text.partition("@")
    local, sep, remote = ends.partition("=")
    try:
        if not number.isdigit() or int(number) < 1:
            raise ValueError(f"{number!r} is not a port number >= 1")
        if not sep:
            raise ValueError("there is no =PEER")
        tunnel = UdpTunnel(_socket_address(local), _socket_address(remote))
        if ipaddress.IPv4Address(tunnel.peer[0]).is_unspecified:
            raise ValueError(f"{tunnel.peer[0]} is no peer's address")
        if tunnel.local == tunnel.peer:
            raise ValueError("LOCAL and PEER are the same")
    except ValueError as err:
        raise UsageError(
            f"-u {text!r}: {err}; write {TUNNEL_FORM} with IPv4 addresses, "
            "e.g. 2@10.250.0.1:7000=10.250.0.2:7000"
        ) from None
    return int(number), tunnel


def wire_ports(
    interfaces: Sequence[str], tunnels: Sequence[str] = ()
) -> dict[int, str | UdpTunnel]:
    """`-i PORT@IFACE` and `-u PORT@LOCAL=PEER` arguments as port -> interface or tunnel; every
    port's pair partner must be given."""
    given: list[tuple[int, str | UdpTunnel]] = []
    for text in interfaces:
        digits, sep, name = text.partition("@")
        if not sep or not digits.isdigit() or int(digits) < 1 or not name:
            raise UsageError(f"-i {text!r}: write PORT@INTERFACE with PORT >= 1, e.g. 1@veth1")
        given.append((int(digits), name))
    given += [tunnel_port(text) for text in tunnels]
    ports: dict[int, str | UdpTunnel] = {}
    locals_bound: dict[SocketAddress, int] = {}
    for number, port in given:
        if number in ports:
            raise UsageError(f"port {number} is given twice ({ports[number]} and {port})")
        if isinstance(port, UdpTunnel):
            if port.local in locals_bound:
                raise UsageError(
                    f"ports {locals_bound[port.local]} and {number} both bind "
                    f"{port.local[0]}:{port.local[1]}: give each tunnel port its own LOCAL"
                )
            locals_bound[port.local] = number
        ports[number] = port
    if not ports:
        raise UsageError(
            "give at least one pair of ports: -i 1@IFACE -i 2@IFACE (or -u for a tunnel port)"
        )
    unpaired = sorted(p for p in ports if peer(p) not in ports)
    if unpaired:
        raise UsageError(
            f"port(s) {unpaired} have no partner: ports pair up 1 with 2, 3 with 4, ... "
            f"(give -i {peer(unpaired[0])}@IFACE or -u {peer(unpaired[0])}@LOCAL=PEER)"
        )
    return ports


def wire_shapes(texts: Sequence[str], ports: Mapping[int, str | UdpTunnel]) -> dict[int, ShapeSpec]:
    shapes: dict[int, ShapeSpec] = {}
    for text in texts:
        port, spec = parse_shape(text)
        if port not in ports:
            raise UsageError(f"--shape {text!r}: port {port} is not bound by any -i or -u")
        if port in shapes:
            raise UsageError(f"--shape: port {port} is shaped twice")
        shapes[port] = spec
    return shapes


def build_parser() -> argparse.ArgumentParser:
    p = OneLineParser(prog="python -m p4switch.linkemu", description=__doc__.split("\n\n")[0])
    p.add_argument(
        "-i",
        "--interface",
        dest="interfaces",
        action="append",
        default=[],
        metavar="PORT@IFACE",
        help="bind port PORT to IFACE (ports pair up: 1 with 2, 3 with 4, ...)",
    )
    p.add_argument(
        "-u",
        "--udp",
        dest="tunnels",
        action="append",
        default=[],
        metavar=TUNNEL_FORM,
        help="make port PORT a tunnel to another machine's link emulator: a UDP socket bound to "
        "LOCAL (an address of this machine) that exchanges frames, one per datagram, with PEER; "
        "IPv4 addresses only, e.g. 2@10.250.0.1:7000=10.250.0.2:7000",
    )
    p.add_argument(
        "--shape",
        action="append",
        default=[],
        metavar="PORT:SPEC",
        help="egress shaping of PORT, e.g. 2:delay=35ms,rate=10Mbit,loss=0.01,jitter=2ms",
    )
    p.add_argument("--control", metavar="PATH", help="Unix socket of the control channel")
    p.add_argument("--pcap", metavar="DIR", help="write <port>-in.pcap and <port>-out.pcap here")
    p.add_argument(
        "--seed", type=int, default=0, help="seed of the loss and jitter draws (default 0)"
    )
    p.add_argument(
        "--log-level", default="info", choices=["debug", "info", "warning", "error", "critical"]
    )
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    logging.basicConfig(
        level=getattr(logging, args.log_level.upper()),
        format="%(asctime)s linkemu[%(process)d] %(levelname)s %(name)s: %(message)s",
    )
    try:
        ports = wire_ports(args.interfaces, args.tunnels)
        shapes = wire_shapes(args.shape, ports)
    except P4SwitchError as err:
        print(f"linkemu: error: {one_line(err)}", file=sys.stderr)
        return err.exit_status
    return _serve(args, ports, shapes)


def _serve(
    args: argparse.Namespace, ports: dict[int, str | UdpTunnel], shapes: dict[int, ShapeSpec]
) -> int:
    from pathlib import Path

    from p4switch.control import ControlServer
    from p4switch.dataplane import Switch

    control_path, pcap = args.control, Path(args.pcap) if args.pcap else None
    try:
        switch = Switch(ports, Wire(), shaping=shapes, seed=args.seed, pcap_dir=pcap)
    except (PortError, OSError) as err:
        print(f"linkemu: error: {one_line(err)}", file=sys.stderr)
        return 2
    stop = threading.Event()

    def on_signal(signum: int, frame: object) -> None:
        stop.set()
        switch.wake()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    with switch:
        try:
            control = ControlServer(Path(control_path), switch) if control_path else None
        except ControlError as err:
            print(f"linkemu: error: {err}", file=sys.stderr)
            return 2
        try:
            log.info("link emulator ready: ports %s", switch.ports)
            switch.run(stop)
        finally:
            if control is not None:
                control.close()
    log.info("link emulator stopped: %s", switch.stats())
    return 0


if __name__ == "__main__":
    sys.exit(main())
