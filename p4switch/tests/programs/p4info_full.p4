/* Every kind of P4Info object p4switch emits: tables, actions, counters, a direct counter,
 * registers, controller headers, @name (local and top-level), @id, const default action. */
#include <core.p4>
#include <v1model.p4>

#define CPU_PORT 255

@controller_header("packet_in")
header packet_in_header_t {
    bit<9> ingress_port;
    bit<7> _pad;
}

@controller_header("packet_out")
header packet_out_header_t {
    bit<9>  egress_port;
    bit<7>  _pad;
    bit<16> magic;
}

header ethernet_t {
    bit<48> dstAddr;
    bit<48> srcAddr;
    bit<16> etherType;
}

struct headers_t {
    packet_out_header_t packet_out;
    packet_in_header_t  packet_in;
    ethernet_t          ethernet;
}

struct metadata_t { }

parser P(packet_in packet, out headers_t hdr, inout metadata_t meta,
         inout standard_metadata_t standard_metadata) {
    state start {
        transition select(standard_metadata.ingress_port) {
            CPU_PORT: parse_packet_out;
            default: parse_ethernet;
        }
    }
    state parse_packet_out {
        packet.extract(hdr.packet_out);
        transition parse_ethernet;
    }
    state parse_ethernet {
        packet.extract(hdr.ethernet);
        transition accept;
    }
}

control VC(inout headers_t hdr, inout metadata_t meta) { apply { } }

control MyIngress(inout headers_t hdr, inout metadata_t meta,
                  inout standard_metadata_t standard_metadata) {
    register<bit<32>>(128) rx;
    @name(".global_bytes") register<bit<64>>(1) total_bytes;
    counter(64, CounterType.packets) port_packets;
    @id(0x12000abc) counter(64, CounterType.bytes) port_bytes;
    direct_counter(CounterType.packets_and_bytes) l2_hits;

    action forward(bit<9> port) {
        standard_metadata.egress_spec = port;
    }
    @name("punt") action send_to_cpu() {
        standard_metadata.egress_spec = CPU_PORT;
        hdr.packet_in.setValid();
        hdr.packet_in.ingress_port = standard_metadata.ingress_port;
    }
    action drop() {
        mark_to_drop(standard_metadata);
    }
    table l2 {
        key = {
            hdr.ethernet.dstAddr: exact;
            hdr.ethernet.etherType: ternary @name("ether_type");
        }
        actions = { forward; send_to_cpu; @defaultonly drop; }
        const default_action = drop();
        counters = l2_hits;
        size = 4096;
    }
    @name("acl_table") table acl {
        key = { hdr.ethernet.srcAddr: lpm; }
        actions = { @tableonly forward; drop; }
    }
    apply {
        if (hdr.packet_out.isValid()) {
            standard_metadata.egress_spec = hdr.packet_out.egress_port;
            hdr.packet_out.setInvalid();
            return;
        }
        rx.write((bit<32>) standard_metadata.ingress_port, 1);
        port_packets.count((bit<32>) standard_metadata.ingress_port);
        port_bytes.count((bit<32>) standard_metadata.ingress_port);
        l2.apply();
        acl.apply();
    }
}

control MyEgress(inout headers_t hdr, inout metadata_t meta,
                 inout standard_metadata_t standard_metadata) {
    apply { }
}

control CC(inout headers_t hdr, inout metadata_t meta) { apply { } }

control D(packet_out packet, in headers_t hdr) {
    apply {
        packet.emit(hdr.packet_in);
        packet.emit(hdr.ethernet);
    }
}

V1Switch(P(), VC(), MyIngress(), MyEgress(), CC(), D()) main;
