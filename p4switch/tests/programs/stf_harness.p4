/* The STF harness's test program (bench/stf.py): a ternary table that rewrites a byte and picks
 * a port or a multicast group, an lpm table that picks a port, a packet counter, and egress
 * stamping the replica id. */
#include <core.p4>
#include <v1model.p4>

header ethernet_t {
    bit<48> dstAddr;
    bit<48> srcAddr;
    bit<16> etherType;
}

header probe_t {
    bit<32> f;
    bit<8>  b;
    bit<8>  rid;
}

struct headers_t {
    ethernet_t ethernet;
    probe_t    probe;
}

struct metadata_t { }

parser P(packet_in packet, out headers_t hdr, inout metadata_t meta,
         inout standard_metadata_t standard_metadata) {
    state start {
        packet.extract(hdr.ethernet);
        packet.extract(hdr.probe);
        transition accept;
    }
}

control VC(inout headers_t hdr, inout metadata_t meta) { apply { } }

control Ig(inout headers_t hdr, inout metadata_t meta,
           inout standard_metadata_t standard_metadata) {
    counter(4, CounterType.packets) seen;

    action set_b(bit<8> b, bit<9> port) {
        hdr.probe.b = b;
        standard_metadata.egress_spec = port;
    }
    action to_group(bit<16> group) {
        standard_metadata.mcast_grp = group;
    }
    action to_port(bit<9> port) {
        standard_metadata.egress_spec = port;
    }
    table classify {
        key = { hdr.probe.f: ternary; }
        actions = { set_b; to_group; NoAction; }
        default_action = NoAction();
    }
    table route {
        key = { hdr.ethernet.dstAddr: lpm; }
        actions = { to_port; NoAction; }
        default_action = NoAction();
    }
    apply {
        seen.count(0);
        route.apply();
        classify.apply();
    }
}

control Eg(inout headers_t hdr, inout metadata_t meta,
           inout standard_metadata_t standard_metadata) {
    apply {
        hdr.probe.rid = standard_metadata.egress_rid[7:0];
    }
}

control CC(inout headers_t hdr, inout metadata_t meta) { apply { } }

control D(packet_out packet, in headers_t hdr) {
    apply {
        packet.emit(hdr);
    }
}

V1Switch(P(), VC(), Ig(), Eg(), CC(), D()) main;
