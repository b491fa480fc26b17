/* What p4c 1.2.5 writes in P4Info beyond names and widths: every table's initial default
 * action with its arguments, initial entries of a const table, a key's @hidden, no @name on
 * an action reference, a selector's size semantics, a mask constant without leading zeros,
 * the errors when a table matches one, a struct in a controller header, a UTF-8 @name,
 * @pkginfo and @platform_property on main. */
#include <core.p4>
#include <v1model.p4>

struct port_pair_t {
    bit<9> port;
    bit<7> spare;
}

@controller_header("packet_out")
header packet_out_header_t {
    port_pair_t ports;
    bit<8>      reason;
}

header ethernet_t {
    bit<48> dstAddr;
    bit<48> srcAddr;
    bit<16> etherType;
}

struct headers_t {
    packet_out_header_t packet_out;
    ethernet_t          ethernet;
}

struct metadata_t {
    error parse_error;
}

parser DetailsParser(packet_in packet, out headers_t hdr, inout metadata_t meta,
                     inout standard_metadata_t standard_metadata) {
    state start {
        packet.extract(hdr.ethernet);
        transition accept;
    }
}

control DetailsVerify(inout headers_t hdr, inout metadata_t meta) { apply { } }

control DetailsIngress(inout headers_t hdr, inout metadata_t meta,
                       inout standard_metadata_t standard_metadata) {
    action set_port(bit<9> port, bit<16> tag) {
        standard_metadata.egress_spec = port;
        hdr.ethernet.etherType = tag;
    }
    action drop() { mark_to_drop(standard_metadata); }

    @selector_size_semantics("sum_of_members") @max_member_weight(100)
    action_selector(HashAlgorithm.crc16, 32w64, 32w14) balancer;

    @name("l2◕‿◕")
    table l2 {
        key = {
            hdr.ethernet.dstAddr & 0x00ff00ff00ff: ternary;
            hdr.ethernet.srcAddr: exact @hidden;
        }
        actions = { @name("forward") set_port; drop; }
        default_action = set_port(9w5, 16w0x0102);
    }
    table errors {
        key = { meta.parse_error: exact; }
        actions = { drop; NoAction; }
    }
    table ether_types {
        key = { hdr.ethernet.etherType: exact; }
        actions = { drop; NoAction; }
        const entries = { 0x88cc: drop(); }
    }
    table spread {
        key = {
            hdr.ethernet.etherType: exact;
            hdr.ethernet.srcAddr: selector;
        }
        actions = { set_port; }
        implementation = balancer;
    }
    apply {
        l2.apply();
        errors.apply();
        ether_types.apply();
        spread.apply();
    }
}

control DetailsEgress(inout headers_t hdr, inout metadata_t meta,
                      inout standard_metadata_t standard_metadata) { apply { } }

control DetailsCompute(inout headers_t hdr, inout metadata_t meta) { apply { } }

control DetailsDeparser(packet_out packet, in headers_t hdr) {
    apply { packet.emit(hdr.ethernet); }
}

@pkginfo(name = "details", version = "1.0", url = "https://example.org/details")
@platform_property(multicast_group_table_size = 16)
V1Switch(DetailsParser(), DetailsVerify(), DetailsIngress(), DetailsEgress(), DetailsCompute(),
         DetailsDeparser()) main;
