"""The link emulator's wire, its shaping on a simulated clock, its command line, and its tunnel
ports on 127.0.0.1 (its I/O loop and shaping are the switch's own, tested in test_dataplane.py and
test_shaping.py; the process between namespaces in tests/netns/test_link_emulator.py, and two of
them joined by tunnel ports in tests/netns/test_linkemu_udp.py).

The tunnel tests turn the switch's loop on their own thread with `poll`: it returns as soon as a
port has a datagram, so waiting for one costs no sleep; `HANG_S` only bounds a hang.
"""

from __future__ import annotations

import math
import os
import select
import socket
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from p4switch.dataplane import MAX_WAIT_S, Switch
from p4switch.exceptions import UsageError
from p4switch.linkemu import Wire, build_parser, main, peer, wire_ports, wire_shapes
from p4switch.pcap import read_pcap
from p4switch.ports import MAX_DATAGRAM_BYTES, UdpTunnel
from p4switch.shaping import ShapeSpec, parse_spec
from tests.clock import FakeClock
from tests.fakeports import HANG_S
from tests.fakeports import Wire as FakeWire

LOOPBACK = "127.0.0.1"
FRAME = bytes.fromhex("02000000000202000000000188b5") + b"through the tunnel".ljust(46, b".")


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


def test_tunnel_ports_are_given_with_u_and_pair_with_either_kind() -> None:
    args = build_parser().parse_args(
        [
            *("-i", "1@s0-eth3", "-u", "2@10.250.0.1:7000=10.250.0.2:7001"),
            *("--udp", "3@10.250.0.1:7002=10.250.0.3:7002", "-u", "4@0.0.0.0:7003=10.250.0.3:7003"),
        ]
    )
    ports = wire_ports(args.interfaces, args.tunnels)
    assert ports == {
        1: "s0-eth3",
        2: UdpTunnel(("10.250.0.1", 7000), ("10.250.0.2", 7001)),
        3: UdpTunnel(("10.250.0.1", 7002), ("10.250.0.3", 7002)),
        4: UdpTunnel(("0.0.0.0", 7003), ("10.250.0.3", 7003)),
    }
    assert str(ports[2]) == "udp 10.250.0.1:7000->10.250.0.2:7001"
    assert wire_shapes(["2:delay=30ms"], ports) == {2: parse_spec("delay=30ms")}


TUNNEL = "10.250.0.1:7000=10.250.0.2:7000"


@pytest.mark.parametrize(
    ("tunnel", "message"),
    [
        ("2@10.250.0.1:7000", "no =PEER"),
        ("2@10.250.0.1=10.250.0.2:7000", "no :PORT"),
        ("2@10.250.0.1:0=10.250.0.2:7000", "'0' is not a UDP port"),
        ("2@10.250.0.1:7000=10.250.0.2:65536", "'65536' is not a UDP port"),
        ("2@10.250.0.1:70a=10.250.0.2:7000", "'70a' is not a UDP port"),
        ("2@peer.example:7000=10.250.0.2:7000", "not an IPv4 address"),
        ("2@10.250.0.1:7000=::1:7000", "not an IPv4 address"),
        ("2@10.250.0.1:7000=10.250.0.256:7000", "not an IPv4 address"),
        (f"x@{TUNNEL}", "not a port number"),
        (f"0@{TUNNEL}", "not a port number"),
        (TUNNEL, "not a port number"),
        ("2@10.250.0.1:7000=0.0.0.0:7000", "no peer's address"),
        ("2@10.250.0.1:7000=10.250.0.1:7000", "LOCAL and PEER are the same"),
    ],
)
def test_a_malformed_tunnel_port_is_refused_naming_the_argument(tunnel: str, message: str) -> None:
    with pytest.raises(UsageError, match=message) as refused:
        wire_ports(["1@a"], [tunnel])
    assert f"-u {tunnel!r}" in str(refused.value) and "\n" not in str(refused.value)


@pytest.mark.parametrize(
    ("interfaces", "tunnels", "message"),
    [
        (["1@a", "2@b"], [f"2@{TUNNEL}"], "port 2 is given twice"),
        ([], [f"1@{TUNNEL}", "1@10.250.0.1:7001=10.250.0.2:7001"], "port 1 is given twice"),
        ([], [f"1@{TUNNEL}", "2@10.250.0.1:7000=10.250.0.3:7000"], "both bind 10.250.0.1:7000"),
        ([], [f"1@{TUNNEL}"], r"no partner.*-u 2@"),
    ],
)
def test_tunnel_ports_that_clash_or_lack_a_partner_are_refused(
    interfaces: list[str], tunnels: list[str], message: str
) -> None:
    with pytest.raises(UsageError, match=message):
        wire_ports(interfaces, tunnels)


def free_udp_port() -> int:
    """A UDP port of 127.0.0.1 nothing holds now."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        probe.bind((LOOPBACK, 0))
        port: int = probe.getsockname()[1]
    return port


def open_descriptors() -> int:
    return len(os.listdir("/proc/self/fd"))


def refuse(argv: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    """Run the command on `argv`, which it must refuse with status 2, leaving nothing open; its
    one line of error."""
    before = open_descriptors()
    assert main(argv) == 2
    assert open_descriptors() == before
    err = capsys.readouterr().err
    assert err.startswith("linkemu: error: ") and err.count("\n") == 1, err
    return err


def test_the_command_refuses_a_bad_tunnel_port_in_one_line(
    capsys: pytest.CaptureFixture[str],
) -> None:
    err = refuse(["-i", "1@a", "-u", "2@10.250.0.1:7000"], capsys)
    assert "-u '2@10.250.0.1:7000'" in err


def test_the_command_refuses_a_local_address_not_on_this_machine(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """192.0.2.1 is a documentation address (TEST-NET-1): no machine's own. Port 1's socket,
    bound before port 2's bind fails, is closed again."""
    ok = f"1@{LOOPBACK}:{free_udp_port()}={LOOPBACK}:{free_udp_port()}"
    err = refuse(["-u", ok, "-u", f"2@192.0.2.1:7000={LOOPBACK}:{free_udp_port()}"], capsys)
    assert "192.0.2.1:7000" in err and "not an address of this machine" in err


def test_the_command_refuses_a_local_port_in_use(capsys: pytest.CaptureFixture[str]) -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as holder:
        holder.bind((LOOPBACK, 0))
        held = holder.getsockname()[1]
        ok = f"1@{LOOPBACK}:{free_udp_port()}={LOOPBACK}:{free_udp_port()}"
        err = refuse(["-u", ok, "-u", f"2@{LOOPBACK}:{held}={LOOPBACK}:9"], capsys)
    assert f"{LOOPBACK}:{held}" in err and f"UDP port {held} is in use" in err


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


class Tunnels:
    """A link emulator's switch whose ports 1 and 2 are tunnel ports on 127.0.0.1, and at each
    port's peer a socket of the test's (`hosts[n]`); the test turns the loop with `poll`."""

    def __init__(self, peers: dict[int, int] | None = None, **switch_options: Any) -> None:
        self.hosts: dict[int, socket.socket] = {}
        for number in (1, 2):
            host = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            host.bind((LOOPBACK, 0))
            self.hosts[number] = host
        peers = {n: h.getsockname()[1] for n, h in self.hosts.items()} | (peers or {})
        self.locals = {n: (LOOPBACK, free_udp_port()) for n in (1, 2)}
        tunnels = {n: UdpTunnel(self.locals[n], (LOOPBACK, peers[n])) for n in (1, 2)}
        self.switch = Switch(tunnels, Wire(), **switch_options)

    def send(self, port: int, data: bytes) -> None:
        """`data` into tunnel port `port`, from its peer."""
        self.hosts[port].sendto(data, self.locals[port])

    def poll_until(self, condition: Callable[[], bool]) -> None:
        deadline = time.monotonic() + HANG_S
        while not condition():
            assert time.monotonic() < deadline, "hang guard: the switch never got there"
            self.switch.poll(MAX_WAIT_S)

    def received(self, port: int, timeout: float = HANG_S) -> tuple[bytes, tuple[str, int]]:
        """The next datagram tunnel port `port` sent its peer, and where it came from."""
        assert select.select([self.hosts[port]], [], [], timeout)[0], "nothing came"
        data, source = self.hosts[port].recvfrom(2**16)
        return data, source

    def pending(self, port: int) -> bool:
        return bool(select.select([self.hosts[port]], [], [], 0)[0])

    def port(self, number: int) -> dict[str, Any]:
        stats: dict[str, Any] = self.switch.stats()["ports"][number]
        return stats

    def drops(self, number: int) -> dict[str, int]:
        drops: dict[str, int] = self.switch.stats()["ports"][number]["drops"]
        return drops

    def close(self) -> None:
        self.switch.close()
        for host in self.hosts.values():
            host.close()


@pytest.fixture
def tunnels() -> Iterator[Callable[..., Tunnels]]:
    made: list[Tunnels] = []

    def make(**options: Any) -> Tunnels:
        made.append(Tunnels(**options))
        return made[-1]

    yield make
    for emulator in made:
        emulator.close()


def test_a_frame_crosses_the_tunnel_ports_unchanged_both_ways_and_is_counted(
    tunnels: Callable[..., Tunnels], tmp_path: Path
) -> None:
    """Each datagram from port 1's peer leaves port 2 to port 2's peer, as it came, and back.
    The wall clock runs 100 s ahead of the kernel's: a receive time read from the datagram
    (SO_TIMESTAMPNS) shows as 100 s of receive lag, none read as no lag at all."""
    emulator = tunnels(pcap_dir=tmp_path, wall_clock=lambda: time.time() + 100.0)
    back = FRAME[6:12] + FRAME[:6] + FRAME[12:]
    stranger = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    with stranger:  # port 1 is connected to its peer: the kernel keeps others' datagrams out
        stranger.sendto(b"not from the peer", emulator.locals[1])
    emulator.send(1, FRAME)
    emulator.poll_until(lambda: emulator.port(2)["tx_packets"] == 1)
    assert emulator.received(2) == (FRAME, emulator.locals[2])
    emulator.send(2, back)
    emulator.poll_until(lambda: emulator.port(1)["tx_packets"] == 1)
    assert emulator.received(1) == (back, emulator.locals[1])
    for number in (1, 2):
        port = emulator.port(number)
        assert (port["rx_packets"], port["rx_bytes"]) == (1, len(FRAME))
        assert (port["tx_packets"], port["tx_bytes"]) == (1, len(FRAME))
        assert not any(emulator.drops(number).values())
        local, peer_port = emulator.locals[number], emulator.hosts[number].getsockname()[1]
        assert port["interface"] == f"udp {LOOPBACK}:{local[1]}->{LOOPBACK}:{peer_port}"
        assert port["rx_lag_max_s"] >= 100.0
    emulator.switch.close()
    assert [r.data for r in read_pcap(tmp_path / "1-in.pcap").records] == [FRAME]
    assert [r.data for r in read_pcap(tmp_path / "2-out.pcap").records] == [FRAME]
    assert [r.data for r in read_pcap(tmp_path / "2-in.pcap").records] == [back]


def test_a_tunnel_port_s_egress_is_shaped_on_the_switch_s_clock(
    tunnels: Callable[..., Tunnels],
) -> None:
    clock = FakeClock(50.0)
    emulator = tunnels(shaping={2: parse_spec("delay=30ms")}, clock=clock)
    emulator.send(1, FRAME)
    emulator.poll_until(lambda: emulator.port(2)["queue_held"] == 1)
    assert emulator.switch.wait_timeout() == pytest.approx(0.03)
    clock.now = math.nextafter(50.03, 0.0)
    emulator.switch.poll()
    assert emulator.port(2)["tx_packets"] == 0 and not emulator.pending(2)
    clock.now = 50.03
    emulator.switch.poll()
    assert emulator.received(2)[0] == FRAME


def test_a_frame_shaped_with_certain_loss_never_leaves_the_tunnel_port(
    tunnels: Callable[..., Tunnels],
) -> None:
    """A spec's loss is below 1: the largest, 1 - 2**-53, loses every draw but one in 2**53
    (and the draws are seeded)."""
    emulator = tunnels(shaping={2: ShapeSpec(loss=math.nextafter(1.0, 0.0))})
    for _ in range(3):
        emulator.send(1, FRAME)
    emulator.poll_until(lambda: emulator.port(1)["rx_packets"] == 3)
    assert emulator.drops(2)["loss"] == 3
    assert emulator.port(2)["tx_packets"] == 0
    assert not emulator.pending(2)


def test_a_frame_longer_than_a_datagram_is_dropped_and_counted(
    tunnels: Callable[..., Tunnels],
) -> None:
    emulator = tunnels()
    longest = bytes(range(256)) * (MAX_DATAGRAM_BYTES // 256) + bytes(MAX_DATAGRAM_BYTES % 256)
    emulator.switch.inject(1, longest + b"!")  # the wire sends it out of port 2
    emulator.switch.inject(1, longest)
    emulator.poll_until(lambda: emulator.port(2)["tx_packets"] == 1)
    assert emulator.received(2)[0] == longest
    assert emulator.drops(2)["tx_error"] == 1


def test_a_peer_that_refuses_datagrams_is_counted_not_fatal(
    tunnels: Callable[..., Tunnels],
) -> None:
    """Port 2's peer is a port nothing listens on: the kernel learns it from an ICMP port
    unreachable and reports it on the socket's next read or send; forwarding goes on."""
    emulator = tunnels(peers={2: free_udp_port()})
    emulator.send(1, FRAME)
    emulator.poll_until(lambda: emulator.drops(2)["tx_error"] >= 1)
    emulator.send(2, b"never: from a socket that is not port 2's peer")
    emulator.send(1, FRAME)
    emulator.poll_until(lambda: emulator.port(1)["rx_packets"] == 2)
    assert emulator.port(2)["rx_packets"] == 0


def test_what_the_kernel_dropped_for_a_tunnel_port_is_its_rx_overrun(
    tunnels: Callable[..., Tunnels],
) -> None:
    """More datagrams than the port's receive buffer holds, none read: the kernel drops the
    rest, and tells how many with the next datagram it queues (SO_RXQ_OVFL). Every datagram
    sent is then either received or counted as an overrun."""
    emulator = tunnels()
    burst = 400  # 24 MB: past the receive buffer at its largest (8 MB)
    for _ in range(burst):
        emulator.send(1, bytes(60_000))
    while True:  # read what the buffer held
        before = emulator.port(1)["rx_packets"]
        emulator.switch.poll()
        if emulator.port(1)["rx_packets"] == before:
            break
    emulator.send(1, FRAME)  # queued with the count of those dropped before it
    emulator.poll_until(
        lambda: emulator.port(1)["rx_packets"] + emulator.drops(1)["rx_overrun"] == burst + 1
    )
    assert 0 < emulator.drops(1)["rx_overrun"] < burst
