/* Basic IPv4 forwarding: a longest-prefix match on the destination address picks the next
 * hop's MAC address and the egress port; the destination MAC the frame came with (the
 * router's own) becomes its source, the TTL goes down by one, and the header checksum is
 * computed afresh in the compute-checksum control. */
#include <core.p4>
#include <v1model.p4>

typedef bit<48> mac_t;
typedef bit<32> addr_t;
typedef bit<9>  port_t;

const bit<16> ETHERTYPE_IPV4 = 0x0800;

header eth_h {
    mac_t   dst;
    mac_t   src;
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
    addr_t  src;
    addr_t  dst;
}

struct headers_t {
    eth_h  eth;
    ipv4_h ipv4;
}

struct meta_t { }

parser BasicParser(packet_in pkt, out headers_t hdr, inout meta_t meta,
                   inout standard_metadata_t std) {
    state start {
        pkt.extract(hdr.eth);
        transition select(hdr.eth.ether_type) {
            ETHERTYPE_IPV4: ipv4;
            default: accept;
        }
    }
    state ipv4 {
        pkt.extract(hdr.ipv4);
        transition accept;
    }
}

control BasicVerify(inout headers_t hdr, inout meta_t meta) {
    apply { }
}

control BasicIngress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t std) {
    action discard() {
        mark_to_drop(std);
    }
    action to_next_hop(mac_t next_hop_mac, port_t port) {
        std.egress_spec = port;
        hdr.eth.src = hdr.eth.dst;
        hdr.eth.dst = next_hop_mac;
        hdr.ipv4.ttl = hdr.ipv4.ttl - 1;
    }
    table routes {
        key = { hdr.ipv4.dst: lpm; }
        actions = { to_next_hop; discard; NoAction; }
        size = 256;
        default_action = discard();
    }
    apply {
        if (hdr.ipv4.isValid()) {
            routes.apply();
        }
    }
}

control BasicEgress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t std) {
    apply { }
}

control BasicChecksum(inout headers_t hdr, inout meta_t meta) {
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

control BasicDeparser(packet_out pkt, in headers_t hdr) {
    apply {
        pkt.emit(hdr.eth);
        pkt.emit(hdr.ipv4);
    }
}

V1Switch(BasicParser(), BasicVerify(), BasicIngress(), BasicEgress(), BasicChecksum(),
         BasicDeparser()) main;
