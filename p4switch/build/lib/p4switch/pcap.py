"""Capture files in the classic libpcap format (microsecond timestamps, LINKTYPE_ETHERNET).

The switch writes one file per port and direction, `<port>-in.pcap` and `<port>-out.pcap`, which
tcpdump, Wireshark and scapy open directly. `read_pcap` reads such files back (tests, tools).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType

from p4switch.exceptions import PcapError

MAGIC_MICROSECONDS = 0xA1B2C3D4
VERSION = (2, 4)
LINKTYPE_ETHERNET = 1
DEFAULT_SNAPLEN = 262_144
_GLOBAL_HEADER = struct.Struct("<IHHiIII")
_RECORD_HEADER = struct.Struct("<IIII")
_BUFFER_BYTES = 2**20


def capture_path(directory: Path, port: int, direction: str) -> Path:
    """Where the switch captures `direction` ("in" or "out") traffic of `port`."""
    if direction not in ("in", "out"):
        raise ValueError(f"direction must be 'in' or 'out', got {direction!r}")
    return directory / f"{port}-{direction}.pcap"


class PcapWriter:
    """Appends frames to a new capture file; buffered, so `flush` or `close` when done."""

    def __init__(
        self, path: Path, *, snaplen: int = DEFAULT_SNAPLEN, linktype: int = LINKTYPE_ETHERNET
    ) -> None:
        self.path = path
        self._snaplen = snaplen
        self._file = path.open("wb", buffering=_BUFFER_BYTES)
        self._file.write(_GLOBAL_HEADER.pack(MAGIC_MICROSECONDS, *VERSION, 0, 0, snaplen, linktype))
        self._pack = _RECORD_HEADER.pack

    def write(self, frame: bytes, timestamp: float) -> None:
        """Record `frame` seen at `timestamp` (seconds since the epoch)."""
        seconds = int(timestamp)
        micros = int((timestamp - seconds) * 1e6)
        length = len(frame)
        kept = frame if length <= self._snaplen else frame[: self._snaplen]
        self._file.write(self._pack(seconds, micros, len(kept), length))
        self._file.write(kept)

    def flush(self) -> None:
        self._file.flush()

    def close(self) -> None:
        self._file.close()

    def __enter__(self) -> PcapWriter:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


@dataclass(frozen=True)
class PcapRecord:
    """One captured frame: when, the bytes kept, and the frame's length on the wire."""

    timestamp: float
    data: bytes
    orig_len: int


@dataclass(frozen=True)
class Capture:
    """A whole capture file: its link type, snap length and records in file order."""

    linktype: int
    snaplen: int
    records: tuple[PcapRecord, ...]


def read_pcap(path: Path) -> Capture:
    """Read a classic little- or big-endian microsecond pcap file written by any tool."""
    data = path.read_bytes()
    if len(data) < _GLOBAL_HEADER.size:
        raise PcapError(f"{path}: {len(data)} bytes is too short for a pcap header")
    for order in "<>":
        header = struct.Struct(order + "IHHiIII")
        magic, major, minor, _zone, _sigfigs, snaplen, linktype = header.unpack_from(data)
        if magic == MAGIC_MICROSECONDS:
            break
    else:
        raise PcapError(
            f"{path}: not a classic microsecond pcap file (magic {data[:4].hex()}); "
            "pcapng and nanosecond captures are not read here"
        )
    if (major, minor) != VERSION:
        raise PcapError(f"{path}: pcap version {major}.{minor}, expected 2.4")
    record_header = struct.Struct(order + "IIII")
    records = []
    offset = header.size
    while offset < len(data):
        if offset + record_header.size > len(data):
            raise PcapError(f"{path}: truncated record header at byte {offset}")
        seconds, micros, kept, length = record_header.unpack_from(data, offset)
        offset += record_header.size
        if offset + kept > len(data):
            raise PcapError(f"{path}: record at byte {offset} claims {kept} bytes past the end")
        records.append(PcapRecord(seconds + micros / 1e6, data[offset : offset + kept], length))
        offset += kept
    return Capture(linktype=linktype, snaplen=snaplen, records=tuple(records))
