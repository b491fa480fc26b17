"""The emulation's facts, each defined once: what the topology, the controller and the workers
agree on about every site.

    >>> pool = SlotPool.for_memory(64_000_000, 1000, PacketFormat())   # 64 MB at scale 1000
    >>> pool.slots_per_bank, pool.emulated_bytes, pool.memory_bytes
    (128, 32768, 32768000)
    >>> host_ip(3, 1), gateway_ip(3), host_mac(3, 1)
    ('10.0.3.1', '10.0.3.254', '02:00:0a:00:03:01')

Packets. A run's packet format (`innet.packetformat.PacketFormat`: its lanes, and the sizes
that follow) is chosen by its scenario and passed to what uses it; the switches are compiled with
its defines (`program_defines`) and a slot pool holds slots of its size. innet.p4 keeps a
contributor bitmap of `MAX_ISLANDS` bits, so a job has at most that many islands; the
testbed's controller installs every round under job `JOB`.

Aggregator memory. innet.p4 has two banks (`BANKS`) of SLOTS slots of the format's `slot_bytes`
(the partial sums of one chunk), SLOTS a power of two up to `MAX_SLOTS`. A site's memory M at
emulation scale s is the pool with the largest SLOTS such that BANKS x SLOTS x slot_bytes <=
M / s: both banks count, so the pool is never more memory than the site was given (`SlotPool`).

Addresses and ports. Island u is 10.0.u.0/24; its host k (1-based, host 1 the leader) is 10.0.u.k
with MAC 02:00:0a:00:uu:kk, and its edge switch (every host's gateway) is 10.0.u.254 with MAC
02:00:0a:00:uu:fe. The edge of island u has port k for host k, then port W + 1 + j for the link to
its j-th neighbour in `wan.neighbours(u)` (W hosts per island). City u's switch has device id u + 1
and serves P4Runtime on 127.0.0.1:(base + u). A leader listens for its island's other workers on TCP
`WORKER_PORT`. Leaders exchange host-side collectives (ring all-reduce, direct exchange: the `plain`
network) with each other on UDP `PacketFormat.PLAIN_UDP_PORT`, which innet.p4 routes as any IPv4
packet; the `gloo` baseline meets at island 0's leader on TCP `GLOO_PORT`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction

from innet.packetformat import PacketFormat
from innet.units import format_size
from topo.exceptions import SiteError, SlotPoolError
from topo.wan import Wan

# --- packets --------------------------------------------------------------------------------

MAX_ISLANDS = 32  # the width of innet.p4's contributor bitmap
JOB = 1  # the job id of every round the testbed installs


def program_defines(packet_format: PacketFormat, slots: int | None = None) -> dict[str, str]:
    """innet.p4's -D defines for a switch of this site plan: the packet format's and its SLOTS
    (None: the program's default)."""
    defines = packet_format.defines()
    return defines if slots is None else {**defines, "SLOTS": str(slots)}


# --- aggregator memory ----------------------------------------------------------------------

BANKS = 2
MAX_SLOTS = 65536  # the largest SLOTS innet.p4 compiles with

# --- addresses and ports --------------------------------------------------------------------

SUPERNET = "10.0.0.0/16"  # every island's hosts; each host routes it through its gateway
ISLAND_PREFIX_LENGTH = 24
LEADER_HOST = 1
MAX_HOSTS_PER_ISLAND = 253  # hosts 1..253; .254 is the gateway
MAX_SITES = 256  # 10.0.u.0/24 for u in 0..255
GATEWAY_HOST = 254
WORKER_PORT = 20042  # a leader's TCP port for its island's other workers
GLOO_PORT = 20044  # the torch.distributed (gloo) rendezvous on island 0's leader
# P4Runtime port of city 0's switch; city u's is base + u. 9559 is P4Runtime's own port, and
# below the kernel's ephemeral ports (32768-60999): a port there can be held by any client's
# outgoing connection, or its TIME_WAIT, when a switch starts, and the switch cannot listen.
GRPC_BASE_PORT = 9559
LOOPBACK = "127.0.0.1"


@dataclass(frozen=True, slots=True)
class SlotPool:
    """innet.p4's aggregator memory at one site: BANKS banks of `slots_per_bank` slots of
    `packet_format`'s slot size, at emulation `scale` (each emulated slot stands for slot_bytes x
    scale bytes of full size)."""

    slots_per_bank: int
    scale: float
    packet_format: PacketFormat

    def __post_init__(self) -> None:
        slots = self.slots_per_bank
        if not 1 <= slots <= MAX_SLOTS or slots & (slots - 1):
            raise SlotPoolError(
                f"{slots} slots per bank: innet.p4 needs a power of two from 1 to {MAX_SLOTS}"
            )
        if not self.scale > 0:
            raise SlotPoolError(f"scale must be positive, got {self.scale:g}")

    @classmethod
    def for_memory(cls, memory_bytes: int, scale: float, packet_format: PacketFormat) -> SlotPool:
        """The largest pool of `packet_format`'s slots that fits in `memory_bytes` (full scale)
        at `scale`: both banks count."""
        if not scale > 0:
            raise SlotPoolError(f"scale must be positive, got {scale:g}")
        slot = packet_format.slot_bytes
        fits = Fraction(memory_bytes) / (Fraction(scale) * BANKS * slot)
        if fits < 1:
            least = smallest_memory(scale, packet_format)
            raise SlotPoolError(
                f"{format_size(memory_bytes)} is {format_size(memory_bytes / scale)} after scale "
                f"{scale:g}, below one aggregation slot in each of {BANKS} banks "
                f"({BANKS} x {slot} B); the smallest memory at this scale is "
                f"{format_size(least)} ({least}B)"
            )
        slots = 1 << (math.floor(fits).bit_length() - 1)
        if slots > MAX_SLOTS:
            least = math.floor(Fraction(memory_bytes) / (BANKS * slot * 2 * MAX_SLOTS)) + 1
            raise SlotPoolError(
                f"{format_size(memory_bytes)} after scale {scale:g} is more than innet.p4's "
                f"largest pool ({BANKS} banks of {MAX_SLOTS} slots); raise scale to at "
                f"least {least}"
            )
        return cls(slots, scale, packet_format)

    @property
    def emulated_bytes(self) -> int:
        """What the switches hold: both banks, at emulation scale."""
        return BANKS * self.slots_per_bank * self.packet_format.slot_bytes

    @property
    def memory_bytes(self) -> int:
        """The full-scale memory the pool stands for (at most what it was made from)."""
        return round(self.emulated_bytes * self.scale)

    @property
    def slot_bytes(self) -> int:
        """The full-scale memory one emulated slot stands for."""
        return round(self.packet_format.slot_bytes * self.scale)

    def __str__(self) -> str:
        plural = "" if self.slots_per_bank == 1 else "s"
        return f"{format_size(self.memory_bytes)} ({self.slots_per_bank} slot{plural}/bank)"


def smallest_memory(scale: float, packet_format: PacketFormat) -> int:
    """The smallest full-scale memory that holds one slot in each bank after scaling."""
    return math.ceil(Fraction(scale) * BANKS * packet_format.slot_bytes)


# --- addresses ------------------------------------------------------------------------------


def _check_site(island: int, host: int | None = None) -> None:
    if not 0 <= island < MAX_SITES:
        raise SiteError(f"island {island} has no address: islands are 0..{MAX_SITES - 1}")
    if host is not None and not 1 <= host <= MAX_HOSTS_PER_ISLAND:
        raise SiteError(f"host {host} has no address: hosts are 1..{MAX_HOSTS_PER_ISLAND}")


def host_ip(island: int, host: int) -> str:
    """Host `host` (1-based; 1 is the leader) of island `island`."""
    _check_site(island, host)
    return f"10.0.{island}.{host}"


def host_mac(island: int, host: int) -> str:
    _check_site(island, host)
    return f"02:00:0a:00:{island:02x}:{host:02x}"


def gateway_ip(island: int) -> str:
    """The island's edge switch on the island's subnet: every host's gateway."""
    _check_site(island)
    return f"10.0.{island}.{GATEWAY_HOST}"


def gateway_mac(island: int) -> str:
    """The edge's MAC: what a host, or a neighbouring edge, sends the island's frames to."""
    _check_site(island)
    return f"02:00:0a:00:{island:02x}:fe"


def island_prefix(island: int) -> tuple[str, int]:
    """The island's host subnet as (network address, prefix length)."""
    _check_site(island)
    return f"10.0.{island}.0", ISLAND_PREFIX_LENGTH


# --- switch ports and P4Runtime -------------------------------------------------------------


def host_ports(hosts_per_island: int) -> tuple[int, ...]:
    """The edge's ports toward its hosts: host k on port k."""
    return tuple(range(1, hosts_per_island + 1))


def wan_ports(wan: Wan, island: int, hosts_per_island: int) -> dict[int, int]:
    """Neighbour island -> the port of `island`'s edge on the link to it (W + 1 + j)."""
    return {v: hosts_per_island + 1 + j for j, v in enumerate(wan.neighbours(island))}


def wan_port(wan: Wan, u: int, v: int, hosts_per_island: int) -> int:
    """The port of u's edge on the link to its neighbour v."""
    ports = wan_ports(wan, u, hosts_per_island)
    if v not in ports:
        raise SiteError(f"{wan.names[v]} is not a neighbour of {wan.names[u]}")
    return ports[v]


def device_id(island: int) -> int:
    return island + 1


def grpc_address(island: int, base_port: int = GRPC_BASE_PORT, host: str = LOOPBACK) -> str:
    """Where city `island`'s switch serves P4Runtime (on `host`: loopback on one machine, the
    machine's address on a network split across machines)."""
    return f"{host}:{base_port + island}"
