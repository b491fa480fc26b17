"""The testbed's REST API (FastAPI; OpenAPI docs at /docs).

    app = create_app(testbed, token="s3cret")   # token None: no authentication
    uvicorn.run(app, host="127.0.0.1", port=8700)

Bad bodies get 422 with FastAPI's error list: each error's `loc` is the field (e.g.
["body", "rounds", 0, 1, 2]) and `msg` the reason (e.g. "unknown city 'Paris'; known: ...").
An unknown city in a path is 404, a busy experiment 409, a switch that cannot be reached 503.
With a token, every endpoint but the docs wants `Authorization: Bearer <token>` (401 otherwise).
"""

from __future__ import annotations

import hmac
from collections.abc import Callable

from fastapi import Depends, FastAPI, HTTPException, Request
from fastapi.responses import JSONResponse

from controller.exceptions import RoundEntriesError, TestbedError
from controller.p4rt.exceptions import P4RuntimeError
from controller.planner.cost import CostParams
from controller.planner.exceptions import PlanError, ScheduleError
from controller.runner.scenario import Training
from controller.service import views
from controller.service.bodies import (
    ExperimentBody,
    PlanBody,
    ScheduleBody,
    invalid,
    schedule_from_body,
)
from controller.service.exceptions import ExperimentBusy
from controller.service.experiment import ServiceExperiment
from controller.testbed import Testbed
from innet.jsontypes import JSONObject, JSONValue
from topo.exceptions import UnknownCityError


def create_app(
    testbed: Testbed,
    token: str | None = None,
    on_shutdown: Callable[[], None] | None = None,
    experiment: ServiceExperiment | None = None,
) -> FastAPI:
    """The API over one testbed. `on_shutdown`, when given, enables POST /shutdown."""

    def authorise(request: Request) -> None:
        if token is None:
            return
        given = request.headers.get("authorization", "")
        if not hmac.compare_digest(given.encode(), f"Bearer {token}".encode()):
            raise HTTPException(
                401, "missing or wrong bearer token", headers={"WWW-Authenticate": "Bearer"}
            )

    app = FastAPI(
        title="innet testbed",
        version="0.1.0",
        description="Topology, schedule, rounds, counters and health of a running innet testbed.",
        dependencies=[Depends(authorise)],
    )
    _errors(app)
    _testbed_routes(app, testbed)
    _schedule_routes(app, testbed)
    _round_routes(app, testbed)
    _experiment_routes(app, experiment if experiment is not None else ServiceExperiment(testbed))
    if on_shutdown is not None:

        @app.post("/shutdown", summary="Stop the service (tears the testbed down)")
        def shutdown() -> dict[str, str]:
            on_shutdown()
            return {"status": "stopping"}

    return app


def _errors(app: FastAPI) -> None:
    def detail(status: int) -> Callable[[Request, Exception], JSONResponse]:
        def handler(_request: Request, err: Exception) -> JSONResponse:
            return JSONResponse({"detail": str(err)}, status_code=status)

        return handler

    app.add_exception_handler(UnknownCityError, detail(404))
    app.add_exception_handler(ExperimentBusy, detail(409))
    app.add_exception_handler(RoundEntriesError, detail(409))
    app.add_exception_handler(TestbedError, detail(503))
    app.add_exception_handler(P4RuntimeError, detail(503))


def _testbed_routes(app: FastAPI, testbed: Testbed) -> None:
    @app.get("/health", summary="Each switch: process, P4Runtime stream, control channel")
    def health() -> JSONObject:
        return views.health(testbed.health())

    @app.get("/topology", summary="Cities, links, switches and how the testbed was built")
    def topology() -> JSONObject:
        return views.topology(testbed)

    @app.get("/counters", summary="Counters of every switch")
    def all_counters() -> list[JSONValue]:
        return [views.counters(testbed.counters(u)) for u in range(testbed.wan.n)]

    @app.get("/counters/{city}", summary="A city's switch: innet statistics and port counters")
    def counters(city: str) -> JSONObject:
        return views.counters(testbed.counters(city))


def _schedule_routes(app: FastAPI, testbed: Testbed) -> None:
    @app.get("/schedule", summary="The schedule rounds are played from")
    def get_schedule() -> JSONObject:
        return views.schedule(testbed)

    @app.put("/schedule", summary="Play this schedule from the next round on")
    def put_schedule(body: ScheduleBody) -> JSONObject:
        schedule = schedule_from_body(testbed, body)
        try:
            testbed.set_schedule(schedule)
        except ScheduleError as err:
            raise invalid(("body", "rounds"), str(err)) from None
        return views.schedule(testbed)

    @app.post("/schedule/plan", summary="Plan with these parameters and play the best schedule")
    def plan(body: PlanBody) -> JSONObject:
        try:
            params = CostParams(
                update_bytes=int(body.update_size),
                memory_bytes=int(body.memory),
                access_bps=float(body.bandwidth),
                pacing=body.pacing,
            )
        except PlanError as err:
            raise invalid(("body", "memory"), str(err)) from None
        try:
            result = testbed.plan(params, body.families, body.epsilon)
        except PlanError as err:
            raise invalid(("body", "families"), str(err)) from None
        return views.plan(testbed, result)


def _round_routes(app: FastAPI, testbed: Testbed) -> None:
    @app.get("/rounds/current", summary="The newest installed round (null before the first)")
    def current() -> JSONObject | None:
        return views.installed(testbed.current_round())

    @app.post(
        "/rounds/advance",
        summary="Install the next round on every switch or none; retire the one before",
    )
    def advance() -> JSONObject | None:
        return views.installed(testbed.advance())

    @app.get("/rounds/history", summary="Every round installed, with install times")
    def history() -> list[JSONValue]:
        return views.history(testbed.history())


def _experiment_routes(app: FastAPI, experiments: ServiceExperiment) -> None:
    @app.post(
        "/experiment",
        status_code=202,
        summary="Train with the current schedule for some rounds (in the background)",
    )
    def start_experiment(body: ExperimentBody) -> JSONObject:
        training = Training(rounds=body.rounds, **body.training.model_dump())
        return experiments.start(body.name, training, body.seed, body.round_deadline_s)

    @app.get("/experiment", summary="The experiment's state, progress and latest rounds")
    def experiment_status() -> JSONObject:
        return experiments.status()

    @app.post("/experiment/stop", summary="Start no further round; the current one finishes")
    def stop_experiment() -> JSONObject:
        return experiments.stop()
