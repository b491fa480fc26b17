"""A switch's statistics as its control channel reports them (`{"cmd": "stats"}`), typed.

The channel carries JSON (p4switch.control); a client reads the reply into a `SwitchStats`
once, where it arrives, and every use after that is an attribute, not a key:

    >>> stats = SwitchStats.from_json({
    ...     "ports": {"1": {"interface": "s0-eth1", "rx_packets": 3, "rx_bytes": 558,
    ...                     "tx_packets": 1, "tx_bytes": 186, "drops": {"rx_overrun": 0},
    ...                     "queue_depth": 0, "queue_held": 0, "lateness_max_s": 0.0002,
    ...                     "rx_lag_max_s": 0.0001, "shape": None}},
    ...     "cpu": None, "backend": "native", "io": "native"})
    >>> stats.ports[1].rx_bytes, stats.ports[1].lateness_max_s, stats.engine
    (558, 0.0002, 'native/native')
    >>> SwitchStats.from_json({"ports": {"1": {"interface": "s0-eth1", "rx_bytes": "lots"}}})
    Traceback (most recent call last):
    ...
    p4switch.exceptions.ControlError: stats: ports.1.rx_bytes: 'lots' is not a whole number

Counters a switch does not report (a kernel's interface counters have no queue or lateness)
read as 0; `to_json` gives the reply's shape back.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from p4switch.exceptions import ControlError

ShapeFields = Mapping[str, float | int | bool | None]


@dataclass(frozen=True, slots=True)
class PortStats:
    """One port: what it received and sent, what it dropped and why, its egress queue (bytes
    and frames held), the peaks of its lateness and receive lag (seconds), its egress shape."""

    interface: str
    rx_packets: int = 0
    rx_bytes: int = 0
    tx_packets: int = 0
    tx_bytes: int = 0
    drops: Mapping[str, int] = field(default_factory=dict)
    queue_depth: int = 0
    queue_held: int = 0
    lateness_max_s: float = 0.0
    rx_lag_max_s: float = 0.0
    shape: ShapeFields | None = None

    @classmethod
    def from_json(cls, data: object, where: str = "port") -> PortStats:
        """The port in a reply; ControlError naming the field for anything of another type."""
        fields = _mapping(data, where)
        known = {f.name for f in dataclasses.fields(cls)}
        values: dict[str, Any] = {}
        for name, value in fields.items():
            if name not in known:
                continue  # a newer switch's extra reading: not this client's
            at = f"{where}.{name}"
            if name == "interface":
                values[name] = _text(value, at)
            elif name in ("lateness_max_s", "rx_lag_max_s"):
                values[name] = _seconds(value, at)
            elif name == "drops":
                drops = _mapping(value, at)
                values[name] = {str(k): _count(v, f"{at}.{k}") for k, v in drops.items()}
            elif name == "shape":
                values[name] = None if value is None else dict(_mapping(value, at))
            else:
                values[name] = _count(value, at)
        if "interface" not in values:
            raise ControlError(f"stats: {where}: no interface")
        return cls(**values)

    def to_json(self) -> dict[str, Any]:
        out = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        out["drops"] = dict(self.drops)
        out["shape"] = None if self.shape is None else dict(self.shape)
        return out


@dataclass(frozen=True, slots=True)
class SwitchStats:
    """Every port by number, the CPU port's counters (None without one), and what runs the
    program and moves the frames (`backend`, `io`: None where the switch does not say)."""

    ports: Mapping[int, PortStats]
    cpu: PortStats | None = None
    cpu_port: int | None = None
    backend: str | None = None
    io: str | None = None

    @classmethod
    def from_json(cls, data: object) -> SwitchStats:
        """A stats reply's `stats`; ControlError naming the field for anything malformed."""
        reply = _mapping(data, "stats")
        ports: dict[int, PortStats] = {}
        for key, port in _mapping(reply.get("ports", {}), "stats: ports").items():
            if not str(key).isdigit():
                raise ControlError(f"stats: ports: {key!r} is not a port number")
            ports[int(key)] = PortStats.from_json(port, f"ports.{key}")
        cpu, cpu_port = reply.get("cpu"), None
        if cpu is not None:
            fields = dict(_mapping(cpu, "cpu"))
            cpu_port = _count(fields.pop("port", None), "cpu.port")
            cpu = PortStats.from_json({"interface": "cpu", **fields}, "cpu")
        backend, io = reply.get("backend"), reply.get("io")
        return cls(
            ports,
            cpu,
            cpu_port,
            None if backend is None else _text(backend, "backend"),
            None if io is None else _text(io, "io"),
        )

    @property
    def engine(self) -> str:
        """ "back end/I/O loop" (e.g. "native/native"), or "unknown" where the switch does not
        say."""
        return f"{self.backend}/{self.io}" if self.backend and self.io else "unknown"

    def to_json(self) -> dict[str, Any]:
        cpu = None
        if self.cpu is not None:
            cpu = {"port": self.cpu_port, **self.cpu.to_json()}
            del cpu["interface"]
        return {
            "ports": {str(n): p.to_json() for n, p in sorted(self.ports.items())},
            "cpu": cpu,
            "backend": self.backend,
            "io": self.io,
        }


def _mapping(value: object, where: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise ControlError(f"stats: {where}: {value!r} is not an object")
    return value


def _text(value: object, where: str) -> str:
    if not isinstance(value, str):
        raise ControlError(f"stats: {where}: {value!r} is not text")
    return value


def _count(value: object, where: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ControlError(f"stats: {where}: {value!r} is not a whole number")
    return value


def _seconds(value: object, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ControlError(f"stats: {where}: {value!r} is not a number of seconds")
    return float(value)
