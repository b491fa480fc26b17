"""How the testbed gives WAN links delay, jitter, rate and loss: in the kernel, the switches or
the links.

Mininet's `TCLink` shapes delay with netem. Where the kernel has no netem, Mininet prints an
error and carries on with links of zero delay; innet never does that. `netem_available()` tries
netem once, in a throwaway network namespace it creates and deletes, and `choose_shaping` turns
the requested mode into the one used:

- `kernel`: netem delay + HTB rate on both ends of every WAN link (Mininet's `TCLink`);
- `switch`: every WAN port of every p4switch shapes its egress (`--shape PORT:delay=..,rate=..`);
- `links`: a link emulator process on every WAN link (topo/linknode.py, p4switch.linkemu), with
  p4switch's shaping code; the edges shape nothing, so this works for any target;
- `auto`: `kernel` when netem works, else `switch` on p4switch and `links` on BMv2.

BMv2 cannot shape its own ports, so it takes `kernel` or `links`. Either way a frame crossing
link (u, v) is delayed by the link's one-way delay once, and the rate is the link's capacity
divided by the emulation scale.

Jitter (`WanLink.jitter_s`, j): each frame's delay is the link's delay plus a draw uniform in
[-j, +j]. In user space (`switch`, `links`) the ports get `jitter=` in their spec
(p4switch.shaping) and frames keep their order. netem (`kernel`) is given the same figure as its
jitter (`delay 35ms 2ms`): with no `distribution` named, tc loads no table and the kernel draws
uniform in [delay - jitter, delay + jitter]. netem reorders frames by their drawn delay unless it
shapes the rate itself; Mininet's `TCLink` shapes the rate with HTB and leaves netem without
one, so under `kernel` shaping a frame may overtake an earlier one, as p4switch's `reorder=on`
does.
"""

from __future__ import annotations

import functools
import logging
import os
import subprocess
from decimal import Decimal

from innet.stopping import held
from innet.vocabulary import P4Target, Shaping, VocabularyError
from topo.exceptions import ShapingError
from topo.wan import WanLink

log = logging.getLogger(__name__)

SHAPING_HELP = (
    "who shapes WAN links: kernel (netem), switch (p4switch's ports), links (one link emulator "
    "process carrying every WAN link) or auto (netem if the kernel has it)"
)
HTB_MAX_MBIT = 1000  # Mininet's TCIntf refuses (and then ignores) higher bw figures


PROBE_PREFIX = "innet-netem-"  # + the probing process's PID: the namespace netem is tried in


@functools.cache
def netem_available() -> bool:
    """True when this kernel runs netem; tried once per process in a namespace made for it.

    The namespace is added and deleted with a stop signal held (`innet.stopping.held`: raised
    once it is gone), so Ctrl-C cannot leave it behind; one left by a process killed outright
    (SIGKILL) is deleted by the next probe on the machine (`delete_stale_probes`)."""
    delete_stale_probes()
    probe = f"{PROBE_PREFIX}{os.getpid()}"
    with held():
        added = subprocess.run(["ip", "netns", "add", probe], capture_output=True, text=True)
        if added.returncode != 0:
            raise ShapingError(
                f"cannot create a network namespace to try netem: {added.stderr.strip()}"
            )
        try:
            tried = subprocess.run(
                [
                    "ip",
                    "netns",
                    "exec",
                    probe,
                    "tc",
                    "qdisc",
                    "add",
                    "dev",
                    "lo",
                    "root",
                    "netem",
                    "delay",
                    "1ms",
                ],
                capture_output=True,
                text=True,
            )
        finally:
            subprocess.run(["ip", "netns", "del", probe], capture_output=True, check=False)
    if tried.returncode != 0:
        log.info("netem is not available here (%s): shaping in the switches", tried.stderr.strip())
    return tried.returncode == 0


def delete_stale_probes() -> list[str]:
    """Delete the netem probes' namespaces whose process is gone; their names."""
    listed = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True, check=False)
    stale = []
    for line in listed.stdout.splitlines():
        name = (line.split() or [""])[0]
        pid = name.removeprefix(PROBE_PREFIX)
        if name.startswith(PROBE_PREFIX) and pid.isdigit() and not _alive(int(pid)):
            subprocess.run(["ip", "netns", "del", name], capture_output=True, check=False)
            stale.append(name)
    if stale:
        log.info("deleted netem probe namespaces left by processes that are gone: %s", stale)
    return stale


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process
        return True
    return True


def choose_shaping(requested: Shaping, target: P4Target = P4Target.P4SWITCH) -> Shaping:
    """The shaping mode to use for a request of `auto`, `kernel`, `switch` or `links` on
    `target` (p4switch or bmv2); ShapingError, before anything starts, for one that cannot be
    honoured here."""
    try:
        requested = Shaping.parse(requested)
    except VocabularyError:
        known = ", ".join(Shaping)
        raise ShapingError(f"shaping must be one of {known}, not {requested!r}") from None
    can_shape_ports = P4Target.parse(target) != P4Target.BMV2
    if requested == Shaping.SWITCH and not can_shape_ports:
        raise ShapingError(
            "BMv2 cannot shape its own ports: use --shaping links (a link emulator on every WAN "
            "link) or --shaping kernel (netem); --shaping auto picks one"
        )
    if requested in (Shaping.SWITCH, Shaping.LINKS):
        return requested
    if netem_available():
        return Shaping.KERNEL
    if requested == Shaping.KERNEL:
        other = "links or switch" if can_shape_ports else "links"
        raise ShapingError(
            "--shaping kernel needs netem, which this kernel does not have (tc refuses the "
            f"netem qdisc): links would carry no delay. Use --shaping {other} (or auto), which "
            "shapes WAN links in user space instead"
        )
    return Shaping.SWITCH if can_shape_ports else Shaping.LINKS


def _plain(value: float) -> str:
    """A number without exponent or lost digits: 0.035, 100000000000."""
    return format(Decimal(repr(float(value))).normalize(), "f")


def link_rate_bps(link: WanLink, scale: float) -> float:
    """The emulated rate of a link: its capacity divided by the scale."""
    if not scale > 0:
        raise ShapingError(f"scale must be positive, got {scale!r}")
    return link.capacity_bps / scale


def switch_shape(link: WanLink, scale: float, loss: float = 0.0) -> str:
    """p4switch's (and the link emulator's) egress spec for a port on `link` (`--shape
    PORT:<this>`): delay, rate / scale, a random loss probability when `loss` > 0, and the
    link's jitter when it has some (frames keep their order)."""
    rate = round(link_rate_bps(link, scale))
    spec = f"delay={_plain(round(link.delay_s, 9))}s,rate={_plain(rate)}bit"
    spec += f",loss={_plain(loss)}" if loss > 0 else ""
    return spec + (f",jitter={_plain(round(link.jitter_s, 9))}s" if link.jitter_s > 0 else "")


def kernel_link_params(link: WanLink, scale: float, loss: float = 0.0) -> dict[str, float | str]:
    """Mininet `TCLink` parameters (both ends) for `link`: netem delay (and jitter when the link
    has some, and loss, in percent as Mininet takes it), HTB rate in Mbit/s."""
    mbit = link_rate_bps(link, scale) / 1e6
    if mbit > HTB_MAX_MBIT:
        raise ShapingError(
            f"link {link.a}-{link.b}: {mbit:g} Mbit/s after scaling is above the {HTB_MAX_MBIT} "
            f"Mbit/s Mininet's HTB links accept; use a scale of at least "
            f"{link.capacity_bps / (HTB_MAX_MBIT * 1e6):g} or --shaping links"
        )
    params: dict[str, float | str] = {"delay": f"{_plain(link.delay_s * 1e3)}ms", "bw": mbit}
    if link.jitter_s > 0:
        params["jitter"] = f"{_plain(round(link.jitter_s * 1e3, 6))}ms"
    if loss > 0:
        params["loss"] = loss * 100
    return params
