"""The forwarding benchmark's C tools: they build warning-free, the sender makes the frames it
should (agg32 frames the program aggregates), and bad arguments get a clear error. No root."""

from __future__ import annotations

import shutil
import struct
import subprocess
from pathlib import Path

import pytest

from bench import native_tools
from bench.native_tools import ForwardingBenchError, Traffic, build_tool, frames_in_hex

pytestmark = pytest.mark.skipif(shutil.which("gcc") is None, reason="needs gcc to build the tools")

H1 = ("02:00:0a:00:00:01", "10.0.0.1")
H2 = ("02:00:0a:00:00:02", "10.0.0.2")
AGG = Traffic(H1[0], H2[0], H1[1], H2[1], payload=132, agg_slots=3)


@pytest.fixture(scope="module")
def tools(tmp_path_factory: pytest.TempPathFactory) -> Path:
    where = tmp_path_factory.mktemp("bench-tools")
    for name in ("sender", "forwarder"):
        build_tool(name, where)
    return where


def ipv4_sum(header: bytes) -> int:
    total = sum(struct.unpack("!10H", header))
    while total >> 16:
        total = (total & 0xFFFF) + (total >> 16)
    return total


def expected_frame(slot: int, traffic: Traffic) -> bytes:
    ethernet = bytes.fromhex(traffic.dst_mac.replace(":", "") + traffic.src_mac.replace(":", ""))
    ethernet += b"\x08\x00"
    total = 20 + 8 + traffic.payload
    src = bytes(int(x) for x in traffic.src_ip.split("."))
    dst = bytes(int(x) for x in traffic.dst_ip.split("."))
    ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, total, 0, 0, 64, 17, 0, src, dst)
    ip = ip[:10] + struct.pack("!H", ~ipv4_sum(ip) & 0xFFFF) + ip[12:]
    udp = struct.pack("!HHHH", 0x4000, traffic.dport, 8 + traffic.payload, 0)
    agg = struct.pack("!HH32i", slot, 0, *range(1, 33))
    return ethernet + ip + udp + agg + bytes(traffic.payload - len(agg))


def test_both_tools_build_without_warnings(tmp_path: Path) -> None:
    for name in ("sender", "forwarder"):
        source = native_tools.SOURCES / f"{name}.c"
        done = subprocess.run(
            ["gcc", *native_tools.CFLAGS, "-Werror", "-o", str(tmp_path / name), str(source)],
            capture_output=True,
            text=True,
            check=False,
        )
        assert done.returncode == 0, done.stderr


def test_a_built_tool_is_reused_until_its_source_changes(tools: Path) -> None:
    binary = tools / "sender"
    before = binary.stat().st_mtime_ns
    assert build_tool("sender", tools) == binary
    assert binary.stat().st_mtime_ns == before


def test_without_gcc_the_error_says_what_to_install(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(native_tools.shutil, "which", lambda name: None)
    with pytest.raises(ForwardingBenchError, match="gcc is not installed"):
        build_tool("forwarder", tmp_path)


def test_the_sender_builds_agg32_frames_slot_by_slot(tools: Path) -> None:
    frames = frames_in_hex(tools / "sender", AGG, 5)
    assert frames == [expected_frame(slot, AGG) for slot in (0, 1, 2, 0, 1)]
    assert len(frames[0]) == AGG.frame_bytes == 174
    assert ipv4_sum(frames[0][14:34]) == 0xFFFF  # a valid IPv4 header checksum


def test_plain_frames_carry_zeros(tools: Path) -> None:
    traffic = Traffic(H1[0], H2[0], H1[1], H2[1], dport=9, payload=18)
    (frame,) = frames_in_hex(tools / "sender", traffic, 1)
    assert len(frame) == 60
    assert frame[36:38] == b"\x00\x09"
    assert frame[42:] == bytes(18)


def test_agg32_aggregates_the_senders_frames(tools: Path) -> None:
    from p4switch import InProcessSwitch, compile_file

    from bench.programs import PROGRAMS, forwarding_updates
    from controller.p4rt.schema import Schema

    pipeline = InProcessSwitch(compile_file(PROGRAMS["agg32"]), backend="python")
    pipeline.write(forwarding_updates(Schema(pipeline.p4info), "agg32"))
    first, second = frames_in_hex(tools / "sender", AGG, 4)[0::3]  # slot 0 twice
    ((port, out),) = pipeline.process(1, first)
    assert port == 2
    assert struct.unpack("!HH32i", out[42:174]) == (0, 1, *range(1, 33))
    ((port, out),) = pipeline.process(1, second)
    assert struct.unpack("!HH32i", out[42:174]) == (0, 2, *range(2, 66, 2))


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (["--payload", "100", "--agg-slots", "4", "--print", "1"], "--payload of at least 132"),
        (["--print", "1", "--dst-mac", "02:00:zz:00:00:02"], "not a MAC address"),
        (["--print", "1", "--rate", "-5"], "--rate -5: expected a number"),
        ([], "give --interface to send on, or --print N"),
        (["--interface", "no-such-if0"], "no such interface"),
    ],
)
def test_the_sender_refuses_bad_arguments(tools: Path, arguments: list[str], message: str) -> None:
    traffic = Traffic(H1[0], H2[0], H1[1], H2[1])
    command = [str(tools / "sender"), *traffic.arguments(), *arguments]
    done = subprocess.run(command, capture_output=True, text=True, timeout=10, check=False)
    assert done.returncode == 2
    assert message in done.stderr


def test_the_forwarder_refuses_bad_arguments(tools: Path) -> None:
    forwarder = str(tools / "forwarder")
    for arguments, message in (
        ([], "usage"),
        (["a0", "b0", "0"], "BATCH must be a whole number"),
        (["no-such-if0", "lo"], "no such interface"),
    ):
        done = subprocess.run([forwarder, *arguments], capture_output=True, text=True, check=False)
        assert done.returncode == 2
        assert message in done.stderr


def test_aggregation_traffic_needs_room_for_the_header() -> None:
    with pytest.raises(ForwardingBenchError, match="--size 132"):
        Traffic(H1[0], H2[0], H1[1], H2[1], payload=18, agg_slots=1024)


def test_the_native_back_end_forwards_and_aggregates_the_senders_frames_as_python(
    tools: Path,
) -> None:
    from p4switch import InProcessSwitch, compile_file

    from bench import forwarding_rows
    from bench.programs import PROGRAMS, forwarding_updates
    from controller.p4rt.schema import Schema

    reason = forwarding_rows.native_backend_unavailable()
    if reason is not None:
        pytest.skip(reason)
    frames = frames_in_hex(tools / "sender", AGG, 7)  # slots 0, 1, 2 and again
    for program in ("l2", "agg32"):
        python = InProcessSwitch(compile_file(PROGRAMS[program]), backend="python")
        native = InProcessSwitch(compile_file(PROGRAMS[program]), backend="native")
        assert native.backend == "native"
        for switch in (python, native):
            switch.write(forwarding_updates(Schema(switch.p4info), program))
        for frame in frames:
            assert native.process(1, frame) == python.process(1, frame) != []
