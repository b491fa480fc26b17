"""An edge switch's program run in this process: p4switch's pipeline with no ports and no
P4Runtime server, programmed with the P4Runtime updates a controller writes to a real switch,
on the back end a switch process would choose (`backend`: None, native where it can run).

The runner's machine check (controller/runner/calibration.py) times it on innet frames, to learn
how many frames per second one core of this machine processes in a switch now:

    >>> from innet.paths import INNET_P4
    >>> switch = LocalSwitch(INNET_P4, {"SLOTS": "1"})  # as a testbed compiles it
    >>> switch.process(1, bytes(10))  # a runt frame: dropped
    []
    >>> frame = udp_frame(b"hello", ("10.0.0.1", "02:00:0a:00:00:01"),
    ...                   ("10.0.1.1", "02:00:0a:00:01:01"), 20043)
    >>> len(frame), frame[12:14].hex()  # Ethernet, IPv4, UDP, the payload
    (47, '0800')

Frames are built as a host's kernel sends them: a valid IPv4 header checksum, UDP checksum 0
(IPv4 allows it; innet's leaders send it so).
"""

from __future__ import annotations

import struct
from collections.abc import Mapping, Sequence
from ipaddress import IPv4Address
from pathlib import Path
from typing import TYPE_CHECKING

from p4switch import InProcessSwitch, PacketProcessor, compile_file

from innet.checksum import internet_checksum
from topo.exceptions import from_p4switch

if TYPE_CHECKING:
    from p4.config.v1 import p4info_pb2
    from p4.v1 import p4runtime_pb2

_IPV4 = struct.Struct("!BBHHHBBH4s4s")
_UDP = struct.Struct("!HHHH")
IPV4_ETHERTYPE = b"\x08\x00"
TTL = 64
UDP_PROTOCOL = 17

Endpoint = tuple[str, str]  # (IPv4 address, MAC) of a frame's source or destination


class LocalSwitch:
    """One switch's pipeline and state, in this process (p4switch's `InProcessSwitch`): the
    program at `path` compiled with these -D defines, as the testbed's P4Switch nodes compile
    it, and no entries yet. What p4switch refuses comes out as `topo.exceptions` errors."""

    def __init__(
        self, path: Path, defines: Mapping[str, str] | None = None, backend: str | None = None
    ) -> None:
        with from_p4switch():
            self._switch = InProcessSwitch(
                compile_file(Path(path), defines=dict(defines or {})), backend
            )

    @property
    def p4info(self) -> p4info_pb2.P4Info:
        return self._switch.p4info

    @property
    def backend(self) -> str:
        """What runs it: native unless asked for python or unable."""
        return self._switch.backend

    def fresh(self) -> LocalSwitch:
        """Another switch of the same program and back end, with a fresh state and no entries
        (the program is not compiled again)."""
        switch = LocalSwitch.__new__(LocalSwitch)
        with from_p4switch():
            switch._switch = self._switch.fresh()
        return switch

    def write(self, updates: Sequence[p4runtime_pb2.Update]) -> None:
        """Apply one atomic batch, as a P4Runtime Write would; P4SwitchFailedError if refused."""
        with from_p4switch():
            self._switch.write(updates)

    @property
    def pipeline(self) -> PacketProcessor:
        """The pipeline itself (a native one offers `native_entry` to C callers)."""
        return self._switch.pipeline

    def process(self, port: int, frame: bytes) -> list[tuple[int, bytes]]:
        """One frame in on `port`: the (egress port, frame) pairs it produces."""
        return self._switch.process(port, frame)

    def counter(self, name: str) -> list[int]:
        """The packet counts of counter `name` (P4Info name), index by index."""
        return self._switch.counter(name)


def udp_frame(payload: bytes, src: Endpoint, dst: Endpoint, port: int) -> bytes:
    """An Ethernet frame carrying `payload` over UDP from `src` to `dst`, both ports `port`."""
    udp = _UDP.pack(port, port, _UDP.size + len(payload), 0)
    addresses = IPv4Address(src[0]).packed, IPv4Address(dst[0]).packed
    head = _IPV4.pack(
        0x45, 0, _IPV4.size + len(udp) + len(payload), 0, 0, TTL, UDP_PROTOCOL, 0, *addresses
    )
    head = head[:10] + struct.pack("!H", internet_checksum(head)) + head[12:]
    macs = bytes.fromhex(dst[1].replace(":", "")) + bytes.fromhex(src[1].replace(":", ""))
    return macs + IPV4_ETHERTYPE + head + udp + payload
