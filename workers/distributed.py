"""innet as a torch.distributed backend: a script's collectives as innet's exact int32 exchanges.

    dist.init_process_group(backend="innet")      # RANK, WORLD_SIZE, MASTER_ADDR/PORT as ever
    dist.all_reduce(t, op=dist.ReduceOp.AVG)      # float32/bfloat16/float16: quantised, exact sum

The backend's name is registered when torch is imported (workers/torchhook.py, an entry point
of innet's package), or by importing this module. Each rank is an island's leader; its
collectives are the host-side exchanges of the `plain` network (workers/collectives.py): the
pipelined ring (`ring`, the default, as NCCL and gloo run it) or every member to every other
(`direct`), over UDP between the ranks' addresses, every sum exact in int32 as the switches'
are. The network modes through the edges (`multicast`, `inna`) need the switches' round entries
for each group, which only `innet run` installs: they are refused here, naming the mode.

What each operation does:

- `all_reduce` SUM or AVG of a floating tensor (float32, bfloat16, float16): the group agrees on
  a bound 2**E (one chunk of exponent votes, summed), every member quantises at the shared
  scale `scale_for(E, k)`, and the int32 sum comes back as floats (AVG: over k);
- `all_reduce` SUM of an integer tensor: int32 sums, bit for bit as gloo's (wrap-around); an
  int64 value must be small enough that k of them cannot overflow int32;
- `broadcast`, `all_gather`, `all_gather_into_tensor`: the tensors' bytes as int32 words, every
  member but a slot's owner contributing zeros to it, so the sum is the owner's bytes, exact
  for any dtype;
- `barrier`: one chunk of zeros summed.

The quantisation error of a float SUM is at most k / (2 scale) per element, with scale =
floor((2**31 - 1) / k) / 2**E (workers/quantise.py): about k**2 2**E / 2**32, 2**E being the
group's largest magnitude rounded up to a power of two; AVG's is k times smaller. Every other
operation (reduce, reduce_scatter, all_to_all, gather, scatter, send, recv) and reduction
(MAX, MIN, PRODUCT, ...) raises `UnsupportedCollective` naming it: nothing falls back silently
to something else.

Where a rank is, from its environment (set by hand outside the testbed):

- `INNET_PEERS`: every rank's IPv4 address by global rank, separated by commas (default: the
  testbed's leaders, 10.0.r.1);
- `INNET_NETWORK`: `plain` (the default; the only one outside `innet run`);
- `INNET_COLLECTIVE`: `ring` (the default) or `direct`;
- `INNET_LANES`: int32 values in one innet packet (default 32);
- `INNET_RATE`: each rank's frames paced at this rate, such as `100Mbps` (default: unpaced, a
  window of chunks in flight);
- `INNET_JOB`: the job id in every packet (default 1).

Operations run in the order they are called, on one thread of the process, so `async_op=True`
gives a `Work` whose `wait()` returns once the sum is in (or raises the collective's error):
a script overlaps computation with communication as it would with gloo. A member that stops
answering makes the others' operation fail once the group's timeout (`init_process_group`'s
`timeout`, or `new_group`'s) has passed, naming the chunks missing and the silent members.
"""

from __future__ import annotations

import collections
import logging
import math
import os
import queue
import struct
import threading
import time
import zlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
import torch.distributed as dist
from torch.futures import Future

from innet.exceptions import InnetError, InputError
from innet.packetformat import DEFAULT_LANES, LANE_CHOICES, PacketFormat
from innet.units import parse_rate
from innet.vocabulary import Collective, NetworkMode
from topo.siteplan import MAX_ISLANDS, gateway_ip
from workers.aggregate import Aggregator, sleep_until
from workers.collectives import Exchange, exchange_for
from workers.control import (
    CONTROL_VARIABLE,
    ControlClient,
    ControlError,
    Finished,
    Observed,
    Want,
)
from workers.exceptions import AggregationError
from workers.exchange import DirectExchange, HostCollective
from workers.group import GroupSpec, SendPolicy
from workers.quantise import (
    agreed_exponent,
    dequantise,
    exponent_of,
    exponent_vote,
    quantise,
    scale_for,
)
from workers.ring import RingAllReduce
from workers.torchhook import BACKEND, register
from workers.transport import UdpTransport
from workers.unicast import UdpPeers, leader_address

log = logging.getLogger(__name__)

_KEY = struct.Struct("!HHB")  # job, round, group: bytes 2..6 of an innet header
TIMEOUT_S = 0.2  # a chunk's first resend timer (loopback or the emulated WAN's LAN-side)
LINGER_S = 2.0  # a finished exchange answers its peers' NACKs this long after its sum
MAX_WINDOW = 1024  # chunks in flight beyond the lowest unanswered, unpaced
MAILBOX_PACKETS = 1 << 16  # packets held for one group's later operation, at the most
MAILBOX_KEYS = 1024  # groups' operations packets are held for, at the most
FLOATS = (torch.float32, torch.bfloat16, torch.float16)
INTEGERS = (torch.int8, torch.uint8, torch.int16, torch.int32, torch.int64)
SUPPORTED = "all_reduce (SUM, AVG), broadcast, all_gather, all_gather_into_tensor and barrier"


class BackendSetupError(InputError):
    """The rank's environment does not say where it is (INNET_* variables), or the network
    mode it names cannot run here."""


class UnsupportedCollective(InnetError, NotImplementedError):
    """An operation or reduction the innet backend does not carry (it says which do)."""


class CollectiveFailed(AggregationError):
    """A collective that did not complete: the rank, the operation and why."""


# --- where this rank is ------------------------------------------------------------------------


@dataclass(frozen=True)
class RankSetup:
    """This process's rank and how it reaches the others: what every group of it shares."""

    rank: int
    addresses: tuple[str, ...]  # by global rank
    collective: Collective
    packet_format: PacketFormat
    job: int
    rate_bps: float | None
    network: NetworkMode = NetworkMode.PLAIN
    control: str | None = None  # the runner's socket: every sum as it grants (workers/control.py)

    @classmethod
    def from_env(cls, rank: int, world: int, env: dict[str, str] | None = None) -> RankSetup:
        """BackendSetupError naming the variable that is wrong."""
        env = dict(os.environ) if env is None else env
        if not 1 <= world <= MAX_ISLANDS:
            raise BackendSetupError(
                f"backend 'innet': {world} ranks; innet's packets carry at most {MAX_ISLANDS}"
            )
        control = env.get(CONTROL_VARIABLE) or None
        network = env.get("INNET_NETWORK", NetworkMode.PLAIN.value)
        if network not in (NetworkMode.PLAIN, NetworkMode.MULTICAST, NetworkMode.INNA):
            raise BackendSetupError(
                f"INNET_NETWORK={network}: give plain, multicast, inna or gloo (torch's own)"
            )
        if network != NetworkMode.PLAIN and control is None:
            raise BackendSetupError(
                f"INNET_NETWORK={network}: only the plain network (the hosts' own exchanges) runs "
                "outside innet run; multicast and inna need the switches' round entries"
            )
        collective = env.get("INNET_COLLECTIVE", Collective.RING.value)
        if collective not in (Collective.RING, Collective.DIRECT):
            raise BackendSetupError(f"INNET_COLLECTIVE={collective}: give ring or direct")
        given = env.get("INNET_PEERS")
        if given is None:
            addresses = tuple(leader_address(r) for r in range(world))
        else:
            addresses = tuple(a.strip() for a in given.split(","))
            if len(addresses) != world or not all(addresses):
                raise BackendSetupError(
                    f"INNET_PEERS names {len(addresses)} address(es) for {world} ranks: give "
                    "every rank's address, by rank, separated by commas"
                )
        return cls(
            rank,
            addresses,
            Collective(collective),
            PacketFormat(_whole(env, "INNET_LANES", DEFAULT_LANES, LANE_CHOICES)),
            _whole(env, "INNET_JOB", 1, range(1 << 16)),
            _rate(env.get("INNET_RATE")),
            NetworkMode(network),
            control,
        )


def _whole(env: dict[str, str], name: str, default: int, allowed: Sequence[int]) -> int:
    text = env.get(name)
    if text is None:
        return default
    try:
        value = int(text)
    except ValueError:
        value = -1
    if value not in allowed:
        raise BackendSetupError(f"{name}={text}: not one of the values allowed")
    return value


def _rate(text: str | None) -> float | None:
    if text is None:
        return None
    try:
        rate = parse_rate(text)
    except ValueError as err:
        raise BackendSetupError(f"INNET_RATE={text}: {err}") from None
    if not rate > 0:
        raise BackendSetupError(f"INNET_RATE={text}: a rate must be positive")
    return rate


# --- the process's one socket, shared by its groups ---------------------------------------------


class Endpoint:
    """This rank's UDP socket to the other ranks, and the packets that came for a group's
    operation other than the one running (held until that one asks: ranks run ahead)."""

    def __init__(self, where: RankSetup) -> None:
        self.where = where
        self.peers = UdpPeers(where.addresses[where.rank], lambda r: where.addresses[r])
        self.mailbox: collections.OrderedDict[tuple[int, int, int], collections.deque[bytes]]
        self.mailbox = collections.OrderedDict()

    def recv_for(self, key: tuple[int, int, int], timeout: float) -> bytes | None:
        """The next packet of the operation `key`, waiting up to `timeout`; others are held."""
        held = self.mailbox.get(key)
        if held:
            return held.popleft()
        deadline = time.monotonic() + timeout
        while True:
            data = self.peers.recv(max(0.0, deadline - time.monotonic()))
            if data is None:
                return None
            if len(data) < 2 + _KEY.size:
                continue  # not an innet packet: the exchange would refuse it too
            got = _KEY.unpack_from(data, 2)
            if got == key:
                return data
            self._hold(got, data)

    def _hold(self, key: tuple[int, int, int], data: bytes) -> None:
        box = self.mailbox.get(key)
        if box is None:
            if len(self.mailbox) >= MAILBOX_KEYS:
                self.mailbox.popitem(last=False)
            box = self.mailbox[key] = collections.deque(maxlen=MAILBOX_PACKETS)
        box.append(data)

    def has_mail(self, key: tuple[int, int, int]) -> bool:
        return bool(self.mailbox.get(key))

    def forget(self, key: tuple[int, int, int]) -> None:
        self.mailbox.pop(key, None)

    def close(self) -> None:
        self.peers.close()


class KeyedPeers:
    """One operation's view of the endpoint, as an exchange uses a `UnicastTransport`."""

    def __init__(self, endpoint: Endpoint, key: tuple[int, int, int]) -> None:
        self.endpoint, self.key = endpoint, key

    def send_to(self, island: int, payload: bytes) -> None:
        self.endpoint.peers.send_to(island, payload)

    def recv(self, timeout: float) -> bytes | None:
        return self.endpoint.recv_for(self.key, timeout)

    def close(self) -> None:
        """The endpoint outlives its operations."""


# --- the engine: every operation of the process, in order, on one thread -----------------------


@dataclass
class _Lingering:
    exchange: HostCollective
    key: tuple[int, int, int]
    until: float


class Engine:
    """The process's collectives, run one at a time in the order they were asked for; a
    finished exchange keeps answering its peers' NACKs for `LINGER_S` meanwhile."""

    def __init__(self, where: RankSetup) -> None:
        self.where = where
        self.endpoint = Endpoint(where)
        # under innet run: the runner grants every sum, and the edge carries multicast and inna
        self.control = None if where.control is None else ControlClient(where.control, where.rank)
        self.edge = None
        if self.control is not None:
            self.edge = UdpTransport(where.addresses[where.rank], gateway_ip(where.rank))
        self._asked = 0
        self._last_edge: Exchange | None = None  # answers NACKs until the next sum begins
        self._jobs: queue.Queue[tuple[Callable[[], Any], Future[Any]] | None] = queue.Queue()
        self._lingering: list[_Lingering] = []
        self._thread = threading.Thread(target=self._loop, name="innet-collectives", daemon=True)
        self._thread.start()

    def submit(self, run: Callable[[], Any]) -> Future[Any]:
        future: Future[Any] = Future()
        self._jobs.put((run, future))
        return future

    def sum(
        self,
        members: tuple[int, ...],
        group: int,
        round_: int,
        values: np.ndarray,
        deadline_s: float,
        op: str = "all_reduce",
    ) -> np.ndarray:
        """The int32 sum of `values` over `members` (global ranks), exact: one operation."""
        if self.control is not None:
            return self._granted_sum(self.control, members, values, deadline_s, op)
        where = self.where
        key = (where.job, round_ & 0xFFFF, group)
        spec = GroupSpec(where.job, key[1], group, where.rank, members, where.packet_format)
        chunks = math.ceil(values.size / where.packet_format.lanes)
        policy = SendPolicy(
            window=max(1, min(chunks, MAX_WINDOW)),
            rate_bps=where.rate_bps,
            timeout_s=TIMEOUT_S,
            max_timeout_s=4 * TIMEOUT_S,
            deadline_s=deadline_s,
            linger_s=LINGER_S,
        )
        peers = KeyedPeers(self.endpoint, key)
        exchange: HostCollective
        if where.collective == Collective.RING:
            exchange = RingAllReduce(peers, spec, policy)
        else:
            exchange = DirectExchange(peers, spec, policy)
        total = exchange.allreduce_sum(values, 1.0, between=self._serve_lingering)
        self._lingering.append(_Lingering(exchange, key, time.monotonic() + LINGER_S))
        return total

    def _granted_sum(
        self,
        control: ControlClient,
        members: tuple[int, ...],
        values: np.ndarray,
        deadline_s: float,
        op: str,
    ) -> np.ndarray:
        """The sum as the runner grants it: its round entries installed, its collective, the
        planner's policy, the group's common start; the time reported back."""
        where = self.where
        self._asked += 1
        want = Want(where.rank, self._asked, op, members, int(values.size))
        grant = control.ask(want, deadline_s, self._serve_waiting)
        collective = Collective(grant.collective)
        wire = grant.number & 0xFFFF
        spec = GroupSpec(where.job, wire, grant.group, where.rank, members, where.packet_format)
        key = (where.job, wire, grant.group)
        assert self.edge is not None
        self._last_edge = None
        while self.edge.recv(0.0) is not None:
            pass  # late packets of finished sums
        exchange = exchange_for(
            collective,
            self.edge,
            KeyedPeers(self.endpoint, key),
            spec,
            grant.policy,
            order=grant.order,
        )
        sleep_until(grant.start_at)
        if isinstance(exchange, Aggregator):
            total = exchange.allreduce_sum(values, 1.0)
        else:
            total = exchange.allreduce_sum(values, 1.0, between=self._serve_lingering)
        done_at = time.time()
        finished = Finished(
            where.rank,
            want.seq,
            done_at - grant.start_at,
            done_at,
            exchange.stats.retransmitted,
            exchange.pacing_lag_s,
        )
        control.send(finished)
        if isinstance(exchange, DirectExchange | RingAllReduce):
            self._lingering.append(_Lingering(exchange, key, time.monotonic() + LINGER_S))
        else:
            self._last_edge = exchange
        return total

    def _serve_waiting(self) -> None:
        """While the runner has not granted: the last sums answer their peers' NACKs."""
        self._serve_lingering()
        if self._last_edge is not None:
            try:
                self._last_edge.step(0.0)
            except InnetError as err:
                log.debug("answering the last sum's NACKs: %s", err)

    def _serve_lingering(self) -> None:
        now = time.monotonic()
        kept = []
        for done in self._lingering:
            if done.until < now:
                self.endpoint.forget(done.key)
                continue
            if self.endpoint.has_mail(done.key):
                try:
                    done.exchange.step(0.0)
                except InnetError as err:  # a peer's stray packet: it is the peer's to recover
                    log.debug("answering %s: %s", done.key, err)
            kept.append(done)
        self._lingering = kept

    def _loop(self) -> None:
        while True:
            try:
                job = self._jobs.get(timeout=0.01 if self._lingering else None)
            except queue.Empty:
                self._serve_lingering()
                continue
            if job is None:
                return
            run, future = job
            try:
                result = run()
            except BaseException as err:  # the caller's wait() raises it
                future.set_exception(err)
            else:
                future.set_result(result)

    def close(self) -> None:
        self._jobs.put(None)
        self._thread.join(timeout=LINGER_S + 5.0)
        self.endpoint.close()
        if self.edge is not None:
            self.edge.close()
        if self.control is not None:
            self.control.close()


_ENGINE: Engine | None = None
_ENGINE_LOCK = threading.Lock()


def engine(where: RankSetup) -> Engine:
    """The process's engine (one socket, one thread), made by its first group."""
    global _ENGINE
    with _ENGINE_LOCK:
        if _ENGINE is None:
            _ENGINE = Engine(where)
        elif _ENGINE.where != where:
            raise BackendSetupError(
                f"backend 'innet': this process is rank {_ENGINE.where.rank} already; one "
                "process is one rank"
            )
        return _ENGINE


# --- work and the process group ----------------------------------------------------------------


class InnetWork(dist._Work):
    """An operation under way; `wait()` returns True once it is done, or raises its error."""

    def __init__(self, future: Future[Any]) -> None:
        super().__init__()
        self.future = future

    def wait(self, timeout: Any = None) -> bool:
        self.future.wait()
        return True

    def is_completed(self) -> bool:
        return bool(self.future.done())

    def is_success(self) -> bool:
        if not self.future.done():
            return False
        try:
            self.future.value()
        except Exception:
            return False
        return True

    def get_future(self) -> Future[Any]:
        return self.future


class InnetProcessGroup(dist.ProcessGroup):
    """A group of ranks whose collectives are innet's exchanges (the module's docstring)."""

    def __init__(self, opts: Any, where: RankSetup) -> None:
        super().__init__(opts.group_rank, opts.group_size)  # type: ignore[call-arg]
        ranks = list(opts.global_ranks_in_group) or list(range(opts.group_size))
        self.members = tuple(ranks)
        self.where = where
        self.engine = engine(where)
        text = str(opts.group_id)
        self.group = (int(text) if text.isdigit() else zlib.crc32(text.encode())) % 256
        self.deadline_s = max(1.0, opts.timeout.total_seconds())
        self._round = 0
        self._count = 0

    def getBackendName(self) -> str:
        return BACKEND

    # -- what it carries --------------------------------------------------------------------

    def allreduce(  # type: ignore[override]  # torch's overloads
        self, tensors: list[torch.Tensor], opts: Any
    ) -> InnetWork:
        tensor = self._one(tensors, "all_reduce")
        op = opts.reduceOp
        average = op == dist.ReduceOp.AVG
        if not (average or op == dist.ReduceOp.SUM):
            raise UnsupportedCollective(
                f"backend 'innet' has no all_reduce {_op_name(op)}: the network sums; it carries "
                f"{SUPPORTED}"
            )
        if tensor.dtype in INTEGERS and average:
            raise UnsupportedCollective(
                f"backend 'innet': all_reduce AVG of {tensor.dtype} (an integer mean is not "
                "exact): use SUM"
            )
        if tensor.dtype not in FLOATS + INTEGERS:
            raise UnsupportedCollective(
                f"backend 'innet': all_reduce of {tensor.dtype}; it sums "
                f"{', '.join(str(t) for t in FLOATS + INTEGERS)}"
            )
        return self._submit("all_reduce", lambda: self._allreduce(tensor, average))

    def broadcast(  # type: ignore[override]  # torch's overloads
        self, tensors: list[torch.Tensor], opts: Any
    ) -> InnetWork:
        tensor = self._one(tensors, "broadcast")
        root = int(opts.rootRank)
        return self._submit("broadcast", lambda: self._broadcast(tensor, root))

    def allgather(  # type: ignore[override]  # torch's overloads
        self, outputs: list[list[torch.Tensor]], inputs: list[torch.Tensor], opts: Any
    ) -> InnetWork:
        tensor = self._one(inputs, "all_gather")
        if len(outputs) != 1 or len(outputs[0]) != self.size():
            raise UnsupportedCollective(
                f"backend 'innet': all_gather takes one tensor into a list of {self.size()}"
            )
        slots = list(outputs[0])
        return self._submit("all_gather", lambda: self._gather(tensor, slots))

    def _allgather_base(  # type: ignore[override]  # torch's overloads
        self, output: torch.Tensor, input_: torch.Tensor, opts: Any
    ) -> InnetWork:
        if output.numel() != input_.numel() * self.size() or output.dtype != input_.dtype:
            raise UnsupportedCollective(
                f"backend 'innet': all_gather_into_tensor needs an output of {self.size()} times "
                f"the input's {input_.numel()} {input_.dtype} values"
            )
        slots = list(output.view(-1).chunk(self.size()))
        return self._submit("all_gather_into_tensor", lambda: self._gather(input_, slots))

    def all_gather_single(  # type: ignore[override]  # torch's overloads
        self, output: torch.Tensor, input_: torch.Tensor, opts: Any
    ) -> InnetWork:
        """`all_gather_into_tensor` (torch's newer name for `_allgather_base`)."""
        return self._allgather_base(output, input_, opts)

    def barrier(self, opts: Any = None) -> InnetWork:
        lanes = self.where.packet_format.lanes
        return self._submit("barrier", lambda: self._sum(np.zeros(lanes, np.int32), "barrier"))

    # -- what it does not -------------------------------------------------------------------

    def reduce(self, *_args: Any) -> InnetWork:
        raise _unsupported("reduce")

    def reduce_scatter(self, *_args: Any) -> InnetWork:
        raise _unsupported("reduce_scatter")

    def _reduce_scatter_base(self, *_args: Any) -> InnetWork:
        raise _unsupported("reduce_scatter_tensor")

    def reduce_scatter_single(self, *_args: Any) -> InnetWork:
        raise _unsupported("reduce_scatter_tensor")

    def reduce_scatter_tensor_coalesced(self, *_args: Any) -> InnetWork:
        raise _unsupported("reduce_scatter_tensor (coalesced)")

    def alltoall(self, *_args: Any) -> InnetWork:
        raise _unsupported("all_to_all")

    def alltoall_base(self, *_args: Any) -> InnetWork:
        raise _unsupported("all_to_all_single")

    def all_to_all_single(self, *_args: Any) -> InnetWork:
        raise _unsupported("all_to_all_single")

    def monitored_barrier(self, *_args: Any) -> InnetWork:
        raise _unsupported("monitored_barrier (use barrier)")

    def gather(self, *_args: Any) -> InnetWork:
        raise _unsupported("gather")

    def scatter(self, *_args: Any) -> InnetWork:
        raise _unsupported("scatter")

    def send(self, *_args: Any) -> InnetWork:
        raise _unsupported("send")

    def recv(self, *_args: Any) -> InnetWork:
        raise _unsupported("recv")

    def recv_anysource(self, *_args: Any) -> InnetWork:
        raise _unsupported("recv (from any source)")

    def allreduce_coalesced(self, *_args: Any) -> InnetWork:
        raise _unsupported("all_reduce_coalesced")

    def allgather_coalesced(self, *_args: Any) -> InnetWork:
        raise _unsupported("all_gather_coalesced")

    def allgather_into_tensor_coalesced(self, *_args: Any) -> InnetWork:
        raise _unsupported("all_gather_into_tensor (coalesced)")

    def all_gather_single_coalesced(self, *_args: Any) -> InnetWork:
        raise _unsupported("all_gather_into_tensor (coalesced)")

    # -- the operations, on the engine's thread ---------------------------------------------

    def _submit(self, name: str, run: Callable[[], Any]) -> InnetWork:
        self._count += 1
        number = self._count

        def checked() -> Any:
            try:
                return run()
            except InnetError as err:
                raise CollectiveFailed(
                    f"rank {self.where.rank}: {name} #{number} over ranks "
                    f"{', '.join(map(str, self.members))}: {err}"
                ) from err

        return InnetWork(self.engine.submit(checked))

    def _sum(self, values: np.ndarray, op: str) -> np.ndarray:
        """One exact int32 sum over the group (a group of one keeps its own)."""
        if self.size() == 1:
            return values.copy()
        round_ = self._round
        self._round = (self._round + 1) & 0xFFFF
        return self.engine.sum(self.members, self.group, round_, values, self.deadline_s, op)

    def _allreduce(self, tensor: torch.Tensor, average: bool) -> list[torch.Tensor]:
        k, flat = self.size(), tensor.detach().reshape(-1)
        if flat.numel() == 0:  # every member's is empty (torch's contract): nothing to sum
            return [tensor]
        if tensor.dtype in INTEGERS:
            values = flat.to(torch.int64).numpy()
            if tensor.dtype == torch.int64:
                limit = np.iinfo(np.int32).max // k
                if values.size and int(np.max(np.abs(values))) > limit:
                    raise CollectiveFailed(
                        f"an int64 value of {int(np.max(np.abs(values)))} is beyond the "
                        f"{limit} that keeps the sum of {k} within int32"
                    )
            total = self._sum(values.astype(np.int32), "all_reduce")
            tensor.copy_(torch.from_numpy(total.astype(np.int64)).to(tensor.dtype).view_as(tensor))
            return [tensor]
        x = flat.to(torch.float32).numpy()
        lanes = self.where.packet_format.lanes
        votes = self._sum(exponent_vote(exponent_of(x, lanes), lanes), "all_reduce vote")
        scale = scale_for(agreed_exponent(votes), k)
        total = dequantise(self._sum(quantise(x, scale, k), "all_reduce"), scale)
        if average:
            total = total / np.float32(k)
        tensor.copy_(torch.from_numpy(total).to(tensor.dtype).view_as(tensor))
        return [tensor]

    def _broadcast(self, tensor: torch.Tensor, root: int) -> list[torch.Tensor]:
        """Every member gets the root's bytes (the others contribute zeros)."""
        if not 0 <= root < self.size():
            raise CollectiveFailed(f"root rank {root} is not in a group of {self.size()}")
        mine = _as_words(tensor) if self.rank() == root else np.zeros(_words(tensor), np.int32)
        _from_words(self._sum(mine, "broadcast"), tensor)
        return [tensor]

    def _gather(self, tensor: torch.Tensor, slots: list[torch.Tensor]) -> list[torch.Tensor]:
        """All-gather: every member's bytes in its own slot of one sum."""
        words = _words(tensor)
        for slot in slots:
            if slot.numel() != tensor.numel() or slot.dtype != tensor.dtype:
                raise CollectiveFailed(
                    f"all_gather: an output of {slot.numel()} {slot.dtype} values for an input "
                    f"of {tensor.numel()} {tensor.dtype}: every rank's tensor has the same size"
                )
        values = np.zeros(words * self.size(), np.int32)
        me = self.rank()
        values[me * words : (me + 1) * words] = _as_words(tensor)
        total = self._sum(values, "all_gather")
        for i, slot in enumerate(slots):
            _from_words(total[i * words : (i + 1) * words], slot)
        return slots

    def _one(self, tensors: list[torch.Tensor], name: str) -> torch.Tensor:
        if len(tensors) != 1:
            raise UnsupportedCollective(
                f"backend 'innet': {name} of {len(tensors)} tensors at once"
            )
        tensor = tensors[0]
        if tensor.device.type != "cpu":
            raise UnsupportedCollective(
                f"backend 'innet': {name} of a tensor on {tensor.device}: it carries CPU tensors"
            )
        return tensor


def _unsupported(name: str) -> UnsupportedCollective:
    return UnsupportedCollective(f"backend 'innet' has no {name}: it carries {SUPPORTED}")


def _op_name(op: Any) -> str:
    for name in ("MAX", "MIN", "PRODUCT", "BAND", "BOR", "BXOR", "PREMUL_SUM"):
        if op == getattr(dist.ReduceOp, name):
            return name
    return str(op)


def _words(tensor: torch.Tensor) -> int:
    """The int32 words a tensor's bytes take."""
    return -(-tensor.numel() * tensor.element_size() // 4)


def _as_words(tensor: torch.Tensor) -> np.ndarray:
    raw = tensor.detach().contiguous().reshape(-1).view(torch.uint8).numpy()
    padded = np.zeros(_words(tensor) * 4, np.uint8)
    padded[: raw.size] = raw
    return padded.view(np.int32)


def _from_words(words: np.ndarray, into: torch.Tensor) -> None:
    raw = np.ascontiguousarray(words, np.int32).view(np.uint8)[: into.numel() * into.element_size()]
    got = torch.frombuffer(bytearray(raw.tobytes()), dtype=torch.uint8)
    into.copy_(got.view(into.dtype).view_as(into))


# torch's gloo operations a run records (its name in torch.distributed, the input's argument)
OBSERVED = {
    "allreduce": ("all_reduce", 0),
    "broadcast": ("broadcast", 0),
    "allgather": ("all_gather", 1),
    "_allgather_base": ("all_gather_into_tensor", 1),
    "reduce": ("reduce", 0),
    "reduce_scatter": ("reduce_scatter", 1),
    "_reduce_scatter_base": ("reduce_scatter_tensor", 1),
    "alltoall_base": ("all_to_all_single", 1),
    "gather": ("gather", 1),
    "scatter": ("scatter", 1),
    "barrier": ("barrier", None),
}
FORWARDED = ("allreduce_coalesced", "allgather_coalesced", "alltoall", "send", "recv")


class ObservedGloo(dist.ProcessGroup):
    """Torch's own gloo group under `innet run`'s gloo baseline, each collective's call and
    result times told to the runner (workers/control.py `Observed`): it records gloo's
    collectives beside the planner's plain-WAN prices as it records innet's."""

    def __init__(self, opts: Any, gloo: Any, observer: ControlClient) -> None:
        super().__init__(opts.group_rank, opts.group_size)  # type: ignore[call-arg]
        self.gloo, self.observer = gloo, observer
        ranks = list(opts.global_ranks_in_group) or list(range(opts.group_size))
        self.members = tuple(ranks)
        self.me = self.members[opts.group_rank]

    def getBackendName(self) -> str:
        return "gloo"

    def _observed(self, name: str, args: tuple[Any, ...]) -> Any:
        op, source = OBSERVED[name]
        values = 0 if source is None else _bytes_of(args[source]) // 4
        began = time.time()
        work = getattr(self.gloo, name)(*args)

        def seen(_done: Any) -> None:
            seen_at = Observed(self.me, op, self.members, values, began, time.time())
            try:
                self.observer.send(seen_at)
            except ControlError as err:  # the run is over: nothing to tell
                log.debug("not observed: %s", err)

        work.get_future().add_done_callback(seen)
        return work


def _observing(name: str) -> Callable[..., Any]:
    def method(self: ObservedGloo, *args: Any) -> Any:
        return self._observed(name, args)

    return method


def _forwarding(name: str) -> Callable[..., Any]:
    def method(self: ObservedGloo, *args: Any) -> Any:
        return getattr(self.gloo, name)(*args)

    return method


for _name in OBSERVED:
    setattr(ObservedGloo, _name, _observing(_name))
for _name in FORWARDED:
    setattr(ObservedGloo, _name, _forwarding(_name))


def _bytes_of(given: Any) -> int:
    """The bytes of a tensor, or of the tensors in (nested) lists of them."""
    if isinstance(given, torch.Tensor):
        return given.numel() * given.element_size()
    if isinstance(given, list | tuple):
        return sum(_bytes_of(item) for item in given)
    return 0


_OBSERVER: ControlClient | None = None


def _observer(path: str) -> ControlClient:
    """The process's one channel to the runner (its rank is the world's)."""
    global _OBSERVER
    with _ENGINE_LOCK:
        if _OBSERVER is None:
            _OBSERVER = ControlClient(path, int(os.environ.get("RANK", "0")))
        return _OBSERVER


def process_group(opts: Any) -> InnetProcessGroup | ObservedGloo | dist.ProcessGroupGloo:
    """The group torch asks for (`init_process_group`, then any `new_group`): the process's
    place is read from its environment with its first group (whose ranks are the world's).

    With `INNET_NETWORK=gloo` (the gloo baseline of `innet run`) it is torch's own gloo group,
    over TCP through the emulated WAN on the interface `GLOO_SOCKET_IFNAME` names: the script
    runs as its users run it today, and innet carries none of its bytes."""
    if os.environ.get("INNET_NETWORK") == NetworkMode.GLOO:
        gloo = dist.ProcessGroupGloo(opts.store, opts.group_rank, opts.group_size, opts.timeout)
        control = os.environ.get(CONTROL_VARIABLE)
        return gloo if not control else ObservedGloo(opts, gloo, _observer(control))
    with _ENGINE_LOCK:
        known = _ENGINE.where if _ENGINE is not None else None
    where = known or RankSetup.from_env(opts.group_rank, opts.group_size)
    return InnetProcessGroup(opts, where)


register()
