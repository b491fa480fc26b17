"""The Mininet side of a Testbed: a `topo.mininet_net.TestbedNet` seen as a `Network`.

Also what `innet clean` needs to undo a run without Mininet: every process it started (p4switch
processes, host shells that hold the host namespaces) with its command line, and every
root-namespace interface, recorded as JSON (`record()`).
"""

from __future__ import annotations

import logging
from typing import Any

from controller.rundir import cmdline
from controller.testbed import SwitchSite
from topo.mininet_net import TestbedNet
from topo.p4node import wait_all_ready

log = logging.getLogger(__name__)


class MininetNetwork:
    """The switches of a TestbedNet: addresses, liveness, restart of one p4switch process."""

    def __init__(self, net: TestbedNet) -> None:
        self.net = net
        self.hosts_per_city = len(net.hosts[0])
        self.sites = tuple(
            SwitchSite(u, sw.name, sw.grpc_addr, sw.device_id, sw.control_path)
            for u, sw in enumerate(net.switches)
        )

    def process_alive(self, city: int) -> bool:
        proc = self.net.switches[city].process
        return proc is not None and proc.poll() is None

    def restart(self, city: int, deadline: float) -> None:
        switch = self.net.switches[city]
        switch.start([])  # starts a new process only when the old one has exited
        wait_all_ready([switch], deadline)
        log.info("switch %s restarted as PID %s", switch.name, switch.switch_pid)

    def stop(self) -> None:
        self.net.stop()

    def describe(self) -> dict[str, Any]:
        return {
            "shaping": self.net.shaping,
            "scale": self.net.scale,
            "workdir": str(self.net.workdir),
        }

    def record(self) -> dict[str, Any]:
        """PIDs (with command lines) and root-namespace interfaces this network created."""
        processes = []
        for sw in self.net.switches:
            if sw.switch_pid is not None:
                processes.append(
                    {
                        "role": f"p4switch {sw.name}",
                        "pid": sw.switch_pid,
                        "cmdline": cmdline(sw.switch_pid),
                    }
                )
        for city_hosts in self.net.hosts:
            for host in city_hosts:
                processes.append(
                    {"role": f"host {host.name}", "pid": host.pid, "cmdline": cmdline(host.pid)}
                )
        interfaces = sorted(
            intf.name for sw in self.net.switches for intf in sw.intfList() if intf.name != "lo"
        )
        return {"processes": processes, "interfaces": interfaces, "workdir": str(self.net.workdir)}
