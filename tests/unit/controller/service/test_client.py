"""What the commands make of the service's answers: one line per refusal, control characters
escaped, a bare 500 or a page that is not JSON a ServiceFailure, a JSON null a None."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from controller.service.client import ServiceClient
from controller.service.exceptions import RequestRefused, ServiceFailure


def client_answering(monkeypatch: pytest.MonkeyPatch, reply: httpx.Response) -> ServiceClient:
    monkeypatch.setattr(httpx, "request", lambda *_args, **_kw: reply)
    service = ServiceClient.__new__(ServiceClient)  # no run directory: the answer is fixed
    service.api, service.headers = "http://127.0.0.1:1", {}
    return service


def test_a_422_is_one_line_with_control_characters_escaped(monkeypatch: pytest.MonkeyPatch) -> None:
    errors: Any = {"detail": [{"loc": ["body", "rounds", 0], "msg": "bad\nname\u202e"}]}
    service = client_answering(monkeypatch, httpx.Response(422, json=errors))
    with pytest.raises(RequestRefused) as refused:
        service.request("PUT", "/schedule", {})
    assert str(refused.value) == "rounds.0: bad\\nname\\u202e"


def test_a_413_says_the_body_is_too_large(monkeypatch: pytest.MonkeyPatch) -> None:
    too_big = httpx.Response(413, json={"detail": "request body over 1048576 bytes"})
    with pytest.raises(RequestRefused, match="413: request body over 1048576 bytes"):
        client_answering(monkeypatch, too_big).request("PUT", "/schedule", {})


@pytest.mark.parametrize(
    "reply",
    [
        httpx.Response(500, text="Internal Server Error"),
        httpx.Response(200, text="<html>a proxy</html>"),
        httpx.Response(200, content=b"{", headers={"content-type": "application/json"}),
    ],
)
def test_an_answer_without_json_is_a_service_failure(
    monkeypatch: pytest.MonkeyPatch, reply: httpx.Response
) -> None:
    with pytest.raises(ServiceFailure):
        client_answering(monkeypatch, reply).request("GET", "/health")


def test_a_json_null_is_none(monkeypatch: pytest.MonkeyPatch) -> None:
    reply = httpx.Response(200, content=b"null", headers={"content-type": "application/json"})
    assert client_answering(monkeypatch, reply).request("GET", "/rounds/current") is None
