"""The switches' counters around one round: bytes per WAN link, innet.p4's drops, lag.

`snapshot` reads every edge (p4switch: its control channel, restarting the lateness peaks;
BMv2: the kernel's interface counters) and innet.p4's counter over P4Runtime; `counted` gives
what happened between two snapshots, counting a switch restarted in between from zero.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Snapshot:
    """Every switch's counters at one moment; a switch that could not be read is left out."""

    tx_bytes: dict[int, dict[int, int]]  # switch u -> neighbour v -> bytes sent toward v
    stats: dict[int, dict[str, int]]  # switch u -> innet.p4 counters
    lag_s: float  # worst port lateness since the previous snapshot
    unread: tuple[int, ...] = ()


def snapshot(testbed: Any, wan_ports: Callable[[int], dict[int, int]]) -> Snapshot:
    from controller.testbed import TestbedError
    from p4switch.control import ControlError, control_request

    tx: dict[int, dict[int, int]] = {}
    stats: dict[int, dict[str, int]] = {}
    lag, unread = 0.0, []
    for site in testbed.network.sites:
        u = site.city
        try:
            if site.control_path is None:  # BMv2: the kernel's counters of its interfaces
                ports = _kernel_ports(testbed.network.net.switches[u].port_interfaces())
            else:
                reply = control_request(site.control_path, {"cmd": "stats", "reset_peaks": True})
                ports = reply.get("stats", {}).get("ports", {}) if reply.get("ok") else {}
            counters = testbed.counters(testbed.wan.names[u])["stats"]
        except (ControlError, TestbedError, OSError) as err:  # dead, being restarted
            log.warning("switch %s unreadable: %s", site.name, err)
            unread.append(u)
            continue
        tx[u] = {
            v: int((ports.get(str(port)) or {}).get("tx_bytes", 0))
            for v, port in wan_ports(u).items()
        }
        lag = max([lag, *(float(e.get("lateness_max_s", 0.0)) for e in ports.values())])
        stats[u] = {label: int(value) for label, value in counters.items()}
    return Snapshot(tx, stats, lag, tuple(unread))


def _kernel_ports(interfaces: dict[int, str]) -> dict[str, dict[str, int]]:
    """Port -> {"tx_bytes": ...} from /sys/class/net (for switches without a control channel)."""
    return {
        str(port): {"tx_bytes": int(Path("/sys/class/net", name, "statistics", "tx_bytes")
                                    .read_text())}
        for port, name in interfaces.items()
    }  # fmt: skip


def _delta(before: dict[Any, int] | None, after: dict[Any, int]) -> dict[Any, int]:
    """Counts over an interval; a switch restarted in it (a counter went down) counts from 0."""
    if before is None or any(after[k] < before.get(k, 0) for k in after):
        return dict(after)
    return {k: after[k] - before.get(k, 0) for k in after}


def counted(before: Snapshot, after: Snapshot) -> tuple[dict[tuple[int, int], int], dict[str, int]]:
    """(bytes per WAN link u->v, innet.p4 counters summed) between two snapshots."""
    links: dict[tuple[int, int], int] = {}
    totals: dict[str, int] = {}
    for u, tx in after.tx_bytes.items():
        for v, n in _delta(before.tx_bytes.get(u), tx).items():
            links[(u, v)] = n
        for label, n in _delta(before.stats.get(u), after.stats[u]).items():
            totals[label] = totals.get(label, 0) + n
    return links, totals
