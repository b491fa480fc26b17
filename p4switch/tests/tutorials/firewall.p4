/* A stateful firewall: IPv4 forwarding as in basic.p4, and for TCP a bloom filter of the
 * connections opened from inside. The filter is two one-bit registers, one indexed by a CRC-16
 * and one by a CRC-32 of the connection's addresses, ports and protocol, always listed inside
 * end first so that both directions of a connection find the same bits. A table says, for an
 * ingress and an egress port, which way a packet crosses the firewall: a SYN going out sets
 * both bits; a packet coming in passes only if both bits are set. */
#include <core.p4>
#include <v1model.p4>

const bit<32> FILTER_SIZE = 4096;

const bit<8> PROTO_TCP = 6;
const bit<1> OUTBOUND = 0;
const bit<1> INBOUND = 1;

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
    bit<4>  data_offset;
    bit<4>  reserved;
    bit<1>  cwr;
    bit<1>  ece;
    bit<1>  urg;
    bit<1>  ack_flag;
    bit<1>  psh;
    bit<1>  rst;
    bit<1>  syn;
    bit<1>  fin;
    bit<16> window;
    bit<16> checksum;
    bit<16> urgent;
}

struct headers_t {
    eth_h  eth;
    ipv4_h ipv4;
    tcp_h  tcp;
}

struct meta_t { }

parser FwParser(packet_in pkt, out headers_t hdr, inout meta_t meta,
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
            PROTO_TCP: tcp;
            default: accept;
        }
    }
    state tcp {
        pkt.extract(hdr.tcp);
        transition accept;
    }
}

control FwVerify(inout headers_t hdr, inout meta_t meta) {
    apply { }
}

control FwIngress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t std) {
    register<bit<1>>(FILTER_SIZE) filter_a;
    register<bit<1>>(FILTER_SIZE) filter_b;
    bit<32> slot_a;
    bit<32> slot_b;
    bit<1> bit_a;
    bit<1> bit_b;
    bit<1> direction;

    action discard() {
        mark_to_drop(std);
    }
    action route(bit<48> next_hop_mac, bit<9> port) {
        std.egress_spec = port;
        hdr.eth.src = hdr.eth.dst;
        hdr.eth.dst = next_hop_mac;
        hdr.ipv4.ttl = hdr.ipv4.ttl - 1;
    }
    table routes {
        key = { hdr.ipv4.dst: lpm; }
        actions = { route; discard; }
        default_action = discard();
    }
    action crossing(bit<1> dir) {
        direction = dir;
    }
    table sides {
        key = {
            std.ingress_port: exact;
            std.egress_spec: exact;
        }
        actions = { crossing; NoAction; }
        default_action = NoAction();
    }
    // The two filter slots of a connection, its inside end first.
    action slots(bit<32> inside_addr, bit<32> outside_addr,
                 bit<16> inside_port, bit<16> outside_port) {
        hash(slot_a, HashAlgorithm.crc16, 32w0,
             { inside_addr, outside_addr, inside_port, outside_port, hdr.ipv4.proto },
             FILTER_SIZE);
        hash(slot_b, HashAlgorithm.crc32, 32w0,
             { inside_addr, outside_addr, inside_port, outside_port, hdr.ipv4.proto },
             FILTER_SIZE);
    }
    apply {
        if (!hdr.ipv4.isValid()) {
            discard();
            return;
        }
        routes.apply();
        if (!hdr.tcp.isValid()) {
            return;
        }
        if (sides.apply().hit) {
            if (direction == OUTBOUND) {
                slots(hdr.ipv4.src, hdr.ipv4.dst, hdr.tcp.sport, hdr.tcp.dport);
                if (hdr.tcp.syn == 1) {
                    filter_a.write(slot_a, 1);
                    filter_b.write(slot_b, 1);
                }
            } else {
                slots(hdr.ipv4.dst, hdr.ipv4.src, hdr.tcp.dport, hdr.tcp.sport);
                filter_a.read(bit_a, slot_a);
                filter_b.read(bit_b, slot_b);
                if (bit_a == 0 || bit_b == 0) {
                    discard();
                }
            }
        }
    }
}

control FwEgress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t std) {
    apply { }
}

control FwChecksum(inout headers_t hdr, inout meta_t meta) {
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

control FwDeparser(packet_out pkt, in headers_t hdr) {
    apply {
        pkt.emit(hdr.eth);
        pkt.emit(hdr.ipv4);
        pkt.emit(hdr.tcp);
    }
}

V1Switch(FwParser(), FwVerify(), FwIngress(), FwEgress(), FwChecksum(), FwDeparser()) main;
