"""A machine check before an experiment: does the plan fit this machine's CPU now?

`calibrate(emulation)` measures the machine (about a second) and judges the plan against it;
`enforce(calibration, mode)` refuses a plan that does not fit (CalibrationRefused) or warns:

    >>> machine = Machine(timer_p50_s=1e-4, timer_p99_s=3e-4, timer_max_s=2e-3,
    ...                   cpu_share=0.98, frames_per_cpu_s=14_200, cores=2, backend="python")
    >>> need = Need(switch_fps=2_100, total_fps=9_800, headroom_s=0.01, busiest="Tokyo")
    >>> print(judge(machine, need).summary)  # doctest: +NORMALIZE_WHITESPACE
    calibration: timer p99 0.3 ms, CPU share 0.98, switch pipeline (python) 14,200 frames/s/core;
    the plan needs at most 2,100 frames/s per switch, 9,800 in all on 2 cores: fits
    >>> judge(machine, Need(2_100, 20_000, 0.01, "Tokyo")).verdict  # over half of 2 cores
    'tight'

Measured (`measure`): how late `TIMER_SLEEP_S` sleeps wake over `TIMER_SPAN_S` (p50, p99, max),
the share of a core a busy loop gets, and innet.p4's frames per CPU second in this process,
built as the switches build it (their back end; native is called through ctypes) and programmed
as a member of an all-to-all round, fed each member's contributions to one chunk after another.

What the plan needs (`plan_need`, pure): the frames per second the switches must process in
the busiest round of any (network, schedule, memory) the run plays. A stream at the group's rate
is `Emulation.frame_rate_bps(rate) / FRAME_BITS` frames/s, counted once at each switch it enters:
its source's edge (an inna leader sends two copies, WAN|REMOTE and the just-in-time LOCAL one;
direct exchange k - 1 streams) and every switch on its multicast tree or unicast path.

The verdict (`judge`, pure), one core's rate now being frames per CPU second x CPU share: "does
not fit" when the switches together need more than the machine's cores, or one switch more than
one core; "tight" when they need more than `TIGHT_SHARE` of either, or timer lateness p99 exceeds
the smallest planned timing headroom of any round (slot conflicts likely); else "fits". A round
whose rate is bound by its memory has no headroom by construction (the planner fills the pool):
it does not enter the check, which would otherwise call every such plan tight; its rounds are
judged after the fact, by their slot conflicts (the `jitter` and `timing` flags).
"""

from __future__ import annotations

import argparse
import itertools
import json
import logging
import math
import os
import sys
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from controller.p4rt.schema import Schema
from controller.planner.collectives import direct, ring
from controller.planner.cost import GroupCost, RoundCost
from controller.planner.schedule import Round
from controller.round_entries import round_entries
from controller.rounds import Addressing, base_entries, install_changes, to_updates
from controller.runner.emulation import Emulation, resolve
from controller.runner.exceptions import ExperimentError
from controller.runner.relaunch import load_relaunching
from innet.exceptions import InnetError, InputError, one_line
from innet.jsontypes import JSONObject
from innet.paths import INNET_P4
from topo import siteplan as site
from topo.local_switch import LocalSwitch, udp_frame
from topo.wan import Wan
from workers.packets import Flag, InnetPacket, PacketType

log = logging.getLogger(__name__)

TIMER_SLEEP_S = 0.001  # one short sleep, as a paced sender's
TIMER_SPAN_S = 0.3  # sleeping that long in all
CPU_SPAN_S = 0.15  # the busy loop
PIPELINE_SPAN_S = 0.3  # frames through innet.p4 for that long
TIGHT_SHARE = 0.5  # a plan needing more than this share of the machine's frame rate is tight
# Another job holds the CPU below this share (the timer check misses it: a woken sleeper runs
# first); then rounds with less headroom than BUSY_HEADROOM_S are at risk (docs/experiment.md)
BUSY_SHARE, BUSY_HEADROOM_S = 0.9, 0.05
MODES = ("refuse", "warn", "off")  # innet run --calibration
FITS, TIGHT, DOES_NOT_FIT = "fits", "tight", "does not fit"
CALIBRATION_FILE = "calibration.json"
_ROUND_NUMBER = 1  # the round the pipeline check installs
_CHUNKS_PER_BATCH = 64


class CalibrationRefused(ExperimentError):
    """The plan does not fit this machine now; the run refused to start (nothing was built)."""


class CalibrationModeError(InputError, ValueError):
    """An unknown calibration mode."""


@dataclass(frozen=True, slots=True)
class Machine:
    """What this machine gives a run now."""

    timer_p50_s: float  # oversleep of a TIMER_SLEEP_S sleep
    timer_p99_s: float
    timer_max_s: float
    cpu_share: float  # CPU time over wall time in a busy loop (a busy machine gives < 1)
    frames_per_cpu_s: float  # innet.p4 on p4switch's pipeline, per second of CPU
    cores: int  # the cores this process may run on
    backend: str = "python"  # the back end that ran innet.p4 (the switches' own choice)

    @property
    def core_fps(self) -> float:
        """Frames per second one core processes now: a switch's ceiling."""
        return self.frames_per_cpu_s * min(1.0, self.cpu_share)

    @property
    def machine_fps(self) -> float:
        """Frames per second every core together processes now: all switches' ceiling."""
        return self.core_fps * self.cores


@dataclass(frozen=True, slots=True)
class Need:
    """What the plan asks of the switches at its busiest."""

    switch_fps: float  # the busiest switch of any round
    total_fps: float  # all switches together, in the busiest round
    headroom_s: float  # the smallest planned timing headroom of any round (inf: none planned)
    busiest: str  # where the busiest switch is: "inna all-to-all at 1.6 GB, round 0, Tokyo"
    tightest: str = ""  # the round with the least headroom: "inna cliques-3 at 25.6 MB, round 1"


@dataclass(frozen=True, slots=True)
class Calibration:
    """The machine check of a run: the figures, the verdict and why."""

    machine: Machine
    need: Need
    verdict: str  # FITS, TIGHT or DOES_NOT_FIT
    reasons: tuple[str, ...]  # empty when it fits

    @property
    def summary(self) -> str:
        """One line: the figures and the verdict (with its reasons)."""
        m, n = self.machine, self.need
        cores = f"{m.cores} core{'' if m.cores == 1 else 's'}"
        line = (
            f"calibration: timer p99 {_ms(m.timer_p99_s)} ms, CPU share {m.cpu_share:.2f}, "
            f"switch pipeline ({m.backend}) {m.frames_per_cpu_s:,.0f} frames/s/core; the plan "
            "needs at most "
            f"{n.switch_fps:,.0f} frames/s per switch, {n.total_fps:,.0f} in all on {cores}: "
            f"{self.verdict}"
        )
        return f"{line} ({'; '.join(self.reasons)})" if self.reasons else line

    def to_json(self, mode: str) -> JSONObject:
        """calibration.json: the figures, the verdict, its reasons and the mode it ran in."""
        m = self.machine
        need = {k: None if v == math.inf else v for k, v in asdict(self.need).items()}
        machine = {**asdict(m), "core_fps": m.core_fps, "machine_fps": m.machine_fps}
        return {"mode": mode, "verdict": self.verdict, "summary": self.summary,
                "reasons": list(self.reasons),
                "machine": machine, "need": need,
                "thresholds": {"tight_share": TIGHT_SHARE}}  # fmt: skip


# --- the verdict (pure) ------------------------------------------------------------------------


def judge(machine: Machine, need: Need) -> Calibration:
    """The verdict on `need` for `machine`, with a reason for each limit it meets."""
    core, whole = machine.core_fps, machine.machine_fps
    over: list[str] = []
    if need.switch_fps > core:
        over.append(
            f"one switch ({need.busiest}) needs {need.switch_fps:,.0f} frames/s, more "
            f"than one core's {core:,.0f}"
        )
    if need.total_fps > whole:
        over.append(
            f"the switches need {need.total_fps:,.0f} frames/s in all, more than the "
            f"{whole:,.0f} of {machine.cores} cores at CPU share {machine.cpu_share:.2f}"
        )
    near: list[str] = []
    if not over and need.switch_fps > TIGHT_SHARE * core:
        near.append(f"one switch ({need.busiest}) needs {need.switch_fps / core:.0%} of a core")
    if not over and need.total_fps > TIGHT_SHARE * whole:
        near.append(f"the switches need {need.total_fps / whole:.0%} of the machine")
    where = f" ({need.tightest})" if need.tightest else ""
    if machine.timer_p99_s > need.headroom_s:
        near.append(
            f"timer lateness p99 {_ms(machine.timer_p99_s)} ms is above the "
            f"planned headroom of {_ms(need.headroom_s)} ms{where}: slot conflicts likely"
        )
    if machine.cpu_share < BUSY_SHARE and need.headroom_s < BUSY_HEADROOM_S:
        near.append(
            f"another job takes {1 - machine.cpu_share:.0%} of a core, and the plan leaves "
            f"{_ms(need.headroom_s)} ms of headroom{where}: slot conflicts likely"
        )
    verdict = DOES_NOT_FIT if over else TIGHT if near else FITS
    return Calibration(machine, need, verdict, (*over, *near))


def enforce(calibration: Calibration, mode: str) -> str | None:
    """What `mode` does with the verdict: refuse raises CalibrationRefused for a plan that does
    not fit; otherwise a warning for any verdict but "fits" (None when it fits)."""
    check_mode(mode)
    if calibration.verdict == FITS or mode == "off":
        return None
    if mode == "refuse" and calibration.verdict == DOES_NOT_FIT:
        raise CalibrationRefused(
            f"{calibration.summary}; nothing was started: raise the scenario's scale (fewer "
            "frames per second), free the CPU, or run with --calibration warn to run anyway"
        )
    verdict = "is tight on" if calibration.verdict == TIGHT else "does not fit"
    return (
        f"calibration: the plan {verdict} this machine now; its rounds may measure the "
        f"CPU, not the network ({'; '.join(calibration.reasons)})"
    )


def _ms(seconds: float) -> str:
    ms = seconds * 1e3
    return f"{ms:.2g}" if ms < 10 else f"{ms:,.0f}"


def check_mode(mode: str) -> None:
    """CalibrationModeError unless `mode` is one of MODES."""
    if mode not in MODES:
        raise CalibrationModeError(f"calibration mode {mode!r}: give one of {', '.join(MODES)}")


# --- what the plan needs (pure) ----------------------------------------------------------------


def group_streams(wan: Wan, group: GroupCost) -> tuple[Counter[int], Counter[tuple[int, int]]]:
    """The streams of one group's exchange at the group's rate: how many each member sends into
    its edge, and how many cross each directed WAN link (u, v), entering v's switch."""
    members = tuple(group.members)
    sent: Counter[int] = Counter()
    links: Counter[tuple[int, int]] = Counter()
    if len(members) < 2 or group.collective == "local":
        return sent, links
    if group.collective == "ring":
        links.update(ring(wan, members).loads)
        sent.update(members)
    elif group.collective == "direct":
        links.update(direct(wan, members).loads)
        sent.update({m: len(members) - 1 for m in members})
    else:  # inna, multicast: one stream per member down its multicast tree
        for src in members:
            links.update(wan.tree(src, [d for d in members if d != src]))
        copies = 2 if group.collective == "inna" else 1  # inna: WAN|REMOTE, then LOCAL
        sent.update({m: copies for m in members})
    return sent, links


def round_rates(em: Emulation, wan: Wan, cost: RoundCost) -> dict[int, float]:
    """Frames per second entering each city's switch in this round."""
    rates: dict[int, float] = dict.fromkeys(range(wan.n), 0.0)
    for group in cost.groups:
        if not math.isfinite(group.rate_bps):
            continue  # a group of one: nothing on the wire
        fps = em.frame_rate_bps(group.rate_bps) / site.FRAME_BITS
        sent, links = group_streams(wan, group)
        for m, streams in sent.items():
            rates[m] += streams * fps
        for (_, v), streams in links.items():
            rates[v] += streams * fps
    return rates


def plan_need(em: Emulation) -> Need:
    """The busiest switch and the busiest round of every play at every memory point."""
    wan = em.scenario.wan
    switch, total, headroom, busiest, tightest = 0.0, 0.0, math.inf, "no round", ""
    for point in em.points:
        for play in point.plays:
            for r, cost in enumerate(play.plan.costs):
                rates = round_rates(em, wan, cost)
                city = max(rates, key=rates.__getitem__)
                if rates[city] > switch:
                    switch = rates[city]
                    busiest = f"{play.label} at {point.label}, round {r}, {wan.names[city]}"
                total = max(total, sum(rates.values()))
                # RoundCost.headroom_s is the planner's; a plan without it claims none
                least = float(getattr(cost, "headroom_s", math.inf))
                if 0 < least < headroom:
                    headroom, tightest = least, f"{play.label} at {point.label}, round {r}"
    return Need(switch, total, headroom, busiest, tightest)


# --- what the machine gives (impure) -----------------------------------------------------------


def timer_lateness(span_s: float = TIMER_SPAN_S, sleep_s: float = TIMER_SLEEP_S) -> list[float]:
    """How late each of many `sleep_s` sleeps woke, in seconds, over `span_s`."""
    late: list[float] = []
    end = time.perf_counter() + span_s
    while (start := time.perf_counter()) < end:
        time.sleep(sleep_s)
        late.append(max(0.0, time.perf_counter() - start - sleep_s))
    return late


def cpu_share(span_s: float = CPU_SPAN_S) -> float:
    """This thread's CPU time over wall time in a busy loop of `span_s`."""
    wall, cpu = time.perf_counter(), time.thread_time()
    while time.perf_counter() - wall < span_s:
        pass
    return (time.thread_time() - cpu) / (time.perf_counter() - wall)


def member_switch(em: Emulation, island: int = 0, backend: str | None = None) -> LocalSwitch:
    """innet.p4 compiled as the run's switches are (first memory point's pool, their back end),
    with the entries the controller installs at `island`'s edge for an all-to-all round."""
    sc = em.scenario
    switch = LocalSwitch(INNET_P4, site.program_defines(em.points[0].pool.slots_per_bank), backend)
    schema = Schema(switch.p4info)
    base = base_entries(sc.wan, Addressing.default(sc.wan.n, sc.hosts))
    everyone = Round.of([range(sc.wan.n)])
    rnd = round_entries(sc.wan, everyone, job=site.JOB, number=_ROUND_NUMBER,
                        hosts_per_island=sc.hosts)  # fmt: skip
    for changes in (install_changes(base), install_changes(rnd, present=[base])):
        switch.write(to_updates(schema, changes[island]))
    return switch


def contribution_frame(packet: InnetPacket, src: int, dst: int) -> bytes:
    """The frame of island `src`'s leader carrying `packet` to island `dst`'s edge."""
    leader = (site.host_ip(src, site.LEADER_HOST), site.host_mac(src, site.LEADER_HOST))
    edge = (site.gateway_ip(dst), site.gateway_mac(dst))
    return udp_frame(packet.encode(), leader, edge, site.INNET_UDP_PORT)


def chunk_frames(em: Emulation, chunk: int, island: int = 0) -> list[tuple[int, bytes]]:
    """(ingress port, frame) of every contribution to `chunk` at `island`'s edge in the
    all-to-all round: the own WAN|REMOTE copy, the others' from the ports their streams enter
    on, then the own LOCAL copy, which completes the slot and sends the sum to the hosts."""
    wan, hosts = em.scenario.wan, em.scenario.hosts
    values = tuple(range(chunk % 97, chunk % 97 + site.LANES))

    def packet(src: int, flags: Flag) -> InnetPacket:
        kind = PacketType.CONTRIBUTION
        return InnetPacket.of(kind, flags, site.JOB, _ROUND_NUMBER, 0, src, chunk, 0, values)

    remote = Flag.WAN | Flag.REMOTE
    frames = [(1, contribution_frame(packet(island, remote), island, island))]
    for src in (u for u in range(wan.n) if u != island):
        port = site.wan_port(wan, island, wan.path(src, island)[-2], hosts)
        frames.append((port, contribution_frame(packet(src, remote), src, src)))
    frames.append((1, contribution_frame(packet(island, Flag.LOCAL), island, island)))
    return frames


def pipeline_rate(em: Emulation, span_s: float = PIPELINE_SPAN_S,
                  backend: str | None = None) -> tuple[float, str]:  # fmt: skip
    """Frames per CPU second through innet.p4 on p4switch's pipeline, in this thread, and the
    back end that ran it (native: called through ctypes, docs/experiment.md)."""
    pipe = member_switch(em, backend=backend)
    frames, cpu, delivered = 0, 0.0, 0
    wall = time.perf_counter()
    for batch in itertools.count():
        chunks = range(batch * _CHUNKS_PER_BATCH, (batch + 1) * _CHUNKS_PER_BATCH)
        work = [f for c in chunks for f in chunk_frames(em, c)]
        start = time.thread_time()
        for port, frame in work:
            delivered += len(pipe.process(port, frame))
        cpu += time.thread_time() - start
        frames += len(work)
        if time.perf_counter() - wall >= span_s and cpu > 0:
            break
    if delivered == 0:
        raise ExperimentError(
            "calibration: innet.p4 forwarded none of the check's frames; "
            "the check's entries or frames do not match the program"
        )
    return frames / cpu, pipe.backend


def cores() -> int:
    """The cores this process may run on."""
    return len(os.sched_getaffinity(0))


def measure(em: Emulation, backend: str | None = None) -> Machine:
    """Timer lateness, CPU share and innet.p4's frame rate now, on the switches' back end."""
    late = timer_lateness()
    share = cpu_share()
    rate, ran_on = pipeline_rate(em, backend=backend)
    p50, p99, top = (float(x) for x in np.percentile(late or [0.0], [50, 99, 100]))
    return Machine(p50, p99, top, share, rate, cores(), ran_on)


def calibrate(em: Emulation, backend: str | None = None) -> Calibration:
    """The machine check of a run of `em` (about a second) on the switches' back end."""
    return judge(measure(em, backend), plan_need(em))


def write(calibration: Calibration, mode: str, folder: Path) -> Path:
    path = Path(folder) / CALIBRATION_FILE
    path.write_text(json.dumps(calibration.to_json(mode), indent=2, allow_nan=False) + "\n")
    return path


def main(argv: Sequence[str] | None = None) -> int:
    """`python -m controller.runner.calibration SCENARIO.yaml`: the check, its line and figures."""
    parser = argparse.ArgumentParser(
        prog="python -m controller.runner.calibration",
        description="The machine check innet run makes first.",
    )
    parser.add_argument("scenario", type=Path, help="scenario YAML")
    args = parser.parse_args(argv)
    try:
        calibration = calibrate(resolve(load_relaunching(args.scenario, argv is None)))
    except InnetError as err:
        print(f"calibration: error: {one_line(err)}", file=sys.stderr)
        return err.exit_status
    print(calibration.summary)
    print(json.dumps(calibration.to_json("report"), indent=2, allow_nan=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
