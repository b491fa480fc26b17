"""A user's training script under `innet run`: one rank per island's leader, every collective
granted through the testbed in the play's network (docs/torch.md).

    training:
      script: train.py          # beside the scenario, or an absolute path
      args: [--rounds, "4"]     # its command line
      timeout: 600s             # each play's whole run, at most (default 1800s)

For every memory point and every play of it (network x schedule, as the built-in training's
runs play them), the runner starts the script in each island's leader host with torchrun's
environment (`RANK`, `WORLD_SIZE`, `LOCAL_RANK`, `MASTER_ADDR`, `MASTER_PORT`) and innet's:
`INNET_NETWORK`, `INNET_PEERS`, `INNET_LANES`, `INNET_CLIQUES` (the play's schedule, rounds of
ranks), `INNET_CONTROL` (the runner's socket) and `INNET_LOG` (the rank's metrics file).

The script's backend "innet" asks before each exact sum (workers/control.py). Once every member
of the group has asked, the runner installs a round of that group (every other island alone)
on the switches, prices the sum with the planner (the group alone, its values at full scale:
`values x 4 B x scale`) and grants it with the planner's collective, send policy and a common
start. Every collective is recorded beside that prediction. The script's own time between its
collectives is this machine's compute, recorded as the play's wall time; it is not the emulated
system's.

Results (besides scenario.yaml, versions.json and network.json):

    collectives.jsonl   one object per collective, appended as it ends: the play, the op,
                        members, values and bytes, the collective played, time, prediction,
                        retransmissions, status
    metrics.jsonl       every line the ranks logged (innet.torch.log), with the play
    summary.csv         one row per play: status, wall time, collectives, the seconds they
                        ran (concurrent ones once) measured and at their prices, what rank 0
                        logged last
    collectives.png     each collective's time against its price (results/script_plots.py)
    metrics.png         what rank 0 logged against the play's seconds, one line per play
    logs/<play>/rank-<r>.log   each rank's stdout and stderr

A rank that exits with an error, a rank that never asks for a collective (it never made the
process group), a stop signal or the timeout end the play: the ranks still waiting are denied
with the reason, every rank is stopped, and the play's row says why, naming the rank.
"""

from __future__ import annotations

import contextlib
import csv
import dataclasses
import io
import json
import logging
import math
import os
import re
import selectors
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from controller.planner.cost import GroupCost
from controller.planner.optimise import Planner
from controller.planner.schedule import Round, Schedule
from controller.rundir import ProcessRecord
from controller.runner.emulation import Emulation, MemoryPoint, Play
from controller.runner.exceptions import ExperimentError
from controller.runner.flags import RoundSeen, flag_round
from controller.runner.islands import wait_all
from controller.runner.leaders import local_lag, send_policy
from controller.runner.play import START_MARGIN_S
from controller.runner.results.script_plots import plot_collectives, plot_metrics
from controller.runner.results.writer import collect_versions, replace_text, save_figure
from controller.runner.run import OneMachine, Testbeds, UpTestbed, access_shaped
from controller.runner.training_spec import MetricTarget
from controller.testbed import Testbed
from innet.exceptions import InnetError
from innet.packetformat import PacketFormat
from innet.stopping import held, hurried, interrupted
from innet.units import format_size
from innet.vocabulary import Collective, NetworkMode
from topo.siteplan import JOB, LEADER_HOST, host_ip
from workers.control import (
    CONTROL_VARIABLE,
    Denied,
    Finished,
    Grant,
    Hello,
    Observed,
    Want,
    decode,
    encode,
    read_lines,
)
from workers.exceptions import ProtocolError
from workers.gloo import IFNAME_VARIABLE
from workers.group import SendPolicy

log = logging.getLogger(__name__)

COLLECTIVES_FILE, METRICS_FILE = "collectives.jsonl", "metrics.jsonl"
MASTER_PORT = 29500  # the script's TCP store, on rank 0's leader
RETIRE_AFTER_S = 3.0  # a finished collective's entries stay this long (late NACKs), then go
STOP_GRACE_S = 5.0  # ranks asked to stop (SIGTERM) end within this, else SIGKILL
DEADLINE_PRICES = 3.0  # a collective gives up after round_deadline, or this many prices
AFTER_FAILURE_S = 10.0  # once a rank failed, the others end within this (denied), or are stopped
POLL_S = 0.05


@dataclass(frozen=True)
class CollectiveRecord:
    """One collective a script asked for, as played and as the planner priced it."""

    network: str
    memory: int  # full scale
    schedule: str
    index: int  # its place in the play, from 0
    op: str
    members: tuple[str, ...]
    values: int  # int32 values each member sent
    bytes: int  # those values' bytes, at emulation scale
    collective: str
    number: int  # the round number its entries were installed as
    started: float  # the common start (Unix time)
    time_s: float | None  # to the last member's sum (None: it did not finish)
    predicted_s: float
    retransmissions: int
    lag_ms: float  # how far the members' pacing fell behind, at the worst
    status: str  # ok, or failed: why
    flags: dict[str, str] = field(default_factory=dict)  # why it may not measure the network

    def to_json(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


@dataclass
class PlayRow:
    """One play of the script: how it ended and what its collectives took."""

    network: str
    memory: int
    schedule: str
    status: str
    wall_s: float
    collectives: int
    time_s: float  # the seconds at least one collective ran (busy_s): the network's share
    predicted_s: float  # the same with each collective at its price
    flagged: int = 0  # collectives that may not measure the network (CollectiveRecord.flags)
    metrics: dict[str, Any] = field(default_factory=dict)  # what rank 0 logged last
    # with a target: the play's seconds until rank 0 first logged it reached (None: never),
    # and the collectives' time before then
    target_s: float | None = None
    target_network_s: float | None = None

    @property
    def label(self) -> str:
        return f"{self.network} {self.schedule} @ {format_size(self.memory)}"


# --- what a collective costs -------------------------------------------------------------------


class Pricing:
    """The planner's price of one group's sum of `values` int32 values in a play, and each
    member's send policy for it (as a round's leaders get theirs: controller/runner/play.py)."""

    def __init__(self, em: Emulation, point: MemoryPoint, play: Play) -> None:
        self.em, self.point, self.play = em, point, play
        self.wan = em.wan_of(point)
        self.planner = Planner(self.wan)
        self._costs: dict[tuple[tuple[int, ...], int], GroupCost] = {}

    def cost(self, members: tuple[int, ...], values: int) -> GroupCost:
        key = (members, values)
        if key not in self._costs:
            full = max(1, round(values * PacketFormat.VALUE_BYTES * self.em.scenario.scale))
            params = dataclasses.replace(
                self.point.params, update_bytes=full, network=self.play.edges
            )
            alone = [[u] for u in range(self.wan.n) if u not in members]
            rnd = Round.of([members, *alone])
            costs = self.planner.model(params).round_cost(rnd).groups
            self._costs[key] = next(g for g in costs if tuple(g.members) == members)
        return self._costs[key]

    def policies(self, gc: GroupCost, values: int) -> dict[int, SendPolicy]:
        em, members = self.em, tuple(gc.members)
        inna = gc.collective == Collective.INNA
        chunks = math.ceil(values / em.packet_format.lanes)
        policies = {}
        for m, offset in zip(members, gc.offsets, strict=True):
            lag = local_lag(self.wan.delay, members, gc.offsets, m) if inna else None
            policies[m] = send_policy(
                em.frame_rate_bps(gc.rate_bps),
                em.packet_format.frame_bits,
                offset,
                lag,
                gc.span_s,
                chunks,
                max(em.scenario.round_deadline_s, DEADLINE_PRICES * gc.time_s),
                self.point.pool.slots_per_bank if inna else None,
            )
        return policies


# --- the runner's end of the channel -----------------------------------------------------------


@dataclass
class _Granted:
    index: int
    op: str
    members: tuple[int, ...]
    values: int
    number: int
    collective: str
    start_at: float
    predicted_s: float
    finished: dict[int, Finished] = field(default_factory=dict)


class Coordinator:
    """Grants the ranks' sums: matches each member's n-th ask for a group, installs the group's
    round, answers with the planner's policy and a common start, records each collective."""

    def __init__(
        self,
        server: socket.socket,
        testbed: Testbed,
        pricing: Pricing,
        record: Callable[[CollectiveRecord], None],
        *,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.server, self.testbed, self.pricing, self.record = server, testbed, pricing, record
        self.clock = clock
        self.names = pricing.wan.names
        self.world = pricing.wan.n
        self.selector = selectors.DefaultSelector()
        server.setblocking(False)
        self.selector.register(server, selectors.EVENT_READ)
        self._buffers: dict[socket.socket, bytes] = {}
        self.ranks: dict[int, socket.socket] = {}  # by rank, once it said hello
        self._asks: dict[tuple[int, tuple[int, ...]], int] = {}  # (rank, members) -> asks
        self._pending: dict[tuple[tuple[int, ...], int], dict[int, Want]] = {}
        self._granted: dict[tuple[int, int], _Granted] = {}  # (rank, seq) -> its collective
        self._open: list[_Granted] = []  # granted, not finished by every member
        self._seen: dict[tuple[tuple[int, ...], int], dict[int, Observed]] = {}  # gloo's
        self._installed: dict[int, float | None] = {}  # number -> when its collective ended
        self.count = 0
        self.gone: dict[int, str] = {}  # ranks gone, and why
        self._closed = False

    def step(self, timeout: float) -> None:
        """Serve what arrived within `timeout`."""
        for key, _ in self.selector.select(timeout):
            sock = key.fileobj
            assert isinstance(sock, socket.socket)
            if sock is self.server:
                with contextlib.suppress(BlockingIOError):
                    conn, _ = self.server.accept()
                    conn.setblocking(True)
                    self._buffers[conn] = b""
                    self.selector.register(conn, selectors.EVENT_READ)
                continue
            data = b""
            with contextlib.suppress(OSError):
                data = sock.recv(65536)
            if not data:
                self._drop(sock)
                continue
            lines, self._buffers[sock] = read_lines(self._buffers[sock], data)
            for line in lines:
                self._handle(sock, line)

    def _drop(self, sock: socket.socket) -> None:
        self.selector.unregister(sock)
        self._buffers.pop(sock, None)
        sock.close()

    def _handle(self, sock: socket.socket, line: str) -> None:
        try:
            message = decode(line)
        except ProtocolError as err:
            log.warning("control channel: %s", err)
            return
        if isinstance(message, Hello):
            self.ranks[message.rank] = sock
        elif isinstance(message, Want):
            self._want(message)
        elif isinstance(message, Finished):
            self._finished(message)
        elif isinstance(message, Observed):
            self._observed(message)

    def _send(self, rank: int, message: Grant | Denied) -> None:
        sock = self.ranks.get(rank)
        if sock is None:
            return
        with contextlib.suppress(OSError):  # a rank gone: its exit says why
            sock.sendall((encode(message) + "\n").encode())

    def _want(self, want: Want) -> None:
        members = tuple(want.members)
        bad = [m for m in members if not 0 <= m < self.world]
        if want.rank not in members or bad or len(set(members)) != len(members):
            self._send(want.rank, Denied(want.seq, f"rank {want.rank}: no group {members}"))
            return
        gone = [m for m in members if m in self.gone]
        if gone:
            self._send(want.rank, Denied(want.seq, self.gone[gone[0]]))
            return
        n = self._asks.get((want.rank, members), 0)
        self._asks[want.rank, members] = n + 1
        asked = self._pending.setdefault((members, n), {})
        asked[want.rank] = want
        if len(asked) == len(members):
            del self._pending[members, n]
            self._grant(members, asked)

    def _grant(self, members: tuple[int, ...], asked: dict[int, Want]) -> None:
        sizes = {w.values for w in asked.values()}
        ops = {w.op for w in asked.values()}
        if len(sizes) > 1 or len(ops) > 1:
            said = ", ".join(f"rank {r}: {w.op} of {w.values}" for r, w in sorted(asked.items()))
            for r, w in asked.items():
                self._send(
                    r, Denied(w.seq, f"the group's members asked for different sums ({said})")
                )
            return
        values, op = sizes.pop(), ops.pop()
        self._retire(older_than=self.clock() - RETIRE_AFTER_S)
        number, gid = self.testbed.install_group(members)
        self._installed[number] = None
        gc = self.pricing.cost(members, values)
        policies = self.pricing.policies(gc, values)
        start_at = self.clock() + START_MARGIN_S
        granted = _Granted(
            self.count, op, members, values, number, str(gc.collective), start_at, gc.time_s
        )
        self.count += 1
        self._open.append(granted)
        for r, w in asked.items():
            self._granted[r, w.seq] = granted
            grant = Grant(w.seq, number, gid, str(gc.collective), policies[r], gc.order, start_at)
            self._send(r, grant)

    def _finished(self, done: Finished) -> None:
        granted = self._granted.pop((done.rank, done.seq), None)
        if granted is None:
            return
        granted.finished[done.rank] = done
        if len(granted.finished) == len(granted.members):
            self._close(granted, "ok")

    def _close(self, granted: _Granted, status: str) -> None:
        self._open.remove(granted)
        self._installed[granted.number] = self.clock()
        finished = granted.finished.values()
        time_s = max(f.done_at for f in finished) - granted.start_at if status == "ok" else None
        seen = RoundSeen(
            time_s,
            granted.predicted_s,
            retransmissions=sum(f.retransmitted for f in finished),
            lag_s=max((f.lag_s for f in finished), default=0.0),
            wan_loss=self.pricing.em.loss_of(self.pricing.point),
        )
        self._write(
            granted.index,
            granted.op,
            granted.members,
            granted.values,
            granted.collective,
            granted.number,
            granted.start_at,
            seen,
            status,
        )

    def _write(
        self,
        index: int,
        op: str,
        members: tuple[int, ...],
        values: int,
        collective: str,
        number: int,
        started: float,
        seen: RoundSeen,
        status: str,
    ) -> None:
        """Record one collective of the play, as `seen` (flagged when it finished)."""
        p = self.pricing
        self.record(
            CollectiveRecord(
                network=str(p.play.network),
                memory=p.point.memory_bytes,
                schedule=p.play.plan.family,
                index=index,
                op=op,
                members=tuple(self.names[m] for m in members),
                values=values,
                bytes=values * PacketFormat.VALUE_BYTES,
                collective=collective,
                number=number,
                started=started,
                time_s=seen.time_s,
                predicted_s=seen.predicted_s,
                retransmissions=seen.retransmissions,
                lag_ms=seen.lag_s * 1e3,
                status=status,
                flags=flag_round(seen) if status == "ok" and seen.predicted_s > 0 else {},
            )
        )

    def _observed(self, seen: Observed) -> None:
        """A gloo collective as one member saw it; recorded once every member has: from the
        last member's call to the last member's result, beside the plain WAN's price."""
        members = tuple(seen.members)
        n = self._asks.get((seen.rank, members), 0)
        self._asks[seen.rank, members] = n + 1
        got = self._seen.setdefault((members, n), {})
        got[seen.rank] = seen
        if len(got) < len(members):
            return
        del self._seen[members, n]
        began = max(o.began for o in got.values())
        time_s = max(o.ended for o in got.values()) - began
        values = max(o.values for o in got.values())
        p = self.pricing
        predicted = p.cost(members, max(1, values)).time_s if len(members) > 1 else 0.0
        seen_as = RoundSeen(time_s, predicted, wan_loss=p.em.loss_of(p.point))
        self._write(
            self.count, seen.op, members, values, str(NetworkMode.GLOO), -1, began, seen_as, "ok"
        )
        self.count += 1

    def rank_gone(self, rank: int, why: str) -> None:
        """A rank ended: every ask waiting for it is denied with `why`, every collective it
        was in and did not finish is recorded as failed."""
        self.gone.setdefault(rank, why)
        for key, asked in list(self._pending.items()):
            if rank in key[0]:
                del self._pending[key]
                for r, w in asked.items():
                    self._send(r, Denied(w.seq, why))
        for granted in list(self._open):
            if rank in granted.members and rank not in granted.finished:
                self._granted = {k: g for k, g in self._granted.items() if g is not granted}
                self._close(granted, f"failed: {why}")

    def _retire(self, older_than: float) -> None:
        for number, ended in list(self._installed.items()):
            if ended is not None and ended < older_than:
                self.testbed.retire(number)
                del self._installed[number]

    def close(self) -> None:
        """Every round it installed retired; the channel closed."""
        if self._closed:
            return
        self._closed = True
        with held():
            for number in list(self._installed):
                try:
                    self.testbed.retire(number)
                except InnetError as err:  # a switch gone: the teardown says the rest
                    log.warning("round %d not retired: %s", number, err)
            self._installed.clear()
            for key in list(self.selector.get_map().values()):
                sock = key.fileobj
                assert isinstance(sock, socket.socket)
                self.selector.unregister(sock)
                if sock is not self.server:
                    sock.close()
            self.selector.close()


# --- the run -----------------------------------------------------------------------------------


@dataclass
class _Rank:
    rank: int
    proc: subprocess.Popen[bytes]
    log: Path
    metrics: Path
    out: IO[bytes]


class ScriptRun:
    """`innet run` of a scenario whose training is a script: every play of every memory point,
    one results folder."""

    def __init__(
        self,
        emulation: Emulation,
        folder: Path,
        testbeds: Testbeds,
        *,
        stop_event: threading.Event | None = None,
        progress: Callable[[str], None] = lambda _what: None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        script = emulation.scenario.script
        if script is None:
            raise ExperimentError("the scenario names no training script")
        self.script = script
        self.emulation, self.folder, self.testbeds = emulation, Path(folder), testbeds
        self.stop_event = stop_event if stop_event is not None else threading.Event()
        self.progress, self.clock = progress, clock
        self.rows: list[PlayRow] = []
        self.records: list[CollectiveRecord] = []
        self.metrics: list[dict[str, Any]] = []  # every rank's logged lines, with the play
        self.phase = "start-up"  # what it does now, for the line an interrupted run ends with
        self._collectives: IO[str] | None = None

    def execute(self) -> list[PlayRow]:
        em = self.emulation
        self.folder.mkdir(parents=True, exist_ok=True)
        target = self.folder / COLLECTIVES_FILE
        if target.exists():
            raise FileExistsError(f"{target} exists: results of another run; choose a new folder")
        import yaml

        text = "# The scenario as run, every default resolved.\n"
        text += yaml.safe_dump(em.scenario.to_dict(), sort_keys=False)
        replace_text(self.folder / "scenario.yaml", text)
        replace_text(self.folder / "versions.json", json.dumps(collect_versions(), indent=2))
        self._collectives = target.open("x", encoding="utf-8")
        try:
            for point in em.played:
                if self.stop_event.is_set():
                    break
                with self.testbeds(point) as up:
                    for play in point.plays:
                        if self.stop_event.is_set():
                            break
                        self.phase = f"{play.label} @ {point.label}"
                        self.progress(self.phase)
                        self.rows.append(self._play(up, point, play))
        finally:
            with held():
                self._collectives.close()
                replace_text(self.folder / "summary.csv", summary_csv(self.rows))
                if not interrupted():  # (a stopped run ends within seconds: no plots)
                    records = [r.to_json() for r in self.records]
                    save_figure(plot_collectives(records), self.folder / "collectives.png")
                    save_figure(plot_metrics(self.metrics), self.folder / "metrics.png")
        return self.rows

    def _record(self, rec: CollectiveRecord) -> None:
        assert self._collectives is not None
        self._collectives.write(json.dumps(rec.to_json(), allow_nan=False) + "\n")
        self._collectives.flush()
        os.fsync(self._collectives.fileno())
        self.records.append(rec)

    def _play(self, up: UpTestbed, point: MemoryPoint, play: Play) -> PlayRow:
        if not isinstance(up, OneMachine):
            raise ExperimentError("a training script runs on one machine, not on a cluster")
        testbed = up.testbed
        testbed.set_network(play.edges)
        testbed.set_schedule(play.plan.schedule)
        name = _file_name(f"{play.network}-{play.plan.family}-{point.label}")
        logs = self.folder / "logs" / name
        logs.mkdir(parents=True, exist_ok=True)
        first = len(self.records)
        began = self.clock()
        gloo = play.network == NetworkMode.GLOO
        with _control_socket() as (server, path), access_shaped(up, self.emulation, gloo):
            coordinator = Coordinator(
                server,
                testbed,
                Pricing(self.emulation, point, play),
                self._record,
                clock=self.clock,
            )
            ranks = self._start(up, play, path, logs)
            try:
                status = self._serve(coordinator, ranks)
            finally:
                with held():
                    _stop(ranks)
                    up.record_processes([])
                    coordinator.close()
        wall = self.clock() - began
        mine = self.records[first:]
        metrics = self._gather_metrics(ranks, play, point, began)
        last: dict[str, Any] = next((m for m in reversed(metrics) if m.get("rank") == 0), {})
        target_s = target_network_s = None
        target = self.script.target
        hit = (
            None
            if target is None
            else next((m for m in metrics if m.get("rank") == 0 and target.reached(m)), None)
        )
        if hit is not None:
            target_s = float(hit["time"]) - began
            target_network_s = busy_s(
                (r.started, r.started + r.time_s)
                for r in mine
                if r.time_s is not None and r.started + r.time_s <= hit["time"]
            )
        return PlayRow(
            network=str(play.network),
            memory=point.memory_bytes,
            schedule=play.plan.family,
            status=status,
            wall_s=wall,
            collectives=len(mine),
            time_s=busy_s((r.started, r.started + r.time_s) for r in mine if r.time_s is not None),
            predicted_s=busy_s((r.started, r.started + r.predicted_s) for r in mine),
            flagged=sum(1 for r in mine if r.flags),
            target_s=target_s,
            target_network_s=target_network_s,
            metrics={k: v for k, v in last.items() if k not in ("rank", "time")},
        )

    def _start(self, up: OneMachine, play: Play, control: str, logs: Path) -> list[_Rank]:
        em, script = self.emulation, self.script
        n = em.scenario.wan.n
        env = dict(os.environ)
        env.update(
            WORLD_SIZE=str(n),
            LOCAL_RANK="0",
            LOCAL_WORLD_SIZE="1",
            MASTER_ADDR=host_ip(0, LEADER_HOST),
            MASTER_PORT=str(MASTER_PORT),
            INNET_NETWORK=str(play.network if play.network == NetworkMode.GLOO else play.edges),
            INNET_PEERS=",".join(host_ip(u, LEADER_HOST) for u in range(n)),
            INNET_LANES=str(em.packet_format.lanes),
            INNET_JOB=str(JOB),
            INNET_CLIQUES=json.dumps(_rounds(play.plan.schedule)),
            PYTHONUNBUFFERED="1",
        )
        env[CONTROL_VARIABLE] = control
        argv = [sys.executable, str(script.path), *script.args]
        ranks: list[_Rank] = []
        for u in range(n):
            out = (logs / f"rank-{u}.log").open("wb")
            metrics = logs / f"rank-{u}.metrics.jsonl"
            rank_env = {**env, "RANK": str(u), "GROUP_RANK": str(u), "INNET_LOG": str(metrics)}
            host = up.up.net.hosts[u][LEADER_HOST - 1]
            rank_env[IFNAME_VARIABLE] = host.defaultIntf().name  # gloo's sockets: the WAN side
            try:
                proc = host.popen(argv, env=rank_env, stdout=out, stderr=subprocess.STDOUT)
            except OSError as err:
                out.close()
                _stop(ranks)
                raise ExperimentError(f"rank {u}: {script.path} does not start: {err}") from None
            ranks.append(_Rank(u, proc, logs / f"rank-{u}.log", metrics, out))
        up.record_processes(
            [ProcessRecord.of(f"training script rank {r.rank}", r.proc.pid) for r in ranks]
        )
        return ranks

    def _serve(self, coordinator: Coordinator, ranks: list[_Rank]) -> str:
        """Grant the ranks' sums until every rank has ended; the play's status (a rank that
        ends without having said hello never made the process group: it failed)."""
        names = coordinator.names
        deadline = self.clock() + self.script.timeout_s
        failed: list[str] = []
        ended: set[int] = set()
        while len(ended) < len(ranks):
            coordinator.step(POLL_S)
            for r in ranks:
                status = r.proc.poll()
                if status is None or r.rank in ended:
                    continue
                ended.add(r.rank)
                if status != 0:
                    why = f"rank {r.rank} ({names[r.rank]}) exited with status {status}"
                    why += f": {_last_line(r.log)}"
                elif r.rank not in coordinator.ranks and len(ranks) > 1:
                    why = (
                        f"rank {r.rank} ({names[r.rank]}) ended without asking for a collective: "
                        "it never made the innet process group"
                    )
                else:
                    coordinator.rank_gone(r.rank, f"rank {r.rank} ({names[r.rank]}) has ended")
                    continue
                failed.append(why)
                coordinator.rank_gone(r.rank, why)
                deadline = min(deadline, self.clock() + AFTER_FAILURE_S)
            if self.stop_event.is_set():
                failed.append("stopped by a signal")
                break
            if self.clock() > deadline:
                if not failed:
                    failed.append(f"not over within the timeout ({self.script.timeout_s:.0f} s)")
                break
        return "ok" if not failed else f"failed: {failed[0]}"

    def _gather_metrics(
        self, ranks: Sequence[_Rank], play: Play, point: MemoryPoint, began: float
    ) -> list[dict[str, Any]]:
        """Every rank's logged lines, tagged with the play and the seconds since it began
        (`play_s`), appended to metrics.jsonl in time order; lines that are not JSON objects
        are skipped (a rank killed mid-line)."""
        lines: list[dict[str, Any]] = []
        for r in ranks:
            if not r.metrics.exists():
                continue
            for text in r.metrics.read_text(errors="replace").splitlines():
                with contextlib.suppress(ValueError):
                    item = json.loads(text)
                    if isinstance(item, dict):
                        lines.append(item)
        lines.sort(key=lambda m: (m.get("time", 0.0), m.get("rank", 0)))
        tag = {
            "network": str(play.network),
            "memory": point.memory_bytes,
            "schedule": play.plan.family,
        }
        with (self.folder / METRICS_FILE).open("a", encoding="utf-8") as out:
            for item in lines:
                tagged = {**tag, **item}
                if isinstance(item.get("time"), int | float):
                    tagged["play_s"] = item["time"] - began
                out.write(json.dumps(tagged) + "\n")
                self.metrics.append(tagged)
        return lines


@contextlib.contextmanager
def _control_socket() -> Iterator[tuple[socket.socket, str]]:
    """A listening Unix socket in a fresh private folder (its path short enough for AF_UNIX)."""
    folder = tempfile.mkdtemp(prefix="innet-control-")
    path = os.path.join(folder, "control.sock")
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        server.bind(path)
        server.listen(64)
        yield server, path
    finally:
        server.close()
        shutil.rmtree(folder, ignore_errors=True)


def _stop(ranks: Sequence[_Rank]) -> None:
    """SIGTERM to every rank still running, SIGKILL to those left after STOP_GRACE_S (or at a
    second stop signal), as the island processes are stopped."""
    procs = [r.proc for r in ranks if r.proc.poll() is None]
    for proc in procs:
        proc.terminate()
    for proc in wait_all(procs, time.monotonic() + STOP_GRACE_S, hurried):
        proc.kill()
        proc.wait()
    for r in ranks:
        r.out.close()


def busy_s(intervals: Iterable[tuple[float, float]]) -> float:
    """The seconds covered by at least one of the intervals (start, end): the collectives of
    one play's cliques run side by side, and count once.

    >>> busy_s([(0.0, 2.0), (1.0, 3.0), (5.0, 6.0)])
    4.0
    """
    total, reach = 0.0, -math.inf
    for start, end in sorted(intervals):
        if end > reach:
            total += end - max(start, reach)
            reach = end
    return total


def _rounds(schedule: Schedule) -> list[list[list[int]]]:
    return [[list(g) for g in rnd.groups] for rnd in schedule.rounds]


def _last_line(path: Path) -> str:
    """The last non-empty line of a rank's log (a traceback's last line is its error)."""
    try:
        lines = [line for line in path.read_text(errors="replace").splitlines() if line.strip()]
    except OSError:
        return "(no log)"
    return lines[-1].strip() if lines else "(its log is empty)"


def _file_name(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9.-]+", "-", text).strip("-")


# --- the summary -------------------------------------------------------------------------------

SUMMARY_FIELDS = (
    "network",
    "memory",
    "schedule",
    "status",
    "wall_s",
    "collectives",
    "time_s",
    "predicted_s",
    "flagged",
    "target_s",
    "target_network_s",
    "metrics",
)


def summary_csv(rows: Sequence[PlayRow]) -> str:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(SUMMARY_FIELDS)
    for row in rows:
        writer.writerow(
            [
                row.network,
                row.memory,
                row.schedule,
                row.status,
                f"{row.wall_s:.3f}",
                row.collectives,
                f"{row.time_s:.4f}",
                f"{row.predicted_s:.4f}",
                row.flagged,
                "" if row.target_s is None else f"{row.target_s:.3f}",
                "" if row.target_network_s is None else f"{row.target_network_s:.4f}",
                json.dumps(row.metrics, sort_keys=True),
            ]
        )
    return out.getvalue()


def format_rows(rows: Sequence[PlayRow], target: MetricTarget | None = None) -> str:
    """The plays side by side: the collectives' time measured and predicted, how many are
    flagged, wall time, gain over plain (plain's collective time over this play's, the same
    schedule), with a `target` the time to it (the play's and its collectives'), what rank 0
    logged last."""
    plain = {r.schedule: r for r in rows if r.network == NetworkMode.PLAIN and r.status == "ok"}
    width = max([len(r.label) for r in rows] + [4])
    reach = f" {'to ' + target.text:>24}" if target is not None else ""
    head = (
        f"{'play':<{width}} {'colls':>5} {'measured':>9} {'predicted':>9} {'flagged':>7} "
        f"{'wall':>8} {'vs plain':>8}{reach}  last logged (rank 0)"
    )
    lines = [head]
    for r in rows:
        base = plain.get(r.schedule)
        gain = "-"
        if base is not None and r.time_s > 0 and r.status == "ok":
            gain = f"{base.time_s / r.time_s:.2f}x"
        logged = ", ".join(f"{k}={_short(v)}" for k, v in r.metrics.items())
        figures = (
            f"{r.collectives:>5} {r.time_s:>8.3f}s {r.predicted_s:>8.3f}s {r.flagged:>7} "
            f"{r.wall_s:>7.1f}s {gain:>8}"
        )
        if target is not None:
            reached = "never"
            if r.target_s is not None:
                reached = f"{r.target_s:.1f}s ({r.target_network_s:.2f}s net)"
            figures += f" {reached:>24}"
        lines.append(f"{r.label:<{width}} {figures}  {logged}")
        if r.status != "ok":
            lines.append(f"    {r.status}")
    return "\n".join(lines)


def _short(value: Any) -> str:
    return f"{value:.4g}" if isinstance(value, float) else str(value)
