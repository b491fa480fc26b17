"""innet's agent on one machine of a cluster: a Ray actor pinned to its node (controller/cluster/
raycluster.py places it), and the only thing of innet's that runs there.

It says what its machine is (`facts`, controller/cluster/nodes.py) and takes part in the timed
exchanges that measure the clocks and the wires between the machines
(controller/cluster/probe.py): it answers probes on its node's address (`responder`) and probes
another node's agent (`probe`).

It builds its machine's share of a network split across machines (`build`: a `NetworkSpec`
with a `topo.split.Split` for this node, built by `build_network` as on one machine) and answers
for it what the controller cannot ask over P4Runtime (the `controller.network.Network` calls:
port counters, liveness, restarts, the pipeline), runs commands in its hosts (`host_run`), and
tears it down (`teardown`). Everything it makes is recorded in a run directory of its own, and a
janitor process (controller/cluster/janitor.py), started before anything is built, undoes it
when the agent is gone without having done so (Ray ends an agent outright when its driver
dies). It is a plain class, usable without Ray; the actor is placed on each node by
`raycluster.place_agent`.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from controller.cluster.clocks import ClockSample
from controller.cluster.janitor import alive, clean
from controller.cluster.nodes import NodeFacts, node_facts
from controller.cluster.probe import DEFAULT_EXCHANGES, Address, Responder, probe
from controller.exceptions import RunDirError
from controller.network import NetworkFacts, SwitchSite
from controller.rundir import RunDir, terminate
from topo.p4node import PortCounters, SwitchPipeline

if TYPE_CHECKING:
    from controller.network import MininetNetwork
    from controller.runner.calibration import Machine
    from controller.runner.emulation import Emulation
    from controller.runner.islands import Exited, Islands
    from topo.mininet_net import NetworkSpec
    from workers.protocol import Command, Event

RUN_DIR_PREFIX = "innet-agent-"  # + the agent's PID: its run directory, under the temp folder
EVENT_POLL_S = 0.01  # how often `islands_events` looks at the leaders' queues while it waits
LOG_BYTES = 4 * 2**20  # of an island process's log, sent back to the driver
JANITOR_END_S = 30.0  # the janitor, told to end, cleans what is still recorded within this


class Agents(Protocol):
    """The agents of a cluster, one per node, and how to ask them (raycluster.Cluster): calls
    are made on `agent(address)` handles (`handle.method.remote(...)`) and their answers
    gathered, naming the node of any that does not come."""

    agents: tuple[Any, ...]  # in node order

    @property
    def addresses(self) -> tuple[str, ...]: ...

    def agent(self, address: str) -> Any: ...

    def ask(self, address: str, what: str, asked: Any) -> Any: ...

    def gather(self, what: str, asked: Sequence[Any]) -> list[Any]: ...

    def gather_from(
        self, addresses: Sequence[str], what: str, asked: Sequence[Any]
    ) -> list[Any]: ...


class NodeAgent:
    """innet's agent on the node whose cluster address is `address`."""

    def __init__(self, address: str) -> None:
        self.address = address
        self._responder: Responder | None = None
        self._network: MininetNetwork | None = None
        self._run_dir: RunDir | None = None
        self._janitor: int | None = None  # the janitor's PID (no child of this process)
        self._islands: Islands | None = None

    def facts(self) -> NodeFacts:
        return node_facts(self.address)

    def measure_machine(self, em: Emulation) -> Machine:
        """This machine as the machine check measures it for `em` (about a second: innet.p4's
        frames per CPU second on the switches' back end, a leader paced at the plan's busiest
        leader's rate, and the cores other work keeps busy meanwhile)."""
        from controller.runner.calibration import measure
        from controller.runner.need import plan_need

        return measure(em, leader_fps=plan_need(em).leader_peak_fps)

    def responder(self) -> Address:
        """Where this node answers probes (opened on the first call, on the node's address)."""
        if self._responder is None:
            self._responder = Responder(self.address)
        return self._responder.address

    def probe(
        self, target: Address, count: int = DEFAULT_EXCHANGES, who: str = ""
    ) -> list[ClockSample]:
        """Exchanges with the responder at `target`, sent from this node's address."""
        return probe(target, count, source=self.address, who=who)

    # --- its share of the network --------------------------------------------------------

    def build(self, spec: NetworkSpec) -> tuple[SwitchSite, ...]:
        """Build this node's share of the network (`spec.split.here` must be this node), record
        it, and return its switches as the controller reaches them."""
        from controller.network import MininetNetwork
        from topo.mininet_net import build_network

        if spec.split is None or spec.split.here != self.address:
            raise RunDirError(f"node {self.address}: the spec is not this node's share")
        if self._network is not None:
            raise RunDirError(f"node {self.address}: a network is already built here")
        run_dir = self._claim()
        try:
            self._network = MininetNetwork(build_network(spec, run_dir.path / "switches"))
            run_dir.update(network=self._network.record())
        except BaseException:
            self.teardown()
            raise
        return self._network.sites

    def _claim(self) -> RunDir:
        """A run directory of this agent's, claimed, with its janitor watching."""
        path = Path(tempfile.gettempdir(), f"{RUN_DIR_PREFIX}{os.getpid()}")
        clean(path)  # one left by an earlier agent of this PID, whose janitor was lost too
        self._run_dir = RunDir(path)
        self._run_dir.claim("cluster agent", "building")
        janitor = [sys.executable, "-m", "controller.cluster.janitor", str(path)]
        janitor += ["--watch", str(os.getpid()), "--detach", "--log", str(path / "janitor.log")]
        launched = subprocess.run(janitor, capture_output=True, text=True, timeout=30, check=False)
        if launched.returncode != 0 or not launched.stdout.strip().isdigit():
            self._run_dir.release()
            raise RunDirError(
                f"node {self.address}: the janitor did not start: {launched.stderr.strip()}"
            )
        self._janitor = int(launched.stdout.strip())
        return self._run_dir

    @property
    def network(self) -> MininetNetwork:
        if self._network is None:
            raise RunDirError(f"node {self.address}: no network is built here")
        return self._network

    def pipeline(self) -> SwitchPipeline:
        return self.network.pipeline()

    def network_facts(self) -> NetworkFacts:
        return self.network.facts()

    def process_alive(self, city: int) -> bool:
        return self.network.process_alive(city)

    def restart(self, city: int, within_s: float) -> None:
        """Start city `city`'s switch again, ready within `within_s` (this node's clock)."""
        self.network.restart(city, time.monotonic() + within_s)
        self._record()

    def port_counters(self, city: int, reset_peaks: bool = False) -> PortCounters | None:
        return self.network.port_counters(city, reset_peaks)

    def control_alive(self, city: int) -> bool | None:
        return self.network.control_alive(city)

    def link_counters(self, reset_peaks: bool = False) -> dict[str, PortCounters]:
        return self.network.link_counters(reset_peaks)

    def restart_links(self, within_s: float) -> list[str]:
        restarted = self.network.restart_links(time.monotonic() + within_s)
        self._record()
        return restarted

    def host_run(
        self, city: int, host: int, argv: list[str], timeout_s: float = 30.0
    ) -> tuple[int, str, str]:
        """Run `argv` in host `host` (1: the leader) of city `city` to its end: its exit status,
        stdout and stderr."""
        node = self.network.net.hosts[self.network.net.cities.index(city)][host - 1]
        proc = node.popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            out, err = proc.communicate(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            proc.kill()
            out, err = proc.communicate()
        return proc.returncode, out, err

    def shape_leaders(self, rate_bps: float | None) -> None:
        """Hold every leader's uplink here to `rate_bps` (None: release it), as on one
        machine (`RunningTestbed.shape_leaders`)."""
        from topo.mininet_hosts import shape_uplink

        for hosts in self.network.net.hosts:
            shape_uplink(hosts[0], rate_bps)

    # --- its islands' processes ----------------------------------------------------------

    def islands_start(self, config_json: str) -> None:
        """Start the island processes of this node's cities (`workers.island` in every host,
        as on one machine) with the experiment's island configuration, and record them."""
        from controller.runner.islands import Islands

        net, run_dir = self.network.net, self._owned_run_dir()
        if self._islands is not None:
            raise RunDirError(f"node {self.address}: its island processes already run")
        config = run_dir.path / "island-config.json"
        config.write_text(config_json)
        names = net.wan.names
        islands = Islands(net.hosts, names, config, run_dir.path / "logs", cities=net.cities)
        self._islands = islands
        try:
            islands.start()
        finally:
            run_dir.update(experiment=tuple(islands.record()))

    def islands_send(self, city: int, command: Command) -> None:
        """Send `command` to city `city`'s leader."""
        leader = next((p for p in self._running().leaders if p.island == city), None)
        if leader is None:
            raise RunDirError(f"node {self.address}: no leader of city {city} runs here")
        leader.send(command)

    def islands_events(self, wait_s: float) -> list[tuple[int, Event | Exited]]:
        """The events the leaders here have said since the last call, each with its city;
        waits up to `wait_s` for the first. A leader gone comes as Exited with its status."""
        from controller.runner.islands import Exited

        islands = self._running()
        deadline = time.monotonic() + wait_s
        found: list[tuple[int, Event | Exited]] = []
        while True:
            for leader in islands.leaders:
                while not leader.events.empty():
                    event = leader.events.get_nowait()
                    if isinstance(event, Exited):
                        event = Exited(leader.exit_status())
                    found.append((leader.island, event))
            if found or time.monotonic() >= deadline:
                return found
            time.sleep(EVENT_POLL_S)

    def islands_stop(self, grace_s: float | None = None) -> None:
        """Stop this node's island processes (as `Islands.stop`), if any run."""
        islands, self._islands = self._islands, None
        if islands is not None:
            islands.stop(grace_s)
            if self._run_dir is not None:
                self._run_dir.update(experiment=())

    def islands_terminate(self) -> None:
        """SIGTERM to this node's island processes that still run (the service stopped by a
        signal), as on one machine: they are left to the runner, which sees them exit and
        ends the round, then stops them as ever."""
        if self._islands is not None:
            terminate(self._islands.record())

    def islands_logs(self, most_bytes: int = LOG_BYTES) -> dict[str, str]:
        """The island processes' logs here (each its last `most_bytes`), by host name, handed
        over: removed here once read, so the next hand-over holds only what came after. Asked
        for once the processes are stopped."""
        if self._run_dir is None:
            return {}
        logs = self._run_dir.path / "logs"
        handed = {}
        for path in sorted(logs.glob("*.log")) if logs.is_dir() else []:
            handed[path.stem] = _tail(path, most_bytes)
            path.unlink()
        return handed

    def _running(self) -> Islands:
        if self._islands is None:
            raise RunDirError(f"node {self.address}: no island processes run here")
        return self._islands

    def _owned_run_dir(self) -> RunDir:
        if self._run_dir is None:
            raise RunDirError(f"node {self.address}: no network is built here")
        return self._run_dir

    def _record(self) -> None:
        if self._run_dir is not None and self._network is not None:
            self._run_dir.update(network=self._network.record())

    def teardown(self) -> None:
        """Stop this node's share of the network (if any) and release its run directory; then
        the janitor, told to end, cleans what is still recorded (nothing, unless the stop
        failed) and removes the directory."""
        network, self._network = self._network, None
        stopped = False
        try:
            self.islands_stop()
            if network is not None:
                network.stop()
            stopped = True
        finally:
            if self._run_dir is not None and stopped:
                self._run_dir.release()
            self._run_dir = None
            if self._janitor is not None:
                _end_janitor(self._janitor)
                self._janitor = None

    def close(self) -> None:
        self.teardown()
        if self._responder is not None:
            self._responder.close()
            self._responder = None


def _tail(path: Path, most_bytes: int) -> str:
    """The last `most_bytes` of a file, as text."""
    with path.open("rb") as f:
        f.seek(max(0, path.stat().st_size - most_bytes))
        return f.read().decode(errors="replace")


def _end_janitor(pid: int) -> None:
    """Tell the janitor to clean up and end, and wait until it has (it is no child of this
    process: its PID is polled)."""
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + JANITOR_END_S
    while alive(pid) and time.monotonic() < deadline:
        time.sleep(EVENT_POLL_S)
