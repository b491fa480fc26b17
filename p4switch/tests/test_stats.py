"""Typed statistics: what a running switch reports on its control channel reads back, through
`read_stats`, as `SwitchStats` and `PortStats`; a reply of another shape is refused by field."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from p4switch.control import ControlServer, read_stats
from p4switch.dataplane import Switch
from p4switch.exceptions import ControlError
from p4switch.stats import PortStats, SwitchStats
from tests.fakeports import Wire


class Forward:
    """Test double for the P4 pipeline: port 1 to port 2 and back."""

    def process(self, ingress_port: int, data: bytes) -> list[tuple[int, bytes]]:
        return [(2 if ingress_port == 1 else 1, data)]


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[Switch, dict[int, Wire], Path]]:
    """A switch on ports 1 and 2, turned by the test (`poll`), serving its control channel."""
    wires = {1: Wire("p1"), 2: Wire("p2")}
    switch = Switch({n: w.port for n, w in wires.items()}, Forward())
    path = tmp_path / "ctl.sock"
    try:
        with ControlServer(path, switch):
            yield switch, wires, path
    finally:
        switch.close()
        for wire in wires.values():
            wire.host.close()
            wire.port.close()


def test_a_switch_s_report_reads_back_typed(served: tuple[Switch, dict[int, Wire], Path]) -> None:
    switch, wires, path = served
    wires[1].host.send(b"x" * 100)
    switch.poll(0.0)
    assert wires[2].recv() == b"x" * 100
    stats = read_stats(path)
    assert set(stats.ports) == {1, 2} and stats.cpu is None and stats.engine == "unknown"
    one, two = stats.ports[1], stats.ports[2]
    assert (one.interface, one.rx_packets, one.rx_bytes) == ("p1", 1, 100)
    assert (two.interface, two.tx_packets, two.tx_bytes) == ("p2", 1, 100)
    assert one.lateness_max_s >= 0 and isinstance(one.drops, dict) and one.shape is not None
    raw = switch.stats()  # what the channel carried: every reading has a typed field
    assert stats.to_json()["ports"]["1"].keys() == raw["ports"][1].keys()
    assert SwitchStats.from_json(stats.to_json()) == stats


def test_the_cpu_port_and_the_engine_come_through() -> None:
    reply = {
        "ports": {},
        "cpu": {
            "port": 64,
            "rx_packets": 2,
            "rx_bytes": 9,
            "tx_packets": 0,
            "tx_bytes": 0,
            "drops": {},
        },
        "backend": "python",
        "io": "native",
    }
    stats = SwitchStats.from_json(reply)
    assert stats.cpu_port == 64 and stats.cpu is not None and stats.cpu.rx_bytes == 9
    assert stats.engine == "python/native"
    assert SwitchStats.from_json(stats.to_json()) == stats


def test_readings_a_switch_does_not_report_read_as_zero() -> None:
    port = PortStats.from_json({"interface": "eth0", "rx_bytes": 5, "tx_bytes": 7})
    assert (port.rx_bytes, port.tx_bytes, port.lateness_max_s, port.queue_held) == (5, 7, 0.0, 0)


@pytest.mark.parametrize(
    ("reply", "words"),
    [
        ([], "stats: [] is not an object"),
        ({"ports": {"one": {"interface": "p1"}}}, "ports: 'one' is not a port number"),
        ({"ports": {"1": {}}}, "ports.1: no interface"),
        ({"ports": {"1": {"interface": 3}}}, "ports.1.interface: 3 is not text"),
        ({"ports": {"1": {"interface": "p1", "tx_bytes": True}}}, "tx_bytes: True is not a whole"),
        ({"ports": {"1": {"interface": "p1", "drops": {"x": -0.5}}}}, "drops.x: -0.5 is not"),
        ({"ports": {"1": {"interface": "p1", "lateness_max_s": "1ms"}}}, "a number of seconds"),
        ({"ports": {}, "cpu": {"rx_bytes": 1}}, "cpu.port: None is not a whole number"),
        ({"ports": {}, "backend": 7}, "backend: 7 is not text"),
    ],
)
def test_a_reply_of_another_shape_is_refused_naming_the_field(reply: object, words: str) -> None:
    with pytest.raises(ControlError, match=words.replace("[", r"\[").replace("]", r"\]")):
        SwitchStats.from_json(reply)


def test_a_switch_that_refuses_stats_is_an_error(tmp_path: Path) -> None:
    class Broken:
        def shape(self, port: int, spec: object) -> None: ...

        def stats(self, reset_peaks: bool = False) -> dict[str, object]:
            raise RuntimeError("counters exploded")

    with (
        ControlServer(tmp_path / "ctl.sock", Broken()),  # type: ignore[arg-type]
        pytest.raises(ControlError, match=r"refused stats: .*counters exploded"),
    ):
        read_stats(tmp_path / "ctl.sock")
