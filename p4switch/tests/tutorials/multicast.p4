/* Multicast. A table on the destination MAC address sends a frame to one port or to a
 * multicast group; a frame for an unknown address goes to group 1 (flooding). The replication
 * engine makes one copy per replica of the group; egress drops the copy that would go back out
 * of the port the frame came in by, and writes the replica id into the copy's source MAC
 * address (its low 16 bits), so copies for the same port can be told apart. */
#include <core.p4>
#include <v1model.p4>

header eth_h {
    bit<48> dst;
    bit<48> src;
    bit<16> ether_type;
}

struct headers_t {
    eth_h eth;
}

struct meta_t { }

parser McParser(packet_in pkt, out headers_t hdr, inout meta_t meta,
                inout standard_metadata_t std) {
    state start {
        pkt.extract(hdr.eth);
        transition accept;
    }
}

control McVerify(inout headers_t hdr, inout meta_t meta) {
    apply { }
}

control McIngress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t std) {
    action discard() {
        mark_to_drop(std);
    }
    action unicast(bit<9> port) {
        std.egress_spec = port;
    }
    action to_group(bit<16> group) {
        std.mcast_grp = group;
    }
    table macs {
        key = { hdr.eth.dst: exact; }
        actions = { unicast; to_group; discard; }
        default_action = to_group(1);
    }
    apply {
        macs.apply();
    }
}

control McEgress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t std) {
    apply {
        if (std.instance_type == 5) {  // a multicast copy
            if (std.egress_port == std.ingress_port) {
                mark_to_drop(std);
            } else {
                hdr.eth.src[15:0] = std.egress_rid;
            }
        }
    }
}

control McChecksum(inout headers_t hdr, inout meta_t meta) {
    apply { }
}

control McDeparser(packet_out pkt, in headers_t hdr) {
    apply {
        pkt.emit(hdr.eth);
    }
}

V1Switch(McParser(), McVerify(), McIngress(), McEgress(), McChecksum(), McDeparser()) main;
