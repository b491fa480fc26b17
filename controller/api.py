"""The testbed's REST API (FastAPI; OpenAPI docs at /docs).

    app = create_app(testbed, token="s3cret")   # token None: no authentication
    uvicorn.run(app, host="127.0.0.1", port=8700)

Bad bodies get 422 with FastAPI's error list: each error's `loc` is the field (e.g.
["body", "rounds", 0, 1, 2]) and `msg` the reason (e.g. "unknown city 'Paris'; known: ...").
With a token, every endpoint but the docs wants `Authorization: Bearer <token>` (401 otherwise).
"""

from __future__ import annotations

import hmac
from collections.abc import Callable
from typing import Any

from fastapi import Depends, FastAPI, HTTPException, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict, Field, field_validator

from controller.p4rt import P4RuntimeError
from controller.planner.cost import CostParams, PlanError
from controller.planner.optimise import DEFAULT_EPSILON
from controller.planner.schedule import Round, Schedule, ScheduleError
from controller.rounds import RoundPlanError
from controller.scenario import Training
from controller.service_experiment import ExperimentBusy, ServiceExperiment
from controller.testbed import Testbed, TestbedError, UnknownCityError
from topo.exceptions import UnitError
from topo.siteplan import SLOT_BYTES
from topo.units import parse_rate, parse_size


class ScheduleBody(BaseModel):
    """A schedule by city names (or codes): rounds, each a list of groups of cities."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field("api", min_length=1, max_length=100)
    rounds: list[list[list[str]]] = Field(..., min_length=1)


def _size(value: str | int, what: str) -> int:
    if isinstance(value, int):
        if value <= 0:
            raise ValueError(f"{what} must be positive, got {value}")
        return value
    try:
        return parse_size(value)
    except UnitError as err:
        raise ValueError(str(err)) from None


class PlanBody(BaseModel):
    """Planner parameters: sizes as bytes or text ("64MB"), rates as text ("10Gbps") or b/s."""

    model_config = ConfigDict(validate_default=True, extra="forbid")

    memory: str | int = "64MB"
    update_size: str | int = "1GB"
    bandwidth: str | float = "10Gbps"
    families: list[str] | None = None
    epsilon: float = Field(DEFAULT_EPSILON, ge=0, lt=1)
    pacing: str = Field("rate", pattern="^(rate|window)$")

    @field_validator("memory")
    @classmethod
    def _memory(cls, v: str | int) -> int:
        return _size(v, "memory")

    @field_validator("update_size")
    @classmethod
    def _update(cls, v: str | int) -> int:
        return _size(v, "update_size")

    @field_validator("bandwidth")
    @classmethod
    def _bandwidth(cls, v: str | float) -> float:
        if isinstance(v, str):
            try:
                return parse_rate(v)
            except UnitError as err:
                raise ValueError(str(err)) from None
        if v <= 0:
            raise ValueError(f"bandwidth must be positive, got {v}")
        return float(v)


class TrainingBody(BaseModel):
    """DiLoCo settings of an experiment (as a scenario's `training` section, without rounds)."""

    model_config = ConfigDict(extra="forbid")

    inner_steps: int = Field(20, ge=1, le=10_000)
    hidden: int = Field(32, ge=1, le=4096)
    batch_size: int = Field(32, ge=1, le=4096)
    inner_lr: float = Field(0.003, gt=0, le=10)
    outer_lr: float = Field(0.7, gt=0, le=10)
    outer_momentum: float = Field(0.9, ge=0, lt=1)


class ExperimentBody(BaseModel):
    """Train with the testbed's current schedule for `rounds` rounds."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field("api", pattern="^[a-z0-9-]+$", max_length=60)
    rounds: int = Field(..., ge=1, le=10_000)
    seed: int = Field(1, ge=0)
    round_deadline_s: float = Field(60.0, gt=0, le=3600)
    training: TrainingBody = Field(default_factory=TrainingBody)


def _invalid(loc: tuple[Any, ...], msg: str) -> RequestValidationError:
    return RequestValidationError([{"loc": loc, "msg": msg, "type": "value_error"}])


def schedule_from_body(testbed: Testbed, body: ScheduleBody) -> Schedule:
    """Map names to islands; any problem is a 422 naming the field."""
    wan = testbed.wan
    rounds = []
    for r, groups in enumerate(body.rounds):
        seen: set[int] = set()
        out = []
        if not groups:
            raise _invalid(("body", "rounds", r), "a round must be a non-empty list of groups")
        for g, group in enumerate(groups):
            if not group:
                raise _invalid(("body", "rounds", r, g), "a group must name at least one city")
            members = []
            for c, name in enumerate(group):
                loc = ("body", "rounds", r, g, c)
                try:
                    island = testbed.city(name)
                except UnknownCityError as err:
                    raise _invalid(loc, str(err)) from None
                if island in seen:
                    raise _invalid(loc, f"city {name!r} is in two groups of round {r}")
                seen.add(island)
                members.append(island)
            out.append(members)
        missing = [wan.names[i] for i in range(wan.n) if i not in seen]
        if missing:
            raise _invalid(
                ("body", "rounds", r),
                f"round leaves out {', '.join(missing)} (every city must be in a group)",
            )
        rounds.append(Round.of(out))
    return Schedule(f"api:{body.name}", wan.n, tuple(rounds))


def create_app(
    testbed: Testbed,
    token: str | None = None,
    on_shutdown: Callable[[], None] | None = None,
    experiment: ServiceExperiment | None = None,
) -> FastAPI:
    """The API over one testbed. `on_shutdown`, when given, enables POST /shutdown."""
    experiments = experiment if experiment is not None else ServiceExperiment(testbed)

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

    @app.exception_handler(TestbedError)
    async def _testbed_error(_r: Request, err: TestbedError) -> JSONResponse:
        status = 404 if isinstance(err, UnknownCityError) else 503
        if isinstance(err, ExperimentBusy):
            status = 409
        return JSONResponse({"detail": str(err)}, status_code=status)

    @app.exception_handler(P4RuntimeError)
    async def _p4rt_error(_r: Request, err: P4RuntimeError) -> JSONResponse:
        return JSONResponse({"detail": str(err)}, status_code=503)

    @app.get("/health", summary="Each switch: process, P4Runtime stream, control channel")
    def health() -> dict[str, Any]:
        return testbed.health()

    @app.get("/topology", summary="Cities, links, switches and how the testbed was built")
    def topology() -> dict[str, Any]:
        return testbed.topology()

    @app.get("/schedule", summary="The schedule rounds are played from")
    def get_schedule() -> dict[str, Any]:
        return testbed.schedule()

    @app.put("/schedule", summary="Play this schedule from the next round on")
    def put_schedule(body: ScheduleBody) -> dict[str, Any]:
        schedule = schedule_from_body(testbed, body)
        try:
            return testbed.set_schedule(schedule)
        except ScheduleError as err:
            raise _invalid(("body", "rounds"), str(err)) from None

    @app.post("/schedule/plan", summary="Plan with these parameters and play the best schedule")
    def plan(body: PlanBody) -> dict[str, Any]:
        try:
            params = CostParams(
                update_bytes=int(body.update_size),
                memory_bytes=int(body.memory),
                access_bps=float(body.bandwidth),
                slot_bytes=SLOT_BYTES,
                pacing=body.pacing,
            )
        except PlanError as err:
            raise _invalid(("body", "memory"), str(err)) from None
        try:
            return testbed.plan(params, body.families, body.epsilon)
        except PlanError as err:
            raise _invalid(("body", "families"), str(err)) from None

    @app.get("/rounds/current", summary="The newest installed round (null before the first)")
    def current() -> dict[str, Any] | None:
        return testbed.current_round()

    @app.post(
        "/rounds/advance",
        summary="Install the next round on every switch or none; retire the one before",
    )
    def advance() -> dict[str, Any]:
        try:
            return testbed.advance()
        except RoundPlanError as err:
            raise HTTPException(409, str(err)) from None

    @app.get("/rounds/history", summary="Every round installed, with install times")
    def history() -> list[dict[str, Any]]:
        return testbed.history()

    @app.get("/counters", summary="Counters of every switch")
    def all_counters() -> list[dict[str, Any]]:
        return [testbed.counters(name) for name in testbed.wan.names]

    @app.get("/counters/{city}", summary="A city's switch: innet statistics and port counters")
    def counters(city: str) -> dict[str, Any]:
        return testbed.counters(city)

    @app.post(
        "/experiment",
        status_code=202,
        summary="Train with the current schedule for some rounds (in the background)",
    )
    def start_experiment(body: ExperimentBody) -> dict[str, Any]:
        training = Training(rounds=body.rounds, **body.training.model_dump())
        return experiments.start(body.name, training, body.seed, body.round_deadline_s)

    @app.get("/experiment", summary="The experiment's state, progress and latest rounds")
    def experiment_status() -> dict[str, Any]:
        return experiments.status()

    @app.post("/experiment/stop", summary="Start no further round; the current one finishes")
    def stop_experiment() -> dict[str, Any]:
        return experiments.stop()

    if on_shutdown is not None:

        @app.post("/shutdown", summary="Stop the service (tears the testbed down)")
        def shutdown() -> dict[str, str]:
            on_shutdown()
            return {"status": "stopping"}

    return app
