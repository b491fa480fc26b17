/* A flow cache with per-flow counts. The parser reads a TCP or UDP packet's two port numbers
 * ahead of its transport header (lookahead of a struct), so the 5-tuple is known for both. A
 * route table picks the egress port; what it ran decides the rest (switch on action_run):
 * - a routed packet is looked up in a direct-mapped cache of 256 slots, indexed by a CRC-32 of
 *   the 5-tuple and tagged with a CRC-16 of it. The same flow (same tag) adds one packet and
 *   its length to the slot; another flow in the slot evicts it and starts again from one
 *   packet. A counter per egress port counts what was routed.
 * - a dropped packet is counted in `unrouted`, index 0. */
#include <core.p4>
#include <v1model.p4>

const bit<32> CACHE_SLOTS = 256;

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

header udp_h {
    bit<16> sport;
    bit<16> dport;
    bit<16> length;
    bit<16> checksum;
}

struct ports_t {
    bit<16> sport;
    bit<16> dport;
}

struct headers_t {
    eth_h  eth;
    ipv4_h ipv4;
    tcp_h  tcp;
    udp_h  udp;
}

struct meta_t {
    ports_t ports;
}

parser CacheParser(packet_in pkt, out headers_t hdr, inout meta_t meta,
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
            6: ports;
            17: ports;
            default: accept;
        }
    }
    state ports {
        meta.ports = pkt.lookahead<ports_t>();
        transition select(hdr.ipv4.proto) {
            6: tcp;
            default: udp;
        }
    }
    state tcp {
        pkt.extract(hdr.tcp);
        transition accept;
    }
    state udp {
        pkt.extract(hdr.udp);
        transition accept;
    }
}

control CacheVerify(inout headers_t hdr, inout meta_t meta) {
    apply { }
}

control CacheIngress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t std) {
    register<bit<16>>(CACHE_SLOTS) flow_tag;
    register<bit<32>>(CACHE_SLOTS) flow_packets;
    register<bit<32>>(CACHE_SLOTS) flow_bytes;
    counter(512, CounterType.packets_and_bytes) routed;
    counter(1, CounterType.packets) unrouted;

    action discard() {
        mark_to_drop(std);
    }
    action forward(bit<9> port) {
        std.egress_spec = port;
    }
    table routes {
        key = { hdr.ipv4.dst: lpm; }
        actions = { forward; discard; }
        default_action = discard();
    }
    action cache_flow() {
        bit<32> slot;
        bit<16> tag;
        bit<16> held;
        bit<32> packets;
        bit<32> bytes;
        hash(slot, HashAlgorithm.crc32, 32w0,
             { hdr.ipv4.src, hdr.ipv4.dst, hdr.ipv4.proto, meta.ports.sport, meta.ports.dport },
             CACHE_SLOTS);
        hash(tag, HashAlgorithm.crc16, 16w0,
             { hdr.ipv4.src, hdr.ipv4.dst, hdr.ipv4.proto, meta.ports.sport, meta.ports.dport },
             32w65536);
        flow_tag.read(held, slot);
        flow_packets.read(packets, slot);
        flow_bytes.read(bytes, slot);
        if (held != tag) {  // another flow held the slot: evict it
            packets = 0;
            bytes = 0;
        }
        flow_tag.write(slot, tag);
        flow_packets.write(slot, packets + 1);
        flow_bytes.write(slot, bytes + std.packet_length);
    }
    apply {
        if (!hdr.ipv4.isValid()) {
            discard();
            return;
        }
        switch (routes.apply().action_run) {
            forward: {
                cache_flow();
                routed.count((bit<32>) std.egress_spec);
            }
            discard: {
                unrouted.count(0);
            }
        }
    }
}

control CacheEgress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t std) {
    apply { }
}

control CacheChecksum(inout headers_t hdr, inout meta_t meta) {
    apply { }
}

control CacheDeparser(packet_out pkt, in headers_t hdr) {
    apply {
        pkt.emit(hdr.eth);
        pkt.emit(hdr.ipv4);
        pkt.emit(hdr.tcp);
        pkt.emit(hdr.udp);
    }
}

V1Switch(CacheParser(), CacheVerify(), CacheIngress(), CacheEgress(), CacheChecksum(),
         CacheDeparser()) main;
