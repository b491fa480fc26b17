"""How island leaders reach each other directly: innet packets over plain UDP, port 20043.

The host-side collectives (`workers.exchange.DirectExchange`, `workers.ring.RingAllReduce`) send
their packets from leader to leader; the edges only route them (docs/protocol.md, "Host-side
collectives"). A `UnicastTransport` moves one innet packet (the UDP payload) to the leader of
another island and hands back what arrived. `UdpPeers` is the real one: a UDP socket bound to
the leader's own address on `PacketFormat.PLAIN_UDP_PORT`, sending to `address_of(island)` on
the same port; `leader_address` gives the testbed's leader addresses.
"""

from __future__ import annotations

import logging
import select
from collections.abc import Callable
from typing import Protocol

from innet.packetformat import PacketFormat
from topo.siteplan import LEADER_HOST, host_ip
from workers.exceptions import TransportError
from workers.transport import UdpSocket

log = logging.getLogger(__name__)

SEND_STALL_S = 1.0  # longest wait for a full send buffer to drain before trying again


class UnicastTransport(Protocol):
    def send_to(self, island: int, payload: bytes) -> None:
        """Send one innet packet (the UDP payload) to the leader of `island`."""
        ...

    def recv(self, timeout: float) -> bytes | None:
        """The next UDP payload for this leader, or None after `timeout` seconds (0: poll)."""
        ...

    def close(self) -> None: ...


def leader_address(island: int) -> str:
    """The IPv4 address of the leader of `island` in the testbed's site plan."""
    return host_ip(island, LEADER_HOST)


class UdpPeers(UdpSocket):
    """A UDP socket on (local_ip, port) sending to (address_of(island), port); large buffers."""

    def __init__(
        self,
        local_ip: str,
        address_of: Callable[[int], str],
        port: int = PacketFormat.PLAIN_UDP_PORT,
    ) -> None:
        super().__init__(local_ip, port, "peers of the host-side collectives")
        self.port = port
        self._address_of = address_of
        self._addresses: dict[int, tuple[str, int]] = {}

    def _address(self, island: int) -> tuple[str, int]:
        address = self._addresses.get(island)
        if address is None:
            address = self._addresses[island] = (self._address_of(island), self.port)
        return address

    def send_to(self, island: int, payload: bytes) -> None:
        sock = self._socket()
        address = self._address(island)
        while True:
            try:
                sock.sendto(payload, address)
                return
            except BlockingIOError:  # send buffer full: wait until it drains
                select.select([], [sock], [], SEND_STALL_S)
            except OSError as exc:
                raise TransportError(
                    f"cannot send to island {island}'s leader at {address[0]}:{address[1]}: "
                    f"{exc.strerror or exc}; is there a route to it from {self.local[0]}?"
                ) from exc
