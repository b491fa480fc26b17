"""The innet service: build the testbed, program it, serve the REST API until told to stop.

    python -m controller.service [TOPOLOGY.yaml] --hosts 1 --port 8700 --run-dir /run/innet

Needs root (Mininet). It records itself and everything it creates in <run dir>/state.json
before and after building (controller/rundir.py), watches the switches and reinstalls one that
restarted, and on SIGTERM, SIGINT or POST /shutdown tears the testbed down and removes the
state file. `innet net up` starts it in the background, `innet serve` in the foreground.
"""

from __future__ import annotations

import argparse
import logging
import os
import signal
import sys
from collections.abc import Sequence
from pathlib import Path
from types import FrameType
from typing import Any

from controller.planner.cost import CostParams
from controller.rundir import STATE_FILE, cmdline, default_run_dir, occupied
from controller.rundir import write_state as _write_state
from topo.siteplan import SlotPool
from topo.units import parse_rate, parse_size

log = logging.getLogger("controller.service")

DEFAULT_PORT = 8700


def slot_pool(memory: str, scale: float, slots: int | None) -> SlotPool:
    """The switches' slot pool: `slots` per bank when given, else the largest pool that fits
    in `memory` at `scale` (both banks counted, topo/siteplan.py)."""
    if slots is not None:
        return SlotPool(slots, scale)
    return SlotPool.for_memory(parse_size(memory), scale)


def service_options(p: argparse.ArgumentParser) -> None:
    """Options shared by `innet net up`, `innet serve` and this module."""
    p.add_argument("topology", nargs="?", type=Path, help="topology YAML (default: nine cities)")
    p.add_argument("--hosts", type=int, default=1, help="hosts per city (default 1)")
    p.add_argument("--memory", default="64MB", help="aggregator memory per site (default 64MB)")
    p.add_argument("--update-size", default="1GB", help="bytes each island sends per round")
    p.add_argument("--bandwidth", default="10Gbps", help="each island's access bandwidth")
    p.add_argument(
        "--scale",
        type=float,
        default=1000.0,
        help="divide link rates and memory by this (default 1000)",
    )
    p.add_argument(
        "--slots",
        type=int,
        help="slots per bank on the switches (default: the largest power of two whose two "
        "banks of 128 B slots fit in memory / scale)",
    )
    p.add_argument("--shaping", choices=["auto", "kernel", "switch"], default="auto")
    p.add_argument(
        "--target",
        choices=["p4switch", "bmv2"],
        default="p4switch",
        help="edge switches: p4switch (default) or bmv2 (simple_switch_grpc)",
    )
    p.add_argument(
        "--log-console",
        action="store_true",
        help="bmv2 only: BMv2's per-packet log on its console (slow)",
    )
    p.add_argument("--port", type=int, default=DEFAULT_PORT, help="API port on 127.0.0.1")
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
        type=int,
        default=50000,
        help="P4Runtime port of the first city's switch (default 50000)",
    )


def read_token(path: Path | None) -> str | None:
    if path is None:
        return None
    token = path.read_text().strip()
    if not token:
        raise ValueError(f"token file {path} is empty")
    return token


class ServiceError(RuntimeError):
    pass


def _terminate(signum: int, _frame: FrameType | None) -> None:
    raise SystemExit(128 + signum)


def run(args: argparse.Namespace) -> int:
    """Build, program, serve; tear down on the way out. Returns an exit status."""
    import uvicorn

    from controller.api import create_app
    from controller.mininet_network import MininetNetwork
    from controller.service_experiment import ServiceExperiment
    from controller.testbed import Testbed, Watchdog
    from topo.loader import default_wan, load_wan
    from topo.mininet_net import build_network

    run_dir = (args.run_dir or default_run_dir()).resolve()
    busy = occupied(run_dir)
    if busy is not None:
        raise ServiceError(busy)
    token = read_token(args.token_file)
    wan = default_wan() if args.topology is None else load_wan(args.topology)
    pool = slot_pool(args.memory, args.scale, args.slots)
    slots = pool.slots_per_bank
    params = CostParams.for_pool(pool, parse_size(args.update_size), parse_rate(args.bandwidth))
    state: dict[str, Any] = {
        "service": {"role": "service", "pid": os.getpid(), "cmdline": cmdline(os.getpid())},
        "api": f"http://{args.host}:{args.port}",
        "token_file": str(args.token_file.resolve()) if args.token_file else None,
        "topology": str(args.topology.resolve()) if args.topology else None,
        "status": "building",
    }
    _write_state(run_dir, state)
    signal.signal(signal.SIGTERM, _terminate)  # a SIGTERM while building still cleans up
    net = testbed = watchdog = experiment = None
    try:
        net = build_network(
            wan,
            args.hosts,
            run_dir / "switches",
            slots=slots,
            scale=args.scale,
            shaping=args.shaping,
            grpc_base_port=args.grpc_base_port,
            target=args.target,
            log_console=args.log_console,
        )
        network = MininetNetwork(net)
        state["network"] = network.record()
        _write_state(run_dir, state)
        testbed = Testbed.start(wan, network, params, pool=pool, target=args.target,
                                build_dir=run_dir / "build")  # fmt: skip
        server: uvicorn.Server | None = None

        def stop() -> None:
            if server is not None:
                server.should_exit = True

        def healed(_names: list[str]) -> None:
            state["network"] = network.record()
            _write_state(run_dir, state)

        watchdog = Watchdog(testbed, on_heal=healed)
        watchdog.start()

        def experiment_processes(processes: list[dict[str, Any]]) -> None:
            state["experiment"] = {"processes": processes}
            _write_state(run_dir, state)

        experiment = ServiceExperiment(testbed, on_processes=experiment_processes)
        app = create_app(testbed, token, on_shutdown=stop, experiment=experiment)
        config = uvicorn.Config(app, host=args.host, port=args.port, log_level="warning")
        server = uvicorn.Server(config)
        state["status"] = "serving"
        _write_state(run_dir, state)
        log.info("serving the API on http://%s:%d", args.host, args.port)
        server.run()
        if not server.started:
            raise ServiceError(
                f"the API could not listen on {args.host}:{args.port} "
                "(in use?): choose another --port"
            )
    finally:
        if experiment is not None:
            experiment.stop(wait_s=120.0)  # its island processes run on this network
        if watchdog is not None:
            watchdog.stop()
        if testbed is not None:
            testbed.close()
        elif net is not None:
            net.stop()
        (run_dir / STATE_FILE).unlink(missing_ok=True)
        log.info("testbed torn down")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m controller.service", description=__doc__)
    service_options(parser)
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(levelname)s %(message)s")
    try:
        return run(args)
    except (ServiceError, ValueError, OSError) as err:
        log.error("%s", err)
        print(f"innet service: error: {' '.join(str(err).split())}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
