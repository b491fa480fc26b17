/*
 * Language features, one test case per `op`: wraparound and saturating arithmetic, signed
 * values, shifts, slices, concatenation, casts, hashes, lookahead, actions with out/inout
 * parameters, const entries, switch on action_run, exit, setValid, truncate.
 */
#include <core.p4>
#include <v1model.p4>

error { BadOp }

header ethernet_t {
    bit<48> dst;
    bit<48> src;
    bit<16> etherType;
}

header input_t {
    bit<8>  op;
    bit<8>  a8;
    bit<8>  b8;
    int<8>  s8;
    int<8>  t8;
    bit<16> x16;
    bit<32> x32;
}

header result_t {
    bit<32> r0;
    bit<32> r1;
    bit<32> r2;
    bit<32> r3;
    bit<32> r4;
    bit<32> r5;
    bit<32> r6;
    bit<32> r7;
}

header extra_t {
    bit<16> marker;
}

struct headers_t {
    ethernet_t ethernet;
    input_t    input;
    result_t   result;
    extra_t    extra;
}

struct metadata_t {
    bit<16> peeked;
}

parser FeatureParser(packet_in packet, out headers_t hdr, inout metadata_t meta,
                     inout standard_metadata_t standard_metadata) {
    state start {
        packet.extract(hdr.ethernet);
        transition select(hdr.ethernet.etherType) {
            0x88b5: parse_input;
            default: accept;
        }
    }
    state parse_input {
        meta.peeked = packet.lookahead<bit<16>>();
        packet.extract(hdr.input);
        verify(hdr.input.op != 0xff, error.BadOp);
        transition accept;
    }
}

control FeatureVerify(inout headers_t hdr, inout metadata_t meta) { apply { } }

control FeatureIngress(inout headers_t hdr, inout metadata_t meta,
                       inout standard_metadata_t standard_metadata) {
    action arith() {
        hdr.result.setValid();
        hdr.result.r0 = (bit<32>) (hdr.input.a8 + hdr.input.b8);
        hdr.result.r1 = (bit<32>) (hdr.input.a8 - hdr.input.b8);
        hdr.result.r2 = (bit<32>) (hdr.input.a8 * hdr.input.b8);
        hdr.result.r3 = (bit<32>) (hdr.input.a8 |+| hdr.input.b8);
        hdr.result.r4 = (bit<32>) (hdr.input.a8 |-| hdr.input.b8);
        hdr.result.r5 = (bit<32>) (~hdr.input.a8);
        hdr.result.r6 = (bit<32>) (-hdr.input.a8);
        hdr.result.r7 = (bit<32>) (hdr.input.a8 & 0x0f | hdr.input.b8 ^ 8w0x80);
    }
    action signed_ops() {
        hdr.result.setValid();
        hdr.result.r0 = (bit<32>) (int<32>) hdr.input.s8;
        hdr.result.r1 = hdr.input.s8 < hdr.input.t8 ? 32w1 : 32w0;
        hdr.result.r2 = (bit<32>) (int<32>) (hdr.input.s8 >> 2);
        hdr.result.r3 = hdr.input.a8 < hdr.input.b8 ? 32w1 : 32w0;
        hdr.result.r4 = (bit<32>) (int<32>) (hdr.input.s8 |+| hdr.input.t8);
        hdr.result.r5 = (bit<32>) (int<32>) (hdr.input.s8 - hdr.input.t8);
        hdr.result.r6 = (bit<32>) (bit<8>) hdr.input.s8;
        hdr.result.r7 = (bit<32>) (int<32>) (hdr.input.s8 |-| hdr.input.t8);
    }
    action bits_ops() {
        hdr.result.setValid();
        hdr.result.r0 = (bit<32>) (hdr.input.x32[15:8] ++ hdr.input.x16);
        hdr.result.r1 = hdr.input.x32 << hdr.input.a8;
        hdr.result.r2 = hdr.input.x32 >> 4;
        hdr.result.r3 = hdr.input.x32;
        hdr.result.r3[7:0] = 0xff;
        hdr.result.r3[31:28] = hdr.input.x16[3:0];
        hdr.result.r4 = (bit<32>) meta.peeked;
        bit<16> h16;
        hash(h16, HashAlgorithm.crc16, 16w0, { hdr.input.x32 }, 32w65536);
        hdr.result.r5 = (bit<32>) h16;
        bit<32> h32;
        hash(h32, HashAlgorithm.crc32, 32w0, { hdr.input.x32, hdr.input.x16 }, 64w4294967296);
        hdr.result.r6 = h32;
        hash(h16, HashAlgorithm.crc16, 16w100, { hdr.input.a8 }, 32w10);
        hdr.result.r7 = (bit<32>) h16;
    }
    action with_out(in bit<8> x, out bit<8> doubled, inout bit<16> acc) {
        doubled = x + x;
        acc = acc + (bit<16>) x;
    }
    action calls() {
        bit<8> d = 1;
        bit<16> acc = 100;
        with_out(hdr.input.a8, d, acc);
        hdr.result.setValid();
        hdr.result.r0 = (bit<32>) d;
        hdr.result.r1 = (bit<32>) acc;
        bool flag = hdr.input.a8 > 10 && !(hdr.input.b8 == 0);
        hdr.result.r2 = flag ? 32w1 : 32w0;
        hdr.result.r3 = (bit<32>) (bit<1>) flag;
        hdr.extra.setValid();
        hdr.extra.marker = 0xcafe;
    }
    action cut() {
        truncate(16);
    }
    table ops {
        key = { hdr.input.op: ternary; }
        actions = { arith; signed_ops; bits_ops; calls; cut; NoAction; }
        const entries = {
            0x01 &&& 0xff: arith();
            0x02: signed_ops();
            0x03: bits_ops();
            0x04: calls();
            0x05: cut();
            0x10 &&& 0xf0: calls();
        }
        default_action = NoAction();
    }
    apply {
        standard_metadata.egress_spec = 1;
        if (hdr.input.isValid()) {
            switch (ops.apply().action_run) {
                arith: { hdr.ethernet.etherType = 1; }
                signed_ops:
                bits_ops: { hdr.ethernet.etherType = 2; }
                default: { hdr.ethernet.etherType = 3; }
            }
            if (hdr.input.op == 0x20) {
                exit;
            }
            hdr.ethernet.src = 1;
        }
    }
}

control FeatureEgress(inout headers_t hdr, inout metadata_t meta,
                      inout standard_metadata_t standard_metadata) {
    apply { }
}

control FeatureCompute(inout headers_t hdr, inout metadata_t meta) { apply { } }

control FeatureDeparser(packet_out packet, in headers_t hdr) {
    apply {
        packet.emit(hdr.ethernet);
        packet.emit(hdr.input);
        packet.emit(hdr.result);
        packet.emit(hdr.extra);
    }
}

V1Switch(FeatureParser(), FeatureVerify(), FeatureIngress(), FeatureEgress(), FeatureCompute(),
         FeatureDeparser()) main;
