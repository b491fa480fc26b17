/* ECN marking: IPv4 forwarding as in basic.p4, and in egress a packet that is ECN-capable
 * (ECN field 1 or 2) and found a queue at least ECN_THRESHOLD packets deep when it was queued
 * is marked Congestion Experienced (ECN field 3). The header checksum is computed afresh. */
#include <core.p4>
#include <v1model.p4>

#ifndef ECN_THRESHOLD
#define ECN_THRESHOLD 10
#endif

const bit<19> QUEUE_THRESHOLD = ECN_THRESHOLD;
const bit<2> NOT_ECT = 0;
const bit<2> ECT_1 = 1;
const bit<2> ECT_0 = 2;
const bit<2> CE = 3;

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

parser EcnParser(packet_in pkt, out headers_t hdr, inout meta_t meta,
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

control EcnVerify(inout headers_t hdr, inout meta_t meta) {
    apply { }
}

control EcnIngress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t std) {
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
    apply {
        if (hdr.ipv4.isValid()) {
            routes.apply();
        }
    }
}

control EcnEgress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t std) {
    action congestion_experienced() {
        hdr.ipv4.ecn = CE;
    }
    apply {
        if (hdr.ipv4.ecn == ECT_0 || hdr.ipv4.ecn == ECT_1) {
            if (std.enq_qdepth >= QUEUE_THRESHOLD) {
                congestion_experienced();
            }
        }
    }
}

control EcnChecksum(inout headers_t hdr, inout meta_t meta) {
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

control EcnDeparser(packet_out pkt, in headers_t hdr) {
    apply {
        pkt.emit(hdr.eth);
        pkt.emit(hdr.ipv4);
    }
}

V1Switch(EcnParser(), EcnVerify(), EcnIngress(), EcnEgress(), EcnChecksum(), EcnDeparser()) main;
