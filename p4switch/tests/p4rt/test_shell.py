"""p4runtime-shell 0.0.6, unchanged, as the client of the P4Runtime server.

The shell keeps its connection in module globals, so the session runs in a subprocess
(fixtures/shell_session.py) that prints what it saw as JSON.
"""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import pytest

from tests.p4rt.fixtures.fake_program import FIXTURES, P4_SOURCE_PATH, P4INFO_PATH
from tests.p4rt.fixtures.p4rt_client import Running, running_server


@pytest.fixture(scope="module")
def session() -> tuple[Running, dict[str, Any]]:
    with running_server() as running:
        done = subprocess.run(
            [
                sys.executable,
                str(FIXTURES / "shell_session.py"),
                f"127.0.0.1:{running.port}",
                str(P4INFO_PATH),
                str(P4_SOURCE_PATH),
            ],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        assert done.returncode == 0, done.stderr[-3000:]
        return running, json.loads(done.stdout.strip().splitlines()[-1])


def test_the_shell_sets_the_pipeline_and_sees_the_api_version(session) -> None:
    running, result = session
    assert result["api_version"] == "1.4.1"
    active = running.dataplane.active
    assert active is not None and active.device_config == P4_SOURCE_PATH.read_bytes()


def test_lpm_and_ternary_entries_read_back_as_written(session) -> None:
    _, result = session
    assert result["inserted"]["MyIngress.ipv4_lpm"] == [
        {
            "match": ["hdr.ipv4.dstAddr=0a000100/24"],
            "action": "MyIngress.forward",
            "params": ["02"],
            "priority": 0,
        }
    ]
    assert result["inserted"]["MyIngress.acl"] == [
        {
            "match": ["hdr.ipv4.srcAddr=0a000000&&&ff000000"],
            "action": "MyIngress.drop",
            "params": [],
            "priority": 10,
        }
    ]


def test_modify_and_default_action(session) -> None:
    _, result = session
    assert result["modified"][0]["params"] == ["03"]
    assert result["default"] == "MyIngress.drop"


def test_refused_writes_raise_with_the_spec_codes(session) -> None:
    _, result = session
    assert result["errors"] == {
        "duplicate": ["ALREADY_EXISTS"],
        "bad_width": ["INVALID_ARGUMENT"],
        "no_priority": ["INVALID_ARGUMENT"],
        "missing": ["NOT_FOUND"],
        "const_default": ["PERMISSION_DENIED"],
    }


def test_multicast_groups_and_clone_sessions(session) -> None:
    running, result = session
    assert result["groups"] == [[1, [[1, 1], [3, 1]]]]
    assert result["sessions"] == [[5, [4]]]
    pre = running.dataplane.loaded[-1].state.pre
    assert [r.egress_port for r in pre.groups[1]] == [1, 3]
    assert pre.sessions[5].replicas[0].egress_port == 4


def test_registers_and_counters(session) -> None:
    _, result = session
    register = {int(k): v for k, v in result["register"].items()}
    assert len(register) == 16 and register[3] == 123456
    assert sum(register.values()) == 123456
    counters = {int(k): tuple(v) for k, v in result["counters"].items()}
    assert len(counters) == 8
    assert counters[5] == (7, 700)  # written by the shell
    assert counters[2] == (1, 19)  # the packet-out, counted by the fake data plane


def test_packet_out_and_packet_in(session) -> None:
    running, result = session
    frame = bytes.fromhex("0000000000020000000000010800") + b"hello"
    # packet_out header: egress_port=2 in 9 bits, then 7 bits of padding
    assert running.dataplane.packet_outs == [bytes([0x01, 0x00]) + frame]
    assert result["packet_in"] == [{"payload": frame.hex(), "metadata": {"1": "02", "2": "00"}}]
    assert result["direct_counter"] == [[1, len(frame)]]


def test_entries_deleted_through_wildcard_read(session) -> None:
    running, result = session
    assert result["after_delete"] == 0
    state = running.dataplane.loaded[-1].state
    assert all(t.entry_count() == 0 for t in state.tables.values())
