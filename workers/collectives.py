"""Which exchange sums a group's int32 contributions, by the collective the runner names.

    inna       `Aggregator`: the edges replicate and merge in line (workers/aggregate.py)
    multicast  `MulticastExchange`: the edges replicate, the host sums (workers/exchange.py)
    direct     `DirectExchange`: every member unicasts to every other, over plain IPv4
    ring       `RingAllReduce`: the pipelined ring all-reduce, over plain IPv4 (workers/ring.py)

All four are exact (int32, wrap-around) and driven alike: `allreduce_sum`, then `step` to keep
answering the other members' NACKs until the next round. The gloo baseline sums floats and is
not one of them (workers/gloo.py).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeAlias

from innet.vocabulary import EXACT_COLLECTIVES, Collective
from workers.aggregate import Aggregator
from workers.exceptions import PolicyError
from workers.exchange import DirectExchange, MulticastExchange
from workers.group import GroupSpec, SendPolicy
from workers.ring import RingAllReduce
from workers.transport import Transport
from workers.unicast import UnicastTransport

Exchange: TypeAlias = Aggregator | MulticastExchange | DirectExchange | RingAllReduce


def exchange_for(
    collective: Collective,
    edge: Transport,
    peers: UnicastTransport,
    group: GroupSpec,
    policy: SendPolicy,
    *,
    order: tuple[int, ...] = (),
    clock: Callable[[], float] = time.time,
) -> Exchange:
    """The exchange of `collective` for this group: through the edge (`inna`, `multicast`) or
    to the other leaders directly (`direct`, `ring`, in `order`)."""
    if collective == Collective.INNA:
        return Aggregator(edge, group, policy, clock=clock)
    if collective == Collective.MULTICAST:
        return MulticastExchange(edge, group, policy, clock=clock)
    if collective == Collective.DIRECT:
        return DirectExchange(peers, group, policy, clock=clock)
    if collective == Collective.RING:
        return RingAllReduce(peers, group, policy, clock=clock, order=order or None)
    known = ", ".join(EXACT_COLLECTIVES)
    raise PolicyError(f"no exact exchange is called {collective!r}; known: {known}")
