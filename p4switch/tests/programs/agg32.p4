/*
 * In-network aggregation, the innet shape: a UDP packet carries a slot index and 32 int32
 * values; the switch adds them into per-lane registers, writes the running sums back into
 * the packet and forwards it. Also the benchmark program of bench/pipeline.py.
 */
#include <core.p4>
#include <v1model.p4>

#define SLOTS 1024
#define AGG_PORT 0x4000

header ethernet_t {
    bit<48> dstAddr;
    bit<48> srcAddr;
    bit<16> etherType;
}

header ipv4_t {
    bit<4>  version;
    bit<4>  ihl;
    bit<8>  diffserv;
    bit<16> totalLen;
    bit<16> identification;
    bit<3>  flags;
    bit<13> fragOffset;
    bit<8>  ttl;
    bit<8>  protocol;
    bit<16> hdrChecksum;
    bit<32> srcAddr;
    bit<32> dstAddr;
}

header udp_t {
    bit<16> srcPort;
    bit<16> dstPort;
    bit<16> length;
    bit<16> checksum;
}

#define V(N) int<32> v##N;
header agg_t {
    bit<16> slot;
    bit<16> contributions;
    V(00) V(01) V(02) V(03) V(04) V(05) V(06) V(07)
    V(08) V(09) V(10) V(11) V(12) V(13) V(14) V(15)
    V(16) V(17) V(18) V(19) V(20) V(21) V(22) V(23)
    V(24) V(25) V(26) V(27) V(28) V(29) V(30) V(31)
}

struct headers_t {
    ethernet_t ethernet;
    ipv4_t     ipv4;
    udp_t      udp;
    agg_t      agg;
}

struct metadata_t {
    bit<32> slot;
}

parser AggParser(packet_in packet, out headers_t hdr, inout metadata_t meta,
                 inout standard_metadata_t standard_metadata) {
    state start {
        packet.extract(hdr.ethernet);
        transition select(hdr.ethernet.etherType) {
            0x0800: parse_ipv4;
            default: accept;
        }
    }
    state parse_ipv4 {
        packet.extract(hdr.ipv4);
        transition select(hdr.ipv4.protocol) {
            17: parse_udp;
            default: accept;
        }
    }
    state parse_udp {
        packet.extract(hdr.udp);
        transition select(hdr.udp.dstPort) {
            AGG_PORT: parse_agg;
            default: accept;
        }
    }
    state parse_agg {
        packet.extract(hdr.agg);
        transition accept;
    }
}

control AggVerifyChecksum(inout headers_t hdr, inout metadata_t meta) {
    apply { }
}

#define REG(N) register<int<32>>(SLOTS) lane##N;
#define ADD(N) \
    lane##N.read(sum, meta.slot); \
    sum = sum + hdr.agg.v##N;     \
    lane##N.write(meta.slot, sum); \
    hdr.agg.v##N = sum;

control AggIngress(inout headers_t hdr, inout metadata_t meta,
                   inout standard_metadata_t standard_metadata) {
    REG(00) REG(01) REG(02) REG(03) REG(04) REG(05) REG(06) REG(07)
    REG(08) REG(09) REG(10) REG(11) REG(12) REG(13) REG(14) REG(15)
    REG(16) REG(17) REG(18) REG(19) REG(20) REG(21) REG(22) REG(23)
    REG(24) REG(25) REG(26) REG(27) REG(28) REG(29) REG(30) REG(31)
    register<bit<16>>(SLOTS) contributions;
    counter(1, CounterType.packets_and_bytes) aggregated;

    action forward(bit<9> port) {
        standard_metadata.egress_spec = port;
    }
    action drop() {
        mark_to_drop(standard_metadata);
    }
    table route {
        key = { hdr.ipv4.dstAddr: exact; }
        actions = { forward; drop; }
        default_action = drop();
    }
    action aggregate() {
        int<32> sum;
        bit<16> seen;
        ADD(00) ADD(01) ADD(02) ADD(03) ADD(04) ADD(05) ADD(06) ADD(07)
        ADD(08) ADD(09) ADD(10) ADD(11) ADD(12) ADD(13) ADD(14) ADD(15)
        ADD(16) ADD(17) ADD(18) ADD(19) ADD(20) ADD(21) ADD(22) ADD(23)
        ADD(24) ADD(25) ADD(26) ADD(27) ADD(28) ADD(29) ADD(30) ADD(31)
        contributions.read(seen, meta.slot);
        seen = seen + 1;
        contributions.write(meta.slot, seen);
        hdr.agg.contributions = seen;
        aggregated.count(0);
    }
    apply {
        if (!hdr.ipv4.isValid()) {
            drop();
            return;
        }
        route.apply();
        if (hdr.agg.isValid()) {
            if (hdr.agg.slot >= SLOTS) {
                drop();
                exit;
            }
            meta.slot = (bit<32>) hdr.agg.slot;
            aggregate();
        }
    }
}

control AggEgress(inout headers_t hdr, inout metadata_t meta,
                  inout standard_metadata_t standard_metadata) {
    apply { }
}

control AggComputeChecksum(inout headers_t hdr, inout metadata_t meta) {
    apply { }
}

control AggDeparser(packet_out packet, in headers_t hdr) {
    apply {
        packet.emit(hdr.ethernet);
        packet.emit(hdr.ipv4);
        packet.emit(hdr.udp);
        packet.emit(hdr.agg);
    }
}

V1Switch(AggParser(), AggVerifyChecksum(), AggIngress(), AggEgress(), AggComputeChecksum(),
         AggDeparser()) main;
