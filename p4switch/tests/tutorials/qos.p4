/* Quality of service: IPv4 forwarding as in basic.p4, and the DSCP (the top six bits of the
 * old type-of-service byte) set from the transport protocol: UDP gets Expedited Forwarding
 * (46), TCP Assured Forwarding class 2, low drop (AF21, 18), anything else best effort (0). The
 * two ECN bits are kept. The header checksum is computed afresh. */
#include <core.p4>
#include <v1model.p4>

const bit<6> DSCP_BEST_EFFORT = 0;
const bit<6> DSCP_AF21 = 18;
const bit<6> DSCP_EF = 46;

header eth_h {
    bit<48> dst;
    bit<48> src;
    bit<16> ether_type;
}

header ipv4_h {
    bit<4>  version;
    bit<4>  ihl;
    bit<6>  dscp;
    bit<2>  ecn;
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

struct headers_t {
    eth_h  eth;
    ipv4_h ipv4;
}

struct meta_t { }

parser QosParser(packet_in pkt, out headers_t hdr, inout meta_t meta,
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
        transition accept;
    }
}

control QosVerify(inout headers_t hdr, inout meta_t meta) {
    apply { }
}

control QosIngress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t std) {
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
    action mark(bit<6> dscp) {
        hdr.ipv4.dscp = dscp;
    }
    apply {
        if (hdr.ipv4.isValid()) {
            routes.apply();
            switch (hdr.ipv4.proto) {
                17: { mark(DSCP_EF); }
                6: { mark(DSCP_AF21); }
                default: { mark(DSCP_BEST_EFFORT); }
            }
        }
    }
}

control QosEgress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t std) {
    apply { }
}

control QosChecksum(inout headers_t hdr, inout meta_t meta) {
    apply {
        update_checksum(
            hdr.ipv4.isValid(),
            { hdr.ipv4.version, hdr.ipv4.ihl, hdr.ipv4.dscp, hdr.ipv4.ecn, hdr.ipv4.total_len,
              hdr.ipv4.ident, hdr.ipv4.flags, hdr.ipv4.frag_offset, hdr.ipv4.ttl,
              hdr.ipv4.proto, hdr.ipv4.src, hdr.ipv4.dst },
            hdr.ipv4.checksum,
            HashAlgorithm.csum16);
    }
}

control QosDeparser(packet_out pkt, in headers_t hdr) {
    apply {
        pkt.emit(hdr.eth);
        pkt.emit(hdr.ipv4);
    }
}

V1Switch(QosParser(), QosVerify(), QosIngress(), QosEgress(), QosChecksum(), QosDeparser()) main;
