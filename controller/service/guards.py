"""What stands between a request and the API's routes: a bound on the body's size, checked
before anything parses it (413), and error answers that any input can be put in (a 422 for
a body of NaN, a 10**400 or a name with a NUL is still a 422, never a 500). api.py adds
`BodyLimit` as a middleware and the handlers below for the errors they answer.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from fastapi import Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import BaseModel

from innet.names import printable

log = logging.getLogger(__name__)

Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[MutableMapping[str, Any], Receive, Send], Awaitable[None]]


class Problem(BaseModel):
    """Every error but 422: what went wrong and what to do."""

    detail: str


class FieldProblem(BaseModel):
    loc: list[str | int]
    msg: str
    type: str


class ValidationProblem(BaseModel):
    """422: one entry per field at fault (`loc`, e.g. ["body", "rounds", 0, 1, 2]) and why."""

    detail: list[FieldProblem]


class BodyLimit:
    """Refuse (413) a request whose body is longer than `limit` bytes, by its Content-Length
    or, without one, as it arrives; below the limit the route reads the body as sent."""

    def __init__(self, app: ASGIApp, limit: int) -> None:
        self.app, self.limit = app, limit

    async def __call__(self, scope: MutableMapping[str, Any], receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = dict(scope.get("headers", ())).get(b"content-length")
        if declared is not None and declared.isdigit() and int(declared) > self.limit:
            await self._refuse(scope, receive, send)
            return
        body = bytearray()
        while True:
            message = await receive()
            if message["type"] != "http.request":  # the client went away
                return
            body += message.get("body", b"")
            if len(body) > self.limit:
                await self._refuse(scope, receive, send)
                return
            if not message.get("more_body", False):
                break
        await self.app(scope, _replay(bytes(body), receive), send)

    async def _refuse(self, scope: MutableMapping[str, Any], receive: Receive, send: Send) -> None:
        reply = JSONResponse(
            {"detail": f"request body over {self.limit} bytes: send a smaller one"},
            status_code=413,
        )
        await reply(scope, receive, send)


def _replay(body: bytes, receive: Receive) -> Receive:
    sent = False

    async def replay() -> Message:
        nonlocal sent
        if sent:
            return await receive()
        sent = True
        return {"type": "http.request", "body": body, "more_body": False}

    return replay


def validation_failed(_request: Request, err: Exception) -> JSONResponse:
    """FastAPI's 422 without the input it quotes (which JSON may not be able to hold: NaN,
    bytes), every text made printable."""
    assert isinstance(err, RequestValidationError)
    return JSONResponse({"detail": [_field(e) for e in err.errors()]}, status_code=422)


def _field(error: Any) -> dict[str, Any]:
    loc = [
        x if isinstance(x, int) and not isinstance(x, bool) else printable(str(x))
        for x in error.get("loc", ())
    ]
    msg = str(error.get("msg", "")).removeprefix("Value error, ")
    return {"loc": loc, "msg": printable(msg, 1000), "type": printable(str(error.get("type", "")))}


def detail(status: int) -> Callable[[Request, Exception], JSONResponse]:
    """A handler answering `status` with the exception's message."""

    def handler(_request: Request, err: Exception) -> JSONResponse:
        return JSONResponse({"detail": printable(str(err), 2000)}, status_code=status)

    return handler


def unforeseen(request: Request, err: Exception) -> JSONResponse:
    """An innet error no route expects: 503 with its message (logged with its traceback),
    rather than a bare 500."""
    log.error(
        "%s %s: %s", request.method, printable(request.url.path), printable(str(err)), exc_info=err
    )
    return detail(503)(request, err)
