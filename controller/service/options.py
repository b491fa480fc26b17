"""The options of the testbed service, shared by `innet net up`, `innet serve` and
`python -m controller.service`, and what they say once checked (`ServiceConfig`). Light to
import: the CLI builds its parser from them, and `innet net up` checks them before it starts
the service in the background."""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from pathlib import Path

from controller.planner.cost import CostParams
from innet.exceptions import InputError
from innet.units import parse_rate, parse_size
from topo.loader import default_wan, load_wan
from topo.mininet_net import NetworkSpec
from topo.shaping import SHAPING_HELP, SHAPING_REQUESTS
from topo.siteplan import GRPC_BASE_PORT, TARGETS, SlotPool
from topo.wan import Wan

DEFAULT_PORT = 8700
SERVICE_ERROR = "innet service: error: "  # how the service's last line says why it exited


def service_options(p: argparse.ArgumentParser) -> None:
    """Options shared by `innet net up`, `innet serve` and this module."""
    p.add_argument("topology", nargs="?", type=Path, help="topology YAML (default: nine cities)")
    p.add_argument("--hosts", type=int, default=1, help="hosts per city (default 1)")
    p.add_argument("--memory", default="64MB", help="aggregator memory per site (default 64MB)")
    p.add_argument("--update-size", default="1GB", help="bytes each island sends per round")
    p.add_argument("--bandwidth", default="10Gbps", help="each island's access bandwidth")
    p.add_argument("--scale", type=float, default=1000.0,
                   help="divide link rates and memory by this (default 1000)")  # fmt: skip
    p.add_argument(
        "--slots",
        type=int,
        help="slots per bank on the switches (default: the largest power of two whose two "
        "banks of 128 B slots fit in memory / scale)",
    )
    p.add_argument("--shaping", choices=SHAPING_REQUESTS, default="auto", help=SHAPING_HELP)
    p.add_argument(
        "--target",
        choices=TARGETS,
        default="p4switch",
        help="edge switches: p4switch (default) or bmv2 (simple_switch_grpc)",
    )
    p.add_argument("--log-console", action="store_true",
                   help="bmv2 only: BMv2's per-packet log on its console (slow)")  # fmt: skip
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
        default=GRPC_BASE_PORT,
        help=f"P4Runtime port of the first city's switch (default {GRPC_BASE_PORT})",
    )


@dataclass(frozen=True, slots=True)
class ServiceConfig:
    """What the service's options say, checked: the testbed to build and how to serve it."""

    wan: Wan
    pool: SlotPool
    params: CostParams
    spec: NetworkSpec
    token: str | None

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> ServiceConfig:
        """InputError (exit status 2) for any option innet cannot use."""
        wan = default_wan() if args.topology is None else load_wan(args.topology)
        pool = slot_pool(args.memory, args.scale, args.slots)
        params = CostParams.for_pool(pool, parse_size(args.update_size), parse_rate(args.bandwidth))
        spec = NetworkSpec(wan, args.hosts, slots=pool.slots_per_bank, scale=pool.scale,
                           shaping=args.shaping, target=args.target,
                           grpc_base_port=args.grpc_base_port,
                           log_console=args.log_console)  # fmt: skip
        return cls(wan, pool, params, spec, read_token(args.token_file))


def slot_pool(memory: str, scale: float, slots: int | None) -> SlotPool:
    """The switches' slot pool: `slots` per bank when given, else the largest pool that fits
    in `memory` at `scale` (both banks counted, topo/siteplan.py)."""
    if slots is not None:
        return SlotPool(slots, scale)
    return SlotPool.for_memory(parse_size(memory), scale)


def read_token(path: Path | None) -> str | None:
    if path is None:
        return None
    try:
        token = path.read_text().strip()
    except OSError as err:
        raise InputError(f"cannot read token file {path}: {err.strerror}") from err
    if not token:
        raise InputError(f"token file {path} is empty")
    return token
