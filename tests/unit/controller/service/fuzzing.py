"""Schemathesis over the service's own OpenAPI schema: every operation, with bodies and path
parameters that fit the schema (positive) and that break it (negative), a bounded number of
each, derandomised so that a run repeats. Used by test_api_fuzz.py (the app in-process) and
tests/netns/test_api_fuzz.py (the service of `innet net up`).

Each response is checked: no 500, a status the schema lists for the operation, the content
type and body it documents, and a negative case refused with a 4xx.

Cases that fit the schema rarely name the testbed's cities, so `install_schedules` adds
random schedules that do (each round a random partition of every city): each is set, and
its first round installed on every switch."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, Protocol

import hypothesis
from hypothesis import HealthCheck, given
from hypothesis import strategies as st
from schemathesis import BaseSchema, Case, GenerationMode
from schemathesis.core import NotSet
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    negative_data_rejection,
    response_schema_conformance,
    status_code_conformance,
)

# A 503 is an answer the schema lists (a switch unreachable, no Mininet for an experiment);
# a 500 never is: it is checked apart.
CHECKS = [
    status_code_conformance,
    content_type_conformance,
    response_schema_conformance,
]


@dataclass
class FuzzRun:
    """What a run sent and what it found: cases per operation, statuses seen, failures."""

    cases: dict[str, int] = field(default_factory=dict)
    statuses: dict[int, int] = field(default_factory=dict)
    failures: list[str] = field(default_factory=list)
    times: dict[str, float] = field(default_factory=dict)
    by_operation: dict[str, dict[int, int]] = field(default_factory=dict)
    seconds: float = 0.0

    @property
    def total(self) -> int:
        return sum(self.cases.values())

    def summary(self) -> str:
        seen = ", ".join(f"{s}: {n}" for s, n in sorted(self.statuses.items()))
        took = f"{self.seconds:.1f} s"
        return f"{self.total} cases over {len(self.cases)} operations in {took} ({seen})"


def fuzz(
    schema: BaseSchema,
    headers: dict[str, str],
    examples: int,
    skip: Callable[[str, GenerationMode], bool] = lambda _label, _mode: False,
    **call: Any,
) -> FuzzRun:
    """Run `examples` positive and `examples` negative cases on every operation of `schema`
    (but those `skip` names), sending `headers`; `call` goes to Case.call (e.g. base_url)."""
    run = FuzzRun()
    schema.config.generation.update(with_security_parameters=False)  # the token is `headers`
    began = time.monotonic()
    for result in schema.get_all_operations():
        operation = result.ok()
        for mode in (GenerationMode.POSITIVE, GenerationMode.NEGATIVE):
            if skip(operation.label, mode):
                continue
            began_op = time.monotonic()
            _run(operation, mode, headers, examples, run, call)
            run.times[f"{operation.label} ({mode.value})"] = time.monotonic() - began_op
    run.seconds = time.monotonic() - began
    return run


def _run(
    operation: Any,
    mode: GenerationMode,
    headers: dict[str, str],
    examples: int,
    run: FuzzRun,
    call: dict[str, Any],
) -> None:
    key = f"{operation.label} ({mode.value})"
    checks = CHECKS + ([negative_data_rejection] if mode is GenerationMode.NEGATIVE else [])

    @hypothesis.settings(
        max_examples=examples,
        deadline=None,
        derandomize=True,
        database=None,
        suppress_health_check=list(HealthCheck),
        phases=[hypothesis.Phase.generate],
    )
    @given(case=operation.as_strategy(generation_mode=mode))
    def one(case: Case) -> None:
        run.cases[key] = run.cases.get(key, 0) + 1
        try:
            response = case.call(headers=headers, **call)
        except Exception as err:  # a transport error: the service did not answer at all
            run.failures.append(f"{key}: no answer: {err!r}")
            return
        status = response.status_code
        run.statuses[status] = run.statuses.get(status, 0) + 1
        per = run.by_operation.setdefault(key, {})
        per[status] = per.get(status, 0) + 1
        if status == 500:
            run.failures.append(f"{key}: 500 for {_request(case)}: {response.text[:300]}")
        try:
            case.validate_response(response, checks=checks, headers=headers)
        except (Exception, BaseExceptionGroup) as err:  # every failure goes in the report
            run.failures.append(f"{key}: {status} for {_request(case)}: {_first_line(err)}")

    try:
        one()
    except hypothesis.errors.Unsatisfiable:  # nothing to break: no body, no parameter
        if mode is not GenerationMode.NEGATIVE:
            raise


class Client(Protocol):
    """An HTTP client with the token set: httpx.Client, or FastAPI's TestClient."""

    def put(self, url: str, *, json: Any) -> Any: ...
    def post(self, url: str) -> Any: ...


Rounds = list[list[list[str]]]


def _split(order: list[str], cuts: list[bool]) -> list[list[str]]:
    groups = [[order[0]]]
    for city, cut in zip(order[1:], cuts, strict=True):
        if cut:
            groups.append([])
        groups[-1].append(city)
    return groups


def schedules(cities: list[str]) -> st.SearchStrategy[Rounds]:
    """One to four rounds, each a random partition of every city into groups."""
    cuts = st.lists(st.booleans(), min_size=len(cities) - 1, max_size=len(cities) - 1)
    one_round = st.tuples(st.permutations(cities), cuts).map(lambda oc: _split(list(oc[0]), oc[1]))
    return st.lists(one_round, min_size=1, max_size=4)


def install_schedules(client: Client, cities: list[str], examples: int) -> int:
    """Set `examples` random schedules, installing each one's first round; returns how many."""
    done = []

    @hypothesis.settings(
        max_examples=examples,
        deadline=None,
        derandomize=True,
        database=None,
        suppress_health_check=list(HealthCheck),
    )
    @given(rounds=schedules(cities))
    def one(rounds: Rounds) -> None:
        put = client.put("/schedule", json={"name": "random", "rounds": rounds})
        assert put.status_code == 200, (rounds, put.text)
        advanced = client.post("/rounds/advance")
        assert advanced.status_code == 200, (rounds, advanced.text)
        groups = {frozenset(g) for g in advanced.json()["groups"]}
        assert groups == {frozenset(g) for g in rounds[0]}, (rounds, advanced.text)
        done.append(rounds)

    one()
    return len(done)


def _request(case: Case) -> str:
    body = "" if isinstance(case.body, NotSet) else f" {case.body!r}"[:300]
    return f"{case.method} {case.formatted_path}{body}"


def _first_line(err: BaseException) -> str:
    lines: Iterable[str] = (line.strip() for line in str(err).splitlines())
    return " | ".join(line for line in lines if line)[:600]
