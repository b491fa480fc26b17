"""The link emulator's wire and command line (its I/O loop and shaping are the switch's own,
tested in test_dataplane.py and test_shaping.py; the process between namespaces in
tests/netns/test_link_emulator.py)."""

from __future__ import annotations

import pytest

from p4switch.exceptions import UsageError
from p4switch.linkemu import Wire, main, peer, wire_ports, wire_shapes
from p4switch.shaping import parse_spec


def test_ports_pair_up_and_the_wire_sends_frames_to_the_other_side_unchanged() -> None:
    assert [peer(p) for p in (1, 2, 3, 4)] == [2, 1, 4, 3]
    frame = bytes(range(64))
    assert Wire().process(1, frame) == [(2, frame)]
    assert Wire().process(4, frame) == [(3, frame)]


def test_arguments_name_ports_shapes_and_their_partners() -> None:
    ports = wire_ports(["1@a", "2@b"])
    assert ports == {1: "a", 2: "b"}
    assert wire_shapes(["2:delay=35ms,rate=10Mbit"], ports) == {
        2: parse_spec("delay=35ms,rate=10Mbit")
    }


@pytest.mark.parametrize(
    ("interfaces", "shapes", "message"),
    [
        ([], [], "at least one pair"),
        (["1@a"], [], "no partner"),
        (["1@a", "3@b"], [], "no partner"),
        (["0@a", "1@b"], [], "PORT >= 1"),
        (["1a"], [], "PORT@INTERFACE"),
        (["1@a", "1@b"], [], "given twice"),
        (["1@a", "2@b"], ["3:delay=1ms"], "not bound"),
        (["1@a", "2@b"], ["2:delay=1ms", "2:rate=1Mbit"], "shaped twice"),
    ],
)
def test_bad_arguments_are_refused_with_the_reason(
    interfaces: list[str], shapes: list[str], message: str
) -> None:
    with pytest.raises(UsageError, match=message):
        wire_shapes(shapes, wire_ports(interfaces))


def test_the_command_refuses_bad_input_in_one_line_with_status_2(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["-i", "1@a", "-i", "2@b", "--shape", "2:delay=fast"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("linkemu: error: ") and "delay" in err and "\n" not in err
    assert main(["-i", "1@no-such-if0", "-i", "2@no-such-if1"]) == 2
    assert "does not exist" in capsys.readouterr().err
