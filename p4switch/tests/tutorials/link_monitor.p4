/* Link monitoring. Every packet leaving a port adds its length to that port's byte count, a
 * register. A probe (EtherType 0x0812) carries a hop count, the records of the hops it has
 * crossed (newest first, the first hop's marked bottom of stack) and the ports it is still to
 * leave by, one a hop. Each switch takes the first of those ports (ingress), then in egress
 * pushes a record of its own on the front of the stack: its switch id (from a table), the
 * port, the bytes the port sent since the previous probe (the probe included) and the time of
 * that previous probe and of this one; the port's count starts again from zero. */
#include <core.p4>
#include <v1model.p4>

const bit<16> ETHERTYPE_PROBE = 0x0812;

header eth_h {
    bit<48> dst;
    bit<48> src;
    bit<16> ether_type;
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

header probe_h {
    bit<8> hops;
}

header hop_record_h {
    bit<1>  bos;
    bit<7>  switch_id;
    bit<8>  port;
    bit<32> bytes;
    bit<48> previous_time;
    bit<48> time;
}

header probe_port_h {
    bit<8> port;
}

struct headers_t {
    eth_h           eth;
    probe_h         probe;
    hop_record_h[8] records;
    probe_port_h    next_port;
    ipv4_h          ipv4;
}

struct meta_t { }

parser MonParser(packet_in pkt, out headers_t hdr, inout meta_t meta,
                 inout standard_metadata_t std) {
    state start {
        pkt.extract(hdr.eth);
        transition select(hdr.eth.ether_type) {
            ETHERTYPE_PROBE: probe;
            0x0800: ipv4;
            default: accept;
        }
    }
    state probe {
        pkt.extract(hdr.probe);
        transition select(hdr.probe.hops) {
            0: next_port;
            default: record;
        }
    }
    state record {
        pkt.extract(hdr.records.next);
        transition select(hdr.records.last.bos) {
            1: next_port;
            default: record;
        }
    }
    state next_port {
        pkt.extract(hdr.next_port);  // the ports after it stay in the payload
        transition accept;
    }
    state ipv4 {
        pkt.extract(hdr.ipv4);
        transition accept;
    }
}

control MonVerify(inout headers_t hdr, inout meta_t meta) {
    apply { }
}

control MonIngress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t std) {
    action discard() {
        mark_to_drop(std);
    }
    action route(bit<48> next_hop_mac, bit<9> port) {
        std.egress_spec = port;
        hdr.eth.src = hdr.eth.dst;
        hdr.eth.dst = next_hop_mac;
        hdr.ipv4.ttl = hdr.ipv4.ttl - 1;
    }
    table routes {
        key = { hdr.ipv4.dst: lpm; }
        actions = { route; discard; }
        default_action = discard();
    }
    apply {
        if (hdr.probe.isValid()) {
            std.egress_spec = (bit<9>) hdr.next_port.port;
            hdr.next_port.setInvalid();
            hdr.probe.hops = hdr.probe.hops + 1;
        } else if (hdr.ipv4.isValid()) {
            routes.apply();
        } else {
            discard();
        }
    }
}

control MonEgress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t std) {
    register<bit<32>>(512) port_bytes;
    register<bit<48>>(512) port_probe_time;
    bit<7> switch_id = 0;

    action identify(bit<7> id) {
        switch_id = id;
    }
    table whoami {
        actions = { identify; }
        default_action = identify(0);
    }
    apply {
        bit<32> port = (bit<32>) std.egress_port;
        bit<32> sent;
        port_bytes.read(sent, port);
        sent = sent + std.packet_length;
        if (hdr.probe.isValid()) {
            whoami.apply();
            bit<48> previous;
            port_probe_time.read(previous, port);
            port_probe_time.write(port, std.egress_global_timestamp);
            hdr.records.push_front(1);
            hdr.records[0].setValid();
            hdr.records[0].bos = hdr.probe.hops == 1 ? 1w1 : 1w0;
            hdr.records[0].switch_id = switch_id;
            hdr.records[0].port = (bit<8>) std.egress_port;
            hdr.records[0].bytes = sent;
            hdr.records[0].previous_time = previous;
            hdr.records[0].time = std.egress_global_timestamp;
            sent = 0;
        }
        port_bytes.write(port, sent);
    }
}

control MonChecksum(inout headers_t hdr, inout meta_t meta) {
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

control MonDeparser(packet_out pkt, in headers_t hdr) {
    apply {
        pkt.emit(hdr.eth);
        pkt.emit(hdr.probe);
        pkt.emit(hdr.records);
        pkt.emit(hdr.next_port);
        pkt.emit(hdr.ipv4);
    }
}

V1Switch(MonParser(), MonVerify(), MonIngress(), MonEgress(), MonChecksum(), MonDeparser()) main;
