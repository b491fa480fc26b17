"""Experiments on the service's running testbed: POST /experiment, GET /experiment, stop.

One experiment at a time trains with the testbed's current schedule for a number of rounds, in a
background thread, with the same island processes, records and results folder as `innet run`
(`controller/experiment.py`). Stopping lets the current round finish and starts no other.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from controller.experiment import ExperimentError, Run
from controller.scenario import Scenario, Training
from controller.testbed import Testbed, TestbedError

log = logging.getLogger(__name__)

REPO = Path(__file__).resolve().parent.parent


class ExperimentBusy(TestbedError):
    """Another experiment is running (the API answers 409)."""


class ServiceExperiment:
    """The service's one experiment slot: start, status, stop."""

    def __init__(
        self,
        testbed: Testbed,
        results: Path = REPO / "results",
        on_processes: Callable[[list[dict[str, Any]]], None] = lambda _p: None,
    ) -> None:
        self.testbed, self.results, self.on_processes = testbed, results, on_processes
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._stop = threading.Event()
        self._status: dict[str, Any] = {"state": "idle"}
        self._run: Run | None = None

    def scenario(self, name: str, training: Training, seed: int, deadline_s: float) -> Scenario:
        """The testbed as a scenario: its WAN, hosts, scale, bandwidth, slot pool, schedule."""
        tb = self.testbed
        net = getattr(tb.network, "net", None)
        if net is None:
            raise TestbedError("experiments need the Mininet network of `innet net up`")
        scale = tb.pool.scale
        return Scenario(
            name=name,
            topology=tb.wan.name,
            hosts=tb.network.hosts_per_city,
            scale=scale,
            bandwidth_bps=tb.params.access_bps,
            wan_bandwidth_bps=None,
            memory_bytes=(tb.pool.memory_bytes,),
            update_bytes=None,
            schedules=(tb.schedule_.family,),
            training=training,
            round_deadline_s=deadline_s,
            seed=seed,
            wan=tb.wan,
        )

    def start(self, name: str, training: Training, seed: int, deadline_s: float) -> dict:
        with self._lock:
            if self._thread is not None and self._thread.is_alive():
                raise ExperimentBusy(
                    f"experiment {self._status.get('name')!r} is running: stop it first"
                )
            scenario = self.scenario(name, training, seed, deadline_s)
            folder = self.results / f"{name}-{time.strftime('%Y%m%d-%H%M%S')}"
            self._stop = threading.Event()
            self._run = Run(scenario, folder, progress=self._progress, stop_event=self._stop)
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
            self._thread = threading.Thread(target=self._body, name="innet-experiment",
                                            daemon=True)  # fmt: skip
            self._thread.start()
            return dict(self._status)

    def _progress(self, _label: str, done: int, _total: int) -> None:
        with self._lock:
            self._status["done"] = done

    def _body(self) -> None:
        run = self._run
        assert run is not None
        state, error = "finished", None
        try:
            run.on_testbed(self.testbed, self.testbed.network.net, self.on_processes)
            if self._stop.is_set():
                state = "stopped"
        except ExperimentError as err:
            state, error = "failed", str(err)
        except Exception as err:  # the thread must leave a status, whatever happened
            log.exception("experiment failed")
            state, error = "failed", f"{type(err).__name__}: {err}"
        with self._lock:
            self._status.update(state=state, error=error, ended=time.time())
            self._status["summary"] = getattr(run, "summary", None)

    def status(self) -> dict[str, Any]:
        with self._lock:
            status = dict(self._status)
        run = self._run
        if run is not None and getattr(run, "writer", None) is not None:
            status["records"] = list(run.writer.records)[-5:]
        return status

    def stop(self, wait_s: float = 0.0) -> dict[str, Any]:
        """No further round starts; with `wait_s`, wait that long for the thread to end."""
        self._stop.set()
        thread = self._thread
        if thread is not None and wait_s:
            thread.join(wait_s)
        return self.status()
