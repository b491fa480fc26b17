"""The switches' counters around one round: bytes per WAN link and from each leader, innet.p4's
drops, lag.

`snapshot` reads every edge (the network's port counters, restarting the lateness peaks; innet
statistics over P4Runtime) and the link emulator (its lateness: where a process emulates the
links, the shaping runs late there when the CPU cannot keep up); `counted` gives what happened
between two snapshots, counting a switch restarted in between from zero.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TypeVar

from controller.exceptions import TestbedError
from controller.testbed import Testbed
from topo.exceptions import SwitchControlError
from topo.siteplan import host_ports, wan_ports

log = logging.getLogger(__name__)

K = TypeVar("K")
# A port's lag peak that marks a round CPU-bound is its lateness (lateness_max_s: a shaped frame
# sent after its due time). The receive lag (rx_lag_max_s: a frame read from the kernel after it
# arrived) is reported per port but not counted: its peak reached 30-110 ms in 1.6 GB all-to-all
# rounds that ran within 1.4% of the planner (round installs and counter reads hold the switch's
# interpreter for a moment).


@dataclass(frozen=True, slots=True)
class Snapshot:
    """Every switch's counters at one moment; a switch that could not be read is left out."""

    tx_bytes: dict[int, dict[int, int]]  # switch u -> neighbour v -> bytes sent toward v
    stats: dict[int, dict[str, int]]  # switch u -> innet.p4 counters
    lag_s: float  # worst port lateness since the previous snapshot
    unread: tuple[int, ...] = ()
    leader_bytes: dict[int, int] = field(default_factory=dict)  # u -> bytes its leader sent
    leader_rx: dict[int, int] = field(default_factory=dict)  # u -> bytes its leader was sent


@dataclass(frozen=True, slots=True)
class Counted:
    """What the switches counted between two snapshots."""

    links: dict[tuple[int, int], int]  # bytes sent on WAN link u -> v
    totals: dict[str, int]  # innet.p4's counters, summed over the switches
    sent: dict[int, int] = field(default_factory=dict)  # bytes island u's leader sent its edge
    received: dict[int, int] = field(default_factory=dict)  # bytes u's edge sent its leader


def snapshot(testbed: Testbed) -> Snapshot:
    tx: dict[int, dict[int, int]] = {}
    leaders: dict[int, int] = {}
    leaders_rx: dict[int, int] = {}
    stats: dict[int, dict[str, int]] = {}
    lag, unread = 0.0, []
    hosts = testbed.network.hosts_per_city
    for site in testbed.network.sites:
        u = site.city
        try:
            ports = testbed.network.port_counters(u, reset_peaks=True) or {}
            counters = testbed.stats(u)
        except (SwitchControlError, TestbedError) as err:  # dead, being restarted
            log.warning("switch %s unreadable: %s", site.name, err)
            unread.append(u)
            continue
        tx[u] = {
            v: ports[port].tx_bytes if port in ports else 0
            for v, port in wan_ports(testbed.wan, u, hosts).items()
        }
        leader_port = ports.get(host_ports(hosts)[0])
        leaders[u] = 0 if leader_port is None else leader_port.rx_bytes
        leaders_rx[u] = 0 if leader_port is None else leader_port.tx_bytes
        lag = max([lag, *(p.lateness_max_s for p in ports.values())])
        stats[u] = counters
    try:
        links = testbed.network.link_counters(reset_peaks=True)
    except SwitchControlError as err:  # a link emulator being restarted
        log.warning("link emulators unreadable: %s", err)
        links = {}
    for ports in links.values():
        lag = max([lag, *(p.lateness_max_s for p in ports.values())])
    return Snapshot(tx, stats, lag, tuple(unread), leaders, leaders_rx)


def _delta(before: Mapping[K, int] | None, after: Mapping[K, int]) -> dict[K, int]:
    """Counts over an interval; a switch restarted in it (a counter went down) counts from 0."""
    if before is None or any(after[k] < before.get(k, 0) for k in after):
        return dict(after)
    return {k: after[k] - before.get(k, 0) for k in after}


def counted(before: Snapshot, after: Snapshot) -> Counted:
    """Bytes per WAN link u->v and innet.p4's counters summed, between two snapshots."""
    links: dict[tuple[int, int], int] = {}
    totals: dict[str, int] = {}
    for u, tx in after.tx_bytes.items():
        for v, n in _delta(before.tx_bytes.get(u), tx).items():
            links[(u, v)] = n
        for label, n in _delta(before.stats.get(u), after.stats[u]).items():
            totals[label] = totals.get(label, 0) + n
    sent = _delta(before.leader_bytes, after.leader_bytes)
    received = _delta(before.leader_rx, after.leader_rx)
    return Counted(links, totals, sent, received)
