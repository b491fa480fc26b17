"""p4switch's I/O loops around any packet processor: a switch on two interfaces, in the python
loop (`p4switch.dataplane.Switch`) or the native one (`p4switch.nativeio.NativeSwitch`),
running a `PacketProcessor` a factory makes (`--processor module:callable`; default: port 1 <->
port 2 in Python). What the `p4switch` command cannot run: a processor that is no P4 program,
such as the C port swap of bench/processors.py, the limit of the native loop's batched I/O.

It prints "ready" once the ports are open and, on SIGTERM or SIGINT, the switch's statistics
as one JSON line. A forwarding benchmark starts it in its switch namespace:

    python bench/io_loop.py IF1 IF2 {python,native} [--processor bench.processors:portswap_c]
        [--shape 2:rate=10Mbit ...]

A processor module is looked for beside p4switch's bench, then in the working directory.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import signal
import sys
import threading
from collections.abc import Sequence
from pathlib import Path
from types import FrameType
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run as a script from anywhere

from p4switch.dataplane import PacketProcessor, Switch
from p4switch.shaping import parse_shape


class TwoPortForwarder:
    """The default processor: frames from port 1 leave on port 2 and the other way round."""

    def process(self, ingress_port: int, data: bytes) -> list[tuple[int, bytes]]:
        return [(3 - ingress_port, data)]


def load_processor(spec: str | None) -> PacketProcessor:
    """The processor `spec` (module:callable) makes, or the two-port forwarder."""
    if not spec:
        return TwoPortForwarder()
    module, sep, name = spec.partition(":")
    if not sep:
        raise SystemExit(f"io_loop: --processor {spec!r}: write module:callable")
    sys.path.append(os.getcwd())
    factory = getattr(importlib.import_module(module), name)
    processor: PacketProcessor = factory()
    return processor


def serve(if1: str, if2: str, io: str, processor: str | None, shapes: Sequence[str]) -> None:
    """A switch on ports 1 and 2 in the `io` loop; prints "ready", then its stats when stopped."""
    shaping = dict(parse_shape(text) for text in shapes)
    loop: Any = Switch
    if io == "native":
        from p4switch.nativeio import NativeSwitch

        loop = NativeSwitch
    stop = threading.Event()
    with loop({1: if1, 2: if2}, load_processor(processor), shaping=shaping) as switch:

        def handler(signum: int, frame: FrameType | None) -> None:
            stop.set()
            switch.wake()

        signal.signal(signal.SIGTERM, handler)
        signal.signal(signal.SIGINT, handler)
        print("ready", flush=True)
        switch.run(stop)
        stats = switch.stats()
    print(json.dumps({"stats": stats}, default=str), flush=True)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="bench/io_loop.py", description=__doc__.splitlines()[0])
    parser.add_argument("if1", help="port 1's interface")
    parser.add_argument("if2", help="port 2's interface")
    parser.add_argument("io", choices=("python", "native"), help="the I/O loop")
    parser.add_argument("--processor", help="module:callable returning a PacketProcessor")
    parser.add_argument("--shape", action="append", default=[], help="PORT:SPEC, as p4switch's")
    options = parser.parse_args(argv)
    serve(options.if1, options.if2, options.io, options.processor, options.shape)
    return 0


if __name__ == "__main__":
    sys.exit(main())
