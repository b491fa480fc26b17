"""The switches' side of a testbed, as the controller sees it: the `Network` seam.

The controller programs switches only over P4Runtime. What P4Runtime does not carry (is the
switch process alive, its port counters and processing lag, the pipeline to push, restarting
a dead switch) it asks of a `Network`. `MininetNetwork` is the real one, over
`topo.mininet_net.TestbedNet` (which reaches p4switch's control channel); tests give networks of
in-process P4Runtime servers.

`MininetNetwork.record()` is also what `innet clean` needs to undo a run without Mininet: every
process the network started (switch processes, the host shells that hold the host namespaces)
with its command line, and every root-namespace interface.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from controller.rundir import NetworkRecord, ProcessRecord
from innet.vocabulary import P4Target, Shaping
from topo.mininet_net import TestbedNet
from topo.p4node import PortCounters, SwitchPipeline


@dataclass(frozen=True, slots=True)
class SwitchSite:
    """One edge switch as the controller reaches it."""

    city: int
    name: str  # the fabric's name for it
    grpc_addr: str
    device_id: int


@dataclass(frozen=True, slots=True)
class NetworkFacts:
    """How the network was built, for the testbed's topology view."""

    target: P4Target
    shaping: Shaping  # KERNEL, SWITCH or LINKS: who delays, rate-limits and drops on WAN links
    scale: float
    workdir: str
    engines: tuple[str, ...] = ()  # per city: "back end/I/O loop" its switch reports


class Network(Protocol):
    """Where the switches are, and what the controller cannot ask them over P4Runtime."""

    @property
    def sites(self) -> tuple[SwitchSite, ...]: ...

    @property
    def hosts_per_city(self) -> int: ...

    def pipeline(self) -> SwitchPipeline:
        """The P4Info and device config every switch is set to."""
        ...

    def process_alive(self, city: int) -> bool: ...

    def restart(self, city: int, deadline: float) -> None:
        """Start a dead switch again, ready by `deadline` (time.monotonic())."""
        ...

    def port_counters(self, city: int, reset_peaks: bool = False) -> PortCounters | None:
        """The switch's port counters (None: this network cannot read them);
        `topo.exceptions.SwitchControlError` when the switch does not answer."""
        ...

    def control_alive(self, city: int) -> bool | None:
        """Whether the switch's control channel answers (None: it has none)."""
        ...

    def link_counters(self, reset_peaks: bool = False) -> dict[str, PortCounters]:
        """Each WAN link emulator's port counters by name (empty: links are not emulated by
        processes); `topo.exceptions.SwitchControlError` when one does not answer."""
        ...

    def restart_links(self, deadline: float) -> list[str]:
        """Start every link emulator that has exited again; their names."""
        ...

    def facts(self) -> NetworkFacts: ...

    def stop(self) -> None: ...


class MininetNetwork:
    """The switches of a `TestbedNet`, as a `Network`."""

    def __init__(self, net: TestbedNet) -> None:
        self.net = net
        self._sites = tuple(
            SwitchSite(u, sw.name, sw.grpc_addr, sw.device_id)
            for u, sw in zip(net.cities, net.switches, strict=True)
        )

    @property
    def sites(self) -> tuple[SwitchSite, ...]:
        return self._sites

    @property
    def hosts_per_city(self) -> int:
        return len(self.net.hosts[0])

    def pipeline(self) -> SwitchPipeline:
        return self.net.pipeline()

    def process_alive(self, city: int) -> bool:
        return self.net.process_alive(city)

    def restart(self, city: int, deadline: float) -> None:
        self.net.restart(city, deadline)

    def stop_switch(self, city: int) -> None:
        """Stop city `city`'s switch process (SIGTERM, then SIGKILL after a grace period), so
        that `restart` starts a fresh one: the watchdog's last resort for a wedged switch."""
        self.net.switch(city).stop_process()

    def port_counters(self, city: int, reset_peaks: bool = False) -> PortCounters | None:
        return self.net.port_counters(city, reset_peaks)

    def control_alive(self, city: int) -> bool | None:
        return self.net.control_alive(city)

    def link_counters(self, reset_peaks: bool = False) -> dict[str, PortCounters]:
        return self.net.link_counters(reset_peaks)

    def restart_links(self, deadline: float) -> list[str]:
        return self.net.restart_links(deadline)

    def facts(self) -> NetworkFacts:
        net = self.net
        engines = tuple(sw.engine() for sw in net.switches)
        return NetworkFacts(net.target, net.shaping, net.scale, str(net.workdir), engines)

    def stop(self) -> None:
        self.net.stop()

    def record(self) -> NetworkRecord:
        """PIDs (with command lines) and root-namespace interfaces this network created."""
        processes = tuple(ProcessRecord.of(role, pid) for role, pid in self.net.processes())
        return NetworkRecord(processes, tuple(self.net.interfaces()), str(self.net.workdir))
