"""A switch process for the netns tests: `python -m tests.netns.forwarder --port 1=IF ...`.

Runs a `Switch` around `TwoPortForwarder` with a control channel, until SIGTERM or SIGINT, then
exits 0 having flushed its captures and removed its control socket.
"""

from __future__ import annotations

import argparse
import logging
import signal
import struct
import sys
import threading
from collections.abc import Sequence
from pathlib import Path
from types import FrameType

from p4switch.control import ControlServer
from p4switch.dataplane import Switch
from p4switch.exceptions import ControlError, PortError, ShapeError
from p4switch.shaping import ShapeSpec, parse_shape

POISON_ETHERTYPE = 0x88B5  # IEEE local experimental; the test double "crashes" on it


class TwoPortForwarder:
    """Test double standing in for a P4 pipeline: port 1 <-> port 2, frames unchanged.

    Like a buggy pipeline it raises on frames it cannot handle (runts, and any frame with
    ethertype POISON_ETHERTYPE), which the switch must survive.
    """

    def process(self, ingress_port: int, data: bytes) -> list[tuple[int, bytes]]:
        (ethertype,) = struct.unpack_from("!H", data, 12)
        if ethertype == POISON_ETHERTYPE:
            raise ValueError("poison frame: a simulated pipeline bug")
        return [(2 if ingress_port == 1 else 1, data)]


def _port(text: str) -> tuple[int, str]:
    number, sep, name = text.partition("=")
    if not sep or not number.isdigit() or not name:
        raise argparse.ArgumentTypeError(f"{text!r}: write NUMBER=INTERFACE, e.g. 1=s1-eth1")
    return int(number), name


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.netns.forwarder")
    parser.add_argument("--port", type=_port, action="append", required=True)
    parser.add_argument("--shape", action="append", default=[], help="PORT:SPEC")
    parser.add_argument("--control", type=Path, required=True)
    parser.add_argument("--pcap-dir", type=Path)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    stop = threading.Event()
    try:
        shaping: dict[int, ShapeSpec] = dict(parse_shape(text) for text in args.shape)
        switch = Switch(
            dict(args.port),
            TwoPortForwarder(),
            shaping=shaping,
            pcap_dir=args.pcap_dir,
            seed=args.seed,
        )
    except (ShapeError, PortError, LookupError) as err:
        print(f"forwarder: error: {err}", file=sys.stderr)
        return 2

    def on_signal(signum: int, frame: FrameType | None) -> None:
        stop.set()
        switch.wake()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    with switch:
        try:
            control = ControlServer(args.control, switch)
        except ControlError as err:
            print(f"forwarder: error: {err}", file=sys.stderr)
            return 2
        with control:
            switch.run(stop)
    return 0


if __name__ == "__main__":
    sys.exit(main())
