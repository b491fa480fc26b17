/* Source routing: the sender lists the ports of the whole path in a stack of hops after
 * Ethernet (EtherType 0x1234), the last one marked bottom of stack; the parser reads them in
 * a loop. Each switch leaves by the first hop's port and pops it; the one that pops the last
 * hop restores the IPv4 EtherType. The IPv4 TTL goes down at every hop, checksum afresh. A
 * frame with no route is dropped. */
#include <core.p4>
#include <v1model.p4>

const bit<16> ETHERTYPE_ROUTED = 0x1234;

header eth_h {
    bit<48> dst;
    bit<48> src;
    bit<16> ether_type;
}

header hop_h {
    bit<1>  bos;
    bit<15> port;
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
    hop_h[9] hops;
    ipv4_h   ipv4;
}

struct meta_t { }

parser SrParser(packet_in pkt, out headers_t hdr, inout meta_t meta,
                inout standard_metadata_t std) {
    state start {
        pkt.extract(hdr.eth);
        transition select(hdr.eth.ether_type) {
            ETHERTYPE_ROUTED: hop;
            default: accept;
        }
    }
    state hop {
        pkt.extract(hdr.hops.next);
        transition select(hdr.hops.last.bos) {
            1: ipv4;
            default: hop;
        }
    }
    state ipv4 {
        pkt.extract(hdr.ipv4);
        transition accept;
    }
}

control SrVerify(inout headers_t hdr, inout meta_t meta) {
    apply { }
}

control SrIngress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t std) {
    action take_hop() {
        std.egress_spec = (bit<9>) hdr.hops[0].port;
        if (hdr.hops[0].bos == 1) {
            hdr.eth.ether_type = 0x0800;
        }
        hdr.hops.pop_front(1);
    }
    apply {
        if (hdr.hops[0].isValid()) {
            take_hop();
            if (hdr.ipv4.isValid()) {
                hdr.ipv4.ttl = hdr.ipv4.ttl - 1;
            }
        } else {
            mark_to_drop(std);
        }
    }
}

control SrEgress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t std) {
    apply { }
}

control SrChecksum(inout headers_t hdr, inout meta_t meta) {
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

control SrDeparser(packet_out pkt, in headers_t hdr) {
    apply {
        pkt.emit(hdr.eth);
        pkt.emit(hdr.hops);
        pkt.emit(hdr.ipv4);
    }
}

V1Switch(SrParser(), SrVerify(), SrIngress(), SrEgress(), SrChecksum(), SrDeparser()) main;
