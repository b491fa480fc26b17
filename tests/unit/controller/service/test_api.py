"""The REST API over a real Testbed: the controller and real p4switch P4Runtime servers running
innet.p4 in this process (conftest.py), without Mininet or ports. No root needed.
Strict inputs, body limits and the OpenAPI schema: test_strict_inputs.py."""

from __future__ import annotations

import time

import pytest
from fastapi.testclient import TestClient

from controller.service.api import create_app
from controller.testbed import Testbed
from tests.unit.controller.conftest import Switch
from tests.unit.controller.service.conftest import W

MEMBERSHIP = "InnetIngress.membership"


def members(sw: Switch) -> int:
    return sw.entry_count(MEMBERSHIP)


def test_health_and_topology(client: TestClient, testbed: Testbed) -> None:
    health = client.get("/health").json()
    assert health["ok"] is True
    assert [s["city"] for s in health["switches"]] == ["A", "B", "C"]
    assert all(s["p4runtime"] and s["process"] and s["control"] is None for s in health["switches"])
    topo = client.get("/topology").json()
    assert [c["name"] for c in topo["cities"]] == ["A", "B", "C"]
    assert topo["hosts_per_city"] == W and len(topo["links"]) == 3
    assert client.get("/openapi.json").json()["info"]["title"] == "innet testbed"
    assert client.get("/docs").status_code == 200


def test_bearer_token(testbed: Testbed) -> None:
    client = TestClient(create_app(testbed, token="s3cret"))
    assert client.get("/health").status_code == 401
    assert client.get("/health", headers={"Authorization": "Bearer wrong"}).status_code == 401
    assert client.post("/rounds/advance").status_code == 401
    assert client.get("/health", headers={"Authorization": "Bearer s3cret"}).status_code == 200


def test_unknown_city_in_schedule_is_422_naming_field_and_city(
    client: TestClient, switches: list[Switch]
) -> None:
    reply = client.put("/schedule", json={"rounds": [[["A", "Paris"], ["C"]]]})
    assert reply.status_code == 422
    (error,) = reply.json()["detail"]
    assert error["loc"] == ["body", "rounds", 0, 0, 1]
    assert "Paris" in error["msg"] and "known: A, B, C" in error["msg"]
    assert client.get("/schedule").json()["family"] == "test"  # unchanged


@pytest.mark.parametrize(
    ("body", "loc", "reason"),
    [
        ({"rounds": "A,B,C"}, ["body", "rounds"], "list"),
        ({"rounds": []}, ["body", "rounds"], "at least 1"),
        ({"rounds": [[["A", "B"]]]}, ["body", "rounds", 0], "leaves out C"),
        ({"rounds": [[["A", "B"], ["B", "C"]]]}, ["body", "rounds", 0, 1, 0], "two groups"),
        ({"rounds": [[["A", "B"], []]]}, ["body", "rounds", 0, 1], "at least 1 item"),
        ({"rounds": [[]]}, ["body", "rounds", 0], "at least 1 item"),
        ({}, ["body", "rounds"], "required"),
    ],
)
def test_malformed_schedule_is_422(
    client: TestClient, body: dict[str, object], loc: list[object], reason: str
) -> None:
    reply = client.put("/schedule", json=body)
    assert reply.status_code == 422
    errors = reply.json()["detail"]
    assert any(e["loc"][: len(loc)] == loc and reason in e["msg"] for e in errors), errors


def test_set_schedule_plays_from_next_round(client: TestClient, switches: list[Switch]) -> None:
    reply = client.put("/schedule", json={"name": "all", "rounds": [[["A", "B", "C"]]]})
    assert reply.status_code == 200, reply.text
    assert reply.json()["family"] == "api:all"
    assert client.get("/schedule").json()["rounds"] == [[["A", "B", "C"]]]
    current = client.post("/rounds/advance").json()
    assert current["groups"] == [["A", "B", "C"]]
    assert [members(sw) for sw in switches] == [1, 1, 1]


@pytest.mark.parametrize(
    ("body", "field", "reason"),
    [
        ({"memory": -5}, "memory", "from 256 B to 1 TB"),
        ({"memory": "lots"}, "memory", ""),
        ({"memory": "10B"}, "memory", "from 256 B to 1 TB, got 10 B"),
        ({"bandwidth": "fast"}, "bandwidth", ""),
        ({"epsilon": 2}, "epsilon", "less than 1"),
        ({"families": ["cliques-99"]}, "families", "unknown schedule family"),
    ],
)
def test_bad_plan_parameters_are_422(
    client: TestClient, body: dict[str, object], field: str, reason: str
) -> None:
    reply = client.post("/schedule/plan", json=body)
    assert reply.status_code == 422
    errors = reply.json()["detail"]
    assert any(e["loc"][:2] == ["body", field] and reason in e["msg"] for e in errors), errors
    assert client.get("/schedule").json()["family"] == "test"


def test_plan_chooses_and_sets_a_schedule(client: TestClient) -> None:
    reply = client.post("/schedule/plan", json={"memory": "64MB", "update_size": 10**9})
    assert reply.status_code == 200, reply.text
    out = reply.json()
    assert {f["family"] for f in out["plan"]} >= {"all-to-all", "ring-pairs"}
    best = min(out["plan"], key=lambda f: f["time_s"])
    assert out["family"] == best["family"]
    assert out["params"]["memory_bytes"] == 64 * 10**6


def test_advance_installs_every_switch_and_retires_the_one_before_previous(
    client: TestClient, switches: list[Switch]
) -> None:
    assert client.get("/rounds/current").json() is None
    assert [members(sw) for sw in switches] == [0, 0, 0]
    r0 = client.post("/rounds/advance").json()
    assert r0["number"] == 0 and r0["groups"] == [["A", "B"], ["C"]]
    assert [members(sw) for sw in switches] == [1, 1, 1]  # A and B in one group, C alone
    r1 = client.post("/rounds/advance").json()
    assert r1["number"] == 1 and r1["installed"] == [0, 1]
    assert [members(sw) for sw in switches] == [2, 2, 2]  # round 1 beside round 0
    r2 = client.post("/rounds/advance").json()
    assert r2["installed"] == [1, 2] and r2["groups"] == [["A", "B"], ["C"]]
    assert [members(sw) for sw in switches] == [2, 2, 2]  # round 0 retired
    history = client.get("/rounds/history").json()
    assert [h["number"] for h in history] == [0, 1, 2]
    assert history[0]["retired_at"] is not None and history[1]["retired_at"] is None
    assert client.get("/rounds/current").json()["number"] == 2


def test_a_round_is_installed_on_all_switches_or_none(
    client: TestClient, switches: list[Switch], testbed: Testbed
) -> None:
    client.post("/rounds/advance")
    before = [members(sw) for sw in switches[:2]]
    switches[2].stop()  # C's switch is gone: round 1 cannot reach it
    deadline = time.monotonic() + 10
    while testbed.fabric.connection("s2").alive and time.monotonic() < deadline:
        time.sleep(0.05)
    reply = client.post("/rounds/advance")
    assert reply.status_code == 503
    assert "s2" in reply.json()["detail"]
    assert [members(sw) for sw in switches[:2]] == before  # nothing half-installed
    assert client.get("/rounds/current").json()["number"] == 0
    health = client.get("/health").json()
    assert health["ok"] is False and health["switches"][2]["process"] is False


def test_heal_reinstalls_a_restarted_switch(
    client: TestClient, switches: list[Switch], testbed: Testbed
) -> None:
    client.post("/rounds/advance")
    switches[1].restart()  # empty tables, stream ended
    deadline = time.monotonic() + 10
    while testbed.fabric.connection("s1").alive and time.monotonic() < deadline:
        time.sleep(0.05)
    assert members(switches[1]) == 0
    assert testbed.heal() == ["B"]
    assert members(switches[1]) == 1
    assert client.get("/health").json()["ok"] is True
    assert client.post("/rounds/advance").status_code == 200


def test_heal_does_not_wait_on_a_switch_that_is_dying(
    switches: list[Switch], testbed: Testbed, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Stream ended, process not yet gone (a SIGTERM's shutdown, a kill not yet reaped): heal
    tries briefly and returns; once the process is found dead it is restarted and reinstalled."""
    monkeypatch.setattr("controller.testbed.LIVE_RECONNECT_S", 0.5)
    network = testbed.network
    dying = {"s1": True}
    monkeypatch.setattr(
        network, "process_alive", lambda city: city != 1 or dying["s1"] or bool(switches[1].device)
    )
    switches[1].stop()
    deadline = time.monotonic() + 10
    while testbed.fabric.connection("s1").alive and time.monotonic() < deadline:
        time.sleep(0.05)
    began = time.monotonic()
    assert testbed.heal() == []  # not healed, and not stuck for heal's 60 s timeout: a hang
    assert time.monotonic() - began < 30  # guard halfway between the 0.5 s try and the 60 s
    dying["s1"] = False  # now reaped: dead
    assert testbed.heal() == ["B"]
    assert switches[1].device is not None and members(switches[1]) == 0  # base plan back


def test_counters(client: TestClient) -> None:
    reply = client.get("/counters/B")
    assert reply.status_code == 200
    body = reply.json()
    assert body["city"] == "B" and body["ports"] is None
    assert set(body["stats"]) >= {"contribution", "completed", "unknown", "ipv4_forwarded"}
    assert all(v == 0 for v in body["stats"].values())
    assert [c["city"] for c in client.get("/counters").json()] == ["A", "B", "C"]
    missing = client.get("/counters/Paris")
    assert missing.status_code == 404 and "known: A, B, C" in missing.json()["detail"]


def test_experiment_is_idle_until_started(client: TestClient) -> None:
    assert client.get("/experiment").json() == {"state": "idle"}


@pytest.mark.parametrize(
    ("body", "loc"),
    [
        ({}, ["body", "rounds"]),
        ({"rounds": 0}, ["body", "rounds"]),
        ({"rounds": 2, "name": "Bad Name"}, ["body", "name"]),
        ({"rounds": 2, "training": {"inner_steps": 0}}, ["body", "training", "inner_steps"]),
        (
            {"rounds": 2, "training": {"outer_momentum": 1.0}},
            ["body", "training", "outer_momentum"],
        ),
        ({"rounds": 2, "trainig": {}}, ["body", "trainig"]),
    ],
)
def test_bad_experiment_bodies_are_422_naming_the_field(
    client: TestClient, body: dict, loc: list
) -> None:
    reply = client.post("/experiment", json=body)
    assert reply.status_code == 422
    assert [e["loc"] for e in reply.json()["detail"]] == [loc]
    assert client.get("/experiment").json() == {"state": "idle"}


def test_an_experiment_needs_the_mininet_network(client: TestClient) -> None:
    """Island processes run in Mininet hosts: over in-process switches the start is refused."""
    reply = client.post("/experiment", json={"rounds": 2})
    assert reply.status_code == 503
    assert "Mininet" in reply.json()["detail"]
    assert client.get("/experiment").json() == {"state": "idle"}
    assert client.post("/experiment/stop").json() == {"state": "idle"}
