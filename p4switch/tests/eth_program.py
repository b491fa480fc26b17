"""A v1model program around one Ethernet header, for tests of a language feature in ingress:
the parser extracts `h.eth`, the deparser emits it, and `ingress` is the ingress control's
body (its declarations and `apply`)."""

from __future__ import annotations

_PROGRAM = """\
#include <core.p4>
#include <v1model.p4>
header eth_t {{ bit<48> dst; bit<48> src; bit<16> eth_type; }}
struct headers {{ eth_t eth; }}
struct meta {{ }}
parser P(packet_in p, out headers h, inout meta m, inout standard_metadata_t s) {{
    state start {{ p.extract(h.eth); transition accept; }}
}}
control V(inout headers h, inout meta m) {{ apply {{ }} }}
control I(inout headers h, inout meta m, inout standard_metadata_t s) {{
{ingress}
}}
control E(inout headers h, inout meta m, inout standard_metadata_t s) {{ apply {{ }} }}
control C(inout headers h, inout meta m) {{ apply {{ }} }}
control D(packet_out p, in headers h) {{ apply {{ p.emit(h.eth); }} }}
V1Switch(P(), V(), I(), E(), C(), D()) main;
"""


def eth_program(ingress: str) -> str:
    return _PROGRAM.format(ingress=ingress.rstrip("\n"))
