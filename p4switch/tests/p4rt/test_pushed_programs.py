"""Programs sent over P4Runtime, compiled for real: includes confined to the allowed
directories, compiles bounded in time, and the running pipeline untouched by any refusal."""

from __future__ import annotations

import contextlib
import math
import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import grpc
import pytest
from p4.v1 import p4runtime_pb2

from p4switch import EXAMPLES
from p4switch.p4rt import LoadedProgram, P4RuntimeServer
from p4switch.p4rt.compiling import CompileLimits, SourceLoader
from p4switch.p4rt.report import STATUS_MESSAGE_BYTES
from p4switch.program import Pipeline, compile_file
from tests.p4rt.fixtures.p4rt_client import Client

L2 = EXAMPLES / "l2.p4"
GENEROUS_S = 30.0  # seconds a pushed program may take to compile (l2.p4: about 1.5)
TIGHT_S = 4.0  # the bound the slow program is held to
RPC_TIMEOUT = 60.0  # seconds: a push that hangs fails the test instead of hanging it
SECRET = "TOPSECRET-4f9a"  # in files a pushed program must not be able to read
DMAC = 1  # id of L2Ingress.dmac's only key field
FRAME = bytes.fromhex("0000000000aa") + bytes(6) + b"\x08\x00" + bytes(50)


@dataclass
class DataPlane:
    """What the switch process's data plane runs: the last pipeline the server switched to."""

    pipelines: list[Pipeline] = field(default_factory=list)

    def forward(self, frame: bytes) -> list[int]:
        return [port for port, _ in self.pipelines[-1].process(ingress_port=1, data=frame)]


@dataclass
class Switch:
    client: Client
    dataplane: DataPlane
    program_dir: Path


@contextmanager
def running(tmp_path: Path, bound_s: float) -> Iterator[Switch]:
    """A server running l2.p4 (loaded from `program_dir`), dmac 00:00:00:00:00:aa -> port 2,
    whose loader compiles pushed programs within `bound_s` seconds."""
    program_dir = tmp_path / "programs"
    program_dir.mkdir()
    (program_dir / "l2.p4").write_text(L2.read_text())
    compiled = compile_file(program_dir / "l2.p4")
    dataplane = DataPlane()
    state = compiled.new_state()
    dataplane.pipelines.append(compiled.pipeline(state))
    limits = CompileLimits(wall_s=bound_s, cpu_s=math.ceil(bound_s) + 1)
    loader = SourceLoader(dataplane.pipelines.append, (program_dir,), limits=limits)
    initial = LoadedProgram(compiled.p4info, L2.read_bytes(), state, lambda: None)
    server = P4RuntimeServer(
        device_id=1, loader=loader, send_packet_out=lambda frame: None, initial=initial
    )
    client = Client(server.start("127.0.0.1:0"), 10)
    try:
        client.arbitrate()
        client.write(dmac_entry(compiled.p4info, mac=0xAA, port=2))
        assert dataplane.forward(FRAME) == [2]
        yield Switch(client, dataplane, program_dir)
    finally:
        client.close()
        server.stop(grace=0.5)


@pytest.fixture
def switch(tmp_path: Path) -> Iterator[Switch]:
    with running(tmp_path, GENEROUS_S) as switch:
        yield switch


def dmac_entry(p4info, *, mac: int, port: int) -> p4runtime_pb2.Update:
    table = next(t for t in p4info.tables if t.preamble.name == "L2Ingress.dmac")
    forward = next(a for a in p4info.actions if a.preamble.name == "L2Ingress.forward")
    update = p4runtime_pb2.Update(type=p4runtime_pb2.Update.INSERT)
    entry = update.entity.table_entry
    entry.table_id = table.preamble.id
    entry.match.add(field_id=DMAC).exact.value = mac.to_bytes(6, "big")
    entry.action.action.action_id = forward.preamble.id
    entry.action.action.params.add(param_id=1, value=port.to_bytes(2, "big"))
    return update


def push(switch: Switch, source: str) -> grpc.RpcError | None:
    """Send `source` with l2.p4's P4Info; the error, or None if it went in."""
    request = p4runtime_pb2.SetForwardingPipelineConfigRequest(
        device_id=1, action=p4runtime_pb2.SetForwardingPipelineConfigRequest.VERIFY_AND_COMMIT
    )
    request.election_id.low = 10
    request.config.p4info.CopyFrom(compile_file(L2).p4info)
    request.config.p4_device_config = source.encode()
    try:
        switch.client.stub.SetForwardingPipelineConfig(request, timeout=RPC_TIMEOUT)
    except grpc.RpcError as err:
        return err
    return None


def refused(switch: Switch, source: str) -> str:
    """Push `source`, expect INVALID_ARGUMENT, check the running pipeline; the message."""
    err = push(switch, source)
    assert err is not None, "the program was accepted"
    assert err.code() == grpc.StatusCode.INVALID_ARGUMENT, err.details()
    assert SECRET not in (err.details() or "")
    assert switch.dataplane.forward(FRAME) == [2]  # still the old program, entry and all
    return err.details() or ""


@pytest.fixture
def secret(tmp_path: Path) -> Path:
    """A P4-looking file outside the allowed directories, beside the program directory."""
    path = tmp_path / "secret.p4"
    path.write_text(f"{SECRET} is what the include would reveal;\n")
    return path


def test_an_include_by_absolute_path_is_refused(switch: Switch, secret: Path) -> None:
    details = refused(switch, f'#include "{secret}"\n' + L2.read_text())
    assert f'#include "{secret}" refused: absolute' in details
    assert details.startswith("device_config:1:")


def test_an_include_through_dot_dot_is_refused(switch: Switch, secret: Path) -> None:
    details = refused(switch, '#include "../secret.p4"\n' + L2.read_text())
    assert "'..' is refused" in details


def test_an_include_hidden_by_a_comment_or_digraph_is_still_checked(
    switch: Switch, secret: Path
) -> None:
    for trick in (f'/* x */ # include "{secret}"', f"%:include <{secret}>"):
        assert "refused" in refused(switch, trick + "\n" + L2.read_text())
    details = refused(switch, f'#define F "{secret}"\n#include F\n' + L2.read_text())
    assert "computed includes are refused" in details


def test_a_symlink_out_of_the_program_directory_is_refused(switch: Switch, secret: Path) -> None:
    (switch.program_dir / "link.p4").symlink_to(secret)
    details = refused(switch, '#include "link.p4"\n' + L2.read_text())
    assert "resolves outside" in details


def test_a_device_is_refused(switch: Switch) -> None:
    (switch.program_dir / "zero.p4").symlink_to("/dev/zero")
    assert "a device" in refused(switch, '#include "zero.p4"\n' + L2.read_text())


def test_a_fifo_is_refused_without_being_opened(switch: Switch) -> None:
    fifo = switch.program_dir / "pipe.p4"
    os.mkfifo(fifo)
    try:
        details = refused(switch, '#include "pipe.p4"\n' + L2.read_text())
        assert '#include "pipe.p4" refused: a FIFO' in details
    finally:
        # had anything opened it to read, this lets it go (and the test end); with no reader
        # the open fails, and nothing is stuck on it
        with contextlib.suppress(OSError):
            os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))


def test_includes_beside_the_program_and_of_p4switch_still_work(switch: Switch) -> None:
    body = L2.read_text()
    (switch.program_dir / "parts").mkdir()
    (switch.program_dir / "parts" / "l2_body.p4").write_text(body)
    assert push(switch, '#include "parts/l2_body.p4"\n') is None
    assert switch.dataplane.forward(FRAME) == []  # the new program: its dmac table is empty


def test_a_compile_over_the_time_bound_is_refused_and_the_old_pipeline_forwards(
    tmp_path: Path,
) -> None:
    deep = 300_000  # 600 KB of nested parentheses: over 10 s of parsing
    slow = L2.read_text() + "const bit<8> DEEP = " + "(" * deep + "1" + ")" * deep + ";\n"
    with running(tmp_path, TIGHT_S) as switch:
        err = push(switch, slow)
        assert err is not None and err.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
        assert f"longer than {TIGHT_S:g} s" in (err.details() or "")
        assert switch.dataplane.forward(FRAME) == [2]
        assert len(switch.dataplane.pipelines) == 1  # nothing was switched to


def test_a_compile_error_names_the_pushed_program(switch: Switch) -> None:
    details = refused(switch, L2.read_text().replace("dmac.apply();", "dmac.aply();"))
    assert details.startswith("device_config:") and "aply" in details


def test_a_compile_error_quoting_a_long_line_reaches_the_client(switch: Switch) -> None:
    """The message of a refused request is cut to fit gRPC's metadata limit; whole, this one
    (a 20,000-character #error line) made the client see RESOURCE_EXHAUSTED instead."""
    err = push(switch, "#error " + "é" * 20000 + "\n")
    assert err is not None and err.code() == grpc.StatusCode.INVALID_ARGUMENT, err
    details = err.details() or ""
    assert details.startswith("device_config:") and details.endswith("...")
    sent = sum(1 if 0x20 <= b <= 0x7E and b != 0x25 else 3 for b in details.encode())
    assert sent <= STATUS_MESSAGE_BYTES  # as gRPC sends it, percent-encoded


def test_a_p4info_refused_for_a_long_name_reaches_the_client(switch: Switch) -> None:
    p4info = compile_file(L2).p4info
    p4info.tables[0].preamble.name = "é" * 9000
    request = p4runtime_pb2.SetForwardingPipelineConfigRequest(
        device_id=1, action=p4runtime_pb2.SetForwardingPipelineConfigRequest.VERIFY_AND_COMMIT
    )
    request.election_id.low = 10
    request.config.p4info.CopyFrom(p4info)
    request.config.p4_device_config = L2.read_bytes()
    with pytest.raises(grpc.RpcError) as caught:
        switch.client.stub.SetForwardingPipelineConfig(request, timeout=RPC_TIMEOUT)
    assert caught.value.code() == grpc.StatusCode.INVALID_ARGUMENT, caught.value.details()
    assert "é" * 100 in (caught.value.details() or "")


# Loaded by the compiler's child process (a sitecustomize on its PYTHONPATH): a compiler
# function that fails as a p4switch bug would, with an exception that is no P4CompileError.
BROKEN_COMPILER = """\
from p4switch.compiler.exprs import ExprCompiler

def expr(self, e):
    raise AssertionError("not a reference: a test stand-in")

ExprCompiler.expr = expr
"""


def test_a_compiler_failure_answers_internal_and_the_switch_keeps_serving(
    switch: Switch, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    hook = tmp_path / "hook"
    hook.mkdir()
    (hook / "sitecustomize.py").write_text(BROKEN_COMPILER)
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(hook), os.environ.get("PYTHONPATH", "")]))
    err = push(switch, L2.read_text())
    assert err is not None and err.code() == grpc.StatusCode.INTERNAL
    details = err.details() or ""
    assert "internal error in the p4switch compiler" in details
    assert "AssertionError: not a reference: a test stand-in" in details
    assert "the running pipeline is unchanged" in details and "Traceback" not in details
    assert switch.dataplane.forward(FRAME) == [2] and len(switch.dataplane.pipelines) == 1
    switch.client.write(dmac_entry(compile_file(L2).p4info, mac=0xBB, port=3))  # still serving
    assert switch.dataplane.forward(bytes.fromhex("0000000000bb") + FRAME[6:]) == [3]
    monkeypatch.undo()  # the compiler whole again: the same push now goes in
    assert push(switch, L2.read_text()) is None and len(switch.dataplane.pipelines) == 2
