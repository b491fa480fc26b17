// Direct counters and meters with annotations: p4c 1.2.5 keeps them in P4Info (@min_width).
#include <core.p4>
#include <v1model.p4>
header eth_t { bit<48> dst; bit<48> src; bit<16> type; }
struct h_t { eth_t eth; }
struct m_t { bit<2> color; }
parser P(packet_in p, out h_t h, inout m_t m, inout standard_metadata_t s) {
    state start { p.extract(h.eth); transition accept; }
}
control V(inout h_t h, inout m_t m) { apply { } }
control I(inout h_t h, inout m_t m, inout standard_metadata_t s) {
    @min_width(32) direct_counter(CounterType.packets_and_bytes) hits;
    @min_width(16) direct_meter<bit<2>>(MeterType.bytes) rate;
    action fwd(bit<9> port) { s.egress_spec = port; }
    action metered(bit<9> port) { rate.read(m.color); s.egress_spec = port; }
    table t { key = { h.eth.dst: exact; } actions = { fwd; } counters = hits; }
    table u { key = { h.eth.src: exact; } actions = { metered; } meters = rate; }
    apply { t.apply(); u.apply(); }
}
control E(inout h_t h, inout m_t m, inout standard_metadata_t s) { apply { } }
control C(inout h_t h, inout m_t m) { apply { } }
control D(packet_out p, in h_t h) { apply { p.emit(h.eth); } }
V1Switch(P(), V(), I(), E(), C(), D()) main;
