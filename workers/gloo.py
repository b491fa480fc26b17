"""The `gloo` baseline: each island's leader is a `torch.distributed` rank (backend gloo, TCP
through the emulated WAN) and averages its group's float32 proposals with `all_reduce`.

It measures what NCCL/gloo users run today; it is not a model of it. Island u is rank u, the
rendezvous is island 0's leader on TCP `GLOO_PORT` (`GlooWorld.for_island`), and every distinct
group of the schedule gets one process group, made in the same (sorted) order on every rank
when the world opens. The sum is float32 in gloo's ring order, so results are compared with
innet's exact modes within float tolerance, never bit for bit (docs/gloo.md).

TCP at emulation scale. The emulation divides bandwidth and the update by the scale and keeps
latency, but TCP's initial window (10 segments of 1448 B) and its doubling per round trip are
not scaled: at scale s the emulated WAN behaves as the full-scale one would with an initial
window s times larger, so slow start takes log2(s) round trips fewer. `tcp_fidelity` says when
that makes round times unrepresentative, `faithful_scale` the largest scale at which it does
not (docs/gloo.md derives both):

    >>> tcp_fidelity(1, 10e9, 0.2, 1e9)
    []
    >>> [w.split(":")[0] for w in tcp_fidelity(100_000, 10e9, 0.2, 1e9)]
    ['scale 100000', 'scale 100000', 'scale 100000']
    >>> nine_cities = [ms / 1000 for ms in range(10, 301)]   # RTTs 10-300 ms
    >>> round(faithful_scale(10e9, nine_cities, 1e9), 2)     # 1 GB over 10 Gb/s, within 10%
    3.06
"""

from __future__ import annotations

import contextlib
import fcntl
import logging
import math
import os
import socket
import struct
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from datetime import timedelta
from types import TracebackType

import numpy as np
import torch
from torch import distributed as dist

from innet.exceptions import InputError
from innet.units import format_rate, format_size
from topo.siteplan import GLOO_PORT, LEADER_HOST, host_ip
from workers.exceptions import AggregationError

log = logging.getLogger(__name__)

IFNAME_VARIABLE = "GLOO_SOCKET_IFNAME"  # the interface gloo binds its sockets to
_SIOCGIFADDR = 0x8915  # ioctl: an interface's (primary) IPv4 address
MSS = 1448  # bytes of payload in a full segment (1500 B MTU, timestamps on)
INITIAL_CWND = 10  # segments (RFC 6928; Linux's default)


class GlooError(AggregationError):
    """The gloo mode cannot produce the group's mean (and says why)."""


class GlooConfigError(GlooError, InputError, ValueError):
    """Ranks, groups, addresses or a scale that the gloo mode cannot use."""


class GlooUnknownGroup(GlooConfigError):
    """An all_reduce over a group that was not set up when the world opened, or without us."""


class GlooRendezvousError(GlooError):
    """The world could not form: the rendezvous (or a group's set-up) failed or timed out."""


class GlooPeerLost(GlooError):
    """A collective failed: a member's process or its link went away (or timed out)."""


def gloo_available() -> str | None:
    """None if torch.distributed with the gloo backend is usable here, else what is missing."""
    if not dist.is_available():
        return f"torch {torch.__version__} is built without torch.distributed"
    if not dist.is_gloo_available():
        return f"torch {torch.__version__}'s torch.distributed has no gloo backend"
    if not hasattr(socket, "if_nameindex"):
        return "socket.if_nameindex() is missing: the gloo mode needs Linux"
    return None


def interface_of(ip: str) -> str:
    """The name of the interface whose (primary) IPv4 address is `ip`: the one gloo binds to
    when GLOO_SOCKET_IFNAME names it."""
    try:
        wanted = socket.inet_pton(socket.AF_INET, ip)
    except OSError:
        raise GlooConfigError(f"{ip!r} is not an IPv4 address") from None
    found = []
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        for _, name in socket.if_nameindex():
            request = struct.pack("16s24x", name.encode()[:15])
            try:
                reply = fcntl.ioctl(probe.fileno(), _SIOCGIFADDR, request)
            except OSError:  # no IPv4 address on this interface
                continue
            if reply[20:24] == wanted:
                return name
            found.append(f"{name} {socket.inet_ntoa(reply[20:24])}")
    raise GlooConfigError(
        f"no interface in this network namespace has the address {ip} (it has: "
        f"{', '.join(found) or 'none'}); run the rank in the namespace of the host that owns it"
    )


@contextlib.contextmanager
def _environment(name: str, value: str) -> Iterator[None]:
    """`name=value` in the environment while the block runs, the previous value after it."""
    before = os.environ.get(name)
    os.environ[name] = value
    try:
        yield
    finally:
        if before is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = before


def distinct_groups(groups: Sequence[Sequence[int]], world: int) -> tuple[tuple[int, ...], ...]:
    """The schedule's groups, each as sorted ranks, without repeats, in sorted order."""
    found = set()
    for group in groups:
        ranks = tuple(sorted(int(r) for r in group))
        if not ranks or len(set(ranks)) != len(ranks):
            raise GlooConfigError(f"group {tuple(group)}: a group is one or more distinct ranks")
        if ranks[0] < 0 or ranks[-1] >= world:
            raise GlooConfigError(f"group {tuple(group)}: ranks are 0..{world - 1} in this world")
        found.add(ranks)
    return tuple(sorted(found))


class GlooWorld:
    """This process's rank in a torch.distributed world (backend gloo), one process group per
    distinct group of two or more ranks; `allreduce_mean` averages over one of them.

    torch keeps one world per process, so a process holds one GlooWorld at a time. Opening is
    collective: every rank must open its GlooWorld with the same world and groups."""

    def __init__(
        self,
        rank: int,
        world: int,
        master: tuple[str, int],
        groups: Sequence[tuple[int, ...]],
        local_ip: str,
        timeout_s: float,
    ) -> None:
        if world < 1 or not 0 <= rank < world:
            raise GlooConfigError(
                f"rank {rank} is outside a world of {world} (ranks 0..{world - 1})"
            )
        if not 0 < master[1] < 65536 or not timeout_s > 0:
            raise GlooConfigError(
                f"master port {master[1]} must be 1..65535 and the timeout ({timeout_s} s) positive"
            )
        self.rank, self.world, self.master, self.timeout_s = rank, world, master, timeout_s
        self.groups = distinct_groups(groups, world)
        self.interface = interface_of(local_ip)
        if dist.is_initialized():
            raise GlooConfigError("this process already has a torch.distributed world: close it")
        self._handles: dict[tuple[int, ...], dist.ProcessGroup | None] = {}
        self._closed = False
        self._broken: str | None = None
        began = time.monotonic()
        with _environment(IFNAME_VARIABLE, self.interface):
            self._open()
        log.info(
            "rank %d of %d on %s (%s): %d groups set up in %.2f s",
            *(rank, world, self.interface, local_ip, len(self._handles)),
            time.monotonic() - began,
        )

    @classmethod
    def for_island(
        cls, island: int, islands: int, groups: Sequence[tuple[int, ...]], timeout_s: float
    ) -> GlooWorld:
        """Island `island`'s leader as rank `island`; the rendezvous at island 0's leader."""
        master = (host_ip(0, LEADER_HOST), GLOO_PORT)
        return cls(island, islands, master, groups, host_ip(island, LEADER_HOST), timeout_s)

    def _open(self) -> None:
        host, port = self.master
        timeout = timedelta(seconds=self.timeout_s)
        try:
            dist.init_process_group(
                "gloo",
                init_method=f"tcp://{host}:{port}",
                rank=self.rank,
                world_size=self.world,
                timeout=timeout,
            )
            for group in self.groups:  # new_group is collective: every rank makes every group
                if len(group) == 1:
                    continue
                handle = (
                    dist.group.WORLD
                    if len(group) == self.world
                    else dist.new_group(list(group), timeout=timeout, backend="gloo")
                )
                if self.rank in group:
                    self._handles[group] = handle
        except (RuntimeError, OSError) as err:  # torch's DistError is a RuntimeError
            self.close()
            raise GlooRendezvousError(
                f"rank {self.rank} of {self.world}: the gloo rendezvous at tcp://{host}:{port} "
                f"failed within {self.timeout_s:g} s: {_first_line(err)}; check that rank 0 "
                f"runs at {host}, that every rank reaches it, and that all {self.world} ranks "
                "start with the same world and groups"
            ) from err

    def allreduce_mean(self, members: tuple[int, ...], values: np.ndarray) -> np.ndarray:
        """The mean over `members` of every member's `values` (as float32): gloo's float32
        sum divided by k. A group of one (this rank alone) returns the values."""
        group = tuple(sorted(members))
        array = np.ascontiguousarray(values, dtype=np.float32)
        if group == (self.rank,):
            return array.copy()
        if self._closed or self._broken is not None:
            raise GlooError(f"rank {self.rank}: the world is {self._broken or 'closed'}")
        if group not in self._handles:
            why = "this rank is not in it" if group in self.groups else "it was not set up"
            raise GlooUnknownGroup(
                f"rank {self.rank}: no all_reduce over group {group}: {why} (the world was "
                f"opened with {len(self.groups)} groups); open it with every group of the "
                "schedule, on every rank"
            )
        tensor = torch.from_numpy(array.copy())
        try:
            dist.all_reduce(tensor, op=dist.ReduceOp.SUM, group=self._handles[group])
        except (RuntimeError, OSError) as err:
            self._broken = f"broken (an all_reduce over {group} failed)"
            raise GlooPeerLost(
                f"rank {self.rank}: the all_reduce over group {group} failed: "
                f"{_first_line(err)}; a member's process or its link is gone (or it did not "
                f"answer within {self.timeout_s:g} s); this world cannot be used again: close it"
            ) from err
        return tensor.div_(len(group)).numpy()

    def close(self) -> None:
        """Leave the world (destroy_process_group); a second call does nothing."""
        if self._closed:
            return
        self._closed = True
        self._handles.clear()
        if dist.is_initialized():
            dist.destroy_process_group()

    def __enter__(self) -> GlooWorld:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, err: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()


def _first_line(err: BaseException) -> str:
    """torch's messages go on with a C++ stack trace: their first line says what failed."""
    lines = [line for line in str(err).splitlines() if line.strip()]
    return " ".join(lines[0].split()).rstrip(".") if lines else type(err).__name__


# --- TCP at emulation scale -------------------------------------------------------------------


@dataclass(frozen=True)
class TcpTransfer:
    """One update over one TCP connection that starts from its initial window (a fluid model:
    no loss, the window doubles every round trip until it fills the path)."""

    seconds: float  # first byte sent to last byte received
    slow_start_rtts: int  # round trips spent before the window fills the path (or data ends)
    rate_bps: float  # what one connection can carry once its window is open
    window_limited: bool  # the socket's window, not the link, sets `rate_bps`


def tcp_transfer(
    update_bytes: float,
    bandwidth_bps: float,
    rtt_s: float,
    mss: int = MSS,
    initial_cwnd: int = INITIAL_CWND,
    max_window_bytes: float | None = None,
) -> TcpTransfer:
    """How long `update_bytes` take over a path of `bandwidth_bps` and `rtt_s`, slow start
    included; `max_window_bytes` caps the window (the socket buffers; None: tuned hosts)."""
    if min(update_bytes, bandwidth_bps, rtt_s, mss, initial_cwnd) <= 0:
        raise GlooConfigError("update, bandwidth, RTT, MSS and initial window must be positive")
    rate = bandwidth_bps / 8
    limited = max_window_bytes is not None and max_window_bytes / rtt_s < rate
    if max_window_bytes is not None:
        rate = min(rate, max_window_bytes / rtt_s)
    pipe = rate * rtt_s  # bytes in flight that keep the path busy
    window, sent, rtts = float(initial_cwnd * mss), 0.0, 0
    while window < pipe and update_bytes - sent > window:
        sent, window, rtts = sent + window, 2 * window, rtts + 1
    seconds = rtts * rtt_s + (update_bytes - sent) / rate + rtt_s / 2
    return TcpTransfer(seconds, rtts, rate * 8, limited)


def tcp_fidelity(
    scale: float,
    bandwidth_bps: float,
    rtt_s: float,
    update_bytes: float,
    mss: int = MSS,
    initial_cwnd: int = INITIAL_CWND,
    *,
    max_window_bytes: float | None = None,
    tolerance: float = 0.1,
) -> list[str]:
    """Why TCP at emulation `scale` (bandwidth and update divided by it, RTT kept) does not
    behave as at full scale; empty when it does, to within `tolerance` of one connection's
    transfer time (docs/gloo.md derives the conditions)."""
    if not scale >= 1 or not tolerance > 0:
        raise GlooConfigError(f"scale {scale} must be at least 1 and tolerance {tolerance} > 0")
    label = f"scale {scale:g}"
    window = initial_cwnd * mss
    bdp, update = bandwidth_bps * rtt_s / 8, update_bytes
    full = tcp_transfer(update, bandwidth_bps, rtt_s, mss, initial_cwnd, max_window_bytes)
    scaled = tcp_transfer(
        update / scale, bandwidth_bps / scale, rtt_s, mss, initial_cwnd, max_window_bytes
    )
    ms = f"{rtt_s * 1000:g} ms"
    warnings = []
    if bdp >= window > bdp / scale:
        warnings.append(
            f"{label}: the bandwidth-delay product ({format_size(bdp / scale)} at "
            f"{format_rate(bandwidth_bps / scale)} and {ms}) is below one initial window "
            f"({initial_cwnd} x {mss} B = {format_size(window)}): TCP fills the link from its "
            f"first flight, where at full scale ({format_size(bdp)}) it needs "
            f"{full.slow_start_rtts} round trips of slow start; needs scale <= "
            f"{bdp / window:.4g}"
        )
    if update >= window > update / scale:
        warnings.append(
            f"{label}: the update ({format_size(update / scale)}) fits in one initial window "
            f"({format_size(window)}) and leaves in one flight, where at full scale "
            f"({format_size(update)}) it is {update / window:.3g} windows; needs scale <= "
            f"{update / window:.4g}"
        )
    error = scaled.seconds / full.seconds - 1
    if abs(error) > tolerance:
        cap = (
            f", its window ({format_size(max_window_bytes or 0)}) capping it at "
            f"{format_rate(full.rate_bps)}"
            if full.window_limited
            else ""
        )
        warnings.append(
            f"{label}: one connection moves the update in {scaled.seconds:.3g} s "
            f"({scaled.slow_start_rtts} round trips of slow start) where the full-scale WAN "
            f"takes {full.seconds:.3g} s ({full.slow_start_rtts} round trips of {ms}{cap}): "
            f"{error:+.0%}, beyond {tolerance:.0%}; each doubling of the scale takes one round "
            f"trip off slow start, so round times at this scale are not TCP's"
        )
    return warnings


def faithful_scale(
    bandwidth_bps: float,
    rtts_s: Sequence[float],
    update_bytes: float,
    mss: int = MSS,
    initial_cwnd: int = INITIAL_CWND,
    *,
    max_window_bytes: float | None = None,
    tolerance: float = 0.1,
) -> float:
    """The largest scale at which `tcp_fidelity` warns for none of `rtts_s` (to 1 part in
    10^4); every condition it checks only gets worse as the scale grows."""

    def faithful(rtt: float) -> Callable[[float], bool]:
        def at(scale: float) -> bool:
            return not tcp_fidelity(
                *(scale, bandwidth_bps, rtt, update_bytes, mss, initial_cwnd),
                max_window_bytes=max_window_bytes,
                tolerance=tolerance,
            )

        return at

    return min((_largest(faithful(rtt), 1.0, 1e12) for rtt in rtts_s), default=math.inf)


def _largest(ok: Callable[[float], bool], low: float, high: float) -> float:
    """The largest x in [low, high] with ok(x), for ok true at `low` and monotone (bisection
    on a log scale)."""
    if ok(high):
        return high
    while high / low > 1 + 1e-4:
        middle = math.sqrt(low * high)
        low, high = (middle, high) if ok(middle) else (low, middle)
    return low
