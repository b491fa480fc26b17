"""Capture files: what the writer puts on disk reads back, byte for byte."""

from __future__ import annotations

import struct

import pytest

from p4switch.exceptions import PcapError
from p4switch.pcap import LINKTYPE_ETHERNET, PcapWriter, capture_path, read_pcap

FRAMES = [bytes(range(60)), b"\xff" * 1514, b"\x01\x02" * 7]


def test_frames_read_back_in_order(tmp_path):
    path = tmp_path / "1-in.pcap"
    with PcapWriter(path) as writer:
        for i, frame in enumerate(FRAMES):
            writer.write(frame, 1_700_000_000.25 + i)
    capture = read_pcap(path)
    assert capture.linktype == LINKTYPE_ETHERNET
    assert [r.data for r in capture.records] == FRAMES
    assert [r.orig_len for r in capture.records] == [len(f) for f in FRAMES]
    assert [r.timestamp for r in capture.records] == pytest.approx(
        [1_700_000_000.25 + i for i in range(3)], abs=1e-6
    )


def test_header_is_classic_pcap(tmp_path):
    path = tmp_path / "x.pcap"
    PcapWriter(path).close()
    magic, major, minor, zone, sigfigs, snaplen, linktype = struct.unpack(
        "<IHHiIII", path.read_bytes()
    )
    assert (magic, major, minor, zone, sigfigs) == (0xA1B2C3D4, 2, 4, 0, 0)
    assert snaplen >= 65_535
    assert linktype == 1


def test_record_header_fields(tmp_path):
    path = tmp_path / "x.pcap"
    with PcapWriter(path) as writer:
        writer.write(b"abc", 10.5)
    seconds, micros, kept, length = struct.unpack_from("<IIII", path.read_bytes(), 24)
    assert (seconds, micros, kept, length) == (10, 500_000, 3, 3)


def test_snaplen_truncates_but_keeps_wire_length(tmp_path):
    path = tmp_path / "x.pcap"
    with PcapWriter(path, snaplen=64) as writer:
        writer.write(b"q" * 1000, 1.0)
    (record,) = read_pcap(path).records
    assert record.data == b"q" * 64
    assert record.orig_len == 1000


def test_big_endian_files_are_read(tmp_path):
    path = tmp_path / "be.pcap"
    body = struct.pack(">IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1)
    body += struct.pack(">IIII", 3, 7, 2, 2) + b"hi"
    path.write_bytes(body)
    (record,) = read_pcap(path).records
    assert record.data == b"hi"
    assert record.timestamp == pytest.approx(3.000007)


@pytest.mark.parametrize(
    ("content", "word"),
    [
        (b"\x00" * 10, "too short"),
        (b"\x0a\x0d\x0d\x0a" + b"\x00" * 40, "not a classic"),
        (struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1) + b"\x00" * 5, "truncated"),
        (
            struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1)
            + struct.pack("<IIII", 0, 0, 100, 100)
            + b"x",
            "past the end",
        ),
    ],
)
def test_bad_files_are_rejected(tmp_path, content, word):
    path = tmp_path / "bad.pcap"
    path.write_bytes(content)
    with pytest.raises(PcapError, match=word):
        read_pcap(path)


def test_capture_names(tmp_path):
    assert capture_path(tmp_path, 3, "in") == tmp_path / "3-in.pcap"
    assert capture_path(tmp_path, 3, "out") == tmp_path / "3-out.pcap"
    with pytest.raises(ValueError):
        capture_path(tmp_path, 3, "both")
