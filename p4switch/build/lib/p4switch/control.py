"""The switch's local control channel: change shaping and read statistics while it runs.

A Unix stream socket (mode 0600, removed on shutdown) carries newline-delimited JSON, one reply
line per request line:

    {"cmd": "ping"}                                             -> {"ok": true, "reply": "pong"}
    {"cmd": "stats"}                                            -> {"ok": true, "stats": {...}}
    {"cmd": "stats", "reset_peaks": true}   the same, then each port's lateness_max_s restarts
    {"cmd": "shape", "port": 3, "spec": "delay=70ms,rate=10Mbit"} -> {"ok": true, "port": 3, ...}

A request that cannot be served gets {"ok": false, "error": "..."}; nothing a client sends stops
the switch. From a shell:

    python -m p4switch.control SOCKET ping | stats | shape PORT SPEC
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import selectors
import socket
import socketserver
import stat
import sys
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import Any, Protocol

from p4switch.commandline import OneLineParser
from p4switch.exceptions import ControlError, ShapeError, UnknownPortError
from p4switch.shaping import ShapeSpec, parse_spec
from p4switch.stats import SwitchStats

log = logging.getLogger(__name__)

COMMANDS = ("ping", "shape", "stats")
MAX_REQUEST_BYTES = 64 * 1024
MAX_SOCKET_PATH_BYTES = 107  # sun_path is 108 bytes, NUL included
IDLE_TIMEOUT_S = 300.0  # a connection silent this long is closed


class Controllable(Protocol):
    """What the control channel drives (a `p4switch.dataplane.Switch`)."""

    def shape(self, port: int, spec: ShapeSpec) -> None: ...

    def stats(self, reset_peaks: bool = False) -> dict[str, Any]: ...


def _error(message: str) -> dict[str, Any]:
    return {"ok": False, "error": message}


def handle_request(target: Controllable, line: bytes | str) -> dict[str, Any]:
    """The reply to one request line; a bad request gets an error reply, never an exception."""
    try:
        request = json.loads(line)
    except (ValueError, UnicodeDecodeError) as err:
        return _error(f'bad JSON: {err}; send one object per line, e.g. {{"cmd": "ping"}}')
    if not isinstance(request, dict):
        return _error('a request is a JSON object with a "cmd" key, e.g. {"cmd": "ping"}')
    cmd = request.get("cmd")
    try:
        if cmd == "ping":
            return {"ok": True, "reply": "pong"}
        if cmd == "stats":
            reset = request.get("reset_peaks", False)
            if not isinstance(reset, bool):
                return _error(f"reset_peaks must be true or false, got {reset!r}")
            return {"ok": True, "stats": target.stats(reset_peaks=reset)}
        if cmd == "shape":
            return _shape(target, request)
    except Exception as err:  # the switch must outlive any request
        log.exception("control request %r failed", cmd)
        return _error(f"{cmd} failed inside the switch: {err}")
    return _error(f"unknown command {cmd!r}; commands: {', '.join(COMMANDS)}")


def _shape(target: Controllable, request: Mapping[str, Any]) -> dict[str, Any]:
    port, text = request.get("port"), request.get("spec")
    if isinstance(port, bool) or not isinstance(port, int):
        return _error(f'shape needs "port": an integer port number, got {port!r}')
    if not isinstance(text, str):
        return _error(f'shape needs "spec": a string like "delay=70ms,rate=10Mbit", got {text!r}')
    try:
        spec = parse_spec(text)
        target.shape(port, spec)
    except (ShapeError, UnknownPortError) as err:
        return _error(str(err))
    return {"ok": True, "port": port, "shape": spec.as_dict(), "text": spec.to_text()}


class _Handler(socketserver.StreamRequestHandler):
    timeout = IDLE_TIMEOUT_S
    server: _Server

    def handle(self) -> None:
        while True:
            try:
                line = self.rfile.readline(MAX_REQUEST_BYTES + 1)
            except (TimeoutError, OSError):
                return
            if not line:
                return
            if len(line) > MAX_REQUEST_BYTES:
                self._reply(_error(f"request longer than {MAX_REQUEST_BYTES} bytes; closing"))
                return
            if not line.strip():
                continue
            if not self._reply(handle_request(self.server.target, line)):
                return

    def _reply(self, reply: dict[str, Any]) -> bool:
        try:
            self.wfile.write(json.dumps(reply).encode() + b"\n")
            self.wfile.flush()
        except OSError:
            return False
        return True


class _Server(socketserver.ThreadingMixIn, socketserver.UnixStreamServer):
    daemon_threads = True
    block_on_close = False

    def __init__(self, path: Path, target: Controllable) -> None:
        self.target = target
        super().__init__(str(path), _Handler)

    def server_bind(self) -> None:
        # The mode of a Unix socket file comes from the socket's inode: set it before bind, so
        # the file is never reachable with wider permissions.
        os.fchmod(self.socket.fileno(), 0o600)
        super().server_bind()


def _clear_stale(path: Path) -> None:
    """Remove a socket file left by a switch that died; refuse to touch anything else."""
    try:
        mode = path.lstat().st_mode
    except FileNotFoundError:
        return
    if not stat.S_ISSOCK(mode):
        raise ControlError(f"{path} exists and is not a socket; remove it or choose another path")
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as probe:
        try:
            probe.connect(str(path))
        except ConnectionRefusedError:
            log.info("removing stale control socket %s", path)
            path.unlink(missing_ok=True)
            return
    raise ControlError(f"another process serves {path}; stop it or choose another path")


class ControlServer:
    """Serves the control channel for `target` on the Unix socket `path`, in its own threads."""

    def __init__(self, path: Path, target: Controllable) -> None:
        self.path = Path(path)
        if len(os.fsencode(self.path)) > MAX_SOCKET_PATH_BYTES:
            raise ControlError(
                f"control socket path {self.path} is longer than the {MAX_SOCKET_PATH_BYTES} "
                "bytes a Unix socket allows; choose a shorter one"
            )
        _clear_stale(self.path)
        try:
            self._server = _Server(self.path, target)
        except OSError as err:
            raise ControlError(f"cannot create control socket {self.path}: {err.strerror}") from err
        self._inode = self.path.stat().st_ino
        self._server.timeout = 0  # handle_request: serve a connection that is ready, never wait
        self._wake_r, self._wake_w = os.pipe2(os.O_CLOEXEC)
        self._closed = False
        self._thread = threading.Thread(target=self._serve, name="p4switch-control", daemon=True)
        self._thread.start()
        log.info("control channel on %s", self.path)

    def _serve(self) -> None:
        """Accept connections (each served in its own thread) until `close` writes the pipe."""
        with selectors.DefaultSelector() as selector:
            selector.register(self._server.socket, selectors.EVENT_READ)
            selector.register(self._wake_r, selectors.EVENT_READ)
            while True:
                ready = selector.select()
                if any(key.fileobj == self._wake_r for key, _ in ready):
                    return
                self._server.handle_request()

    def close(self) -> None:
        """Stop serving and remove the socket file (if it is still ours). Idempotent."""
        if self._closed:
            return
        self._closed = True
        if self._thread.is_alive():
            os.write(self._wake_w, b"\0")
            self._thread.join()
        os.close(self._wake_r)
        os.close(self._wake_w)
        self._server.server_close()
        try:
            if self.path.stat().st_ino == self._inode:
                self.path.unlink()
        except FileNotFoundError:
            pass

    def __enter__(self) -> ControlServer:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


def control_request(
    path: Path | str, request: Mapping[str, Any], timeout: float = 2.0
) -> dict[str, Any]:
    """Send one request to the switch at `path` and return its reply (check reply["ok"]).

    Raises `ControlError` when the switch cannot be reached or does not answer in time.
    """
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(timeout)
        try:
            sock.connect(os.fspath(path))
        except FileNotFoundError:
            raise ControlError(
                f"no control socket at {path}: is the switch running with this control path?"
            ) from None
        except ConnectionRefusedError:
            raise ControlError(
                f"nothing listens on {path}: the switch has stopped (stale socket file)"
            ) from None
        except PermissionError:
            raise ControlError(
                f"no permission to use {path} (mode 0600): run as the switch's user"
            ) from None
        except TimeoutError:
            raise ControlError(f"connecting to {path} timed out after {timeout:g} s") from None
        try:
            sock.sendall(json.dumps(dict(request)).encode() + b"\n")
            with sock.makefile("rb") as replies:
                line = replies.readline(MAX_REQUEST_BYTES * 64)
        except TimeoutError:
            raise ControlError(f"no reply from {path} within {timeout:g} s") from None
        except OSError as err:
            raise ControlError(f"talking to {path} failed: {err}") from None
    if not line:
        raise ControlError(f"the switch at {path} closed the connection without replying")
    try:
        reply = json.loads(line)
    except ValueError as err:
        raise ControlError(f"the switch at {path} sent a reply that is not JSON: {err}") from None
    if not isinstance(reply, dict):
        raise ControlError(f"the switch at {path} sent {reply!r}, not a JSON object")
    return reply


def read_stats(path: Path | str, reset_peaks: bool = False, timeout: float = 2.0) -> SwitchStats:
    """The statistics of the switch at `path`, typed (p4switch.stats); with `reset_peaks` each
    port's lateness and receive-lag peaks restart after the reading. ControlError when the
    switch cannot be reached, refuses, or replies with something that is not statistics."""
    reply = control_request(path, {"cmd": "stats", "reset_peaks": reset_peaks}, timeout)
    if not reply.get("ok"):
        raise ControlError(f"the switch at {path} refused stats: {reply.get('error')}")
    return SwitchStats.from_json(reply.get("stats"))


def _parser() -> argparse.ArgumentParser:
    parser = OneLineParser(prog="python -m p4switch.control", description=__doc__.splitlines()[0])
    parser.add_argument("socket", type=Path, help="the switch's control socket")
    parser.add_argument("--timeout", type=float, default=2.0, help="seconds to wait for a reply")
    commands = parser.add_subparsers(dest="cmd", required=True, parser_class=OneLineParser)
    commands.add_parser("ping", help="check the switch answers")
    commands.add_parser("stats", help="print per-port counters as JSON")
    shape = commands.add_parser("shape", help="change a port's egress shaping")
    shape.add_argument("port", type=int, help="egress port number")
    shape.add_argument(
        "spec",
        help='e.g. "delay=70ms,rate=10Mbit,loss=0.01,limit=500,jitter=2ms,reorder=off" or none',
    )
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    request: dict[str, Any] = {"cmd": args.cmd}
    if args.cmd == "shape":
        request.update(port=args.port, spec=args.spec)
    prog = "python -m p4switch.control"
    try:
        reply = control_request(args.socket, request, args.timeout)
    except ControlError as err:
        print(f"{prog}: error: {err}", file=sys.stderr)
        return 2
    if not reply.get("ok"):
        print(
            f"{prog}: error: {reply.get('error', 'the switch refused the request')}",
            file=sys.stderr,
        )
        return 2
    if args.cmd == "stats":
        print(json.dumps(reply["stats"], indent=2, sort_keys=True))
    elif args.cmd == "shape":
        print(f"port {reply['port']}: {ShapeSpec(**reply['shape']).describe()}")
    else:
        print(reply.get("reply", "pong"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
