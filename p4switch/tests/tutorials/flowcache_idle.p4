/* A flow cache whose entries age, like the p4lang tutorial exercise `flowcache`: a flow's
 * first packet goes to the controller (a packet-in saying why); the controller installs an
 * entry for the flow with an idle timeout and deletes it when told the entry went idle.
 * Written for p4switch's tests. */

#include <core.p4>
#include <v1model.p4>

#define CPU_PORT 510

const bit<16> TYPE_IPV4 = 0x800;

enum bit<8> PuntReason_t {
    FLOW_UNKNOWN = 1
}

@controller_header("packet_in")
header packet_in_h {
    bit<16> input_port;
    PuntReason_t punt_reason;
}

@controller_header("packet_out")
header packet_out_h {
    bit<32> egress_port;
}

header ethernet_h {
    bit<48> dst;
    bit<48> src;
    bit<16> ether_type;
}

header ipv4_h {
    bit<8>  version_ihl;
    bit<8>  diffserv;
    bit<16> total_len;
    bit<32> id_flags;
    bit<8>  ttl;
    bit<8>  protocol;
    bit<16> checksum;
    bit<32> src;
    bit<32> dst;
}

struct headers_t {
    packet_in_h  packet_in;
    packet_out_h packet_out;
    ethernet_h   ethernet;
    ipv4_h       ipv4;
}

struct meta_t {
    bit<9> ingress_port;
    PuntReason_t punt_reason;
}

parser FlowParser(packet_in pkt, out headers_t hdr, inout meta_t meta,
                  inout standard_metadata_t sm) {
    state start {
        transition select(sm.ingress_port) {
            CPU_PORT: parse_packet_out;
            default: ethernet;
        }
    }
    state parse_packet_out {
        pkt.extract(hdr.packet_out);
        transition accept;
    }
    state ethernet {
        pkt.extract(hdr.ethernet);
        transition select(hdr.ethernet.ether_type) {
            TYPE_IPV4: ipv4;
            default: accept;
        }
    }
    state ipv4 {
        pkt.extract(hdr.ipv4);
        transition accept;
    }
}

control FlowVerify(inout headers_t hdr, inout meta_t meta) { apply { } }

control FlowIngress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    action drop_packet() {
        mark_to_drop(sm);
    }
    action cached_action(bit<9> port, bit<48> dst_mac) {
        sm.egress_spec = port;
        hdr.ethernet.dst = dst_mac;
        hdr.ipv4.ttl = hdr.ipv4.ttl |-| 1;
    }
    action flow_unknown() {
        sm.egress_spec = CPU_PORT;
        meta.ingress_port = sm.ingress_port;
        meta.punt_reason = PuntReason_t.FLOW_UNKNOWN;
    }
    table flow_cache {
        key = {
            hdr.ipv4.protocol : exact;
            hdr.ipv4.src      : exact;
            hdr.ipv4.dst      : exact;
        }
        actions = { cached_action; drop_packet; flow_unknown; }
        support_timeout = true;
        default_action = flow_unknown();
        size = 1024;
    }
    apply {
        if (hdr.packet_out.isValid()) {
            sm.egress_spec = (bit<9>) hdr.packet_out.egress_port;
            hdr.packet_out.setInvalid();
        } else if (hdr.ipv4.isValid()) {
            flow_cache.apply();
        } else {
            drop_packet();
        }
    }
}

control FlowEgress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        if (sm.egress_port == CPU_PORT) {
            hdr.packet_in.setValid();
            hdr.packet_in.input_port = (bit<16>) meta.ingress_port;
            hdr.packet_in.punt_reason = meta.punt_reason;
        }
    }
}

control FlowCompute(inout headers_t hdr, inout meta_t meta) { apply { } }

control FlowDeparser(packet_out pkt, in headers_t hdr) {
    apply {
        pkt.emit(hdr.packet_in);
        pkt.emit(hdr.ethernet);
        pkt.emit(hdr.ipv4);
    }
}

V1Switch(FlowParser(), FlowVerify(), FlowIngress(), FlowEgress(), FlowCompute(),
         FlowDeparser()) main;
