"""The `p4switch` command: a P4 switch process, with a command line modelled on simple_switch_grpc.

    p4switch --p4 prog.p4 -i 1@veth1 -i 2@veth2 --grpc-addr 127.0.0.1:50051 --device-id 1
             [--cpu-port N] [--pcap DIR] [--log-level LEVEL] [--shape PORT:SPEC]...
             [--control PATH] [--p4info-out PATH] [--check] [--backend native|python]
             [--io native|python]

The program is compiled once at start (or when a controller sends a new one with
SetForwardingPipelineConfig); ports are bound with AF_PACKET; SIGTERM or SIGINT shuts it down
cleanly. Compile errors print `file:line:col: error: ...` and exit with status 2; a failure of
the compiler itself (a p4switch bug) prints one line saying "internal error" and exits with 3.

`--backend` chooses what runs the program: `native` (C built with the system compiler) or
`python`; by default native, and python with one line saying why where native cannot run
(`p4switch.backends`). `--io` chooses the loop that moves frames the same way; by default it
follows the back end (the native loop calls a native pipeline without Python per frame).

A program given with `--p4` is trusted: its includes resolve as cpp resolves them. A program
sent over P4Runtime is not: it is compiled in a child process bounded by `--compile-timeout`
and `--compile-memory`, and may include only from p4switch's include directory, the directory
of the `--p4` program and the `-I` directories (`p4switch.p4rt.compiling`).
"""

from __future__ import annotations

import argparse
import logging
import math
import signal
import sys
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from p4switch.commandline import OneLineParser, make_folder
from p4switch.exceptions import (
    CompilerBug,
    ControlError,
    P4CompileError,
    P4SwitchError,
    PortError,
    UsageError,
    one_line,
)

if TYPE_CHECKING:
    from p4switch.dataplane import PacketProcessor
    from p4switch.p4rt.compiling import CompileLimits
    from p4switch.program import CompiledProgram
    from p4switch.shaping import ShapeSpec

log = logging.getLogger("p4switch")


def build_parser() -> argparse.ArgumentParser:
    p = OneLineParser(prog="p4switch", description=__doc__.split("\n\n")[0])
    p.add_argument("--p4", type=Path, help="P4_16 program (v1model) to run from the start")
    p.add_argument(
        "-I",
        dest="include",
        type=Path,
        action="append",
        default=[],
        help="extra include directory for the preprocessor",
    )
    p.add_argument(
        "-D",
        dest="defines",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="preprocessor define, as p4c's -D (e.g. -D SLOTS=4096)",
    )
    p.add_argument(
        "-i",
        "--interface",
        dest="interfaces",
        action="append",
        default=[],
        metavar="PORT@IFACE",
        help="bind switch port PORT to interface IFACE (once per port; without any, the switch "
        "has no ports and serves P4Runtime alone)",
    )
    p.add_argument(
        "--grpc-addr",
        default="127.0.0.1:50051",
        help="P4Runtime server address (default 127.0.0.1:50051)",
    )
    p.add_argument("--device-id", type=int, default=1, help="P4Runtime device id (default 1)")
    p.add_argument(
        "--cpu-port",
        type=int,
        help="port whose frames go to and come from the controller (packet-in/out)",
    )
    p.add_argument("--pcap", type=Path, metavar="DIR", help="write per-port pcap files here")
    p.add_argument(
        "--shape",
        action="append",
        default=[],
        metavar="PORT:SPEC",
        help="egress shaping, e.g. 3:delay=70ms,rate=10Mbit,loss=0.01,limit=500,jitter=2ms "
        "(add reorder=on to let jittered frames overtake)",
    )
    p.add_argument(
        "--control",
        type=Path,
        metavar="PATH",
        help="Unix socket of the local control channel (shaping, statistics)",
    )
    p.add_argument(
        "--p4info-out",
        type=Path,
        metavar="PATH",
        help="write the program's P4Info (.txtpb or .txt: text format; .bin: binary)",
    )
    p.add_argument(
        "--check",
        action="store_true",
        help="compile the program (and write --p4info-out), then exit",
    )
    p.add_argument(
        "--parser-reject",
        choices=["ingress", "drop"],
        default="ingress",
        help="a packet the parser rejects goes on to ingress with parser_error set, as on BMv2 "
        "(default), or is dropped; counted either way",
    )
    p.add_argument(
        "--compile-timeout",
        type=float,
        default=20.0,
        metavar="SECONDS",
        help="longest a program sent over P4Runtime may take to compile (default 20)",
    )
    p.add_argument(
        "--compile-memory",
        type=int,
        default=1024,
        metavar="MIB",
        help="most memory compiling a program sent over P4Runtime may take (default 1024)",
    )
    p.add_argument(
        "--backend",
        choices=["native", "python"],
        help="what runs the program: native (C, built once and cached) or python; default "
        "native, else python with one line saying why",
    )
    p.add_argument(
        "--io",
        choices=["native", "python"],
        help="the loop that moves frames (batched native I/O and shaping, or python); default: "
        "native when the program runs on the native back end",
    )
    p.add_argument(
        "--log-level", default="info", choices=["debug", "info", "warning", "error", "critical"]
    )
    return p


def _interface(text: str) -> tuple[int, str]:
    number, sep, name = text.partition("@")
    if not sep or not number.isdigit() or not name:
        raise UsageError(f"-i {text!r}: write PORT@INTERFACE, e.g. 1@veth1")
    if len(name) > 15:
        raise UsageError(f"-i {text!r}: interface names have at most 15 characters")
    return int(number), name


def _ports(texts: Sequence[str], cpu_port: int | None) -> dict[int, str]:
    ports: dict[int, str] = {}
    for text in texts:
        number, name = _interface(text)
        if number in ports:
            raise UsageError(f"port {number} is given twice ({ports[number]} and {name})")
        if number == cpu_port:
            raise UsageError(f"port {number} is the CPU port; it cannot be bound to {name}")
        ports[number] = name
    return ports


def _defines(texts: Sequence[str]) -> dict[str, str]:
    defines = {}
    for text in texts:
        name, _, value = text.partition("=")
        if not name:
            raise UsageError(f"-D {text!r}: write NAME or NAME=VALUE")
        defines[name] = value or "1"
    return defines


def _compile_limits(timeout: float, memory_mib: int) -> CompileLimits:
    from p4switch.p4rt.compiling import CompileLimits

    if not (math.isfinite(timeout) and 0 < timeout <= 3600):
        raise UsageError(f"--compile-timeout {timeout}: give seconds in (0, 3600]")
    if not 64 <= memory_mib <= 1 << 20:
        raise UsageError(f"--compile-memory {memory_mib}: give MiB in [64, 1048576]")
    return CompileLimits(timeout, math.ceil(timeout), memory_mib << 20)


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    logging.basicConfig(
        level=getattr(logging, args.log_level.upper()),
        format="%(asctime)s p4switch[%(process)d] %(levelname)s %(name)s: %(message)s",
    )
    # imported here so that --help answers without loading the compiler and gRPC
    from p4switch.program import compile_file
    from p4switch.shaping import parse_shape

    try:
        ports = _ports(args.interfaces, args.cpu_port)
        shaping = dict(parse_shape(text) for text in args.shape)
        unknown = sorted(set(shaping) - set(ports))
        if unknown:
            raise UsageError(f"--shape names ports {unknown} that no -i binds")
        if args.check and args.p4 is None:
            raise UsageError("--check needs --p4")
        defines = _defines(args.defines)
        limits = _compile_limits(args.compile_timeout, args.compile_memory)
        program = compile_file(args.p4, args.include, defines) if args.p4 is not None else None
        if program is not None and args.p4info_out is not None:
            from p4switch.p4info import write_p4info  # protobuf: only when a P4Info is written

            make_folder(args.p4info_out.parent, "--p4info-out")
            write_p4info(program.p4info, args.p4info_out)
    except P4CompileError as err:  # file:line:column and the line itself, as compilers print
        print(err, file=sys.stderr)
        return err.exit_status
    except CompilerBug as err:  # p4switch's fault, not the program's: one line, exit 3
        print(f"p4switch: {args.p4}: {one_line(err)}", file=sys.stderr)
        return err.exit_status
    except P4SwitchError as err:
        print(f"p4switch: error: {one_line(err)}", file=sys.stderr)
        return err.exit_status
    except OSError as err:  # the program or an include cannot be read
        print(f"p4switch: error: {err}", file=sys.stderr)
        return 2
    if args.check:
        return 0
    return _serve(args, ports, shaping, program, limits)


class Unprogrammed:
    """The data plane before any program is loaded: every frame is dropped (and counted)."""

    def process(self, ingress_port: int, data: bytes) -> list[tuple[int, bytes]]:
        return []


def backend_of(processor: object) -> str:
    """ "native" for a pipeline the native back end runs (it has a C entry point), else "python"."""
    return "native" if hasattr(processor, "native_entry") else "python"


class Reported:
    """The switch as the control channel sees it: its statistics name the back end running the
    program and the I/O loop (`"backend"`, `"io"`), so a run can record what it measured."""

    def __init__(self, switch: Any, backend: str, io: str) -> None:
        self._switch = switch
        self.backend = backend
        self.io = io

    def set_processor(self, processor: PacketProcessor) -> None:
        self.backend = backend_of(processor)
        self._switch.set_processor(processor)

    def shape(self, port: int, spec: ShapeSpec) -> None:
        self._switch.shape(port, spec)

    def stats(self, reset_peaks: bool = False) -> dict[str, Any]:
        return {**self._switch.stats(reset_peaks), "backend": self.backend, "io": self.io}


def _serve(
    args: argparse.Namespace,
    ports: dict[int, str],
    shaping: dict[int, ShapeSpec],
    program: CompiledProgram | None,
    limits: CompileLimits,
) -> int:
    # the switch itself (data plane, control channel, gRPC): only once the arguments are good
    from p4switch.backends import build_pipeline, build_switch, choose, log_choice
    from p4switch.control import ControlServer
    from p4switch.p4rt import LoadedProgram, P4RuntimeServer
    from p4switch.p4rt.compiling import SourceLoader, Started

    cpu_port = args.cpu_port
    # a pushed program includes from here (and p4switch's own include directory) only
    include = [*([args.p4.parent] if args.p4 is not None else []), *args.include]
    state = program.new_state() if program is not None else None
    processor: PacketProcessor = Unprogrammed()
    try:
        if program is not None and state is not None:
            built = build_pipeline(
                program, state, args.backend, cpu_port=cpu_port, parser_reject=args.parser_reject
            )
            processor, backend = built.pipeline, built.choice
            log_choice(f"program {args.p4}", backend)
        else:
            backend = choose(args.backend, lambda: None)  # checked when a program arrives
        io = args.io if args.io is not None else (None if backend.name == "native" else "python")
        switch, io_choice = build_switch(
            ports, processor, io, shaping=shaping, pcap_dir=args.pcap, cpu_port=cpu_port
        )
        log_choice("I/O loop", io_choice)
    except P4SwitchError as err:
        print(f"p4switch: error: {one_line(err)}", file=sys.stderr)
        return err.exit_status
    except (PortError, LookupError, OSError) as err:
        print(f"p4switch: error: {err}", file=sys.stderr)
        return 2

    reported = Reported(switch, backend_of(processor), io_choice.name)
    defines = _defines(args.defines)
    source = args.p4.read_bytes() if args.p4 is not None else b""
    started = None if program is None else Started.of(source, program, include, defines)
    load = SourceLoader(
        reported.set_processor,
        tuple(include),
        defines,
        limits,
        fallback=program,
        started=started,
        cpu_port=cpu_port,
        parser_reject=args.parser_reject,
        backend=args.backend,
    )

    def packet_out(frame: bytes) -> None:
        if cpu_port is None:
            log.warning("packet-out dropped: p4switch was started without --cpu-port")
            return
        switch.inject(cpu_port, frame)

    initial = None
    if program is not None and state is not None:
        initial = LoadedProgram(
            program.p4info, source, state, lambda: reported.set_processor(processor)
        )
    server = P4RuntimeServer(
        device_id=args.device_id,
        loader=load,
        send_packet_out=packet_out,
        initial=initial,
        cpu_port=cpu_port,
    )
    switch.on_cpu_packet = server.packet_in
    stop = threading.Event()

    def on_signal(signum: int, frame: object) -> None:
        stop.set()
        switch.wake()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    with switch:
        try:
            server.start(args.grpc_addr)
            control = ControlServer(args.control, reported) if args.control else None
        except (OSError, ControlError) as err:
            server.stop(0)
            print(f"p4switch: error: {err}", file=sys.stderr)
            return 2
        try:
            log.info("p4switch ready: ports %s, P4Runtime on %s", ports, args.grpc_addr)
            switch.run(stop)
        finally:
            if control is not None:
                control.close()
            server.stop()
    log.info("p4switch stopped: %s", switch.stats())
    return 0


if __name__ == "__main__":
    sys.exit(main())
