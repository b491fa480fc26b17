/* A register counts packets per ingress port; a counter and a direct counter count too. */
#include <core.p4>
#include <v1model.p4>

header ethernet_t {
    bit<48> dstAddr;
    bit<48> srcAddr;
    bit<16> etherType;
}

struct headers_t {
    ethernet_t ethernet;
}

struct metadata_t {
    bit<32> seen;
}

parser P(packet_in packet, out headers_t hdr, inout metadata_t meta,
         inout standard_metadata_t standard_metadata) {
    state start {
        packet.extract(hdr.ethernet);
        transition accept;
    }
}

control VC(inout headers_t hdr, inout metadata_t meta) { apply { } }

control Ig(inout headers_t hdr, inout metadata_t meta,
           inout standard_metadata_t standard_metadata) {
    register<bit<32>>(512) packets_per_port;
    counter(512, CounterType.packets_and_bytes) port_counter;
    direct_counter(CounterType.packets_and_bytes) fwd_counter;

    action forward(bit<9> port) {
        standard_metadata.egress_spec = port;
    }
    table fwd {
        key = { hdr.ethernet.etherType: exact; }
        actions = { forward; NoAction; }
        default_action = forward(9w7);
        counters = fwd_counter;
    }
    apply {
        bit<32> index = (bit<32>) standard_metadata.ingress_port;
        packets_per_port.read(meta.seen, index);
        meta.seen = meta.seen + 1;
        packets_per_port.write(index, meta.seen);
        port_counter.count(index);
        fwd.apply();
        hdr.ethernet.srcAddr = (bit<48>) meta.seen;   // the count so far, for the test to see
    }
}

control Eg(inout headers_t hdr, inout metadata_t meta,
           inout standard_metadata_t standard_metadata) {
    apply { }
}

control CC(inout headers_t hdr, inout metadata_t meta) { apply { } }

control D(packet_out packet, in headers_t hdr) {
    apply {
        packet.emit(hdr.ethernet);
    }
}

V1Switch(P(), VC(), Ig(), Eg(), CC(), D()) main;
