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

from p4.config.v1 import p4info_pb2
from p4.v1 import p4runtime_pb2

from innet.exceptions import InnetError
from p4switch.backends import build_pipeline
from p4switch.compiler.support import csum16
from p4switch.dataplane import PacketProcessor
from p4switch.p4rt.codec import InstalledPipeline
from p4switch.p4rt.schema import P4InfoIndex
from p4switch.p4rt.write import apply_batch
from p4switch.program import CompiledProgram, compile_file

_IPV4 = struct.Struct("!BBHHHBBH4s4s")
_UDP = struct.Struct("!HHHH")
IPV4_ETHERTYPE = b"\x08\x00"
TTL = 64
UDP_PROTOCOL = 17

Endpoint = tuple[str, str]  # (IPv4 address, MAC) of a frame's source or destination


class LocalSwitchError(InnetError):
    """A write the in-process switch refused: names the update and why."""


class LocalSwitch:
    """One switch's pipeline and state, in this process: the program at `path` compiled with
    these -D defines, as the testbed's P4Switch nodes compile it, and no entries yet."""

    def __init__(
        self, path: Path, defines: Mapping[str, str] | None = None, backend: str | None = None
    ) -> None:
        self._load(compile_file(Path(path), defines=dict(defines or {})), backend)

    def fresh(self) -> LocalSwitch:
        """Another switch of the same program and back end, with a fresh state and no entries
        (the program is not compiled again)."""
        switch = LocalSwitch.__new__(LocalSwitch)
        switch._load(self._program, self._backend)
        return switch

    def _load(self, program: CompiledProgram, backend: str | None) -> None:
        self._program, self._backend = program, backend
        self.p4info: p4info_pb2.P4Info = program.p4info
        self._state = program.new_state()
        self._installed = InstalledPipeline(
            P4InfoIndex.bind(program.p4info, self._state), self._state
        )
        built = build_pipeline(
            program, self._state, backend, cpu_port=None, parser_reject="ingress"
        )
        self._pipeline: PacketProcessor = built.pipeline
        self.backend = built.choice.name  # what runs it: native unless asked or unable

    def write(self, updates: Sequence[p4runtime_pb2.Update]) -> None:
        """Apply one atomic batch, as a P4Runtime Write would; LocalSwitchError if refused."""
        with self._state.lock:
            results = apply_batch(self._installed, updates, atomic=True)
        for i, error in enumerate(results):
            if error is not None:
                raise LocalSwitchError(f"update {i} of {len(updates)} refused: {error}")

    @property
    def pipeline(self) -> PacketProcessor:
        """The pipeline itself (a native one offers `native_entry` to C callers)."""
        return self._pipeline

    def process(self, port: int, frame: bytes) -> list[tuple[int, bytes]]:
        """One frame in on `port`: the (egress port, frame) pairs it produces."""
        return self._pipeline.process(port, frame)

    def counter(self, name: str) -> list[int]:
        """The packet counts of counter `name` (P4Info name), index by index."""
        return list(self._state.counter(name).packets)


def udp_frame(payload: bytes, src: Endpoint, dst: Endpoint, port: int) -> bytes:
    """An Ethernet frame carrying `payload` over UDP from `src` to `dst`, both ports `port`."""
    udp = _UDP.pack(port, port, _UDP.size + len(payload), 0)
    addresses = IPv4Address(src[0]).packed, IPv4Address(dst[0]).packed
    head = _IPV4.pack(
        0x45, 0, _IPV4.size + len(udp) + len(payload), 0, 0, TTL, UDP_PROTOCOL, 0, *addresses
    )
    head = head[:10] + struct.pack("!H", csum16(head)) + head[12:]
    macs = bytes.fromhex(dst[1].replace(":", "")) + bytes.fromhex(src[1].replace(":", ""))
    return macs + IPV4_ETHERTYPE + head + udp + payload
