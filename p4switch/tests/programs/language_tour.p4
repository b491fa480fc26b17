/* Many of the language features p4switch accepts, in one program: a seed for the front-end
 * fuzzer (p4switch/tests/test_frontend_fuzz.py) and a compile test. */
#include <core.p4>
#include <v1model.p4>

type bit<9> port_id_t;
const bool WIDTHS_OK = static_assert(true, "widths");

header eth_t { bit<48> dst; bit<48> src; bit<16> eth_type; }
header hop_t { bit<1> bos; bit<15> port; }
header v4_t { bit<4> version; bit<4> ihl; bit<8> ttl; bit<16> proto; }
header v6_t { bit<8> hop; bit<8> next; }
header opts_t { varbit<64> options; }
header_union ip_t { v4_t v4; v6_t v6; }
header tag_t { bit<8> t; }
header_union tags_t { tag_t a; hop_t b; }
typedef tags_t[2] tag_stack_t;
struct headers { eth_t eth; hop_t[4] hops; ip_t ip; opts_t opts; tag_stack_t tags; }
struct pvs_t { @match(ternary) bit<16> eth_type; bit<8> low; }
struct meta { @field_list(1) bit<8> passes; bit<8> sum; }
struct seen_t { bit<48> src; bool hops; }

bit<8> twice(in bit<8> x, in bit<8> times = 2) { return x * times; }
void bump(inout bit<8> x) { x = x + 1; }

parser Ip(packet_in p, inout headers h)(bit<16> v4_type) {
    state start {
        transition select(h.eth.eth_type) { v4_type: v4; 0x86dd: v6; default: accept; }
    }
    state v4 {
        p.extract(h.ip.v4);
        p.extract(h.opts, (bit<32>) (h.ip.v4.ihl - 1) * 32);
        transition accept;
    }
    state v6 { p.extract(h.ip.v6); transition accept; }
}

parser P(packet_in p, out headers h, inout meta m, inout standard_metadata_t s) {
    Ip(0x0800) ip;
    value_set<pvs_t>(4) tagged;
    state start {
        p.extract(h.eth);
        transition select(h.eth.eth_type, p.lookahead<hop_t>().bos) {
            (0x1234, _): hop;
            default: more;
        }
    }
    state more {
        transition select(h.eth.eth_type, h.eth.dst[7:0]) { tagged: tag; default: rest; }
    }
    state tag { p.extract(h.tags.next.a); transition rest; }
    state hop {
        p.extract(h.hops.next);
        transition select(h.hops.last.bos) { 1: rest; default: hop; }
    }
    state rest { ip.apply(p, h); transition accept; }
}

control V(inout headers h, inout meta m) { apply { } }

control Acl(inout headers h, inout standard_metadata_t s)(bit<16> blocked) {
    action deny() { mark_to_drop(s); }
    @my_note(any tokens = here)
    table acl {
        key = { h.eth.eth_type: range; h.eth.dst[7:0]: optional; }
        actions = { deny; NoAction; }
        entries = {
            priority = 2: (blocked .. blocked, _): deny();
            priority = 1: (0x0800 .. 0x08ff, 7): NoAction();
        }
        default_action = NoAction();
    }
    apply { acl.apply(); }
}

control I(inout headers h, inout meta m, inout standard_metadata_t s) {
    Acl(0x88cc) acl;
    meter(4, MeterType.packets) rate;
    bit<8> seen = 0;
    action to(port_id_t port) { s.egress_spec = (bit<9>) port; }
    table route {
        key = { h.eth.dst: exact; }
        actions = { to; NoAction; }
        default_action = to((port_id_t) 9w1);
    }
    action_selector(HashAlgorithm.crc16, 32w64, 32w14) spread;
    table ecmp {
        key = { h.eth.eth_type: exact; h.eth.src: selector; h.eth.dst: selector; }
        actions = { to; NoAction; }
        implementation = spread;
    }
    table by_error {
        key = { s.parser_error: exact; }
        actions = { to; NoAction; }
        default_action = NoAction();
    }
    apply {
        route.apply();
        ecmp.apply();
        by_error.apply();
        acl.apply(h, s);
        if (h.tags[0] == h.tags[1] || h.ip != h.ip) { seen = 9; }
        for (bit<8> i = 0; i < 4; i += 1) {
            if (!h.hops[i].isValid()) { break; }
            m.sum = m.sum + (bit<8>) h.hops[i].port;
        }
        if (h.hops[0].isValid()) {
            s.egress_spec = (bit<9>) h.hops[0].port;
            h.hops.pop_front(1);
        }
        switch (h.eth.dst[7:0]) {
            1: { bump(seen); }
            2:
            3: { seen = twice(times = 3, x = seen); }
            default: { }
        }
        if (h.ip.v6.isValid()) { h.ip.v4.setValid(); h.ip.v4 = {4, 1, 64, 0x11}; }
        if (h.eth.src[0:0] == 1 && m.passes < 2) {
            m.passes = m.passes + 1;
            resubmit_preserving_field_list(1);
        }
        h.eth.src[7:0] = seen |+| m.sum;
        rate.execute_meter(32w1, h.eth.src[15:8]);
        digest<seen_t>(1, {src = h.eth.src, hops = h.hops[0].isValid()});
    }
}

control E(inout headers h, inout meta m, inout standard_metadata_t s) { apply { } }
control C(inout headers h, inout meta m) { apply { } }
control D(packet_out p, in headers h) { apply { p.emit(h); } }
V1Switch(P(), V(), I(), E(), C(), D()) main;
