"""The running service as the `innet` commands reach it: its run directory's state, its API.

    service = ServiceClient(RunDir(None))            # NotRunning if no service runs there
    health = service.request("GET", "/health")

A 422 becomes one line naming each field and reason (`RequestRefused`, exit status 2); another
4xx (a body over the service's size limit is 413) is `RequestRefused` with the service's
reason; a 5xx, an answer that is not JSON or no answer is `ServiceFailure` or `NotRunning`
(exit status 1). Every text from the service is printed with its control characters escaped.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx

from controller.rundir import RunDir, RunState
from controller.service.exceptions import NotRunning, RequestRefused, ServiceFailure
from controller.service.options import read_token
from innet.jsontypes import JSONValue
from innet.names import printable

REQUEST_TIMEOUT_S = 120.0


class ServiceClient:
    """The service recorded in a run directory, while it runs."""

    def __init__(self, run_dir: RunDir) -> None:
        self.run_dir = run_dir
        state = run_dir.read()
        if state is None or not state.owner.running() or state.api is None:
            hint = "start it with 'innet net up'"
            if state is not None:
                hint += " (a previous run left state: 'innet clean' first)"
            raise NotRunning(f"no innet service runs with run directory {run_dir.path}: {hint}")
        self.state: RunState = state
        self.api: str = state.api
        self.headers: dict[str, str] = {}
        if state.token_file:
            token = read_token(Path(state.token_file))  # bounded: never a FIFO or /dev/zero
            self.headers["Authorization"] = f"Bearer {token}"

    def request(
        self, method: str, path: str, body: JSONValue = None, timeout: float = REQUEST_TIMEOUT_S
    ) -> Any:
        """The reply's JSON (any JSON value: each endpoint says what it returns)."""
        try:
            reply = httpx.request(
                method, self.api + path, json=body, headers=self.headers, timeout=timeout
            )
        except httpx.HTTPError as err:
            raise NotRunning(
                f"the innet service at {self.api} does not answer ({err}); "
                f"see its log in {self.run_dir.path / 'service.log'}"
            ) from None
        is_json, answer = _json(reply)
        if reply.status_code == 422 and is_json:
            raise RequestRefused(validation_text(answer))
        if reply.status_code >= 400:
            detail = answer.get("detail", reply.text) if isinstance(answer, dict) else reply.text
            error = RequestRefused if reply.status_code < 500 else ServiceFailure
            raise error(f"{method} {path}: {reply.status_code}: {printable(str(detail), 2000)}")
        if not is_json:
            raise ServiceFailure(
                f"{method} {path}: the service answered {reply.status_code} "
                f"without JSON: {printable(reply.text, 200)}"
            )
        return answer


def _json(reply: httpx.Response) -> tuple[bool, Any]:
    """Whether the reply is JSON, and its value (a proxy's page or a bare 500 is not)."""
    if not reply.headers.get("content-type", "").startswith("application/json"):
        return False, None
    try:
        return True, reply.json()
    except ValueError:
        return False, None


def validation_text(body: Any) -> str:
    """FastAPI's 422 error list as one line: "rounds.0.1: unknown city 'Paris'; ..."."""
    errors = body.get("detail", []) if isinstance(body, dict) else body
    if not isinstance(errors, list):
        return str(errors)
    parts = []
    for e in errors:
        loc = [str(x) for x in e.get("loc", []) if x != "body"] if isinstance(e, dict) else []
        msg = e.get("msg") if isinstance(e, dict) else e
        parts.append(f"{'.'.join(loc) or 'body'}: {msg}")
    return printable("; ".join(parts), 2000)
