"""An ECMP program for the action profile tests: Ethernet, IPv4 and the two port fields of a
transport header. IPv4 packets go through `ecmp`, whose action_selector hashes (crc16) the
source and destination addresses, the protocol and the ports; others through `macs`, whose
action profile is constructed in the table. Every packet leaves on port 100 unless an action
sets another. Frames are built here, and the selector's field list packed as BMv2 packs it."""

from __future__ import annotations

PROGRAM = """\
#include <core.p4>
#include <v1model.p4>
header eth_t { bit<48> dst; bit<48> src; bit<16> eth_type; }
header ipv4_t {
    bit<4> version; bit<4> ihl; bit<8> diffserv; bit<16> total_len; bit<16> id;
    bit<3> flags; bit<13> frag; bit<8> ttl; bit<8> protocol; bit<16> checksum;
    bit<32> src; bit<32> dst;
}
header ports_t { bit<16> src; bit<16> dst; }
struct headers { eth_t eth; ipv4_t ipv4; ports_t ports; }
struct meta { }
parser P(packet_in p, out headers h, inout meta m, inout standard_metadata_t s) {
    state start {
        p.extract(h.eth);
        transition select(h.eth.eth_type) { 0x0800: ipv4; default: accept; }
    }
    state ipv4 { p.extract(h.ipv4); p.extract(h.ports); transition accept; }
}
control V(inout headers h, inout meta m) { apply { } }
control I(inout headers h, inout meta m, inout standard_metadata_t s) {
    action set_port(bit<9> port) { s.egress_spec = port; }
    action_selector(HashAlgorithm.crc16, 32w1024, 32w14) ecmp_selector;
    table ecmp {
        key = {
            h.ipv4.dst: lpm;
            h.ipv4.src: selector;
            h.ipv4.dst: selector;
            h.ipv4.protocol: selector;
            h.ports.src: selector;
            h.ports.dst: selector;
        }
        actions = { set_port; NoAction; }
        implementation = ecmp_selector;
    }
    table macs {
        key = { h.eth.dst: exact; }
        actions = { set_port; NoAction; }
        @name("mac_profile") implementation = action_profile(32w4);
    }
    apply {
        s.egress_spec = 100;
        if (h.ipv4.isValid()) { ecmp.apply(); } else { macs.apply(); }
    }
}
control E(inout headers h, inout meta m, inout standard_metadata_t s) { apply { } }
control C(inout headers h, inout meta m) { apply { } }
control D(packet_out p, in headers h) {
    apply { p.emit(h.eth); p.emit(h.ipv4); p.emit(h.ports); }
}
V1Switch(P(), V(), I(), E(), C(), D()) main;
"""


def ipv4_frame(src: int, dst: int, protocol: int, sport: int, dport: int) -> bytes:
    eth = bytes(6) + bytes(6) + (0x0800).to_bytes(2, "big")
    ip = bytes([0x45, 0, 0, 24, 0, 0, 0, 0, 64, protocol, 0, 0])
    ip += src.to_bytes(4, "big") + dst.to_bytes(4, "big")
    return eth + ip + sport.to_bytes(2, "big") + dport.to_bytes(2, "big")


def mac_frame(dst: int) -> bytes:
    return dst.to_bytes(6, "big") + bytes(6) + (0x88B5).to_bytes(2, "big")


def selector_fields(src: int, dst: int, protocol: int, sport: int, dport: int) -> bytes:
    """The selector keys as BMv2 packs a field list: each field's bits in turn (32 + 32 + 8 +
    16 + 16 = 104 bits, whole bytes)."""
    packed = (((((src << 32) | dst) << 8 | protocol) << 16 | sport) << 16) | dport
    return packed.to_bytes(13, "big")


def crc16_arc(data: bytes) -> int:
    """CRC-16/ARC bit by bit: polynomial 0x8005 reflected (0xA001), initial value 0, no final
    xor; its check value, of b"123456789", is 0xBB3D."""
    crc = 0
    for byte in data:
        crc ^= byte
        for _ in range(8):
            crc = (crc >> 1) ^ 0xA001 if crc & 1 else crc >> 1
    return crc
