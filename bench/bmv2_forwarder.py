"""BMv2 as bench/forwarding.py's switch: simple_switch_grpc on ports 1 and 2, programmed over
P4Runtime with the benchmark's program and entries (`bench.programs`), as
bench/p4switch_forwarder.py programs the p4switch command.

Run inside the switch namespace (`bench.forwarding_rows` plans it), as the other forwarders are:

    python bench/bmv2_forwarder.py PROGRAM BUILD IF1 IF2

PROGRAM is l2 or agg32 (`bench.programs`), compiled by p4c-bm2-ss; BUILD is
`default` (the simple_switch_grpc found as `topo.bmv2` finds it: BMv2's default build, as the
p4lang packages ship it, debug logging compiled in and switched off) or `fast` (the build for
speed beside it, `fast/bin/` under the same prefix: no logging macros, -O3). It prints "ready"
once the entries are in, then, on SIGTERM, stops the switch and prints one JSON line.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run as a script from anywhere

from bench.native_tools import BUILD_DIR, ForwardingBenchError
from bench.programs import ENTRIES, PROGRAMS, forwarding_updates
from controller.p4rt.connection import SwitchConnection
from controller.p4rt.started import connect_started, log_tail, stop_started
from innet.exceptions import InnetError, one_line
from topo.bmv2 import SIMPLE_SWITCH, bmv2_command, bmv2_pipeline, find_tool

BUILDS = ("default", "fast")
DEVICE_ID = 1
THRIFT_PORT = 9090  # the namespace's own
STARTUP_S = 60.0


def switch_binary(build: str) -> Path | None:
    """The simple_switch_grpc of `build`, or None where it is not installed."""
    found = find_tool(SIMPLE_SWITCH)
    if found is None or build not in BUILDS:
        return None
    path = Path(found)
    if build == "default":
        return path
    fast = path.resolve().parent.parent / "fast" / "bin" / SIMPLE_SWITCH
    return fast if fast.is_file() else None


def unavailable(build: str) -> str | None:
    """Why the `build` row cannot run here (None: it can)."""
    if find_tool(SIMPLE_SWITCH) is None:
        return f"{SIMPLE_SWITCH} is not installed (python -m topo.bmv2 says where it looks)"
    if find_tool("p4c-bm2-ss") is None:
        return "p4c-bm2-ss is not installed (python -m topo.bmv2 says where it looks)"
    if switch_binary(build) is None:
        where = Path(find_tool(SIMPLE_SWITCH) or SIMPLE_SWITCH).resolve().parent.parent
        return f"no BMv2 build for speed under {where} (fast/bin/{SIMPLE_SWITCH})"
    return None


def program_switch(conn: SwitchConnection, program: str, build_dir: Path) -> None:
    """Push `program`'s BMv2 JSON and P4Info, then one forwarding entry per benchmark host."""
    pipeline = bmv2_pipeline(PROGRAMS[program], build_dir, {})
    conn.set_pipeline(pipeline.p4info, pipeline.device_config)
    assert conn.schema is not None  # set with the pipeline
    conn.write(forwarding_updates(conn.schema, program))


def serve(program: str, build: str, if1: str, if2: str) -> None:
    binary = switch_binary(build)
    if binary is None or program not in ENTRIES:
        raise ForwardingBenchError(unavailable(build) or f"no entries for program {program!r}")
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda signum, frame: stop.set())
    signal.signal(signal.SIGINT, lambda signum, frame: stop.set())
    with tempfile.TemporaryDirectory(prefix="bmv2-bench-") as tmp:
        address = f"unix:{tmp}/p4rt.sock"
        argv = bmv2_command({1: if1, 2: if2}, address, DEVICE_ID, THRIFT_PORT)
        argv[0] = str(binary)
        log = Path(tmp) / "switch.log"
        with log.open("wb") as out:
            proc = subprocess.Popen(
                argv, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT
            )
        try:
            conn = connect_started(proc, address, DEVICE_ID, log, STARTUP_S)
            try:
                program_switch(conn, program, BUILD_DIR / "bmv2")
                print("ready", flush=True)
                while not stop.wait(0.5):  # a stop flag set by the signal handler
                    if proc.poll() is not None:
                        raise ForwardingBenchError(f"{binary} exited: {log_tail(log)}")
            finally:
                conn.close()
        finally:
            stop_started(proc)
    print(json.dumps({"bmv2": {"build": build, "binary": str(binary)}}), flush=True)


def main(argv: list[str]) -> int:
    if len(argv) != 4:
        print("usage: bmv2_forwarder.py PROGRAM BUILD IF1 IF2", file=sys.stderr)
        return 2
    try:
        serve(*argv)
    except (InnetError, ForwardingBenchError) as err:
        print(f"bmv2_forwarder: {one_line(err)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
