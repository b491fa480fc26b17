"""The p4switch command line: what it refuses before binding any port, and a switch started
without ports (no root needed)."""

from __future__ import annotations

import queue
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from google.rpc import code_pb2
from p4.v1 import p4runtime_pb2

from p4switch import EXAMPLES, native, nativeio
from p4switch.cli import main
from p4switch.control import control_request
from p4switch.p4info import read_p4info
from p4switch.program import main as program_main
from tests.backends import BACKENDS
from tests.p4rt.fixtures.p4rt_client import WAIT, Client, wait_until

PROGRAMS = Path(__file__).parent / "programs"
SIMPLE_P4 = Path(__file__).parent / "p4rt" / "fixtures" / "simple.p4"  # CPU port 64


def test_check_compiles_and_writes_the_p4info(tmp_path: Path, capsys) -> None:
    out = tmp_path / "l2.p4info.txt"
    assert main(["--p4", str(EXAMPLES / "l2.p4"), "--check", "--p4info-out", str(out)]) == 0
    assert [t.preamble.name for t in read_p4info(out).tables] == ["L2Ingress.dmac"]


def test_a_compile_error_names_file_line_and_column(tmp_path: Path, capsys) -> None:
    bad = tmp_path / "bad.p4"
    bad.write_text((EXAMPLES / "l2.p4").read_text().replace("dmac.apply();", "dmac.aply();"))
    assert main(["--p4", str(bad), "--check"]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"{bad}:") and ": error: " in err and err.count("\n") == 1


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["-i", "veth1"], "PORT@INTERFACE"),
        (["-i", "1@a-very-long-interface-name"], "15 characters"),
        (["-i", "1@a", "-i", "1@b"], "given twice"),
        (["--cpu-port", "3", "-i", "3@a"], "CPU port"),
        (["-i", "1@a", "--shape", "2:delay=5ms"], "no -i binds"),
        (["-i", "1@a", "--shape", "1:delay=5 parsecs"], "delay"),
        (["--check"], "needs --p4"),
        (["--compile-timeout", "0"], "--compile-timeout 0.0: give seconds"),
        (["--compile-timeout", "nan"], "--compile-timeout nan"),
        (["--compile-memory", "8"], "--compile-memory 8: give MiB"),
    ],
)
def test_bad_arguments_get_one_line_and_status_2(argv, message, capsys) -> None:
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("p4switch: error: ") and message in err and err.count("\n") == 1


def test_defines_reach_the_preprocessor(tmp_path: Path) -> None:
    source = (EXAMPLES / "l2.p4").read_text().replace("size = 256;", "size = TABLE_SIZE;")
    program = tmp_path / "sized.p4"
    program.write_text("#ifndef TABLE_SIZE\n#define TABLE_SIZE 8\n#endif\n" + source)
    out = tmp_path / "p4info.txt"
    for argv, size in (([], 8), (["-D", "TABLE_SIZE=4096"], 4096)):
        assert main(["--p4", str(program), *argv, "--check", "--p4info-out", str(out)]) == 0
        assert read_p4info(out).tables[0].size == size
    assert main(["--p4", str(program), "-D", "=3", "--check"]) == 2
    assert program_main([str(program), "-D", "TABLE_SIZE=16", "--p4info", str(out)]) == 0
    assert read_p4info(out).tables[0].size == 16


def test_a_missing_program_file(tmp_path: Path, capsys) -> None:
    assert main(["--p4", str(tmp_path / "nope.p4"), "--check"]) == 2
    assert capsys.readouterr().err == f"{tmp_path / 'nope.p4'}: error: no such P4 source file\n"


def test_a_p4info_file_in_a_missing_folder_makes_it(tmp_path: Path) -> None:
    out = tmp_path / "build" / "p4" / "l2.p4info.txt"
    assert main(["--p4", str(EXAMPLES / "l2.p4"), "--check", "--p4info-out", str(out)]) == 0
    assert "tables" in out.read_text()


def test_a_p4info_file_inside_a_file_is_refused_by_name(tmp_path: Path, capsys) -> None:
    (tmp_path / "build").write_text("x")
    out = tmp_path / "build" / "l2.p4info.txt"
    assert main(["--p4", str(EXAMPLES / "l2.p4"), "--check", "--p4info-out", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"{tmp_path / 'build'} is a file, not a folder" in err
    assert (tmp_path / "build").read_text() == "x"


def test_a_program_given_on_the_command_line_keeps_ordinary_includes(tmp_path: Path) -> None:
    """Only programs sent over P4Runtime have their includes confined; a local one is the
    operator's own and may include by absolute path, as cpp allows."""
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "l2_body.p4").write_text((EXAMPLES / "l2.p4").read_text())
    program = tmp_path / "main.p4"
    program.write_text(f'#include "{elsewhere / "l2_body.p4"}"\n')
    assert main(["--p4", str(program), "--check"]) == 0


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_switch_without_ports_serves_p4runtime(tmp_path: Path, backend: str) -> None:
    """Started without -i, the process runs for P4Runtime alone: a packet-out to the CPU port
    comes back as a packet-in, one to a port it lacks is counted as dropped."""
    if backend == "native" and (reason := native.available() or nativeio.available()):
        pytest.skip(f"native back end: {reason}")
    control = tmp_path / "control.sock"
    argv = [sys.executable, "-m", "p4switch", "--p4", str(SIMPLE_P4), "--cpu-port", "64"]
    argv += ["--grpc-addr", "127.0.0.1:0", "--control", str(control)]
    argv += ["--backend", backend, "--io", backend]
    process = subprocess.Popen(argv, stderr=subprocess.PIPE, text=True)
    lines: queue.Queue[str | None] = queue.Queue()
    threading.Thread(target=_read_lines, args=(process, lines), daemon=True).start()
    try:
        port = int(_line_with(lines, "listening on port").rsplit(" ", 1)[1])
        _line_with(lines, "p4switch ready: ports {}")
        client = Client(port, election_id=10)
        try:
            assert client.arbitrate().status.code == code_pb2.OK
            # simple.p4 passes a packet-out on unchanged, so the two bytes before the frame
            # come back as the packet_in header (ingress_port 64: 64 << 7)
            frame = b"\xff" * 12 + b"\x08\x06" + b"hello"
            for egress_port in (64, 5):
                out = p4runtime_pb2.PacketOut(payload=(64 << 7).to_bytes(2, "big") + frame)
                out.metadata.add(metadata_id=1, value=egress_port.to_bytes(2, "big"))
                client.send(p4runtime_pb2.StreamMessageRequest(packet=out))
            packet_in = client.next("packet").packet
            assert packet_in.payload == frame
            assert packet_in.metadata[0].value == bytes([64])  # canonical: no leading zeros
            wait_until(
                lambda: (
                    control_request(control, {"cmd": "stats"})["stats"]["cpu"]["drops"][
                        "no_such_port"
                    ]
                    == 1
                )
            )
        finally:
            client.close()
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=WAIT) == 0
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()


def _read_lines(process: subprocess.Popen[str], lines: queue.Queue[str | None]) -> None:
    for line in process.stderr or ():
        lines.put(line)
    lines.put(None)  # the process closed its stderr: it has ended


def _line_with(lines: queue.Queue[str | None], text: str) -> str:
    """The next line of the switch's log that holds `text`."""
    deadline = time.monotonic() + WAIT * 3  # the native back end compiles C first
    seen: list[str] = []
    while (left := deadline - time.monotonic()) > 0:
        line = lines.get(timeout=left)
        if line is None:
            raise AssertionError(f"the switch ended before logging {text!r}: {''.join(seen)}")
        if text in line:
            return line.strip()
        seen.append(line)
    raise AssertionError(f"the switch never logged {text!r}")


def broken_expression(self: object, e: object) -> str:
    raise AssertionError("not a reference: a test stand-in")


@pytest.mark.parametrize("command", ["p4switch", "p4switch.program"])
def test_an_unexpected_compiler_failure_is_one_line_and_status_3(
    command: str, monkeypatch: pytest.MonkeyPatch, capsys
) -> None:
    from p4switch.compiler.exprs import ExprCompiler

    monkeypatch.setattr(ExprCompiler, "expr", broken_expression)
    program = EXAMPLES / "l2.p4"
    status = main(["--p4", str(program), "--check"]) if command == "p4switch" else None
    if status is None:
        status = program_main([str(program)])
    err = capsys.readouterr().err
    assert status == 3 and err.count("\n") == 1 and "Traceback" not in err
    assert str(program) in err and "internal error" in err
    assert "AssertionError: not a reference: a test stand-in" in err
    assert "(at p4switch/tests/test_cli.py:" in err  # where it was raised: here, the stand-in
