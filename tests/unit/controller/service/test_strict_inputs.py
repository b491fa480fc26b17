"""Strict inputs on the REST API: non-finite, huge and boolean numbers, hostile names, bodies
and schedules over their bounds are 422 or 413 naming what is wrong, never a 500 or a value
quietly applied; the OpenAPI schema states every status and bound."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from typing import Any

import pytest
from fastapi.exceptions import RequestValidationError
from fastapi.testclient import TestClient

from controller.service import limits
from controller.service.api import create_app
from controller.service.exceptions import LimitError
from controller.service.guards import validation_failed
from controller.testbed import Testbed
from innet.exceptions import InnetError
from innet.vocabulary import Pacing

HOSTILE = ["a\x00b", "a\nb", "evil\u202etxt.exe", "tab\there", " lead", "x" * 65, "", "é"]


def send(client: TestClient, method: str, path: str, raw: str) -> tuple[int, object]:
    """A raw JSON text (NaN, Infinity and 400-digit numbers are not what json.dumps writes)."""
    reply = client.request(method, path, content=raw, headers={"content-type": "application/json"})
    return reply.status_code, json.loads(reply.text)  # the answer is JSON, whatever was sent


def fields(detail: object) -> list[tuple[list[object], str]]:
    assert isinstance(detail, dict)
    return [(e["loc"], e["msg"]) for e in detail["detail"]]


@pytest.mark.parametrize(
    ("raw", "field", "reason"),
    [
        ('{"epsilon": NaN}', "epsilon", "finite"),
        ('{"epsilon": Infinity}', "epsilon", "finite"),
        ('{"memory": 1e400}', "memory", "finite"),
        (f'{{"memory": {10**400}}}', "memory", "from 256 B to 1 TB"),
        ('{"memory": 128}', "memory", "from 256 B to 1 TB, got 128 B"),  # one slot: was a 500
        ('{"memory": 1.5e300}', "memory", "whole number of bytes"),
        (f'{{"update_size": {10**30}}}', "update_size", "from 1 B to 1 PB"),
        ('{"bandwidth": NaN}', "bandwidth", "finite"),
        ('{"bandwidth": Infinity}', "bandwidth", "finite"),
        ('{"bandwidth": -Infinity}', "bandwidth", "finite"),
        ('{"bandwidth": 1e300}', "bandwidth", "from 1 kb/s to 10 Tb/s"),
        ('{"bandwidth": "99999999999999Tbps"}', "bandwidth", "from 1 kb/s to 10 Tb/s"),
        ('{"bandwidth": "10Gbps\\n"}', "bandwidth", "number and a unit"),
        ('{"memory": "1e400MB"}', "memory", "number and a unit"),
        ('{"memory": false}', "memory", "must be a number, got bool"),
        ('{"bandwidth": true}', "bandwidth", "must be a number, got bool"),
        ('{"epsilon": false}', "epsilon", "valid number"),
        ('{"families": []}', "families", "at least 1 item"),
    ],
)
def test_plan_refuses_non_finite_huge_and_boolean_numbers(
    client: TestClient, testbed: Testbed, raw: str, field: str, reason: str
) -> None:
    before = client.get("/schedule").json()
    status, detail = send(client, "POST", "/schedule/plan", raw)
    assert status == 422, detail
    assert any(loc == ["body", field] and reason in msg for loc, msg in fields(detail)), detail
    assert client.get("/schedule").json() == before  # nothing planned, nothing applied


@pytest.mark.parametrize(
    ("raw", "field"),
    [
        ('{"rounds": true}', "rounds"),
        ('{"rounds": 2.0}', "rounds"),
        ('{"rounds": 2, "seed": false}', "seed"),
        (f'{{"rounds": 2, "seed": {10**30}}}', "seed"),
        ('{"rounds": 2, "round_deadline_s": NaN}', "round_deadline_s"),
        ('{"rounds": 2, "training": {"inner_lr": Infinity}}', "training"),
        ('{"rounds": 2, "training": {"hidden": true}}', "training"),
    ],
)
def test_experiment_refuses_booleans_and_non_finite_numbers(
    client: TestClient, raw: str, field: str
) -> None:
    status, detail = send(client, "POST", "/experiment", raw)
    assert status == 422, detail
    assert [loc[1] for loc, _ in fields(detail)] == [field]


def test_a_plan_in_range_is_applied_with_its_bandwidth(client: TestClient) -> None:
    status, out = send(client, "POST", "/schedule/plan", '{"bandwidth": 2e9, "memory": 65536}')
    assert status == 200, out
    assert isinstance(out, dict) and out["params"]["bandwidth_bps"] == 2e9


@pytest.fixture
def records(caplog: pytest.LogCaptureFixture) -> Iterator[pytest.LogCaptureFixture]:
    with caplog.at_level(logging.DEBUG):
        yield caplog


@pytest.mark.parametrize("name", HOSTILE)
def test_hostile_names_are_refused_and_never_logged(
    client: TestClient, records: pytest.LogCaptureFixture, name: str
) -> None:
    schedule = {"name": name, "rounds": [[["A", "B", "C"]]]}
    city = {"rounds": [[["A", "B"], [name]]]}
    family = {"families": [name]}
    for method, path, body, loc in [
        ("PUT", "/schedule", schedule, ["body", "name"]),
        ("PUT", "/schedule", city, ["body", "rounds", 0, 1, 0]),
        ("POST", "/schedule/plan", family, ["body", "families", 0]),
    ]:
        reply = client.request(method, path, json=body)
        assert reply.status_code == 422, reply.text
        assert [e["loc"] for e in reply.json()["detail"]] == [loc]
        assert all(c.isprintable() for c in reply.text)  # quoted with escapes, if at all
    assert client.get("/schedule").json()["family"] == "test"
    logged = "".join(r.getMessage() for r in records.records)
    assert not any(c in logged for c in "\x00\n\u202e\t")


def test_hostile_city_in_a_path_is_422_and_a_good_unknown_one_404(client: TestClient) -> None:
    assert client.get("/counters/A%00B").status_code == 422
    assert client.get("/counters/%E2%80%AEA").status_code == 422
    assert client.get(f"/counters/{'x' * 65}").status_code == 422
    assert client.get("/counters/Hong Kong").status_code == 404


def test_names_with_spaces_and_punctuation_are_good(client: TestClient) -> None:
    reply = client.put("/schedule", json={"name": "ring 2:a_b.c-d", "rounds": [[["A", "B", "C"]]]})
    assert reply.status_code == 200, reply.text
    assert reply.json()["family"] == "api:ring 2:a_b.c-d"


def test_schedules_are_bounded(client: TestClient) -> None:
    too_long = {"rounds": [[["A", "B", "C"]]] * (limits.MAX_ROUNDS + 1)}
    reply = client.put("/schedule", json=too_long)
    assert reply.status_code == 422
    assert reply.json()["detail"][0]["loc"] == ["body", "rounds"]
    assert f"at most {limits.MAX_ROUNDS}" in reply.json()["detail"][0]["msg"]
    too_many = {"rounds": [[["A"]] * (limits.MAX_GROUPS + 1)]}
    reply = client.put("/schedule", json=too_many)
    assert reply.json()["detail"][0]["loc"] == ["body", "rounds", 0]
    longest = {"rounds": [[["A", "B"], ["C"]], [["A", "B", "C"]]] * (limits.MAX_ROUNDS // 2)}
    assert client.put("/schedule", json=longest).status_code == 200


def test_a_body_over_the_limit_is_413_before_it_is_parsed(client: TestClient) -> None:
    big = json.dumps({"rounds": [[["A", "B", "C"]]] * 200_000})  # 3.8 MB
    assert len(big) > limits.MAX_BODY_BYTES
    reply = client.put("/schedule", content=big, headers={"content-type": "application/json"})
    assert reply.status_code == 413 and "over 1048576 bytes" in reply.json()["detail"]

    def chunks() -> Iterator[bytes]:  # no Content-Length: counted as it arrives
        yield b'{"rounds": ['
        for _ in range(limits.MAX_BODY_BYTES // 16 + 1):
            yield b'[["A","B","C"]],'
        yield b'[["A","B","C"]]]}'

    reply = client.put("/schedule", content=chunks(), headers={"content-type": "application/json"})
    assert reply.status_code == 413
    assert client.get("/schedule").json()["family"] == "test"


def test_a_body_that_is_not_json_is_refused_without_500(client: TestClient) -> None:
    for raw in ('{"memory": 1', "\xff\xfe", '{"memory": %s}' % ("9" * 5000), "[]", "null"):
        reply = client.post(
            "/schedule/plan",
            content=raw.encode("utf-8", "surrogateescape"),
            headers={"content-type": "application/json"},
        )
        assert reply.status_code in (400, 422), (raw[:20], reply.text)


def test_the_validation_answer_holds_any_input() -> None:
    """NaN, bytes and a huge int in what pydantic reports: the answer is still JSON."""
    error = {
        "loc": ("body", b"\xff", 3),
        "msg": "Value error, bad\x00",
        "type": "value_error",
        "input": float("nan"),
        "ctx": {"error": ValueError(b"\x00")},
        "big": 10**400,
    }
    err = RequestValidationError([error])
    reply = validation_failed(None, err)  # type: ignore[arg-type]
    assert reply.status_code == 422
    body = json.loads(bytes(reply.body))
    assert body == {
        "detail": [{"loc": ["body", "b'\\xff'", 3], "msg": "bad\\x00", "type": "value_error"}]
    }


BODY = {"400", "413", "422"}
EXPECTED = {
    ("get", "/health"): set(),
    ("get", "/topology"): set(),
    ("get", "/counters"): {"503"},
    ("get", "/counters/{city}"): {"404", "422", "503"},
    ("get", "/schedule"): set(),
    ("put", "/schedule"): BODY,
    ("post", "/schedule/plan"): BODY,
    ("get", "/rounds/current"): set(),
    ("post", "/rounds/advance"): {"409", "503"},
    ("get", "/rounds/history"): set(),
    ("post", "/experiment"): BODY | {"409", "503"},
    ("get", "/experiment"): set(),
    ("post", "/experiment/stop"): set(),
}


@pytest.mark.parametrize("token", [None, "s3cret"])
def test_the_schema_lists_every_status_each_endpoint_answers(
    testbed: Testbed, token: str | None
) -> None:
    spec = TestClient(create_app(testbed, token=token)).get("/openapi.json").json()
    found = {
        (method, path): set(op["responses"]) - {"200", "202"}
        for path, item in spec["paths"].items()
        for method, op in item.items()
    }
    auth = set() if token is None else {"401"}
    assert found == {key: codes | auth for key, codes in EXPECTED.items()}


def test_the_schema_states_the_bounds_it_enforces(testbed: Testbed) -> None:
    spec = TestClient(create_app(testbed)).get("/openapi.json").json()
    models = spec["components"]["schemas"]
    rounds = models["ScheduleBody"]["properties"]["rounds"]
    groups = rounds["items"]
    group = groups["items"]
    assert (rounds["minItems"], rounds["maxItems"]) == (1, limits.MAX_ROUNDS)
    assert (groups["minItems"], groups["maxItems"]) == (1, limits.MAX_GROUPS)
    assert (group["minItems"], group["maxItems"]) == (1, limits.MAX_GROUP_CITIES)
    assert group["items"]["pattern"] == models["ScheduleBody"]["properties"]["name"]["pattern"]
    plan = models["PlanBody"]["properties"]
    memory_bytes, memory_text = plan["memory"]["anyOf"]
    assert memory_bytes == {
        "type": "integer",
        "minimum": limits.MIN_MEMORY_BYTES,
        "maximum": limits.MAX_MEMORY_BYTES,
    }
    assert memory_text["pattern"] == limits.SIZE_TEXT_PATTERN
    assert plan["bandwidth"]["anyOf"][0]["maximum"] == limits.MAX_BANDWIDTH_BPS
    pacing = models[plan["pacing"]["$ref"].rsplit("/", 1)[1]]  # the vocabulary's, one place
    assert pacing["enum"] == [p.value for p in Pacing] == ["rate", "window"]
    assert models["ExperimentBody"]["properties"]["seed"]["maximum"] == limits.MAX_SEED


def test_an_unforeseen_innet_error_is_503_with_its_message_not_500(
    testbed: Testbed, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    def fail(_city: object) -> None:
        raise InnetError("the switch answered nonsense\x00")

    monkeypatch.setattr(testbed, "counters", fail)
    reply = TestClient(create_app(testbed), raise_server_exceptions=False).get("/counters/A")
    assert reply.status_code == 503
    assert reply.json() == {"detail": "the switch answered nonsense\\x00"}
    assert "/counters/A: the switch answered nonsense" in caplog.text


@pytest.mark.parametrize(
    ("check", "value", "reason"),
    [
        (lambda v: limits.epsilon(v), float("nan"), "finite"),
        (lambda v: limits.epsilon(v), 1.0, "below 1"),
        (lambda v: limits.epsilon(v), True, "a number, got bool"),
        (lambda v: limits.bit_rate(v, "--bandwidth"), "10gbps", "number and a unit"),
        (lambda v: limits.byte_count(v, "--memory", limits.MAX_MEMORY_BYTES), "2TB", "to 1 TB"),
        (lambda v: limits.finite(v, "--scale", 1, 1e6), float("inf"), "finite"),
    ],
)
def test_the_shared_checks_say_what_is_wrong(check: Any, value: object, reason: str) -> None:
    """The rules the commands share with the API (controller/service/limits.py)."""
    with pytest.raises(LimitError, match=reason):
        check(value)
