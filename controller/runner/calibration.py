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
    >>> from dataclasses import replace
    >>> leaders = replace(machine, leader_frames_per_cpu_s=15_000)  # 9,000 frames: 0.36 core
    >>> checked = judge(leaders, Need(2_100, 9_800, 0.01, "Tokyo", leader_fps=9_000))
    >>> print(checked.summary)  # doctest: +NORMALIZE_WHITESPACE
    calibration: timer p99 0.3 ms, CPU share 0.98, switch pipeline (python) 14,200 frames/s/core,
    leaders 15,000 frames/s/core; the plan needs at most 2,100 frames/s per switch, 9,800 in all
    and 9,000 through the leaders: 1.05 of 2 cores: tight (the switches and leaders need 54% of
    the machine)

Measured (`measure`; the probes are in controller/runner/probes.py): how late 1 ms sleeps
wake (p50, p99, max), the share of a core a busy loop gets, the cores other processes keep busy
meanwhile, innet.p4's frames per CPU second in this process, built as the switches build it
(their back end; native is called through ctypes) and programmed as a member of an all-to-all
round, fed each member's contributions to one chunk after another; and a leader's frames per CPU
second, an `Aggregator` paced at the busiest leader's rate against an edge on loopback
(controller/runner/leaderload.py), counted at `LEADER_UNDER_LOAD` of that: alone it wakes for
every frame, beside the run's other processes it finds several at a wake.

What the plan needs (`plan_need`, pure: controller/runner/need.py): the frames per second the
switches and the leaders must process in the busiest round of any (network, schedule, memory)
the run plays.

The verdict (`judge`, pure), one core's rate now being frames per CPU second x CPU share: "does
not fit" when the switches and the leaders together need more than `OVER_MARGIN` times the
cores free now (the
machine's, fewer where another job holds the CPU: a busy loop's share shows it on the check's
own core, /proc/stat's count of other processes' CPU time on the rest), or one switch more than
one core; "tight" when they need more than `TIGHT_SHARE` of either (the
switches' figure leaves out the kernel's work of moving their frames, about as much again on
this machine: a plan the check calls tight may keep the CPU busy), or timer lateness p99 exceeds
the smallest planned timing headroom of any round (slot conflicts likely); else "fits". A round
whose rate is bound by its memory has no headroom by construction (the planner fills the pool):
it does not enter the check, which would otherwise call every such plan tight; its rounds are
judged after the fact (the `jitter` and `timing` flags), and the edges' bounces absorb what
timing noise costs them (docs/protocol.md, "Bounces").
"""

from __future__ import annotations

import argparse
import itertools
import json
import logging
import math
import sys
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from controller.p4rt.schema import Schema
from controller.rounds import to_updates
from controller.runner.bmv2rate import bmv2_rate
from controller.runner.emulation import Emulation, resolve
from controller.runner.exceptions import ExperimentError
from controller.runner.leaderload import leader_rate
from controller.runner.member import ROUND_NUMBER, member_changes
from controller.runner.need import Need, plan_need
from controller.runner.probes import cores, cpu_seconds, cpu_share, timer_lateness
from controller.runner.scenario import load_scenario
from innet.exceptions import InnetError, InputError, one_line
from innet.jsontypes import JSONObject
from innet.packetformat import PacketFormat
from innet.paths import INNET_P4
from innet.vocabulary import Backend, P4Target
from topo import siteplan as site
from topo.local_switch import LocalSwitch, udp_frame
from workers.packets import Flag, InnetPacket, PacketType

log = logging.getLogger(__name__)

PIPELINE_SPAN_S = 0.1  # frames through innet.p4 for that long, ...
BMV2_SPAN_S = 0.5  # ... on BMv2 (a process of its own, some 40 times slower) that long, ...
REPEATS = 3  # ... that many times, and a leader's frames as often: the best of them counts
TIGHT_SHARE = 0.5  # a plan needing more than this share of the machine's frame rate is tight
# ... and one needing more than this many times the cores free does not fit: the estimate varies
# by about a fifth from run to run here, and a plan near the free cores may well run (the demo
# beside a busy loop, estimated at 0.73-1.02 of the one core left, ran 47 of 48 rounds on time)
OVER_MARGIN = 1.25
# A leader measured alone wakes for every frame; beside the run's other processes it finds
# several at a wake: nine leaders at 1 GB, scale 1000, took 37.5 us a frame in the run, one
# alone at the same rate 60-70 us (the best of three; controller/runner/leaderload.py)
LEADER_UNDER_LOAD = 0.6
# Another job holds the CPU below this share (the timer check misses it: a woken sleeper runs
# first); then rounds with less headroom than BUSY_HEADROOM_S are at risk (docs/experiment.md)
BUSY_SHARE, BUSY_HEADROOM_S = 0.9, 0.05
MODES = ("refuse", "warn", "off")  # innet run --calibration
FITS, TIGHT, DOES_NOT_FIT = "fits", "tight", "does not fit"
CALIBRATION_FILE = "calibration.json"
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
    leader_frames_per_cpu_s: float = math.inf  # a paced leader's, sent and received (inf: none)
    others_cores: float = 0.0  # cores other processes kept busy while the check ran

    @property
    def free_cores(self) -> float:
        """The cores a run may have now: fewer where another job holds the CPU. A busy loop
        shows it on its own core (`cpu_share`), /proc/stat on the others (`others_cores`)."""
        return min(self.cores * min(1.0, self.cpu_share), max(0.0, self.cores - self.others_cores))

    @property
    def core_fps(self) -> float:
        """Frames per second one core processes now: a switch's ceiling."""
        return self.frames_per_cpu_s * min(1.0, self.cpu_share)

    @property
    def machine_fps(self) -> float:
        """Frames per second every core together processes now: all switches' ceiling."""
        return self.core_fps * self.cores


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
        leaders, through, on = "", "", f" on {cores}"
        if n.leader_fps and math.isfinite(m.leader_frames_per_cpu_s):
            leaders = f", leaders {m.leader_frames_per_cpu_s:,.0f} frames/s/core"
            through = f" and {n.leader_fps:,.0f} through the leaders"
            busy = m.free_cores < 0.95 * m.cores  # another job holds the CPU: say what is left
            free = f"{m.free_cores:.2f} free of {cores}" if busy else cores
            on = f": {cores_needed(m, n):.2f} of {free}"
        others = f", other work {m.others_cores:.2f} cores" if m.others_cores >= 0.05 else ""
        line = (
            f"calibration: timer p99 {_ms(m.timer_p99_s)} ms, CPU share {m.cpu_share:.2f}{others}, "
            f"switch pipeline ({m.backend}) {m.frames_per_cpu_s:,.0f} frames/s/core{leaders}; "
            f"the plan needs at most {n.switch_fps:,.0f} frames/s per switch, "
            f"{n.total_fps:,.0f} in all{through}{on}: {self.verdict}"
        )
        return f"{line} ({'; '.join(self.reasons)})" if self.reasons else line

    def to_json(self, mode: str) -> JSONObject:
        """calibration.json: the figures, the verdict, its reasons and the mode it ran in."""
        m = self.machine
        need = {k: None if v == math.inf else v for k, v in asdict(self.need).items()}
        machine = {k: None if v == math.inf else v for k, v in asdict(m).items()}
        machine.update(core_fps=m.core_fps, machine_fps=m.machine_fps)
        scale = fitting_scale(m, self.need)
        return {
            "mode": mode,
            "verdict": self.verdict,
            "summary": self.summary,
            "reasons": list(self.reasons),
            "cores_needed": cores_needed(m, self.need),
            "fits_from_scale": scale if 0 < scale < math.inf else None,
            "machine": machine,
            "need": need,
            "thresholds": {"tight_share": TIGHT_SHARE},
        }


# --- the verdict (pure) ------------------------------------------------------------------------


def cores_needed(machine: Machine, need: Need) -> float:
    """The cores the switches' pipelines and the leaders need at the busiest round, at full
    speed (a core's CPU seconds per second)."""
    return (
        need.total_fps / machine.frames_per_cpu_s
        + LEADER_UNDER_LOAD * need.leader_fps / machine.leader_frames_per_cpu_s
    )


def fitting_scale(machine: Machine, need: Need) -> float:
    """The least scale (2 significant digits, up) at which the plan needs at most TIGHT_SHARE of
    a core per switch and of the cores free now (every rate falls as 1 / scale); inf: none."""
    if need.scale <= 0:
        return 0.0
    if machine.free_cores <= 0 or machine.core_fps <= 0:
        return math.inf
    factor = max(
        need.switch_fps / machine.core_fps, cores_needed(machine, need) / machine.free_cores
    )
    wanted = need.scale * factor / TIGHT_SHARE
    step = 10.0 ** max(0, math.floor(math.log10(wanted)) - 1) if wanted > 0 else 1.0
    return math.ceil(wanted / step - 1e-9) * step


def judge(machine: Machine, need: Need) -> Calibration:
    """The verdict on `need` for `machine`, with a reason for each limit it meets."""
    core = machine.core_fps
    have, want = machine.free_cores, cores_needed(machine, need)
    with_leaders = need.leader_fps > 0 and math.isfinite(machine.leader_frames_per_cpu_s)
    over: list[str] = []
    if need.switch_fps > core:
        over.append(
            f"one switch ({need.busiest}) needs {need.switch_fps:,.0f} frames/s, more "
            f"than one core's {core:,.0f}"
        )
    if want > OVER_MARGIN * have:
        leaders = f" and the leaders {need.leader_fps:,.0f} ({want:.2f} cores)"
        over.append(
            f"the switches need {need.total_fps:,.0f} frames/s in all"
            f"{leaders if with_leaders else ''}, more than the {have:.2f} of "
            f"{machine.cores} cores free now (CPU share {machine.cpu_share:.2f}, other work "
            f"{machine.others_cores:.2f} cores)"
        )
    near: list[str] = []
    if not over and need.switch_fps > TIGHT_SHARE * core:
        near.append(f"one switch ({need.busiest}) needs {need.switch_fps / core:.0%} of a core")
    if not over and want > TIGHT_SHARE * have:
        who = "the switches and leaders" if with_leaders else "the switches"
        near.append(f"{who} need {want / have:.0%} of the machine")
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
    scale = fitting_scale(machine, need)
    if over and scale > need.scale:
        where = f"from scale {scale:,.0f} up" if math.isfinite(scale) else "at no scale"
        over.append(f"the plan would fit {where} (scale {need.scale:,.0f} now)")
    return Calibration(machine, need, verdict, (*over, *near))


def enforce(calibration: Calibration, mode: str) -> str | None:
    """What `mode` does with the verdict: refuse raises CalibrationRefused for a plan that does
    not fit; otherwise a warning for any verdict but "fits" (None when it fits)."""
    check_mode(mode)
    if calibration.verdict == FITS or mode == "off":
        return None
    if mode == "refuse" and calibration.verdict == DOES_NOT_FIT:
        scale = fitting_scale(calibration.machine, calibration.need)
        at_least = f" to at least {scale:,.0f}" if math.isfinite(scale) and scale > 0 else ""
        raise CalibrationRefused(
            f"{calibration.summary}; nothing was started: raise the scenario's scale{at_least} "
            "(fewer frames per second), free the CPU, or run with --calibration warn to run "
            "anyway"
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


# --- what the machine gives (impure) -----------------------------------------------------------


def member_switch(
    em: Emulation, island: int = 0, backend: Backend | None = None, like: LocalSwitch | None = None
) -> LocalSwitch:
    """innet.p4 compiled as the run's switches are (first memory point's pool, their back end),
    with the entries the controller installs at `island`'s edge for an all-to-all round; a
    fresh copy of `like` (the same program, not compiled again) when given."""
    defines = site.program_defines(em.packet_format, em.points[0].pool.slots_per_bank)
    switch = like.fresh() if like is not None else LocalSwitch(INNET_P4, defines, backend)
    schema = Schema(switch.p4info)
    for changes in member_changes(em, island):
        switch.write(to_updates(schema, changes))
    return switch


def contribution_frame(packet: InnetPacket, src: int, dst: int) -> bytes:
    """The frame of island `src`'s leader carrying `packet` to island `dst`'s edge."""
    leader = (site.host_ip(src, site.LEADER_HOST), site.host_mac(src, site.LEADER_HOST))
    edge = (site.gateway_ip(dst), site.gateway_mac(dst))
    return udp_frame(packet.encode(), leader, edge, PacketFormat.UDP_PORT)


def chunk_frames(em: Emulation, chunk: int, island: int = 0) -> list[tuple[int, bytes]]:
    """(ingress port, frame) of every contribution to `chunk` at `island`'s edge in the
    all-to-all round: the own WAN|REMOTE copy, the others' from the ports their streams enter
    on, then the own LOCAL copy, which completes the slot and sends the sum to the hosts."""
    wan, hosts = em.scenario.wan, em.scenario.hosts
    packet_format = em.packet_format
    values = tuple(range(chunk % 97, chunk % 97 + packet_format.lanes))

    def packet(src: int, flags: Flag) -> InnetPacket:
        kind = PacketType.CONTRIBUTION
        return InnetPacket.of(
            kind, flags, site.JOB, ROUND_NUMBER, 0, src, chunk, 0, values, packet_format
        )

    remote = Flag.WAN | Flag.REMOTE
    frames = [(1, contribution_frame(packet(island, remote), island, island))]
    for src in (u for u in range(wan.n) if u != island):
        port = site.wan_port(wan, island, wan.path(src, island)[-2], hosts)
        frames.append((port, contribution_frame(packet(src, remote), src, src)))
    frames.append((1, contribution_frame(packet(island, Flag.LOCAL), island, island)))
    return frames


def pipeline_rate(
    em: Emulation,
    span_s: float = PIPELINE_SPAN_S,
    backend: Backend | None = None,
    like: LocalSwitch | None = None,
) -> tuple[float, str]:
    """Frames per CPU second through innet.p4 on p4switch's pipeline, in this thread, and the
    back end that ran it (native: called through ctypes, docs/experiment.md); on a fresh
    copy of `like` when given."""
    pipe = member_switch(em, backend=backend, like=like)
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


def measure(
    em: Emulation,
    backend: Backend | None = None,
    leader_fps: float = 0.0,
    target: P4Target = P4Target.P4SWITCH,
) -> Machine:
    """Timer lateness, CPU share and innet.p4's frame rate now, on the switches' back end (or
    on BMv2, for `target` "bmv2": controller/runner/bmv2rate.py), a leader's handling
    `leader_fps` frames a second (none measured for 0), and the cores other work kept busy
    meanwhile."""
    wall, (everyone, own) = time.monotonic(), cpu_seconds()
    late = timer_lateness()
    share = cpu_share()
    # the best of a few short runs: this machine's figure when nothing else got in the way
    # (the CPU share says how much gets in the way now)
    if target == P4Target.BMV2:
        rate, ran_on = bmv2_rate(em, lambda c: chunk_frames(em, c), BMV2_SPAN_S, REPEATS), "bmv2"
    else:
        like = member_switch(em, backend=backend)  # innet.p4 compiled once: a fresh copy each
        rate, ran_on = max(pipeline_rate(em, backend=backend, like=like) for _ in range(REPEATS))
    leader, span = math.inf, PIPELINE_SPAN_S
    if leader_fps > 0:  # half of it sent (the other half the sums), for a short while
        leader = max(leader_rate(leader_fps / 2, em.packet_format, span) for _ in range(REPEATS))
    p50, p99, top = (float(x) for x in np.percentile(late or [0.0], [50, 99, 100]))
    everyone_after, own_after = cpu_seconds()
    others = max(0.0, (everyone_after - everyone) - (own_after - own)) / (time.monotonic() - wall)
    return Machine(p50, p99, top, share, rate, cores(), ran_on, leader, others)


def calibrate(
    em: Emulation, backend: Backend | None = None, target: P4Target = P4Target.P4SWITCH
) -> Calibration:
    """The machine check of a run of `em` on `target` (about a second on p4switch, measured on
    the switches' back end; a few on BMv2)."""
    need = plan_need(em)
    return judge(measure(em, backend, need.leader_peak_fps, target), need)


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
    parser.add_argument(
        "--target", type=P4Target.argument, choices=tuple(P4Target), default=P4Target.P4SWITCH
    )
    args = parser.parse_args(argv)
    try:
        em = resolve(load_scenario(args.scenario))
        calibration = calibrate(em, target=args.target)
    except InnetError as err:
        print(f"calibration: error: {one_line(err)}", file=sys.stderr)
        return err.exit_status
    print(calibration.summary)
    print(json.dumps(calibration.to_json("report"), indent=2, allow_nan=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
