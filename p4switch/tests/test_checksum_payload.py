"""update_checksum_with_payload and verify_checksum_with_payload: the UDP checksum over the
pseudo-header, the UDP header and the payload (the bytes the parser did not extract), as BMv2
computes it; python back end (the native one refuses it by name)."""

from __future__ import annotations

import struct
from pathlib import Path

import pytest

from p4switch.exceptions import NativeUnsupported
from p4switch.program import compile_file

PROGRAM = """\
#include <core.p4>
#include <v1model.p4>
header eth_t { bit<48> dst; bit<48> src; bit<16> eth_type; }
header ipv4_t {
    bit<4> version; bit<4> ihl; bit<8> tos; bit<16> len; bit<16> id; bit<3> flags;
    bit<13> frag; bit<8> ttl; bit<8> proto; bit<16> csum; bit<32> src; bit<32> dst;
}
header udp_t { bit<16> sport; bit<16> dport; bit<16> len; bit<16> csum; }
struct headers { eth_t eth; ipv4_t ip; udp_t udp; }
struct meta { }
parser P(packet_in p, out headers h, inout meta m, inout standard_metadata_t s) {
    state start { p.extract(h.eth); p.extract(h.ip); p.extract(h.udp); transition accept; }
}
control V(inout headers h, inout meta m) {
    apply {
        verify_checksum_with_payload(h.udp.isValid(),
            { h.ip.src, h.ip.dst, 8w0, h.ip.proto, h.udp.len,
              h.udp.sport, h.udp.dport, h.udp.len }, h.udp.csum, HashAlgorithm.csum16);
    }
}
control I(inout headers h, inout meta m, inout standard_metadata_t s) {
    apply {
        s.egress_spec = 1;
        h.udp.dport = h.udp.dport + 1;  // the checksum must be made again
        h.eth.src[7:0] = (bit<8>) s.checksum_error;
    }
}
control E(inout headers h, inout meta m, inout standard_metadata_t s) { apply { } }
control C(inout headers h, inout meta m) {
    apply {
        update_checksum_with_payload(h.udp.isValid(),
            { h.ip.src, h.ip.dst, 8w0, h.ip.proto, h.udp.len,
              h.udp.sport, h.udp.dport, h.udp.len }, h.udp.csum, HashAlgorithm.csum16);
    }
}
control D(packet_out p, in headers h) { apply { p.emit(h); } }
V1Switch(P(), V(), I(), E(), C(), D()) main;
"""

SRC, DST = bytes([10, 0, 0, 1]), bytes([10, 0, 0, 2])


def udp_checksum(sport: int, dport: int, payload: bytes) -> int:
    """RFC 768 by hand: one's complement sum of the pseudo-header, header and payload."""
    length = 8 + len(payload)
    data = SRC + DST + bytes([0, 17]) + struct.pack("!HHHHH", length, sport, dport, length, 0)
    data += payload + (b"\x00" if len(payload) % 2 else b"")
    total = sum(struct.unpack(f"!{len(data) // 2}H", data))
    while total >> 16:
        total = (total & 0xFFFF) + (total >> 16)
    return ~total & 0xFFFF


def frame(dport: int, payload: bytes, csum: int) -> bytes:
    ip = bytes([0x45, 0, 0, 0, 0, 0, 0, 0, 64, 17, 0, 0]) + SRC + DST
    return bytes(12) + b"\x08\x00" + ip + struct.pack("!HHHH", 7, dport, 8 + len(payload), csum)


def compiled(tmp_path: Path):
    path = tmp_path / "udp.p4"
    path.write_text(PROGRAM)
    return compile_file(path)


@pytest.mark.parametrize("payload", [b"hello", b"even-len", b""])
def test_the_udp_checksum_covers_the_payload(tmp_path: Path, payload: bytes) -> None:
    program = compiled(tmp_path)
    pipe = program.pipeline(program.new_state())
    good = udp_checksum(7, 9, payload)
    ((_, out),) = list(pipe.process(0, frame(9, payload, good) + payload))
    assert out[11] == 0  # verified: no checksum error
    assert out[-len(payload) - 8 :][:8] == struct.pack(
        "!HHHH", 7, 10, 8 + len(payload), udp_checksum(7, 10, payload)
    )
    assert out.endswith(payload)
    ((_, out),) = list(pipe.process(0, frame(9, payload, good ^ 1) + payload))
    assert out[11] == 1  # a wrong checksum is flagged, the packet still forwarded


def test_the_native_back_end_refuses_it_by_name(tmp_path: Path) -> None:
    program = compiled(tmp_path)
    with pytest.raises(NativeUnsupported) as err:
        program.pipeline(program.new_state(), backend="native")
    assert "checksum with payload" in str(err.value)
