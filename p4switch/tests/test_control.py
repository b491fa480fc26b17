"""The control channel: request handling, the Unix-socket server, the client and the CLI."""

from __future__ import annotations

import json
import os
import socket
import stat
from typing import Any

import pytest

from p4switch.control import ControlServer, control_request, handle_request, main
from p4switch.exceptions import ControlError, UnknownPortError
from p4switch.shaping import ShapeSpec

HANG_S = 10.0  # seconds: the longest a test waits for a reply (a hang guard)


class FakeSwitch:
    """Stands in for `Switch`: records shaping, serves canned statistics."""

    def __init__(self) -> None:
        self.shaped: list[tuple[int, ShapeSpec]] = []
        self.fail_stats = False
        self.resets = 0

    def shape(self, port: int, spec: ShapeSpec) -> None:
        if port not in (1, 2):
            raise UnknownPortError(f"port {port} is not a switch port (ports: [1, 2])")
        self.shaped.append((port, spec))

    def stats(self, reset_peaks: bool = False) -> dict[str, Any]:
        if self.fail_stats:
            raise RuntimeError("counters exploded")
        self.resets += reset_peaks
        return {"ports": {1: {"rx_packets": 5}}, "cpu": None}


@pytest.fixture
def switch() -> FakeSwitch:
    return FakeSwitch()


@pytest.fixture
def server(tmp_path, switch):
    with ControlServer(tmp_path / "ctl.sock", switch) as srv:
        yield srv


# -- request handling -------------------------------------------------------------------------


def test_ping(switch):
    assert handle_request(switch, b'{"cmd": "ping"}\n') == {"ok": True, "reply": "pong"}


def test_stats(switch):
    reply = handle_request(switch, '{"cmd": "stats"}')
    assert reply["ok"] is True
    assert reply["stats"]["ports"][1]["rx_packets"] == 5


def test_stats_can_restart_the_lateness_peaks(switch):
    assert handle_request(switch, '{"cmd": "stats", "reset_peaks": true}')["ok"] is True
    assert handle_request(switch, '{"cmd": "stats"}')["ok"] is True
    assert switch.resets == 1
    reply = handle_request(switch, '{"cmd": "stats", "reset_peaks": "yes"}')
    assert reply == {"ok": False, "error": "reset_peaks must be true or false, got 'yes'"}
    assert switch.resets == 1


def test_shape_reaches_the_switch(switch):
    reply = handle_request(
        switch, json.dumps({"cmd": "shape", "port": 2, "spec": "delay=70ms,rate=10Mbit"})
    )
    assert reply["ok"] is True
    assert reply["port"] == 2
    assert reply["shape"]["delay_s"] == pytest.approx(0.07)
    assert switch.shaped == [(2, ShapeSpec(delay_s=0.07, rate_bps=10e6))]


@pytest.mark.parametrize(
    ("line", "word"),
    [
        (b"{not json", "bad JSON"),
        (b"\xff\xfe", "bad JSON"),
        (b"[1, 2]", "JSON object"),
        (b'{"command": "ping"}', "unknown command None"),
        (b'{"cmd": "reboot"}', "unknown command 'reboot'"),
        (b'{"cmd": "shape", "port": "2", "spec": "delay=1ms"}', "integer port"),
        (b'{"cmd": "shape", "port": true, "spec": "delay=1ms"}', "integer port"),
        (b'{"cmd": "shape", "port": 2}', '"spec"'),
        (b'{"cmd": "shape", "port": 2, "spec": "wobble=1ms"}', "unknown shaping key 'wobble'"),
        (b'{"cmd": "shape", "port": 2, "spec": "delay=1"}', "delay="),
        (b'{"cmd": "shape", "port": 9, "spec": "delay=1ms"}', "port 9 is not a switch port"),
    ],
)
def test_bad_requests_get_error_replies(switch, line, word):
    reply = handle_request(switch, line)
    assert reply["ok"] is False
    assert word in reply["error"]
    assert switch.shaped == []


def test_a_failing_switch_gives_an_error_reply(switch):
    switch.fail_stats = True
    reply = handle_request(switch, b'{"cmd": "stats"}')
    assert reply == {"ok": False, "error": "stats failed inside the switch: counters exploded"}


# -- the server and the client ----------------------------------------------------------------


def test_socket_is_private_and_removed_on_close(tmp_path, switch):
    path = tmp_path / "ctl.sock"
    server = ControlServer(path, switch)
    mode = path.stat().st_mode
    assert stat.S_ISSOCK(mode)
    assert stat.S_IMODE(mode) == 0o600
    server.close()
    assert not path.exists()


def test_client_round_trip(server, switch):
    assert control_request(server.path, {"cmd": "ping"}, HANG_S) == {"ok": True, "reply": "pong"}
    reply = control_request(server.path, {"cmd": "shape", "port": 1, "spec": "loss=1%"}, HANG_S)
    assert reply["ok"] is True
    assert switch.shaped == [(1, ShapeSpec(loss=0.01))]
    stats = control_request(server.path, {"cmd": "stats"}, HANG_S)["stats"]
    assert stats["ports"]["1"]["rx_packets"] == 5  # JSON keys are strings


def test_one_connection_serves_many_lines_and_survives_garbage(server):
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(HANG_S)
        sock.connect(str(server.path))
        sock.sendall(b'garbage\n\n{"cmd": "nope"}\n{"cmd": "ping"}\n')
        with sock.makefile("rb") as replies:
            lines = [json.loads(replies.readline()) for _ in range(3)]
    assert [line["ok"] for line in lines] == [False, False, True]
    assert "bad JSON" in lines[0]["error"]
    assert control_request(server.path, {"cmd": "ping"}, HANG_S)["ok"] is True


def test_oversized_request_is_refused(server):
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(HANG_S)
        sock.connect(str(server.path))
        sock.sendall(b"x" * (70 * 1024) + b"\n")
        with sock.makefile("rb") as replies:
            reply = json.loads(replies.readline())
    assert reply["ok"] is False
    assert "longer than" in reply["error"]
    assert control_request(server.path, {"cmd": "ping"}, HANG_S)["ok"] is True


def test_stale_socket_file_is_replaced(tmp_path, switch):
    path = tmp_path / "ctl.sock"
    stale = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    stale.bind(str(path))
    stale.close()  # the file stays, nobody listens
    with ControlServer(path, switch):
        assert control_request(path, {"cmd": "ping"}, HANG_S)["ok"] is True


def test_refuses_to_take_over_a_live_socket(server, switch):
    with pytest.raises(ControlError, match="another process serves"):
        ControlServer(server.path, switch)


def test_refuses_a_path_that_is_not_a_socket(tmp_path, switch):
    path = tmp_path / "ctl.sock"
    path.write_text("precious")
    with pytest.raises(ControlError, match="not a socket"):
        ControlServer(path, switch)
    assert path.read_text() == "precious"


def test_refuses_too_long_a_path(tmp_path, switch):
    with pytest.raises(ControlError, match="shorter"):
        ControlServer(tmp_path / ("x" * 120), switch)


def test_client_without_server(tmp_path):
    with pytest.raises(ControlError, match="is the switch running"):
        control_request(tmp_path / "none.sock", {"cmd": "ping"})


def test_client_times_out_on_a_silent_server(tmp_path):
    path = tmp_path / "mute.sock"
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as mute:
        mute.bind(str(path))
        mute.listen()
        with pytest.raises(ControlError, match="no reply"):
            control_request(path, {"cmd": "ping"}, timeout=0.2)


# -- the command line -------------------------------------------------------------------------


def test_cli_stats(server, capsys):
    assert main(["--timeout", str(HANG_S), str(server.path), "stats"]) == 0
    assert json.loads(capsys.readouterr().out)["ports"]["1"]["rx_packets"] == 5


def test_cli_shape(server, switch, capsys):
    assert (
        main(["--timeout", str(HANG_S), str(server.path), "shape", "2", "delay=70ms,rate=10Mbit"])
        == 0
    )
    assert "port 2: delay 70.0 ms, rate 10 Mb/s" in capsys.readouterr().out
    assert switch.shaped[0][1].rate_bps == 10e6


def test_cli_bad_spec_is_one_line_and_exit_2(server, capsys):
    assert main(["--timeout", str(HANG_S), str(server.path), "shape", "2", "delay=fast"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert "delay=" in err


def test_cli_missing_socket(tmp_path, capsys):
    assert main([str(tmp_path / "gone.sock"), "ping"]) == 2
    assert "is the switch running" in capsys.readouterr().err


def test_cli_usage_error_exits_2(capsys):
    with pytest.raises(SystemExit) as caught:
        main(["sock", "shape", "notaport", "delay=1ms"])
    assert caught.value.code == 2
    assert capsys.readouterr().err.count("\n") == 1


def test_socket_path_reports_are_from_this_process(server):
    # the server runs in a thread of this process: the socket file is owned by us
    assert server.path.stat().st_uid == os.geteuid()
