"""The health JSON and `innet status` for each way a switch can be unwell over P4Runtime."""

from __future__ import annotations

import pytest

from controller.service import commands, views
from controller.testbed import SwitchHealth
from innet.jsontypes import JSONValue

WELL = SwitchHealth("A", "s0", process=True, p4runtime=True, control=None)
LOST = SwitchHealth(
    "B",
    "s1",
    True,
    True,
    None,
    primary="lost",
    reason="another client is primary (election id 9); the controller asks again once it leaves",
)
TIMED_OUT = SwitchHealth(
    "C",
    "s2",
    True,
    True,
    None,
    state="diverged",
    write="timed out",
    reason="state diverged: a write of 3 updates ended with DEADLINE_EXCEEDED",
)


def test_each_field_that_is_not_ok_makes_the_switch_and_the_testbed_unwell() -> None:
    assert WELL.ok and not LOST.ok and not TIMED_OUT.ok
    body = views.health((WELL, LOST, TIMED_OUT))
    assert body["ok"] is False
    switches = body["switches"]
    assert isinstance(switches, list)
    rows = {s["switch"]: s for s in switches if isinstance(s, dict)}
    assert rows["s0"] == {
        "city": "A",
        "switch": "s0",
        "process": True,
        "p4runtime": True,
        "control": None,
        "primary": "ok",
        "state": "ok",
        "write": "ok",
        "reason": "",
        "ok": True,
    }
    assert (rows["s1"]["primary"], rows["s1"]["ok"]) == ("lost", False)
    assert (rows["s2"]["state"], rows["s2"]["write"]) == ("diverged", "timed out")
    reason = str(body["reason"])
    assert "B (s1): another client is primary" in reason and "C (s2): state diverged" in reason
    assert views.health((WELL,)) == {"ok": True, "reason": "", "switches": [{**rows["s0"]}]}


class FakeService:
    """What `status` asks the service, answered from fixed JSON."""

    api = "http://127.0.0.1:1"

    def __init__(self, health: JSONValue) -> None:
        self.replies: dict[str, JSONValue] = {
            "/health": health,
            "/topology": {
                "name": "triangle",
                "hosts_per_city": 1,
                "memory_bytes": 2**20,
                "slots": 64,
                "shaping": "switch",
                "scale": 1.0,
                "switches": [
                    {"city": c, "grpc_addr": f"127.0.0.1:5040{i}"} for i, c in enumerate("ABC")
                ],
            },
            "/rounds/current": None,
            "/schedule": {"family": "test", "rounds": [[["A", "B", "C"]]]},
        }

    def request(self, method: str, path: str, body: object = None) -> JSONValue:
        return self.replies[path]


@pytest.mark.parametrize("unwell", [LOST, TIMED_OUT], ids=["primary lost", "write timed out"])
def test_status_is_not_healthy_and_says_why(
    unwell: SwitchHealth, capsys: pytest.CaptureFixture[str]
) -> None:
    commands.status(FakeService(views.health((WELL, unwell))))  # type: ignore[arg-type]
    out = capsys.readouterr().out
    assert "NOT healthy" in out and "healthy;" not in out.replace("NOT healthy", "")
    assert "primary" in out.splitlines()[1] and "write" in out.splitlines()[1]
    assert f"{unwell.city}: {unwell.reason}" in out
    words = {"lost": "LOST", "timed out": "TIMED OUT"}
    assert words[unwell.primary if unwell.primary != "ok" else unwell.write] in out


def test_status_of_a_well_testbed_is_healthy(capsys: pytest.CaptureFixture[str]) -> None:
    commands.status(FakeService(views.health((WELL,))))  # type: ignore[arg-type]
    assert "healthy;" in capsys.readouterr().out
