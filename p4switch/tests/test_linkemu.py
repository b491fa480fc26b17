"""The link emulator's wire, its shaping on a simulated clock, and its command line (its I/O
loop and shaping are the switch's own, tested in test_dataplane.py and test_shaping.py; the
process between namespaces in tests/netns/test_link_emulator.py)."""

from __future__ import annotations

import math

import pytest

from p4switch.dataplane import Switch
from p4switch.exceptions import UsageError
from p4switch.linkemu import Wire, main, peer, wire_ports, wire_shapes
from p4switch.shaping import parse_spec
from tests.clock import FakeClock
from tests.fakeports import Wire as FakeWire


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


def test_each_direction_is_shaped_by_its_own_spec_on_the_emulator_s_clock() -> None:
    """The emulator's loop is the python switch with the wire as its processor: on a simulated
    clock, 1 -> 2 takes port 2's delay and rate, 2 -> 1 port 1's delay, to the instant."""
    clock = FakeClock(100.0)
    wires = {1: FakeWire("w1"), 2: FakeWire("w2")}
    frame = bytes(125)  # 1000 bits: 1 ms at 1 Mb/s
    shaping = {2: parse_spec("delay=35ms,rate=1Mbit"), 1: parse_spec("delay=5ms")}
    switch = Switch({n: w.port for n, w in wires.items()}, Wire(), shaping=shaping, clock=clock)
    try:
        wires[1].host.send(frame)
        wires[1].host.send(frame)
        wires[2].host.send(b"back")
        switch.poll()
        assert wires[1].pending() == [] and wires[2].pending() == []
        # out of port 2: serialised at 1 Mb/s (the first done at +1 ms, the second at +2 ms),
        # then 35 ms on the line; out of port 1: 5 ms on the line
        assert switch.wait_timeout() == pytest.approx(0.005)
        for due, out in ((0.005, {1: [b"back"]}), (0.036, {2: [frame]}), (0.037, {2: [frame]})):
            clock.now = math.nextafter(100.0 + due, 0.0)
            switch.poll()
            assert wires[1].pending() == [] and wires[2].pending() == [], due
            clock.now = 100.0 + due
            switch.poll()
            assert {n: w.pending() for n, w in wires.items() if n in out} == out, due
        assert switch.stats()["ports"][2]["tx_packets"] == 2
    finally:
        switch.close()
        for wire in wires.values():
            wire.host.close()
            wire.port.close()
