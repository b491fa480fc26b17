/* Multicast: ingress sets mcast_grp from a table; egress stamps the replica id in the frame. */
#include <core.p4>
#include <v1model.p4>

header ethernet_t {
    bit<48> dstAddr;
    bit<48> srcAddr;
    bit<16> etherType;
}

header tag_t {
    bit<16> rid;
    bit<16> port;
    bit<8>  instance_type;
}

struct headers_t {
    ethernet_t ethernet;
    tag_t      tag;
}

struct metadata_t { }

parser P(packet_in packet, out headers_t hdr, inout metadata_t meta,
         inout standard_metadata_t standard_metadata) {
    state start {
        packet.extract(hdr.ethernet);
        transition select(hdr.ethernet.etherType) {
            0x88b5: parse_tag;
            default: accept;
        }
    }
    state parse_tag {
        packet.extract(hdr.tag);
        transition accept;
    }
}

control VC(inout headers_t hdr, inout metadata_t meta) { apply { } }

control Ig(inout headers_t hdr, inout metadata_t meta,
           inout standard_metadata_t standard_metadata) {
    action set_group(bit<16> group) {
        standard_metadata.mcast_grp = group;
    }
    table groups {
        key = { standard_metadata.ingress_port: exact; }
        actions = { set_group; NoAction; }
        default_action = NoAction();
    }
    apply {
        groups.apply();
    }
}

control Eg(inout headers_t hdr, inout metadata_t meta,
           inout standard_metadata_t standard_metadata) {
    apply {
        if (hdr.tag.isValid()) {
            hdr.tag.rid = standard_metadata.egress_rid;
            hdr.tag.port = (bit<16>) standard_metadata.egress_port;
            hdr.tag.instance_type = standard_metadata.instance_type[7:0];
        }
        if (standard_metadata.egress_port == standard_metadata.ingress_port) {
            mark_to_drop(standard_metadata);   // no echo to the sender
        }
    }
}

control CC(inout headers_t hdr, inout metadata_t meta) { apply { } }

control D(packet_out packet, in headers_t hdr) {
    apply {
        packet.emit(hdr);
    }
}

V1Switch(P(), VC(), Ig(), Eg(), CC(), D()) main;
