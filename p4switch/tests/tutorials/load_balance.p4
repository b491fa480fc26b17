/* Load balancing (ECMP). A destination prefix names a group of next hops: its first member's
 * index and how many there are. A CRC-16 of the packet's 5-tuple, modulo the group's size and
 * added to its first index, picks one member, so every packet of a flow takes the same path;
 * a second table maps that member to a next-hop MAC address and a port. In egress each port
 * writes its own MAC address as the source. TTL down by one, checksum computed afresh. */
#include <core.p4>
#include <v1model.p4>

header eth_h {
    bit<48> dst;
    bit<48> src;
    bit<16> ether_type;
}

header ipv4_h {
    bit<4>  version;
    bit<4>  ihl;
    bit<8>  tos;
    bit<16> total_len;
    bit<16> ident;
    bit<3>  flags;
    bit<13> frag_offset;
    bit<8>  ttl;
    bit<8>  proto;
    bit<16> checksum;
    bit<32> src;
    bit<32> dst;
}

header tcp_h {
    bit<16> sport;
    bit<16> dport;
    bit<32> seq;
    bit<32> ack;
    bit<16> offset_flags;
    bit<16> window;
    bit<16> checksum;
    bit<16> urgent;
}

struct headers_t {
    eth_h  eth;
    ipv4_h ipv4;
    tcp_h  tcp;
}

struct meta_t {
    bit<14> member;
}

parser LbParser(packet_in pkt, out headers_t hdr, inout meta_t meta,
                inout standard_metadata_t std) {
    state start {
        pkt.extract(hdr.eth);
        transition select(hdr.eth.ether_type) {
            0x0800: ipv4;
            default: accept;
        }
    }
    state ipv4 {
        pkt.extract(hdr.ipv4);
        transition select(hdr.ipv4.proto) {
            6: tcp;
            default: accept;
        }
    }
    state tcp {
        pkt.extract(hdr.tcp);
        transition accept;
    }
}

control LbVerify(inout headers_t hdr, inout meta_t meta) {
    apply { }
}

control LbIngress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t std) {
    action discard() {
        mark_to_drop(std);
    }
    action pick_member(bit<14> first, bit<14> members) {
        hash(meta.member, HashAlgorithm.crc16, first,
             { hdr.ipv4.src, hdr.ipv4.dst, hdr.ipv4.proto, hdr.tcp.sport, hdr.tcp.dport },
             members);
    }
    table groups {
        key = { hdr.ipv4.dst: lpm; }
        actions = { pick_member; discard; }
        default_action = discard();
    }
    action next_hop(bit<48> mac, bit<9> port) {
        hdr.eth.dst = mac;
        std.egress_spec = port;
        hdr.ipv4.ttl = hdr.ipv4.ttl - 1;
    }
    table members {
        key = { meta.member: exact; }
        actions = { next_hop; discard; }
        default_action = discard();
    }
    apply {
        if (hdr.ipv4.isValid() && hdr.tcp.isValid() && hdr.ipv4.ttl > 0) {
            if (groups.apply().hit) {
                members.apply();
            }
        } else {
            discard();
        }
    }
}

control LbEgress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t std) {
    action own_mac(bit<48> mac) {
        hdr.eth.src = mac;
    }
    table port_macs {
        key = { std.egress_port: exact; }
        actions = { own_mac; NoAction; }
        default_action = NoAction();
    }
    apply {
        port_macs.apply();
    }
}

control LbChecksum(inout headers_t hdr, inout meta_t meta) {
    apply {
        update_checksum(
            hdr.ipv4.isValid(),
            { hdr.ipv4.version, hdr.ipv4.ihl, hdr.ipv4.tos, hdr.ipv4.total_len,
              hdr.ipv4.ident, hdr.ipv4.flags, hdr.ipv4.frag_offset, hdr.ipv4.ttl,
              hdr.ipv4.proto, hdr.ipv4.src, hdr.ipv4.dst },
            hdr.ipv4.checksum,
            HashAlgorithm.csum16);
    }
}

control LbDeparser(packet_out pkt, in headers_t hdr) {
    apply {
        pkt.emit(hdr.eth);
        pkt.emit(hdr.ipv4);
        pkt.emit(hdr.tcp);
    }
}

V1Switch(LbParser(), LbVerify(), LbIngress(), LbEgress(), LbChecksum(), LbDeparser()) main;
