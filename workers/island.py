"""One island in an experiment: its leader (the host that talks to the edge) or another worker.

    python -m workers.island CONFIG.json --island U --host K

Runs in host K of island U (a Mininet host namespace); CONFIG is what the experiment runner
wrote (`IslandConfig`). Host 1 is the leader: it takes the runner's commands on stdin and
answers with events on stdout, one JSON object a line (workers/protocol.py; logging goes to
stderr).

The other hosts (K > 1) are workers: they connect to the leader over TCP on the island's LAN
(through the edge, routed), receive the island's model, run their local phase and send back
their parameters; the leader averages the island's workers exactly (inside a data centre) before
the round's group averages across the WAN. The round result reaches the workers as the model
they get at the next `prepare`.

The group's exchange is the one `Go` names (workers/collectives.py): in-line aggregation
through the edge, multicast summed on the host, ring all-reduce or direct exchange to the other
leaders over plain IPv4, or the gloo baseline (after `Join`, each leader a gloo rank).

Times are Unix times (every namespace shares the clock), so the runner can start all leaders of
a round together at `start_at`; `elapsed_s` runs from `start_at` to the sum being in.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import logging
import os
import select
import socket
import struct
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import NoReturn

import numpy as np

from innet.vocabulary import Collective
from topo.siteplan import LEADER_HOST, WORKER_PORT, gateway_ip, host_ip
from workers import train
from workers.aggregate import GroupSpec, sleep_until
from workers.collectives import Exchange, exchange_for
from workers.config import IslandConfig
from workers.exceptions import AggregationError, ProtocolError
from workers.gloo import GlooWorld
from workers.group import AggregatorStats
from workers.protocol import (
    Done,
    Event,
    Failed,
    Go,
    Join,
    Joined,
    Prepare,
    Prepared,
    Ready,
    Refused,
    Reset,
    ResetDone,
    Stop,
    decode_command,
    encode,
)
from workers.quantise import scale_for, sum_digest
from workers.transport import UdpTransport
from workers.unicast import UdpPeers, leader_address

log = logging.getLogger("workers.island")

_HEADER = struct.Struct("!cI")  # kind, payload bytes
CONNECT_TIMEOUT_S = 60.0
GLOO_TIMEOUT_S = 120.0  # the gloo rendezvous and each all_reduce (TCP through the WAN)


# --- framing between the leader and its island's workers ---------------------------------------


def _send_frame(sock: socket.socket, kind: bytes, payload: bytes = b"") -> None:
    sock.sendall(_HEADER.pack(kind, len(payload)) + payload)


def _recv_exact(sock: socket.socket, n: int) -> bytes:
    parts, got = [], 0
    while got < n:
        part = sock.recv(n - got)
        if not part:
            raise ConnectionError("the peer closed the connection")
        parts.append(part)
        got += len(part)
    return b"".join(parts)


def _recv_frame(sock: socket.socket) -> tuple[bytes, bytes]:
    kind, size = _HEADER.unpack(_recv_exact(sock, _HEADER.size))
    return kind, _recv_exact(sock, size)


# --- the training side ---------------------------------------------------------------------------


class IslandTraining:
    """This host's share of the island's training (its shard and inner optimiser)."""

    def __init__(self, config: IslandConfig, island: int, host: int) -> None:
        self.train = train
        self.cfg = config.training
        self.split = train.split_for(self.cfg, config.islands, config.hosts)
        self.theta0 = train.flatten(train.model_for(self.cfg))
        self.shard = self.split.islands[island][host - 1]
        self.worker_seed = train.worker_seed(config.seed, island, host - 1)
        self.reset()

    def reset(self) -> None:
        self.trainer = self.train.WorkerTrainer(self.shard, self.cfg, self.worker_seed)


def serve_worker(config: IslandConfig, island: int, host: int) -> int:
    """A non-leader host: local phases on request until the leader says stop."""
    training = IslandTraining(config, island, host)
    deadline = time.monotonic() + CONNECT_TIMEOUT_S
    while True:
        try:
            sock = socket.create_connection(
                (host_ip(island, LEADER_HOST), WORKER_PORT), timeout=5.0
            )
            break
        except OSError as err:
            if time.monotonic() > deadline:
                log.error("island %d host %d: cannot reach the leader: %s", island, host, err)
                return 1
            time.sleep(0.2)
    sock.settimeout(None)
    with sock:
        _send_frame(sock, b"H", struct.pack("!I", host))
        while True:
            kind, payload = _recv_frame(sock)
            if kind == b"Q":
                return 0
            if kind == b"R":
                training.reset()
                continue
            theta = np.frombuffer(payload, dtype=np.float32).copy()
            theta_local, loss = training.trainer.local_phase(theta)
            reply = struct.pack("!d", loss) + np.asarray(theta_local, np.float32).tobytes()
            _send_frame(sock, b"L", reply)


class Leader:
    """Host 1 of an island: the island's model, its workers, its edge."""

    def __init__(self, config: IslandConfig, island: int) -> None:
        self.config, self.island = config, island
        self.training = IslandTraining(config, island, 1)
        self.train = self.training.train
        self.workers: list[socket.socket] = []
        self.transport = UdpTransport(host_ip(island, LEADER_HOST), gateway_ip(island))
        self.peers = UdpPeers(host_ip(island, LEADER_HOST), leader_address)
        self.gloo: GlooWorld | None = None  # joined for a gloo schedule (`join`)
        self.reset()

    def reset(self) -> None:
        self.state = self.train.IslandState(self.training.theta0, self.training.cfg)
        self.training.reset()
        for sock in self.workers:
            _send_frame(sock, b"R")
        self.proposal: np.ndarray | None = None
        self.last: Exchange | None = None  # the last round's, answering NACKs until the next

    def accept_workers(self) -> None:
        """Wait for the island's other hosts to connect (each says which host it is)."""
        wanted = self.config.hosts - 1
        if not wanted:
            return
        server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        server.bind((host_ip(self.island, LEADER_HOST), WORKER_PORT))
        server.listen(wanted)
        server.settimeout(CONNECT_TIMEOUT_S)
        by_host: dict[int, socket.socket] = {}
        with server:
            while len(by_host) < wanted:
                try:
                    conn, _ = server.accept()
                except TimeoutError:
                    raise AggregationError(
                        f"island {self.island}: {wanted - len(by_host)} worker(s) did not "
                        f"connect within {CONNECT_TIMEOUT_S:.0f} s"
                    ) from None
                conn.settimeout(None)
                _, payload = _recv_frame(conn)
                by_host[struct.unpack("!I", payload)[0]] = conn
        self.workers = [by_host[k] for k in sorted(by_host)]

    def prepare(self, command: Prepare) -> Prepared:
        """Every worker's local phase from the island's model; the island's proposal."""
        began = time.time()
        theta = self.state.start  # with overlap, the island's own last proposal
        for sock in self.workers:
            _send_frame(sock, b"T", np.asarray(theta, np.float32).tobytes())
        own, loss = self.training.trainer.local_phase(theta)
        locals_, losses = [own], [loss]
        for sock in self.workers:
            _, payload = _recv_frame(sock)
            losses.append(struct.unpack("!d", payload[:8])[0])
            locals_.append(np.frombuffer(payload[8:], dtype=np.float32))
        mean_local = np.mean(np.stack(locals_), axis=0, dtype=np.float64).astype(np.float32)
        self.proposal = self.state.propose(mean_local)
        return Prepared(self.island, command.round, float(np.mean(losses)), time.time() - began)

    def go(self, command: Go) -> Done:
        """The group average of the proposals through the network, then the outer state's
        update. The exchange is the command's collective: in-line aggregation at the edges,
        the host-side collectives (multicast, ring, direct: exact int32 sums, as in-line), or
        gloo's float all_reduce."""
        if self.proposal is None:
            raise AggregationError("'go' before 'prepare': no proposal to send")
        k = len(command.members)
        clipped, lag, stats, cpu, digest = 0, 0.0, AggregatorStats(), 0.0, ""
        if k == 1 or command.policy is None:
            mean = self.proposal
            done_at = command.start_at
        elif command.collective == Collective.GLOO:
            mean, done_at = self._gloo_mean(command)
        else:
            cfg = self.config
            encoded, clipped = self.train.encode(
                self.proposal, self.training.theta0, cfg.bound_exponent, k
            )
            values = np.zeros(cfg.update_floats, dtype=np.int32)
            values[: encoded.size] = encoded
            spec = GroupSpec(
                cfg.job,
                command.number & 0xFFFF,
                command.group,
                self.island,
                command.members,
                cfg.packet_format,
            )
            exchange = exchange_for(
                command.collective,
                self.transport,
                self.peers,
                spec,
                command.policy,
                order=command.order,
            )
            self.last = None
            _drain(self.transport)
            _drain(self.peers)
            sleep_until(command.start_at)
            cpu = time.thread_time()
            int_sum = exchange.allreduce_sum(values, scale_for(cfg.bound_exponent, k))
            done_at, cpu = time.time(), time.thread_time() - cpu
            digest = sum_digest(int_sum)
            mean = self.train.decode(
                int_sum[: encoded.size], self.training.theta0, cfg.bound_exponent, k, k
            )
            lag = exchange.pacing_lag_s
            stats = dataclasses.replace(exchange.stats)
            self.last = exchange
        self.state.accept(mean)
        self.proposal = None
        test_loss, accuracy = self.train.evaluate(
            self.state.theta, self.training.cfg, self.training.split.test
        )
        return Done(
            island=self.island,
            round=command.round,
            elapsed_s=done_at - command.start_at,
            done_at=done_at,
            test_loss=float(test_loss),
            accuracy=float(accuracy),
            clipped=int(clipped),
            pacing_lag_s=lag,
            stats=stats,
            exchange_cpu_s=cpu,
            sums=digest,
        )

    def join(self, command: Join) -> Joined:
        """This leader as a rank of a new gloo world with the given groups (a world open from
        an earlier schedule is left first: a process holds one)."""
        if self.gloo is not None:
            self.gloo.close()
            self.gloo = None
        self.gloo = GlooWorld.for_island(
            self.island, self.config.islands, command.groups, GLOO_TIMEOUT_S
        )
        return Joined(self.island)

    def _gloo_mean(self, command: Go) -> tuple[np.ndarray, float]:
        """The group's float mean by gloo's all_reduce over TCP, from start_at."""
        if self.gloo is None:
            raise AggregationError("a gloo round before 'join': no gloo world to reduce in")
        assert self.proposal is not None
        self.last = None
        sleep_until(command.start_at)
        mean = self.gloo.allreduce_mean(command.members, self.proposal)
        return mean.astype(np.float32), time.time()

    def close(self) -> None:
        for sock in self.workers:
            with contextlib.suppress(OSError):
                _send_frame(sock, b"Q")
            sock.close()
        self.transport.close()
        self.peers.close()
        if self.gloo is not None:
            self.gloo.close()


def _drain(transport: UdpTransport | UdpPeers) -> None:
    """Drop packets left from earlier rounds (late duplicates, NACKs for finished rounds)."""
    while transport.recv(0.0) is not None:
        pass


def _emit(event: Event) -> None:
    sys.stdout.write(encode(event) + "\n")
    sys.stdout.flush()


class LineReader:
    """Lines from a pipe without blocking: `poll` gives a whole line, or None if none is in."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self._buffer = b""
        self._eof = False

    def poll(self, timeout: float) -> str | None:
        """The next line (waiting up to `timeout` for data); EOFError once the pipe is closed."""
        if b"\n" not in self._buffer and not self._eof:
            ready, _, _ = select.select([self.fd], [], [], timeout)
            if ready:
                data = os.read(self.fd, 65536)
                self._buffer += data
                self._eof = not data
        if b"\n" in self._buffer:
            line, self._buffer = self._buffer.split(b"\n", 1)
            return line.decode()
        if self._eof:
            raise EOFError
        return None


def serve_leader(config: IslandConfig, island: int) -> int:
    """Commands from the runner; between them, the last round's NACKs are still answered."""
    leader = Leader(config, island)
    reader = LineReader(sys.stdin.fileno())
    try:
        leader.accept_workers()
        _emit(Ready(island, int(leader.training.theta0.size)))
        while True:
            try:
                line = reader.poll(0.0 if leader.last is not None else 0.5)
            except EOFError:
                return 0
            if line is None:
                if leader.last is not None:
                    leader.last.step(0.02)  # answers NACKs; waits up to 20 ms for a packet
                continue
            try:
                command = decode_command(line)
            except ProtocolError as err:
                _emit(Refused(island, str(err)))
                continue
            if isinstance(command, Stop):
                return 0
            if not _serve(leader, command):
                return 1
    finally:
        leader.close()


def _serve(leader: Leader, command: Reset | Prepare | Go | Join) -> bool:
    """Carry out one command and answer it; False when the island cannot go on."""
    if isinstance(command, Reset):
        leader.reset()
        _emit(ResetDone(leader.island))
    elif isinstance(command, Join):
        try:
            _emit(leader.join(command))
        except AggregationError as err:
            _emit(Failed(leader.island, str(err)))
    elif isinstance(command, Prepare):
        try:
            _emit(leader.prepare(command))
        except (ConnectionError, OSError) as err:
            why = f"a worker of the island is gone during its local phase: {err}"
            _emit(Failed(leader.island, why, command.round))
            return False
    else:
        try:
            _emit(leader.go(command))
        except AggregationError as err:
            _emit(Failed(leader.island, str(err), command.round))
    return True


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m workers.island", description=__doc__)
    parser.add_argument("config", type=Path)
    parser.add_argument("--island", type=int, required=True)
    parser.add_argument("--host", type=int, required=True, help="1: the leader")
    args = parser.parse_args(argv)
    logging.basicConfig(
        level=logging.INFO,
        stream=sys.stderr,
        format=f"%(asctime)s island {args.island}.{args.host} %(message)s",
    )
    config = IslandConfig.read(args.config)
    if args.host == 1:
        return serve_leader(config, args.island)
    return serve_worker(config, args.island, args.host)


def exit_now(status: int) -> NoReturn:
    """End with `status`, output flushed, without the interpreter's teardown (0.5 s of CPU)."""
    logging.shutdown()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):  # the runner may have closed the pipe
            stream.flush()
    os._exit(status)


if __name__ == "__main__":
    exit_now(main())
