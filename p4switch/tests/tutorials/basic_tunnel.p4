/* Basic tunnelling: a tunnel header (EtherType 0x1212) between Ethernet and IPv4 carries the
 * inner EtherType and a destination id. Tunnelled packets are forwarded on that id alone, by
 * an exact match, and leave unchanged; the rest are routed on their IPv4 destination. */
#include <core.p4>
#include <v1model.p4>

const bit<16> ETHERTYPE_IPV4 = 0x0800;
const bit<16> ETHERTYPE_TUNNEL = 0x1212;

header eth_h {
    bit<48> dst;
    bit<48> src;
    bit<16> ether_type;
}

header tunnel_h {
    bit<16> inner_type;  // what follows the tunnel header: 0x0800 for IPv4
    bit<16> dst_id;
}

header ipv4_h {
    bit<4>  version;
    bit<4>  ihl;
    bit<8>  tos;
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
    eth_h    eth;
    tunnel_h tunnel;
    ipv4_h   ipv4;
}

struct meta_t { }

parser TunnelParser(packet_in pkt, out headers_t hdr, inout meta_t meta,
                    inout standard_metadata_t std) {
    state start {
        pkt.extract(hdr.eth);
        transition select(hdr.eth.ether_type) {
            ETHERTYPE_TUNNEL: tunnel;
            ETHERTYPE_IPV4: ipv4;
            default: accept;
        }
    }
    state tunnel {
        pkt.extract(hdr.tunnel);
        transition select(hdr.tunnel.inner_type) {
            ETHERTYPE_IPV4: ipv4;
            default: accept;
        }
    }
    state ipv4 {
        pkt.extract(hdr.ipv4);
        transition accept;
    }
}

control TunnelVerify(inout headers_t hdr, inout meta_t meta) {
    apply { }
}

control TunnelIngress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t std) {
    action discard() {
        mark_to_drop(std);
    }
    action route(bit<48> next_hop_mac, bit<9> port) {
        std.egress_spec = port;
        hdr.eth.src = hdr.eth.dst;
        hdr.eth.dst = next_hop_mac;
        hdr.ipv4.ttl = hdr.ipv4.ttl - 1;
    }
    action tunnel_out(bit<9> port) {
        std.egress_spec = port;
    }
    table routes {
        key = { hdr.ipv4.dst: lpm; }
        actions = { route; discard; }
        default_action = discard();
    }
    table tunnels {
        key = { hdr.tunnel.dst_id: exact; }
        actions = { tunnel_out; discard; }
        default_action = discard();
    }
    apply {
        if (hdr.tunnel.isValid()) {
            tunnels.apply();
        } else if (hdr.ipv4.isValid()) {
            routes.apply();
        } else {
            discard();
        }
    }
}

control TunnelEgress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t std) {
    apply { }
}

control TunnelChecksum(inout headers_t hdr, inout meta_t meta) {
    apply {
        update_checksum(
            hdr.ipv4.isValid(),
            { hdr.ipv4.version, hdr.ipv4.ihl, hdr.ipv4.tos, hdr.ipv4.total_len,
              hdr.ipv4.ident, hdr.ipv4.flags, hdr.ipv4.frag_offset, hdr.ipv4.ttl,
              hdr.ipv4.proto, hdr.ipv4.src, hdr.ipv4.dst },
            hdr.ipv4.checksum,
            HashAlgorithm.csum16);
    }
}

control TunnelDeparser(packet_out pkt, in headers_t hdr) {
    apply {
        pkt.emit(hdr.eth);
        pkt.emit(hdr.tunnel);
        pkt.emit(hdr.ipv4);
    }
}

V1Switch(TunnelParser(), TunnelVerify(), TunnelIngress(), TunnelEgress(), TunnelChecksum(),
         TunnelDeparser()) main;
