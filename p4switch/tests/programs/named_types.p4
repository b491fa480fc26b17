/* Named types in P4Info as p4c 1.2.5 writes them: a `type` in the type_name of a match field,
 * an action parameter and a controller header field, described in type_info.new_types (its
 * bit<N>, or with @p4runtime_translation the URI and the controller's width, which is then the
 * field's bitwidth and a default argument's); a `type` of a `type` named after the outer one;
 * a typedef of a `type` named after the `type`; serializable enums in
 * type_info.serializable_enums (the ones P4Info objects use: a key, a register, a digest, a
 * controller header field). */
#include <core.p4>
#include <v1model.p4>

type bit<9> port_id_t;
@p4runtime_translation("example.org/p4switch/tenant_t", 32)
type bit<12> tenant_t;
type port_id_t egress_port_t;  // a new type of a new type: named after the outer one
typedef tenant_t tenant_alias_t;

enum bit<16> ether_type_t {
    IPV4 = 0x0800,
    ARP  = 0x0806
}

enum bit<8> verdict_t {  // in the packet_in header only: described all the same
    PASS = 1,
    DROP = 2
}

enum bit<8> color_t {  // in no object P4Info lists: not described
    RED   = 1,
    GREEN = 2
}

@controller_header("packet_in")
header packet_in_header_t {
    port_id_t ingress_port;
    bit<7>    pad;
    verdict_t verdict;
}

header ethernet_t {
    bit<48>      dstAddr;
    bit<48>      srcAddr;
    ether_type_t etherType;
}

header vlan_t {
    bit<4>   pcp_dei;
    tenant_t tenant;
    bit<16>  etherType;
}

struct headers_t {
    packet_in_header_t packet_in;
    ethernet_t         ethernet;
    vlan_t             vlan;
}

struct learn_t {
    bit<48>      srcAddr;
    port_id_t    port;
    ether_type_t etherType;
}

struct metadata_t {
    tenant_alias_t tenant;
    color_t        color;
}

parser ParserImpl(packet_in packet, out headers_t hdr, inout metadata_t meta,
                  inout standard_metadata_t standard_metadata) {
    state start {
        packet.extract(hdr.ethernet);
        transition select(hdr.ethernet.etherType) {
            ether_type_t.ARP: accept;
            default: parse_vlan;
        }
    }
    state parse_vlan {
        packet.extract(hdr.vlan);
        transition accept;
    }
}

control ingress(inout headers_t hdr, inout metadata_t meta,
                inout standard_metadata_t standard_metadata) {
    register<ether_type_t>(32w4) last_ether_type;

    action forward(egress_port_t port) {
        standard_metadata.egress_spec = (bit<9>)(port_id_t)port;
    }
    action set_tenant(tenant_alias_t tenant) {
        meta.tenant = tenant;
    }
    action drop() {
        mark_to_drop(standard_metadata);
    }
    table ports {
        key = {
            (port_id_t)standard_metadata.ingress_port: exact @name("ingress_port");
            hdr.vlan.tenant: ternary;
        }
        actions = { forward; drop; }
        default_action = drop();
    }
    table tenants {
        key = {
            hdr.ethernet.srcAddr: exact;
            hdr.ethernet.etherType: exact;
        }
        actions = { set_tenant; NoAction; }
        default_action = set_tenant((tenant_alias_t)12w5);  // 4 bytes in P4Info, as bit<32>
    }
    apply {
        tenants.apply();
        ports.apply();
        last_ether_type.write(32w0, hdr.ethernet.etherType);
        digest<learn_t>(32w1, {hdr.ethernet.srcAddr,
                               (port_id_t)standard_metadata.ingress_port,
                               hdr.ethernet.etherType});
    }
}

control egress(inout headers_t hdr, inout metadata_t meta,
               inout standard_metadata_t standard_metadata) {
    apply { }
}

control DeparserImpl(packet_out packet, in headers_t hdr) {
    apply {
        packet.emit(hdr.packet_in);
        packet.emit(hdr.ethernet);
        packet.emit(hdr.vlan);
    }
}

control verifyChecksum(inout headers_t hdr, inout metadata_t meta) {
    apply { }
}

control computeChecksum(inout headers_t hdr, inout metadata_t meta) {
    apply { }
}

V1Switch(ParserImpl(), verifyChecksum(), ingress(), egress(), computeChecksum(),
         DeparserImpl()) main;
