"""Bring a testbed up and down: the one way the service and the experiment runner do it.

    run_dir = RunDir(path)
    run_dir.claim("innet run", "running")
    with running_testbed(spec, params, run_dir) as up:
        up.testbed.advance()                       # the switches are programmed, watched
        up.record_processes(islands.record())      # processes to stop if this process dies
    # torn down: watchdog stopped, fabric closed, switches and Mininet stopped

On the way up, the network's processes and interfaces are recorded in the run directory's
state before anything else can fail, so that `innet clean` can undo a crash at any point; the
watchdog restarts and reinstalls a switch that dies and records its new PID. On the way out
(normally, on an exception, on Ctrl-C) everything started is stopped, newest first; a stop
signal that comes during the teardown waits for its end.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

from controller.network import MininetNetwork, Network
from controller.planner.cost import CostParams
from controller.planner.schedule import Schedule
from controller.rundir import ProcessRecord, RunDir
from controller.testbed import Testbed, Watchdog
from innet.stopping import held
from topo.exceptions import NetworkBuildError
from topo.mininet_net import NetworkSpec, TestbedNet, build_network
from topo.siteplan import SlotPool
from topo.wan import Wan

log = logging.getLogger(__name__)


@dataclass
class RunningTestbed:
    """A testbed that is up: the Mininet network, the controller's testbed, its watchdog."""

    net: TestbedNet
    network: MininetNetwork
    testbed: Testbed
    watchdog: Watchdog
    run_dir: RunDir

    def record_processes(self, processes: Sequence[ProcessRecord]) -> None:
        """Record processes started on this network (island processes) for `innet clean`;
        an empty list when they have been stopped."""
        self.run_dir.update(experiment=tuple(processes))


@contextlib.contextmanager
def running_testbed(
    spec: NetworkSpec,
    params: CostParams,
    run_dir: RunDir,
    *,
    schedule: Schedule | None = None,
    on_heal: Callable[[list[str]], None] | None = None,
) -> Iterator[RunningTestbed]:
    """Build the network of `spec` in `run_dir` (which this process has claimed), program it
    with the controller, watch it; tear it all down when the block ends. The switches' slot
    pool is the spec's (`spec.slots` per bank at `spec.scale`, of its packet format)."""
    if spec.slots is None:
        raise NetworkBuildError("a testbed's network needs its slot pool: give the spec slots")
    pool = SlotPool(spec.slots, spec.scale, spec.packet_format)
    stack = contextlib.ExitStack()
    try:
        net = build_network(spec, run_dir.path / "switches")
        stack.callback(net.stop)
        network = MininetNetwork(net)
        run_dir.update(network=network.record())

        def healed(names: list[str]) -> None:
            run_dir.update(network=network.record())  # the restarted switches' new PIDs
            if on_heal is not None:
                on_heal(names)

        with programmed(spec.wan, network, params, pool, schedule, healed) as (tb, watchdog):
            yield RunningTestbed(net, network, tb, watchdog, run_dir)
    finally:
        with held():  # a stop signal never cuts the teardown short (innet/stopping.py)
            stack.close()
    log.info("testbed torn down")


@contextlib.contextmanager
def programmed(
    wan: Wan,
    network: Network,
    params: CostParams,
    pool: SlotPool,
    schedule: Schedule | None,
    on_heal: Callable[[list[str]], None] | None = None,
) -> Iterator[tuple[Testbed, Watchdog]]:
    """The controller's testbed over a network that is up, programmed and watched; closed
    when the block ends. The network's own teardown is the caller's: the caller's stack
    closes after this one, whatever signal comes (held)."""
    stack = contextlib.ExitStack()
    try:
        testbed = Testbed.start(wan, network, params, pool=pool, schedule=schedule)
        stack.callback(testbed.close)
        watchdog = Watchdog(testbed, on_heal=on_heal)
        watchdog.start()
        stack.callback(watchdog.stop)
        yield testbed, watchdog
    finally:
        with held():  # a stop signal never cuts the teardown short (innet/stopping.py)
            stack.close()
