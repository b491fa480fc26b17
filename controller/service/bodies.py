"""The API's request bodies (pydantic models) and what they turn into: a schedule, planner
parameters, an experiment's training settings. A problem is a 422 whose `loc` names the field."""

from __future__ import annotations

from fastapi.exceptions import RequestValidationError
from pydantic import BaseModel, ConfigDict, Field, field_validator

from controller.planner.optimise import DEFAULT_EPSILON
from controller.planner.schedule import Round, Schedule
from controller.testbed import Testbed
from innet.exceptions import UnitError
from innet.units import parse_rate, parse_size
from topo.exceptions import UnknownCityError


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
    training: TrainingBody = TrainingBody()


def invalid(loc: tuple[str | int, ...], msg: str) -> RequestValidationError:
    return RequestValidationError([{"loc": loc, "msg": msg, "type": "value_error"}])


def schedule_from_body(testbed: Testbed, body: ScheduleBody) -> Schedule:
    """Map names to islands; any problem is a 422 naming the field."""
    wan = testbed.wan
    rounds = []
    for r, groups in enumerate(body.rounds):
        seen: set[int] = set()
        out = []
        if not groups:
            raise invalid(("body", "rounds", r), "a round must be a non-empty list of groups")
        for g, group in enumerate(groups):
            if not group:
                raise invalid(("body", "rounds", r, g), "a group must name at least one city")
            members = []
            for c, name in enumerate(group):
                loc = ("body", "rounds", r, g, c)
                try:
                    island = testbed.city(name)
                except UnknownCityError as err:
                    raise invalid(loc, str(err)) from None
                if island in seen:
                    raise invalid(loc, f"city {name!r} is in two groups of round {r}")
                seen.add(island)
                members.append(island)
            out.append(members)
        missing = [wan.names[i] for i in range(wan.n) if i not in seen]
        if missing:
            raise invalid(
                ("body", "rounds", r),
                f"round leaves out {', '.join(missing)} (every city must be in a group)",
            )
        rounds.append(Round.of(out))
    return Schedule(f"api:{body.name}", wan.n, tuple(rounds))
