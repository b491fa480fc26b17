"""The p4switch command as bench/forwarding.py's switch: `python -m p4switch` on ports 1 and 2,
on the back end and in the I/O loop asked for, programmed over P4Runtime with the benchmark's
program and entries (`bench.programs`) as a controller programs it, as BMv2 is programmed
(bench/bmv2_forwarder.py).

Run inside the switch namespace (`bench.forwarding_rows` plans it), as the other forwarders are:

    python bench/p4switch_forwarder.py PROGRAM BACKEND IO IF1 IF2 [--shape PORT:SPEC ...]

PROGRAM is l2 or agg32; BACKEND (what runs the program) and IO (the loop that moves the frames)
are each native or python; a --shape goes to the switch as its own. It prints "ready" once the
entries are in and the switch's statistics confirm its back end and loop; on SIGTERM it reads
the statistics over the control socket, stops the switch and prints them as one JSON line.
"""

from __future__ import annotations

import argparse
import json
import signal
import subprocess
import sys
import tempfile
import threading
from collections.abc import Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run as a script from anywhere

from p4switch import ControlError, SwitchStats, compile_file, read_stats

from bench.native_tools import ForwardingBenchError
from bench.programs import PROGRAMS, forwarding_updates
from controller.p4rt.started import connect_started, log_tail, stop_started
from innet.exceptions import InnetError, one_line

CHOICES = ("native", "python")
DEVICE_ID = 1
STARTUP_S = 120.0  # a native back end builds its library the first time


def switch_command(
    program: str, backend: str, io: str, ports: Sequence[str], shapes: Sequence[str], tmp: Path
) -> list[str]:
    """The p4switch command line: ports 1 and 2, P4Runtime and control sockets in `tmp`."""
    argv = [sys.executable, "-m", "p4switch", "--p4", str(PROGRAMS[program])]
    argv += [f"--interface={n}@{name}" for n, name in enumerate(ports, 1)]
    argv += [f"--shape={shape}" for shape in shapes]
    argv += ["--grpc-addr", f"unix:{tmp}/p4rt.sock", "--device-id", str(DEVICE_ID)]
    argv += ["--control", str(tmp / "control.sock"), "--backend", backend, "--io", io]
    return [*argv, "--log-level", "warning"]


def stats_of(control: Path) -> SwitchStats:
    try:
        return read_stats(control, timeout=5.0)
    except ControlError as err:
        raise ForwardingBenchError(f"the switch gave no statistics: {err}") from err


def serve(program: str, backend: str, io: str, ports: Sequence[str], shapes: Sequence[str]) -> None:
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda signum, frame: stop.set())
    signal.signal(signal.SIGINT, lambda signum, frame: stop.set())
    with tempfile.TemporaryDirectory(prefix="p4switch-bench-") as name:
        tmp = Path(name)
        log = tmp / "switch.log"
        with log.open("wb") as out:
            proc = subprocess.Popen(
                switch_command(program, backend, io, ports, shapes, tmp),
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
            )
        try:
            address = f"unix:{tmp}/p4rt.sock"
            conn = connect_started(proc, address, DEVICE_ID, log, STARTUP_S)
            try:
                compiled = compile_file(PROGRAMS[program])
                conn.set_pipeline(compiled.p4info, PROGRAMS[program].read_bytes())
                assert conn.schema is not None  # set with the pipeline
                conn.write(forwarding_updates(conn.schema, program))
                running = stats_of(tmp / "control.sock")
                if (running.backend, running.io) != (backend, io):
                    raise ForwardingBenchError(
                        f"asked for the {backend} back end in the {io} loop, the switch runs "
                        f"{running.backend} in {running.io}: {log_tail(log)}"
                    )
                print("ready", flush=True)
                while not stop.wait(0.5):  # a stop flag set by the signal handler
                    if proc.poll() is not None:
                        raise ForwardingBenchError(f"p4switch exited: {log_tail(log)}")
                stats = stats_of(tmp / "control.sock")
            finally:
                conn.close()
        finally:
            stop_started(proc)
    print(json.dumps({"stats": stats.to_json()}), flush=True)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="bench/p4switch_forwarder.py", description=__doc__.splitlines()[0]
    )
    parser.add_argument("program", choices=tuple(PROGRAMS))
    parser.add_argument("backend", choices=CHOICES)
    parser.add_argument("io", choices=CHOICES)
    parser.add_argument("if1", help="port 1's interface")
    parser.add_argument("if2", help="port 2's interface")
    parser.add_argument("--shape", action="append", default=[], help="PORT:SPEC, as p4switch's")
    options = parser.parse_args(argv)
    try:
        ports = (options.if1, options.if2)
        serve(options.program, options.backend, options.io, ports, options.shape)
    except (InnetError, ForwardingBenchError) as err:
        print(f"p4switch_forwarder: {one_line(err)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
