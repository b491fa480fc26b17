"""Schemathesis against the app in-process (fuzzing.py), over a real Testbed of in-process
p4switch servers: a few cases per operation and mode, then the testbed still healthy and
installing random schedules' rounds on every switch. The same run on `innet net up`'s service, with
more cases: tests/netns/test_api_fuzz.py."""

from __future__ import annotations

import schemathesis
from fastapi.testclient import TestClient

from controller.service.api import create_app
from controller.testbed import Testbed
from tests.unit.controller.service.fuzzing import fuzz, install_schedules

TOKEN = "fuzz-token"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
EXAMPLES = 6  # per operation and mode: a quick pass; the netns run takes more


def test_no_input_makes_the_api_fail_or_break_its_schema(testbed: Testbed) -> None:
    app = create_app(testbed, token=TOKEN)
    schema = schemathesis.openapi.from_asgi("/openapi.json", app, headers=AUTH)
    run = fuzz(schema, AUTH, EXAMPLES)
    assert run.failures == [], "\n".join(run.failures)
    assert len(run.cases) >= 17 and run.statuses.get(422, 0) > 0, run.summary()
    assert 500 not in run.statuses

    client = TestClient(app, headers=AUTH)
    assert client.get("/health").json()["ok"] is True
    assert install_schedules(client, ["A", "B", "C"], EXAMPLES) == EXAMPLES
    assert client.get("/health").json()["ok"] is True
