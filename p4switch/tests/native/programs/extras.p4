/* What the other test programs leave out, for the native back end's tests: random, a ternary
   table with priorities and a packets-only direct counter, hashes over field lists wider than
   64 bits, a run-time hash limit, advance, and signed shifts and saturation. */
#include <core.p4>
#include <v1model.p4>

header ethernet_t {
    bit<48> dstAddr;
    bit<48> srcAddr;
    bit<16> etherType;
}

header probe_t {
    bit<8>  op;
    bit<8>  skip;
    bit<16> lo;
    bit<16> hi;
    int<16> s;
    bit<32> r0;
    bit<32> r1;
    bit<32> r2;
    bit<32> r3;
    bit<16> r4;
    bit<16> r5;
}

struct headers_t {
    ethernet_t ethernet;
    probe_t    probe;
}

struct metadata_t { }

parser ExParser(packet_in packet, out headers_t hdr, inout metadata_t meta,
                inout standard_metadata_t standard_metadata) {
    state start {
        packet.extract(hdr.ethernet);
        transition select(hdr.ethernet.etherType) {
            0x88b6: parse_probe;
            0x88b7: skip_then_probe;
            default: accept;
        }
    }
    state skip_then_probe {
        packet.advance(16);
        transition parse_probe;
    }
    state parse_probe {
        packet.extract(hdr.probe);
        transition accept;
    }
}

control ExVerifyChecksum(inout headers_t hdr, inout metadata_t meta) {
    apply { }
}

control ExIngress(inout headers_t hdr, inout metadata_t meta,
                  inout standard_metadata_t standard_metadata) {
    direct_counter(CounterType.packets) hits;
    action to(bit<9> port, bit<16> tag) {
        standard_metadata.egress_spec = port;
        hdr.probe.r5 = tag;
    }
    action drop() {
        mark_to_drop(standard_metadata);
    }
    table classify {
        key = { hdr.probe.op: ternary; hdr.ethernet.dstAddr: ternary; }
        actions = { to; drop; }
        default_action = drop();
        counters = hits;
        size = 64;
    }
    apply {
        if (!hdr.probe.isValid()) {
            mark_to_drop(standard_metadata);
            exit;
        }
        classify.apply();
        bit<32> x;
        random(x, (bit<32>) hdr.probe.lo, (bit<32>) hdr.probe.hi);
        hdr.probe.r0 = x;
        hash(hdr.probe.r1, HashAlgorithm.identity, 32w7,
             { hdr.ethernet.dstAddr, hdr.ethernet.srcAddr, hdr.probe.op }, (bit<32>) hdr.probe.hi);
        hash(hdr.probe.r2, HashAlgorithm.crc32, 32w0,
             { hdr.ethernet.srcAddr, hdr.probe.s }, 32w0);
        hash(hdr.probe.r4, HashAlgorithm.xor16, 16w0, { hdr.ethernet.dstAddr, hdr.probe.skip },
             32w65536);
        hdr.probe.r3 = ((bit<16>) (hdr.probe.s >> hdr.probe.skip))
                       ++ ((bit<16>) (hdr.probe.s |+| 16s30000));
    }
}

control ExEgress(inout headers_t hdr, inout metadata_t meta,
                 inout standard_metadata_t standard_metadata) {
    apply { }
}

control ExComputeChecksum(inout headers_t hdr, inout metadata_t meta) {
    apply { }
}

control ExDeparser(packet_out packet, in headers_t hdr) {
    apply {
        packet.emit(hdr.ethernet);
        packet.emit(hdr.probe);
    }
}

V1Switch(ExParser(), ExVerifyChecksum(), ExIngress(), ExEgress(), ExComputeChecksum(),
         ExDeparser()) main;
