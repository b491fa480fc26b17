"""The API's request bodies (pydantic models) and what they turn into: a schedule, planner
parameters, an experiment's training settings. A problem is a 422 whose `loc` names the field.

Types are strict (a boolean is not a number, "3" is not an integer), numbers finite and in the
ranges of controller/service/limits.py, names as innet/names.py says; the OpenAPI schema
states each bound, so what it allows is what is checked."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi.exceptions import RequestValidationError
from pydantic import AfterValidator, BaseModel, ConfigDict, Field, field_validator

from controller.planner.optimise import DEFAULT_EPSILON
from controller.planner.schedule import Round, Schedule
from controller.service import limits
from controller.testbed import Testbed
from innet.names import NAME_MAX_LENGTH, NAME_PATTERN, NAME_RULE, name_problem
from innet.vocabulary import Pacing
from topo.exceptions import UnknownCityError

STRICT = ConfigDict(extra="forbid", strict=True)


def _name(value: str) -> str:
    problem = name_problem(value, "name")
    if problem is not None:
        raise ValueError(problem)
    return value


Name = Annotated[
    str,
    AfterValidator(_name),
    Field(
        min_length=1,
        max_length=NAME_MAX_LENGTH,
        json_schema_extra={"pattern": NAME_PATTERN},
        description=NAME_RULE,
    ),
]
Finite = Annotated[float, Field(allow_inf_nan=False)]
ByteCount = Annotated[int, Field(ge=1)]
SizeText = Annotated[
    str, Field(max_length=limits.QUANTITY_TEXT_LENGTH, pattern=limits.SIZE_TEXT_PATTERN)
]
RateText = Annotated[
    str, Field(max_length=limits.QUANTITY_TEXT_LENGTH, pattern=limits.RATE_TEXT_PATTERN)
]
Group = Annotated[list[Name], Field(min_length=1, max_length=limits.MAX_GROUP_CITIES)]
Groups = Annotated[list[Group], Field(min_length=1, max_length=limits.MAX_GROUPS)]


class ScheduleBody(BaseModel):
    """A schedule by city names (or codes): rounds, each a list of groups of cities."""

    model_config = STRICT

    name: Name = "api"
    rounds: list[Groups] = Field(..., min_length=1, max_length=limits.MAX_ROUNDS)


class PlanBody(BaseModel):
    """Planner parameters: sizes as bytes or text ("64MB"), rates as text ("10Gbps") or b/s."""

    model_config = ConfigDict(extra="forbid", strict=True, validate_default=True)

    memory: (
        Annotated[int, Field(ge=limits.MIN_MEMORY_BYTES, le=limits.MAX_MEMORY_BYTES)] | SizeText
    ) = "64MB"
    update_size: Annotated[ByteCount, Field(le=limits.MAX_UPDATE_BYTES)] | SizeText = "1GB"
    bandwidth: (
        Annotated[Finite, Field(ge=limits.MIN_BANDWIDTH_BPS, le=limits.MAX_BANDWIDTH_BPS)]
        | RateText
    ) = "10Gbps"
    families: Annotated[list[Name], Field(min_length=1, max_length=limits.MAX_FAMILIES)] | None = (
        None
    )
    epsilon: Finite = Field(DEFAULT_EPSILON, ge=0, lt=1)
    pacing: Pacing = Pacing.RATE

    # Before the type's own check, so that each field has one error that says what is wanted.
    @field_validator("memory", mode="before")
    @classmethod
    def _memory(cls, v: Any) -> int:
        return limits.byte_count(v, "memory", limits.MAX_MEMORY_BYTES, limits.MIN_MEMORY_BYTES)

    @field_validator("update_size", mode="before")
    @classmethod
    def _update(cls, v: Any) -> int:
        return limits.byte_count(v, "update_size", limits.MAX_UPDATE_BYTES)

    @field_validator("bandwidth", mode="before")
    @classmethod
    def _bandwidth(cls, v: Any) -> float:
        return limits.bit_rate(v, "bandwidth")


class TrainingBody(BaseModel):
    """DiLoCo settings of an experiment (as a scenario's `training` section, without rounds)."""

    model_config = STRICT

    inner_steps: int = Field(20, ge=1, le=10_000)
    hidden: int = Field(32, ge=1, le=4096)
    batch_size: int = Field(32, ge=1, le=4096)
    inner_lr: Finite = Field(0.003, gt=0, le=10)
    outer_lr: Finite = Field(0.7, gt=0, le=10)
    outer_momentum: Finite = Field(0.9, ge=0, lt=1)


class ExperimentBody(BaseModel):
    """Train with the testbed's current schedule for `rounds` rounds."""

    model_config = STRICT

    name: str = Field("api", pattern="^[a-z0-9-]+$", min_length=1, max_length=60)
    rounds: int = Field(..., ge=1, le=10_000)
    seed: int = Field(1, ge=0, le=limits.MAX_SEED)
    round_deadline_s: Finite = Field(60.0, gt=0, le=3600)
    training: TrainingBody = TrainingBody()


def invalid(loc: tuple[str | int, ...], msg: str) -> RequestValidationError:
    return RequestValidationError([{"loc": loc, "msg": msg, "type": "value_error"}])


def schedule_from_body(testbed: Testbed, body: ScheduleBody) -> Schedule:
    """Map names to islands; any problem is a 422 naming the field. The model has checked
    the shape already: at least one round, each a non-empty list of non-empty groups."""
    wan = testbed.wan
    rounds = []
    for r, groups in enumerate(body.rounds):
        seen: set[int] = set()
        out = []
        for g, group in enumerate(groups):
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
