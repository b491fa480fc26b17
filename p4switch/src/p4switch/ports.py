"""Switch ports: one AF_PACKET raw socket per network interface, or a UDP tunnel.

Each raw socket receives every frame arriving on its interface (ETH_P_ALL, bound to the interface's
index) and sends whole Ethernet frames out of it. Sockets are non-blocking with large buffers.

An AF_PACKET socket also sees the frames sent *out of* its interface, the switch's own included.
The kernel is asked to leave those out (PACKET_IGNORE_OUTGOING, Linux 4.20+), and the receive
path drops any frame whose packet type is PACKET_OUTGOING anyway: without that the switch would
receive what it has just sent.

Linux takes the outer VLAN tag off every frame it receives (`p4switch.vlan`); the socket is asked
for PACKET_AUXDATA, which tells the receive path the tag to put back (`Port.auxdata`), and for
each frame's kernel receive time (SO_TIMESTAMPNS, `arrival_time`): egress shaping starts a frame's
link time when it reached the interface, not when the switch got round to reading it, so the
switch's own processing lag does not add to the emulated link's delay (it shows as lateness).

A tunnel port (`UdpTunnel`, opened by `open_tunnel`) carries a port's frames to a peer on another
machine instead: a UDP socket bound to a local IPv4 address and port and connected to the peer's,
so that the kernel takes datagrams from the peer only. One datagram is one Ethernet frame,
unchanged, nothing added; a frame longer than MAX_DATAGRAM_BYTES cannot be sent. The socket asks
for receive times too, and for SO_RXQ_OVFL: each datagram then brings the number of datagrams the
kernel has dropped for the socket so far (`datagram_arrival`). A `Port` says which kind it is
(`PortKind`), so that the I/O loop reads each the way it must.
"""

from __future__ import annotations

import enum
import errno
import logging
import socket
import struct
from dataclasses import dataclass

from p4switch.exceptions import PortError

log = logging.getLogger(__name__)

ETH_P_ALL = 0x0003
SOL_PACKET = 263
PACKET_AUXDATA = 8  # socket option, and the type of the ancillary message it brings
SO_TIMESTAMPNS = SCM_TIMESTAMPNS = 35  # Linux: receive times as struct timespec, CLOCK_REALTIME
_TIMESPEC = struct.Struct("=qq")  # tv_sec, tv_nsec (64-bit Linux)
STAMP_SPACE = socket.CMSG_SPACE(_TIMESPEC.size)  # the ancillary buffer a receive time needs
PACKET_IGNORE_OUTGOING = 23
SO_SNDBUFFORCE = 32  # Linux; Python's socket module does not name these two
SO_RCVBUFFORCE = 33
PACKET_OUTGOING = 4  # the packet type in recvfrom's address tuple (index 2)
PACKET_STATISTICS = 6
_TPACKET_STATS = struct.Struct("II")  # struct tpacket_stats: packets, drops
SO_RXQ_OVFL = 40  # socket option, and the ancillary message: the socket's receive drops so far
_DROP_COUNT = struct.Struct("=I")
DATAGRAM_ANCILLARY_SPACE = STAMP_SPACE + socket.CMSG_SPACE(_DROP_COUNT.size)
MAX_DATAGRAM_BYTES = 65_507  # the most a UDP datagram over IPv4 carries (65,535 - 20 - 8)
IFNAMSIZ = 15  # longest interface name Linux accepts
DEFAULT_BUFFER_BYTES = 4 * 2**20
MAX_FRAME_BYTES = 65_536 + 64  # a receive buffer that holds any frame, GRO'd ones included


class PortKind(enum.Enum):
    """What a port's socket is, and so how the I/O loop reads it."""

    PACKET = "packet"  # an AF_PACKET socket on an interface: it sees outgoing frames too
    UDP = "udp"  # a UDP tunnel: each datagram from the peer is one frame


SocketAddress = tuple[str, int]  # an IPv4 address and a UDP port


@dataclass(frozen=True)
class UdpTunnel:
    """A tunnel port's two ends: the IPv4 address and UDP port its socket binds (`local`, an
    address of this machine) and those of the peer it exchanges frames with (`peer`)."""

    local: SocketAddress
    peer: SocketAddress

    def __str__(self) -> str:
        """How the switch names the port (its `interface` in the statistics)."""
        return f"udp {self.local[0]}:{self.local[1]}->{self.peer[0]}:{self.peer[1]}"


@dataclass(frozen=True)
class Port:
    """One switch port: its name (the interface's, or the tunnel's), the interface's index (0 for
    a tunnel), the socket and its `kind`.

    `auxdata`: the socket delivers PACKET_AUXDATA, so read it with `recvmsg` and restore each
    frame's VLAN tag (`open_port` asks for it; a socket opened elsewhere is read as it is).
    """

    name: str
    ifindex: int
    sock: socket.socket
    auxdata: bool = False
    kind: PortKind = PortKind.PACKET

    def close(self) -> None:
        self.sock.close()


def _check_name(name: str) -> None:
    if not name or len(name) > IFNAMSIZ or "/" in name or any(c.isspace() for c in name):
        raise PortError(
            f"{name!r} is not a valid interface name: it must be 1 to {IFNAMSIZ} characters, "
            "with no '/' or spaces"
        )


def _set_buffer(sock: socket.socket, force: int, plain: int, size: int) -> None:
    """Set a socket buffer, past the sysctl maximum when allowed (root), else up to it."""
    try:
        sock.setsockopt(socket.SOL_SOCKET, force, size)
    except PermissionError:
        sock.setsockopt(socket.SOL_SOCKET, plain, size)


def _ask_for_auxdata(sock: socket.socket, name: str) -> bool:
    """Ask for each frame's auxdata (its VLAN tag); False, and a warning, if the kernel can't."""
    try:
        sock.setsockopt(SOL_PACKET, PACKET_AUXDATA, 1)
    except OSError as err:
        if err.errno not in (errno.ENOPROTOOPT, errno.EINVAL):
            raise
        log.warning("port %s: no PACKET_AUXDATA here; VLAN-tagged frames are seen untagged", name)
        return False
    return True


def open_port(name: str, *, buffer_bytes: int = DEFAULT_BUFFER_BYTES) -> Port:
    """Open a raw, non-blocking socket on interface `name`, or raise `PortError` saying why not."""
    _check_name(name)
    try:
        ifindex = socket.if_nametoindex(name)
    except OSError:
        raise PortError(
            f"interface {name!r} does not exist in this network namespace: create it first "
            "(e.g. one end of a veth pair) or start the switch inside the namespace that holds "
            "it (ip netns exec NAMESPACE ...)"
        ) from None
    try:
        sock = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ALL))
    except PermissionError:
        raise PortError(
            f"no permission to open a raw socket on {name!r}: run the switch as root "
            "or give the Python interpreter CAP_NET_RAW"
        ) from None
    try:
        _set_buffer(sock, SO_RCVBUFFORCE, socket.SO_RCVBUF, buffer_bytes)
        _set_buffer(sock, SO_SNDBUFFORCE, socket.SO_SNDBUF, buffer_bytes)
        try:
            sock.setsockopt(SOL_PACKET, PACKET_IGNORE_OUTGOING, 1)
        except OSError as err:
            if err.errno not in (errno.ENOPROTOOPT, errno.EINVAL):
                raise
            log.debug("kernel lacks PACKET_IGNORE_OUTGOING; filtering outgoing frames in Python")
        auxdata = _ask_for_auxdata(sock, name)
        if auxdata:  # read with recvmsg anyway: the receive time comes with the same call
            sock.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
        sock.bind((name, ETH_P_ALL))
        sock.setblocking(False)
    except OSError as err:
        sock.close()
        raise PortError(f"cannot bind a raw socket to interface {name!r}: {err.strerror}") from err
    log.debug("port %s (ifindex %d) open", name, ifindex)
    return Port(name=name, ifindex=ifindex, sock=sock, auxdata=auxdata)


def arrival_time(ancdata: list[tuple[int, int, bytes]]) -> float | None:
    """The kernel's receive time of a frame (Unix seconds) from `recvmsg`'s ancillary data, or
    None when it carries none."""
    for level, kind, data in ancdata:
        if kind == SCM_TIMESTAMPNS and level == socket.SOL_SOCKET and len(data) >= _TIMESPEC.size:
            seconds, nanoseconds = _TIMESPEC.unpack_from(data)
            return float(seconds + nanoseconds * 1e-9)
    return None


def open_tunnel(tunnel: UdpTunnel, *, buffer_bytes: int = DEFAULT_BUFFER_BYTES) -> Port:
    """Open a non-blocking UDP socket bound to `tunnel.local` and connected to `tunnel.peer`, or
    raise `PortError` saying why not (nothing is left open then)."""
    (local_ip, local_port), (peer_ip, peer_port) = tunnel.local, tunnel.peer
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        _set_buffer(sock, SO_RCVBUFFORCE, socket.SO_RCVBUF, buffer_bytes)
        _set_buffer(sock, SO_SNDBUFFORCE, socket.SO_SNDBUF, buffer_bytes)
        sock.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
        sock.setsockopt(socket.SOL_SOCKET, SO_RXQ_OVFL, 1)
        sock.bind(tunnel.local)
    except OSError as err:
        sock.close()
        if err.errno == errno.EADDRNOTAVAIL:
            why = (
                f"{local_ip} is not an address of this machine (of this network namespace): "
                "give one that `ip address` lists"
            )
        elif err.errno == errno.EADDRINUSE:
            why = f"UDP port {local_port} is in use: choose another, or stop what holds it"
        else:
            why = err.strerror or str(err)
        raise PortError(
            f"tunnel {local_ip}:{local_port}={peer_ip}:{peer_port}: cannot bind to "
            f"{local_ip}:{local_port}: {why}"
        ) from err
    try:
        sock.connect(tunnel.peer)
        sock.setblocking(False)
    except OSError as err:
        sock.close()
        raise PortError(
            f"tunnel {local_ip}:{local_port}={peer_ip}:{peer_port}: cannot send to "
            f"{peer_ip}:{peer_port}: {err.strerror} (is there a route to it?)"
        ) from err
    log.debug("port %s open", tunnel)
    return Port(name=str(tunnel), ifindex=0, sock=sock, kind=PortKind.UDP)


def datagram_arrival(ancdata: list[tuple[int, int, bytes]]) -> tuple[float | None, int | None]:
    """From a tunnel port's `recvmsg` ancillary data: the kernel's receive time of the datagram
    (Unix seconds, as `arrival_time`), and how many datagrams the kernel had dropped for the
    socket when it queued this one (since the socket was opened, modulo 2**32); None for what
    it does not carry (the kernel leaves the drop count out while it is 0)."""
    stamp: float | None = None
    dropped: int | None = None
    for level, kind, data in ancdata:
        if level != socket.SOL_SOCKET:
            continue
        if kind == SCM_TIMESTAMPNS and len(data) >= _TIMESPEC.size:
            seconds, nanoseconds = _TIMESPEC.unpack_from(data)
            stamp = float(seconds + nanoseconds * 1e-9)
        elif kind == SO_RXQ_OVFL and len(data) >= _DROP_COUNT.size:
            dropped = int(_DROP_COUNT.unpack_from(data)[0])
    return stamp, dropped


def take_kernel_drops(sock: socket.socket) -> int:
    """Frames the kernel dropped for `sock` (receive buffer full) since the previous call.

    Reading PACKET_STATISTICS resets the kernel's counters, so the caller accumulates them.
    """
    try:
        raw = sock.getsockopt(SOL_PACKET, PACKET_STATISTICS, _TPACKET_STATS.size)
    except OSError:
        return 0
    drops: int = _TPACKET_STATS.unpack(raw)[1]
    return drops
