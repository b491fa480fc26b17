/* I2E clone of every packet to session 5, the original forwarded and rewritten; an E2E clone
 * to session 6 of packets for 00:00:00:00:0e:2e. */
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
    @field_list(1)
    bit<16> mark;
    bit<16> other;
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
    apply {
        meta.mark = 0xbeef;
        meta.other = 0x1234;
        hdr.ethernet.etherType = 0xaaaa;    // not seen by the clone: it is the packet as it came in
        standard_metadata.egress_spec = 2;
        if (hdr.ethernet.dstAddr == 0xffffffffffff) {
            clone_preserving_field_list(CloneType.I2E, 5, 1);
        } else {
            clone(CloneType.I2E, 5);
        }
    }
}

control Eg(inout headers_t hdr, inout metadata_t meta,
           inout standard_metadata_t standard_metadata) {
    apply {
        if (standard_metadata.instance_type == 1) {
            hdr.ethernet.srcAddr = (bit<48>) (meta.mark ++ meta.other);
        }
        if (standard_metadata.instance_type == 0 && hdr.ethernet.dstAddr == 0x000000000e2e) {
            hdr.ethernet.etherType = 0xe2e0;    // the E2E clone is the packet as egress left it
            clone(CloneType.E2E, 6);
        }
        if (standard_metadata.instance_type == 2) {
            hdr.ethernet.srcAddr = (bit<48>) standard_metadata.egress_port;
        }
    }
}

control CC(inout headers_t hdr, inout metadata_t meta) { apply { } }

control D(packet_out packet, in headers_t hdr) {
    apply {
        packet.emit(hdr.ethernet);
    }
}

V1Switch(P(), VC(), Ig(), Eg(), CC(), D()) main;
