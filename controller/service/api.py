"""The testbed's REST API (FastAPI; OpenAPI docs at /docs).

    app = create_app(testbed, token="s3cret")   # token None: no authentication
    uvicorn.run(app, host="127.0.0.1", port=8700)

Bad bodies get 422 with an error list: each error's `loc` is the field (e.g.
["body", "rounds", 0, 1, 2]) and `msg` the reason (e.g. "unknown city 'Paris'; known: ...").
A body that is not JSON is 400, one over MAX_BODY_BYTES 413 (controller/service/limits.py).
An unknown city in a path is 404, a busy experiment or a round the switches refuse 409, a
switch that cannot be reached 503. With a token, every endpoint but the docs wants
`Authorization: Bearer <token>` (401 otherwise). The OpenAPI schema lists, for each endpoint,
every status it answers and every bound its body has.
"""

from __future__ import annotations

import hmac
from collections.abc import Callable
from typing import Annotated, Any

from fastapi import Depends, FastAPI, HTTPException, Path
from fastapi.exceptions import RequestValidationError
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from controller.exceptions import RoundEntriesError, TestbedError
from controller.p4rt.exceptions import P4RuntimeError
from controller.planner.cost import CostParams
from controller.planner.exceptions import PlanError, ScheduleError
from controller.runner.training_spec import Training
from controller.service import limits, views
from controller.service.bodies import (
    ExperimentBody,
    PlanBody,
    ScheduleBody,
    invalid,
    schedule_from_body,
)
from controller.service.exceptions import ExperimentBusy
from controller.service.experiment import ServiceExperiment
from controller.service.guards import (
    BodyLimit,
    Problem,
    ValidationProblem,
    detail,
    unforeseen,
    validation_failed,
)
from controller.testbed import Testbed
from innet.exceptions import InnetError
from innet.jsontypes import JSONObject, JSONValue
from innet.names import NAME_MAX_LENGTH, NAME_PATTERN
from topo.exceptions import UnknownCityError

_BEARER = HTTPBearer(auto_error=False, description="the token of the service's --token-file")


def create_app(
    testbed: Testbed,
    token: str | None = None,
    on_shutdown: Callable[[], None] | None = None,
    experiment: ServiceExperiment | None = None,
) -> FastAPI:
    """The API over one testbed. `on_shutdown`, when given, enables POST /shutdown."""

    def authorise(
        credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(_BEARER)],
    ) -> None:
        given = "" if credentials is None else credentials.credentials
        if not hmac.compare_digest(given.encode(), str(token).encode()):
            raise HTTPException(
                401, "missing or wrong bearer token", headers={"WWW-Authenticate": "Bearer"}
            )

    app = FastAPI(
        title="innet testbed",
        version="0.1.0",
        description="Topology, schedule, rounds, counters and health of a running innet testbed.",
        dependencies=[] if token is None else [Depends(authorise)],
        responses=_statuses(401) if token is not None else None,
    )
    app.add_middleware(BodyLimit, limit=limits.MAX_BODY_BYTES)
    _errors(app)
    experiment = experiment if experiment is not None else ServiceExperiment(testbed)
    _testbed_routes(app, testbed, experiment.cluster)
    _schedule_routes(app, testbed)
    _round_routes(app, testbed)
    _experiment_routes(app, experiment)
    if on_shutdown is not None:

        @app.post("/shutdown", summary="Stop the service (tears the testbed down)")
        def shutdown() -> dict[str, str]:
            on_shutdown()
            return {"status": "stopping"}

    return app


_WHY = {
    400: "the body is not JSON",
    401: "no bearer token, or a wrong one",
    404: "no such city",
    409: "an experiment runs, or a switch refused the round's entries",
    413: f"the body is over {limits.MAX_BODY_BYTES} bytes",
    422: "a field is missing, of the wrong type, out of range or names an unknown city",
    503: "a switch cannot be reached or written; nothing was installed",
}
BODY = (400, 413, 422)  # any endpoint with a request body


def _statuses(*codes: int) -> dict[int | str, dict[str, Any]]:
    """OpenAPI responses for these error statuses."""
    return {
        code: {"model": ValidationProblem if code == 422 else Problem, "description": _WHY[code]}
        for code in codes
    }


def _errors(app: FastAPI) -> None:
    app.add_exception_handler(RequestValidationError, validation_failed)
    app.add_exception_handler(UnknownCityError, detail(404))
    app.add_exception_handler(ExperimentBusy, detail(409))
    app.add_exception_handler(RoundEntriesError, detail(409))
    app.add_exception_handler(TestbedError, detail(503))
    app.add_exception_handler(P4RuntimeError, detail(503))
    app.add_exception_handler(InnetError, unforeseen)  # any other: the testbed could not


City = Annotated[
    str,
    Path(
        min_length=1, max_length=NAME_MAX_LENGTH, pattern=NAME_PATTERN, description="name or code"
    ),
]


def _testbed_routes(app: FastAPI, testbed: Testbed, cluster: JSONObject | None) -> None:
    @app.get("/health", summary="Each switch: process, P4Runtime stream, control channel")
    def health() -> JSONObject:
        return views.health(testbed.health())

    @app.get("/topology", summary="Cities, links, switches and how the testbed was built")
    def topology() -> JSONObject:
        return views.topology(testbed, cluster)

    @app.get("/counters", summary="Counters of every switch", responses=_statuses(503))
    def all_counters() -> list[JSONValue]:
        return [views.counters(testbed.counters(u)) for u in range(testbed.wan.n)]

    @app.get(
        "/counters/{city}",
        summary="A city's switch: innet statistics and port counters",
        responses=_statuses(404, 422, 503),
    )
    def counters(city: City) -> JSONObject:
        return views.counters(testbed.counters(city))


def _schedule_routes(app: FastAPI, testbed: Testbed) -> None:
    @app.get("/schedule", summary="The schedule rounds are played from")
    def get_schedule() -> JSONObject:
        return views.schedule(testbed)

    @app.put(
        "/schedule", summary="Play this schedule from the next round on", responses=_statuses(*BODY)
    )
    def put_schedule(body: ScheduleBody) -> JSONObject:
        schedule = schedule_from_body(testbed, body)
        try:
            testbed.set_schedule(schedule)
        except ScheduleError as err:
            raise invalid(("body", "rounds"), str(err)) from None
        return views.schedule(testbed)

    @app.post(
        "/schedule/plan",
        summary="Plan with these parameters and play the best schedule",
        responses=_statuses(*BODY),
    )
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
        responses=_statuses(409, 503),
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
        responses=_statuses(*BODY, 409, 503),
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
