"""A link emulator: a wire between two interfaces that delays, rate-limits and loses frames.

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
"""

from __future__ import annotations

import argparse
import logging
import signal
import sys
import threading
from collections.abc import Mapping, Sequence

from p4switch.commandline import OneLineParser
from p4switch.exceptions import ControlError, P4SwitchError, PortError, UsageError, one_line
from p4switch.shaping import ShapeSpec, parse_shape

log = logging.getLogger("p4switch.linkemu")


def peer(port: int) -> int:
    """The other port of `port`'s pair: 1 <-> 2, 3 <-> 4, ..."""
    return port + 1 if port % 2 else port - 1


class Wire:
    """The emulator's packet processor: every frame leaves by the other port of its pair."""

    def process(self, ingress_port: int, data: bytes) -> list[tuple[int, bytes]]:
        return [(peer(ingress_port), data)]


def wire_ports(texts: Sequence[str]) -> dict[int, str]:
    """`-i PORT@IFACE` arguments as port -> interface; every port's pair partner must be given."""
    ports: dict[int, str] = {}
    for text in texts:
        number, sep, name = text.partition("@")
        if not sep or not number.isdigit() or int(number) < 1 or not name:
            raise UsageError(f"-i {text!r}: write PORT@INTERFACE with PORT >= 1, e.g. 1@veth1")
        if int(number) in ports:
            raise UsageError(f"port {number} is given twice ({ports[int(number)]} and {name})")
        ports[int(number)] = name
    if not ports:
        raise UsageError("give at least one pair of ports: -i 1@IFACE -i 2@IFACE")
    unpaired = sorted(p for p in ports if peer(p) not in ports)
    if unpaired:
        raise UsageError(
            f"port(s) {unpaired} have no partner: ports pair up 1 with 2, 3 with 4, ... "
            f"(give -i {peer(unpaired[0])}@IFACE)"
        )
    return ports


def wire_shapes(texts: Sequence[str], ports: Mapping[int, str]) -> dict[int, ShapeSpec]:
    shapes: dict[int, ShapeSpec] = {}
    for text in texts:
        port, spec = parse_shape(text)
        if port not in ports:
            raise UsageError(f"--shape {text!r}: port {port} is not bound by any -i")
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
        ports = wire_ports(args.interfaces)
        shapes = wire_shapes(args.shape, ports)
    except P4SwitchError as err:
        print(f"linkemu: error: {one_line(err)}", file=sys.stderr)
        return err.exit_status
    return _serve(args, ports, shapes)


def _serve(args: argparse.Namespace, ports: dict[int, str], shapes: dict[int, ShapeSpec]) -> int:
    from pathlib import Path

    from p4switch.control import ControlServer
    from p4switch.dataplane import Switch

    control_path, pcap = args.control, Path(args.pcap) if args.pcap else None
    try:
        switch = Switch(ports, Wire(), shaping=shapes, seed=args.seed, pcap_dir=pcap)
    except (PortError, OSError) as err:
        print(f"linkemu: error: {err}", file=sys.stderr)
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
            log.info("link emulator ready: ports %s", ports)
            switch.run(stop)
        finally:
            if control is not None:
                control.close()
    log.info("link emulator stopped: %s", switch.stats())
    return 0


if __name__ == "__main__":
    sys.exit(main())
