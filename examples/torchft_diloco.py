"""torchft's DiLoCo with its process group over innet, or over gloo: the fault-tolerant training
library's own outer loop (PyPI `torchft`), innet's exact exchanges underneath.

    .venv/bin/python examples/torchft_diloco.py --replicas 3 --backend innet
    .venv/bin/python examples/torchft_diloco.py --replicas 3 --backend gloo

This process starts torchft's lighthouse (the quorum service) and one process per replica group
(each a group of one, as on one machine), on loopback: replica r's innet exchanges use
127.0.0.(11 + r) (`INNET_PEERS`), its torchft store and manager 127.0.0.1. Each replica trains
the same small MLP (a regression on a fixed random "teacher" network, its own batches) with
AdamW; every `--sync-every` inner steps torchft's `DiLoCo` averages the replicas'
pseudo-gradients with its manager's all_reduce, which is innet's (`innet_process_group`: a
torchft process group making innet groups) or torchft's own gloo group, and takes an outer
Nesterov step. Each
replica prints one JSON line per outer step: the step, the evaluation loss on fixed data and
a digest of its parameters (the same on every replica when the averages agree). The exit status
is the worst of the replicas'.

torchft is not among innet's own dependencies: its OpenTelemetry needs a protobuf that
innet's P4Runtime cannot share, so `make torchft` installs it in build/torchft, which this
example puts on the replicas' path (a torchft importable as installed is used first).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
import time
from datetime import timedelta
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
TORCHFT = REPO / "build" / "torchft"  # where `make torchft` installs it
LOOPBACK_BASE = 11  # replica r's innet address is 127.0.0.(11 + r)


def torchft_path() -> list[str]:
    """What the replicas need on sys.path for torchft and innet's workers."""
    try:
        import torchft  # noqa: F401  (installed in this environment: nothing to add)
    except ImportError:
        if not (TORCHFT / "torchft").is_dir():
            raise SystemExit(
                "torchft is not installed: make torchft (installs it in build/torchft)"
            ) from None
        return [str(TORCHFT), str(REPO)]
    return [str(REPO)]


def launch(args: argparse.Namespace) -> int:
    """The lighthouse here, a process per replica; their worst exit status."""
    path = torchft_path()
    sys.path[:0] = path
    from torchft._torchft import LighthouseServer

    lighthouse = LighthouseServer(bind="127.0.0.1:0", min_replicas=args.replicas)
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([*path, env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    peers = [f"127.0.0.{LOOPBACK_BASE + r}" for r in range(args.replicas)]
    env.setdefault("INNET_PEERS", ",".join(peers))
    env.setdefault("INNET_LANES", "256")
    procs = []
    for r in range(args.replicas):
        argv = [sys.executable, __file__, "--replica", str(r), "--lighthouse", lighthouse.address()]
        for option in ("replicas", "backend", "outer_steps", "sync_every", "timeout"):
            argv += [f"--{option.replace('_', '-')}", str(getattr(args, option))]
        procs.append(subprocess.Popen(argv, env=env))
    deadline = time.monotonic() + args.deadline
    try:
        while any(p.poll() is None for p in procs) and time.monotonic() < deadline:
            time.sleep(0.2)  # polling interval of the replicas' exits
    finally:
        for p in procs:
            if p.poll() is None:
                print(f"replica pid {p.pid} still running after {args.deadline:g} s: killed")
                p.kill()
            p.wait()
        lighthouse.shutdown()
    return max(abs(p.returncode) for p in procs)


def innet_process_group(replica: int, replicas: int, timeout: timedelta) -> Any:
    """torchft's reconfigurable process group over innet, for replica `replica` of `replicas`.

    torchft re-makes its group for every quorum of replicas: `configure` tears the old one
    down and calls `_create_pg(store, rank, world_size)` with the replica's place in the new
    quorum. innet's backend keeps one engine per process, bound to its own rank (its address in
    `INNET_PEERS`), so the group is made from the replica's fixed number, and each quorum is a
    group of those numbers: torchft's `_global_ranks`, the quorum's replicas."""
    from torch.distributed.distributed_c10d import _DistributedBackendOptions
    from torchft.process_group import ProcessGroupWrapper

    from workers.distributed import BackendSetupError, InnetProcessGroup, RankSetup

    class ProcessGroupInnet(ProcessGroupWrapper):  # type: ignore[misc]  # torchft: untyped
        def __init__(self) -> None:
            super().__init__(timeout=timeout)
            self.where = RankSetup.from_env(replica, replicas)

        def _create_pg(self, store: Any, rank: int, world_size: int) -> InnetProcessGroup:
            members = list(self._global_ranks or range(world_size))
            if len(members) != world_size or members[rank] != self.where.rank:
                raise BackendSetupError(
                    f"replica {replica}: torchft's quorum {self._quorum_id} places it at {rank} "
                    f"of {members}; innet's groups are of the replicas' own numbers"
                )
            opts = _DistributedBackendOptions()
            opts.store, opts.group_rank, opts.group_size = store, rank, world_size
            opts.timeout, opts.group_id = self._timeout, str(self._quorum_id or 0)
            opts.global_ranks_in_group = members
            return InnetProcessGroup(opts, self.where)

        def getBackendName(self) -> str:
            return "torchft-innet"

    return ProcessGroupInnet()


def replica(args: argparse.Namespace) -> int:
    import torch
    import torch.distributed as dist
    from torch import nn
    from torchft import Manager
    from torchft.local_sgd import DiLoCo
    from torchft.process_group import ProcessGroupGloo

    me, timeout = args.replica, timedelta(seconds=args.timeout)
    torch.set_num_threads(1)
    if args.backend == "innet":
        pg = innet_process_group(me, args.replicas, timeout)
    else:
        pg = ProcessGroupGloo(timeout=timeout)
    torch.manual_seed(0)  # the same model and teacher on every replica
    teacher = nn.Sequential(nn.Linear(8, 16), nn.Tanh(), nn.Linear(16, 1)).requires_grad_(False)
    model = nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Linear(32, 1))
    probe = torch.Generator().manual_seed(999)
    x_eval = torch.randn(512, 8, generator=probe)
    y_eval = teacher(x_eval)
    gen = torch.Generator().manual_seed(100 + me)  # each replica its own batches
    inner = torch.optim.AdamW(model.parameters(), lr=1e-2, weight_decay=0.0)
    outer = torch.optim.SGD(model.parameters(), lr=0.7, momentum=0.9, nesterov=True)

    def state_dict() -> dict[str, object]:
        return {"model": model.state_dict(), "inner": inner.state_dict()}

    def load_state_dict(state: dict[str, dict[str, object]]) -> None:
        model.load_state_dict(state["model"])
        inner.load_state_dict(state["inner"])

    store = dist.TCPStore("127.0.0.1", 0, is_master=True, wait_for_workers=False)
    manager = Manager(
        pg=pg,
        min_replica_size=args.replicas,
        use_async_quorum=False,  # DiLoCo's
        load_state_dict=load_state_dict,
        state_dict=state_dict,
        replica_id=f"replica_{me}",
        store_addr="127.0.0.1",
        store_port=store.port,
        rank=0,
        world_size=1,
        lighthouse_addr=args.lighthouse,
        port=0,
        hostname="127.0.0.1",
        timeout=timeout,
        quorum_timeout=timedelta(seconds=args.timeout * 3),
        connect_timeout=timedelta(seconds=30),
    )
    loss_of = nn.MSELoss()
    done = manager.current_step()
    with DiLoCo(manager, [model], inner, outer, sync_every=args.sync_every, pin_memory=False):
        while manager.current_step() < args.outer_steps:
            x = torch.randn(32, 8, generator=gen)
            loss = loss_of(model(x), teacher(x))
            inner.zero_grad()
            loss.backward()
            inner.step()  # DiLoCo's outer step runs in the optimiser's hook, every sync_every
            if manager.current_step() != done:
                done = manager.current_step()
                with torch.no_grad():
                    eval_loss = loss_of(model(x_eval), y_eval).item()
                digest = hashlib.sha1()
                for q in model.parameters():
                    digest.update(q.detach().numpy().tobytes())
                line = {"replica": me, "step": done, "eval_loss": eval_loss}
                line["params"] = digest.hexdigest()[:12]
                sys.stdout.write(json.dumps(line) + "\n")  # one write: replicas share stdout
                sys.stdout.flush()
    manager.shutdown(wait=False)
    return 0


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--replicas", type=int, default=3)
    p.add_argument("--backend", choices=("innet", "gloo"), default="innet")
    p.add_argument("--outer-steps", type=int, default=4)
    p.add_argument("--sync-every", type=int, default=10, help="inner steps per outer step")
    p.add_argument("--timeout", type=float, default=30.0, help="seconds: a collective's")
    p.add_argument("--deadline", type=float, default=300.0, help="seconds: the whole run's")
    p.add_argument("--replica", type=int, help=argparse.SUPPRESS)  # one replica (launched)
    p.add_argument("--lighthouse", help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.replica is None:
        return launch(args)
    status = replica(args)
    sys.stdout.flush()
    os._exit(status)  # torchft's manager threads would hold the interpreter's exit


if __name__ == "__main__":
    raise SystemExit(main())
