"""A target's network namespace: one veth pair per switch port, and the harness's raw sockets.

    with SwitchNamespace.create("p4d4242t0", ports=[1, 2, 3]) as ns:
        ns.interfaces             # {1: "sw1", ...}: the ends the switch binds
        ns.peers[1].send(frame)   # the other end of port 1, opened by the harness

Everything is created inside the namespace (the root namespace holds none of it), with IPv6
off (no router solicitations or MLD reports), no addresses (no ARP) and checksum offload off
on both ends; deleting the namespace removes the veths. The harness's AF_PACKET sockets are
opened inside the namespace from a short-lived thread that enters it (setns affects only the
calling thread), so the harness itself stays in the root namespace.

A peer socket sees two kinds of frames: those the switch emitted (they arrive on the peer end)
and those something other than this socket sent into the switch (PACKET_OUTGOING; the kernel
never loops a socket's own frames back to it). The second kind is recorded as stray: nothing
is dropped unseen. The kernel takes an 802.1Q/802.1ad tag off a received frame before a
packet socket sees it and reports it beside the frame (PACKET_AUXDATA); the tag is put back,
as libpcap does, so the frame is recorded as it was on the wire.
"""

from __future__ import annotations

import contextlib
import ctypes
import logging
import os
import socket
import subprocess
import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import TypeVar

from p4switch import (
    AUXDATA_SPACE,
    ETH_P_ALL,
    PACKET_AUXDATA,
    PACKET_OUTGOING,
    SOL_PACKET,
    as_on_wire,
)

from p4diff.exceptions import NetnsError

log = logging.getLogger(__name__)

CLONE_NEWNET = 0x40000000
MAX_FRAME = 65_536
NETNS_DIR = "/run/netns"  # where `ip netns add` keeps a namespace's handle

T = TypeVar("T")


def run(argv: Sequence[str], timeout: float = 15.0) -> str:
    """Run one command (an argument list); NetnsError with its stderr if it fails."""
    try:
        done = subprocess.run(
            list(argv), capture_output=True, text=True, timeout=timeout, check=False
        )
    except (OSError, subprocess.TimeoutExpired) as err:
        raise NetnsError(f"{' '.join(argv)}: {err}") from None
    if done.returncode != 0:
        raise NetnsError(f"{' '.join(argv)} failed ({done.returncode}): {done.stderr.strip()}")
    return done.stdout


def in_namespace(name: str, work: Callable[[], T]) -> T:
    """`work()` run by a thread inside namespace `name`; sockets it opens stay in there."""
    result: list[T] = []
    failure: list[BaseException] = []

    def enter_and_work() -> None:
        try:
            _setns(f"{NETNS_DIR}/{name}")
            result.append(work())
        except BaseException as err:  # handed to the caller's thread below
            failure.append(err)

    thread = threading.Thread(target=enter_and_work, name=f"netns-{name}")
    thread.start()
    thread.join()
    if failure:
        raise failure[0]
    return result[0]


def _setns(path: str) -> None:
    """Move the calling thread into the network namespace at `path` (Python 3.11 has no
    os.setns: libc's)."""
    libc = ctypes.CDLL(None, use_errno=True)
    fd = os.open(path, os.O_RDONLY)
    try:
        if libc.setns(fd, CLONE_NEWNET) != 0:
            errno = ctypes.get_errno()
            raise NetnsError(f"cannot enter the namespace {path}: {os.strerror(errno)}")
    finally:
        os.close(fd)


@dataclass(frozen=True)
class Received:
    frame: bytes
    stray: bool  # sent into the switch by something else, not emitted by it


class PeerPort:
    """The harness's end of one switch port: send frames, receive what the switch emits."""

    def __init__(self, port: int, name: str, sock: socket.socket) -> None:
        self.port, self.name, self.sock = port, name, sock

    @classmethod
    def open(cls, port: int, name: str) -> PeerPort:
        """Bind a raw socket to interface `name` (call inside the namespace)."""
        sock = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ALL))
        try:
            sock.setsockopt(SOL_PACKET, PACKET_AUXDATA, 1)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
            sock.bind((name, ETH_P_ALL))
            sock.setblocking(False)
        except OSError as err:
            sock.close()
            raise NetnsError(f"cannot open a raw socket on {name}: {err.strerror}") from None
        return cls(port, name, sock)

    def fileno(self) -> int:
        return self.sock.fileno()

    def send(self, frame: bytes) -> None:
        sent = self.sock.send(frame)
        if sent != len(frame):
            raise NetnsError(f"{self.name}: sent {sent} of {len(frame)} bytes")

    def receive_all(self) -> list[Received]:
        """Every frame waiting on the socket, tags restored."""
        out: list[Received] = []
        while True:
            try:
                data, ancdata, flags, address = self.sock.recvmsg(MAX_FRAME, AUXDATA_SPACE)
            except BlockingIOError:
                return out
            if flags & socket.MSG_TRUNC:
                raise NetnsError(f"{self.name}: a frame longer than {MAX_FRAME} bytes")
            out.append(Received(as_on_wire(data, ancdata), address[2] == PACKET_OUTGOING))

    def close(self) -> None:
        self.sock.close()


@dataclass
class SwitchNamespace:
    """A namespace holding the veth pairs of one switch under test."""

    name: str
    interfaces: dict[int, str]  # port -> the switch's end
    peers: dict[int, PeerPort]  # port -> the harness's end

    @classmethod
    @contextlib.contextmanager
    def create(cls, name: str, ports: Sequence[int]) -> Iterator[SwitchNamespace]:
        """Build the namespace and its veths, and delete them afterwards, whatever happens."""
        run(["ip", "netns", "add", name])
        ns = cls(name, {}, {})
        try:
            ns._build(ports)
            yield ns
        finally:
            ns.close()

    def _build(self, ports: Sequence[int]) -> None:
        for sysctl in ("all", "default"):
            self.exec("sysctl", "-q", "-w", f"net.ipv6.conf.{sysctl}.disable_ipv6=1")
        run(["ip", "-n", self.name, "link", "set", "lo", "up"])
        for port in ports:
            switch_end, peer_end = f"sw{port}", f"h{port}"
            run(
                [
                    "ip",
                    "-n",
                    self.name,
                    "link",
                    "add",
                    switch_end,
                    "type",
                    "veth",
                    "peer",
                    "name",
                    peer_end,
                ]
            )
            for end in (switch_end, peer_end):
                run(["ip", "-n", self.name, "link", "set", end, "up"])
                self.exec("ethtool", "-K", end, "tx", "off", "rx", "off")
            self.interfaces[port] = switch_end
        peers = in_namespace(self.name, lambda: _open_peers(ports))
        self.peers.update(peers)

    def exec(self, *argv: str) -> str:
        return run(["ip", "netns", "exec", self.name, *argv])

    def command(self, argv: Sequence[str]) -> list[str]:
        """`argv` run inside the namespace (`ip netns exec` execs it: the PID is its own)."""
        return ["ip", "netns", "exec", self.name, *argv]

    def close(self) -> None:
        """Close the harness's sockets and delete the namespace (and so its veths)."""
        for peer in self.peers.values():
            peer.close()
        self.peers.clear()
        done = subprocess.run(
            ["ip", "netns", "delete", self.name], capture_output=True, text=True, check=False
        )
        if done.returncode != 0 and "No such file" not in done.stderr:
            log.warning("could not delete namespace %s: %s", self.name, done.stderr.strip())


def _open_peers(ports: Sequence[int]) -> dict[int, PeerPort]:
    peers: dict[int, PeerPort] = {}
    try:
        for port in ports:
            peers[port] = PeerPort.open(port, f"h{port}")
    except BaseException:
        for peer in peers.values():
            peer.close()
        raise
    return peers
