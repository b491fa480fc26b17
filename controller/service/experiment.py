"""Experiments on the service's running testbed: POST /experiment, GET /experiment, stop.

One experiment at a time trains with the testbed's current schedule for a number of rounds, in a
background thread, with the same runner, island processes, records and results folder as
`innet run` (controller/runner/). Stopping lets the current round finish and starts no other;
aborting (the service stopped by a signal) stops the island processes at once.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from controller.bringup import RunningTestbed
from controller.planner.cost import CostParams
from controller.rundir import terminate
from controller.runner.scenario import Scenario
from controller.runner.training_spec import Training
from controller.service.exceptions import ExperimentBusy, ExperimentNeedsMininet
from controller.testbed import Testbed
from innet.exceptions import InnetError
from innet.jsontypes import JSONObject
from innet.paths import RESULTS
from topo.siteplan import SlotPool
from topo.wan import Wan

if TYPE_CHECKING:  # the runner itself is imported when an experiment starts (it loads torch)
    from controller.cluster.bringup import ClusterTestbed
    from controller.runner.emulation import MemoryPoint
    from controller.runner.run import Run, UpTestbed

log = logging.getLogger(__name__)


class ServiceExperiment:
    """The service's one experiment slot: start, status, stop.

    `up` is the service's running testbed (its Mininet hosts run the island processes); without
    it (a testbed of in-process switches) experiments are refused."""

    def __init__(
        self,
        testbed: Testbed,
        up: RunningTestbed | ClusterTestbed | None = None,
        results: Path = RESULTS,
        *,
        cluster: JSONObject | None = None,
        clocks_flag: str = "",
    ) -> None:
        self.testbed, self.up, self.results = testbed, up, results
        self.cluster, self.clocks_flag = cluster, clocks_flag
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._stop = threading.Event()
        self._status: JSONObject = {"state": "idle"}
        self._run: Run | None = None

    def scenario(self, name: str, training: Training, seed: int, deadline_s: float) -> Scenario:
        """The testbed as a scenario: its WAN, hosts, scale, bandwidth, slot pool, schedule."""
        tb = self.testbed
        if self.up is None:
            raise ExperimentNeedsMininet(
                "experiments need the Mininet network of `innet net up` (the island processes "
                "run in its hosts)"
            )
        hosts, family = tb.network.hosts_per_city, tb.schedule.family
        return service_scenario(
            tb.wan, hosts, tb.pool, tb.params, family, training, name, seed, deadline_s
        )

    def start(self, name: str, training: Training, seed: int, deadline_s: float) -> JSONObject:
        with self._lock:
            if self._thread is not None and self._thread.is_alive():
                raise ExperimentBusy(
                    f"experiment {self._status.get('name')!r} is running: stop it first"
                )
            scenario = self.scenario(name, training, seed, deadline_s)
            folder = self.results / f"{name}-{time.strftime('%Y%m%d-%H%M%S')}"
            self._stop = threading.Event()
            self._run = None
            self._status = {
                "state": "running",
                "name": name,
                "schedule": scenario.schedules[0],
                "rounds": training.rounds,
                "done": 0,
                "folder": str(folder),
                "started": time.time(),
                "error": None,
            }
            self._thread = threading.Thread(
                target=self._body, args=(scenario, folder), name="innet-experiment", daemon=True
            )
            self._thread.start()
            return dict(self._status)

    def _progress(self, _label: str, done: int, _total: int) -> None:
        with self._lock:
            self._status["done"] = done

    @contextlib.contextmanager
    def _on_service_testbed(self, _point: MemoryPoint) -> Iterator[UpTestbed]:
        from controller.runner.run import OneMachine

        assert self.up is not None  # the service's testbed: brought up and down by the service
        yield OneMachine(self.up) if isinstance(self.up, RunningTestbed) else self.up

    def _body(self, scenario: Scenario, folder: Path) -> None:
        # imported here: the runner loads torch (seconds, hundreds of MB), which a service
        # that runs no experiment never needs
        from controller.runner.emulation import resolve
        from controller.runner.run import Run

        state, error = "finished", None
        run = None
        try:
            emulation = resolve(scenario, schedule=self.testbed.schedule)
            run = Run(
                emulation,
                folder,
                self._on_service_testbed,
                progress=self._progress,
                stop_event=self._stop,
                cluster=self.cluster,
                clocks_flag=self.clocks_flag,
            )
            with self._lock:
                self._run = run
            run.execute()
            if run.failures:
                state, error = "failed", "; ".join(run.failures)
            elif self._stop.is_set():
                state = "stopped"
        except InnetError as err:
            state, error = "failed", str(err)
        except Exception as err:  # the thread must leave a status, whatever happened
            log.exception("experiment failed")
            state, error = "failed", f"{type(err).__name__}: {err}"
        with self._lock:
            self._status.update(state=state, error=error, ended=time.time())
            summary = run.summary if run is not None else []
            self._status["summary"] = [row.to_json() for row in summary]

    def status(self) -> JSONObject:
        with self._lock:
            status = dict(self._status)
            run = self._run
        if run is not None:
            status["records"] = [r.to_json() for r in run.records[-5:]]
        return status

    def stop(self, wait_s: float = 0.0) -> JSONObject:
        """No further round starts; with `wait_s`, wait that long for the thread to end."""
        self._stop.set()
        thread = self._thread
        if thread is not None and wait_s:
            thread.join(wait_s)
        return self.status()

    def abort(self, wait_s: float) -> JSONObject:
        """Stop now (the service is stopped by a signal): no further round, and the island
        processes recorded in the run directory get SIGTERM, so the current round fails at once
        instead of running to its end; wait up to `wait_s` for the thread to end."""
        self._stop.set()
        if isinstance(self.up, RunningTestbed):
            if self.up.run_dir.state is not None:
                terminate(self.up.run_dir.state.experiment)
        elif self.up is not None:
            self.up.terminate_islands()  # each machine's agent signals its own
        return self.stop(wait_s)


def service_scenario(
    wan: Wan,
    hosts: int,
    pool: SlotPool,
    params: CostParams,
    family: str,
    training: Training,
    name: str = "api",
    seed: int = 1,
    deadline_s: float = 60.0,
    placement: tuple[str, ...] | None = None,
) -> Scenario:
    """An experiment on the service's testbed as a scenario: the testbed's WAN, hosts, scale,
    bandwidth and slot pool, one schedule family; `placement` its cities' machines on a
    cluster."""
    return Scenario(
        name=name,
        topology=wan.name,
        hosts=hosts,
        scale=pool.scale,
        bandwidth_bps=params.access_bps,
        wan_bandwidth_bps=None,
        memory_bytes=(pool.memory_bytes,),
        update_bytes=None,
        schedules=(family,),
        training=training,
        round_deadline_s=deadline_s,
        seed=seed,
        wan=wan,
        packet_format=pool.packet_format,
        placement=placement,
    )
