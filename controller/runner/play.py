"""One round of an experiment, played on a running testbed and recorded.

1. Install the round on every switch, all or none (`install_round`: heals a switch that died
   first, and tries again when one dies between the check and the install).
2. Every island runs its local phase (`Prepare`).
3. Every leader starts at one Unix time (`Go`) with its group, the group's rate, its send offset
   and its just-in-time lag; the runner waits for every leader's sum (the round's deadline).
4. The record: measured and predicted time, bytes per WAN link (the switches' port counters),
   drops and slot conflicts (innet.p4's counters), the leaders' retransmissions, loss and
   accuracy, and the worst processing lag of any switch or leader. Where that lag is a
   noticeable part of the round, the round is marked `cpu_bound`: its time is the CPU's, not
   the network's. Every reason a round does not measure the network is a flag
   (controller/runner/flags.py: timing, cpu_bound, loss, jitter).
"""

from __future__ import annotations

import dataclasses
import logging
from dataclasses import dataclass
from typing import Protocol

from controller.p4rt.exceptions import P4RuntimeError
from controller.planner.cost import RoundCost
from controller.planner.optimise import FamilyPlan
from controller.runner.counters import Snapshot, counted, snapshot
from controller.runner.emulation import Emulation, MemoryPoint
from controller.runner.exceptions import ExperimentError
from controller.runner.flags import RoundSeen, cpu_threshold_s, flag_round
from controller.runner.islands import LeaderEvents
from controller.runner.leaders import local_lag, send_policy
from controller.runner.records import RoundRecord
from controller.testbed import InstalledRound, Testbed
from innet.vocabulary import Collective, NetworkMode
from workers.protocol import Done, Failed, Go, Prepare, Prepared

log = logging.getLogger(__name__)

START_MARGIN_S = 0.25  # 'go' reaches every leader well before the common start time
PREPARE_TIMEOUT_S = 120.0
INSTALL_ATTEMPTS = 3


class Installs(Protocol):
    """What installing a round needs of a testbed."""

    def heal(self) -> list[str]: ...

    def advance(self) -> InstalledRound: ...


def install_round(testbed: Installs, r: int, attempts: int = INSTALL_ATTEMPTS) -> InstalledRound:
    """Heal the switches, then install the next round on all of them (all or none).

    A switch can die between the check and the install; the install is then refused with
    nothing installed anywhere, and the next attempt heals that switch first."""
    for attempt in range(1, attempts + 1):
        try:
            healed = testbed.heal()
            if healed:
                log.warning("round %d: reinstalled %s first", r, ", ".join(healed))
            return testbed.advance()
        except P4RuntimeError as err:
            if attempt == attempts:
                raise ExperimentError(
                    f"round {r}: not installed after {attempts} attempts: {err}"
                ) from err
            log.warning("round %d: install refused (%s); healing and trying again", r, err)
    raise AssertionError("unreachable")


@dataclass(frozen=True, slots=True)
class RoundContext:
    """Where a round is played: the emulation, its memory point and schedule, the testbed and
    the island processes, and when this schedule's run began."""

    emulation: Emulation
    point: MemoryPoint
    plan: FamilyPlan
    testbed: Testbed
    islands: LeaderEvents
    began: float  # on the islands' clock (Unix seconds)
    network: str = NetworkMode.INNA  # the scenario's network of this play
    clocks: str = ""  # why every round is flagged for its clocks ("": none is)

    def planned(self, r: int, wall_s: float, reason: str) -> RoundRecord:
        """The record of round r when it did not finish: what was planned, and why."""
        rnd = self.plan.schedule.round_at(r)
        rec = RoundRecord.failed(
            self.point.memory_bytes,
            self.point.pool.slots_per_bank,
            self.plan.family,
            r,
            self.testbed.names_of(rnd),
            self.cost(r).time_s,
            wall_s,
            reason,
        )
        return dataclasses.replace(rec, network=self.network)

    def cost(self, r: int) -> RoundCost:
        return self.plan.costs[r % len(self.plan.costs)]


def play_round(ctx: RoundContext, r: int) -> RoundRecord:
    """Install, local phase, the synchronised exchange; the round's record."""
    testbed, islands = ctx.testbed, ctx.islands
    rnd = ctx.plan.schedule.round_at(r)
    installed = install_round(testbed, r)
    if installed.groups != testbed.names_of(rnd):
        raise ExperimentError(f"round {r}: the switches got {installed.groups}, not {rnd}")
    islands.broadcast(Prepare(r))
    clock = islands.clock  # the round's deadlines and start time are read on the islands' clock
    prepared = islands.expect(Prepared, clock() + PREPARE_TIMEOUT_S, f"round {r}")
    refused = {u: e.error for u, e in prepared.items() if isinstance(e, Failed)}
    if refused:
        u = min(refused)
        raise ExperimentError(f"round {r}: island {testbed.wan.names[u]}: {refused[u]}")
    before = snapshot(testbed)
    start_at = clock() + START_MARGIN_S
    _go(ctx, r, installed.number, start_at)
    deadline = start_at + ctx.emulation.scenario.round_deadline_s + 5.0
    done = islands.expect(Done, deadline, f"round {r}")
    after = snapshot(testbed)
    ready = [e for e in prepared.values() if isinstance(e, Prepared)]
    rec = _record(
        ctx, r, start_at, sum(e.train_loss for e in ready) / len(ready), done, before, after
    )
    local = max(e.compute_s for e in ready)  # this machine's clock, not the emulated compute
    return dataclasses.replace(rec, compute_s=ctx.emulation.round_compute_s, local_s=local)


def _go(ctx: RoundContext, r: int, number: int, start_at: float) -> None:
    """Every leader's command: its group, how the group exchanges, the group's rate, its
    offset and just-in-time lag (in-line aggregation only: the others start together)."""
    em, wan = ctx.emulation, ctx.testbed.wan
    for g, gc in enumerate(ctx.cost(r).groups):
        members = tuple(gc.members)
        collective = Collective.GLOO if ctx.network == NetworkMode.GLOO else gc.collective
        if len(members) == 1:
            collective = Collective.INNA  # nothing to exchange
        for m, offset in zip(members, gc.offsets, strict=True):
            policy = None
            if len(members) > 1:
                inna = collective == Collective.INNA
                lag = local_lag(wan.delay, members, gc.offsets, m) if inna else None
                policy = send_policy(
                    em.frame_rate_bps(gc.rate_bps),
                    em.packet_format.frame_bits,
                    offset,
                    lag,
                    gc.span_s,
                    em.chunks,
                    em.scenario.round_deadline_s,
                    ctx.point.pool.slots_per_bank if inna else None,
                )
            go = Go(r, number, g, members, start_at, policy, collective, gc.order)
            ctx.islands.leaders[m].send(go)


def _record(
    ctx: RoundContext,
    r: int,
    start_at: float,
    train_loss: float,
    done: dict[int, Done | Failed],
    before: Snapshot,
    after: Snapshot,
) -> RoundRecord:
    wan = ctx.testbed.wan
    ok = [e for e in done.values() if isinstance(e, Done)]
    finished = max((e.done_at for e in ok), default=ctx.islands.clock())
    diff = counted(before, after)
    lag = max([after.lag_s, *(e.pacing_lag_s for e in ok)])
    by_city = {wan.names[u]: e for u, e in sorted(done.items()) if isinstance(e, Done)}
    lags = {"switches": after.lag_s * 1e3}
    lags.update({city: e.pacing_lag_s * 1e3 for city, e in by_city.items()})
    n = len(ok) or 1
    failed = [
        f"island {wan.names[u]}: {' '.join(e.error.split())}"
        for u, e in sorted(done.items())
        if isinstance(e, Failed)
    ]
    cost = ctx.cost(r)
    failed += split_sums(wan.names, [gc.members for gc in cost.groups], done)
    conflicts = diff.totals.get("slot_conflict", 0)
    retransmitted = sum(e.stats.retransmitted for e in ok)
    seen = RoundSeen(
        time_s=finished - start_at if ok else None,
        predicted_s=cost.time_s,
        slot_conflicts=conflicts,
        retransmissions=retransmitted,
        lag_s=lag,
        headroom_s=cost.headroom_s,
        wan_loss=ctx.emulation.loss_of(ctx.point),
        clocks=ctx.clocks,
    )
    return RoundRecord(
        memory=ctx.point.memory_bytes,
        slots=ctx.point.pool.slots_per_bank,
        schedule=ctx.plan.family,
        round=r,
        groups=ctx.testbed.names_of(ctx.plan.schedule.round_at(r)),
        started=start_at,
        time_s=finished - start_at,
        predicted_s=cost.time_s,
        wall_s=finished - ctx.began,
        wan_bytes=_link_bytes(wan.names, diff.links),
        drops={k: v for k, v in diff.totals.items() if k != "contribution" and v},
        retransmissions=retransmitted,
        nacks=sum(e.stats.nacks_sent for e in ok),
        slot_conflicts=conflicts,
        slots_needed=ctx.emulation.slots_needed(cost.memory_bytes),
        train_loss=train_loss,
        test_loss=sum(e.test_loss for e in ok) / n,
        accuracy=sum(e.accuracy for e in ok) / n,
        cpu_lag_ms=lag * 1e3,
        lag_ms=lags,
        leader_cpu_ms={city: e.exchange_cpu_s * 1e3 for city, e in by_city.items()},
        cpu_bound=lag > cpu_threshold_s(cost.time_s),
        status="ok" if not failed else f"failed: {'; '.join(failed)}",
        network=ctx.network,
        sent_bytes={wan.names[u]: n for u, n in sorted(diff.sent.items()) if n},
        received_bytes={wan.names[u]: n for u, n in sorted(diff.received.items()) if n},
        predicted_wan_bytes=ctx.emulation.wire_bytes(cost.wan_bytes),
        predicted_sent_bytes=ctx.emulation.wire_bytes(
            max((g.sent_bytes for g in cost.groups), default=0.0)
        ),
        predicted_received_bytes=ctx.emulation.wire_bytes(
            max((g.received_bytes for g in cost.groups), default=0.0)
        ),
        flags=flag_round(seen) if not failed else {},
        sums={city: e.sums for city, e in by_city.items() if e.sums},
    )


def split_sums(
    names: tuple[str, ...], groups: list[tuple[int, ...]], done: dict[int, Done | Failed]
) -> list[str]:
    """Each group whose members got different int32 sums (the exchange was not exact), as a
    line naming every member's digest; members without a sum (failed, gloo) are left out.

    >>> got = {0: Done(0, 0, 1.0, 1.0, 0.5, 0.9, sums="aa"), 1: Done(1, 0, 1.0, 1.0, 0.5, 0.9,
    ...        sums="ab"), 2: Done(2, 0, 1.0, 1.0, 0.5, 0.9, sums="aa")}
    >>> split_sums(("Tokyo", "Paris", "Lima"), [(0, 2), (1,)], got)
    []
    >>> split_sums(("Tokyo", "Paris", "Lima"), [(0, 1, 2)], got)
    ['group Tokyo-Paris-Lima: its members got different int32 sums (Tokyo aa, Paris ab, Lima aa)']
    """
    split = []
    for members in groups:
        got = {names[m]: e.sums for m in members if isinstance(e := done.get(m), Done) and e.sums}
        if len(set(got.values())) > 1:
            each = ", ".join(f"{city} {digest}" for city, digest in got.items())
            split.append(f"group {'-'.join(got)}: its members got different int32 sums ({each})")
    return split


def _link_bytes(names: tuple[str, ...], links: dict[tuple[int, int], int]) -> dict[str, int]:
    """Bytes per WAN link that carried any, as "A->B"."""
    return {f"{names[u]}->{names[v]}": n for (u, v), n in sorted(links.items()) if n}
