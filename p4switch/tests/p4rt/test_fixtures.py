"""The P4Runtime server tests program a hand-written P4Info (fixtures/simple.p4info.txt, its ids
chosen by hand). Here the compiler checks that it describes simple.p4 as p4c would, ids aside."""

from __future__ import annotations

from p4.config.v1 import p4info_pb2

from p4switch.program import compile_file
from tests.p4rt.fixtures.fake_program import P4_SOURCE_PATH, load_p4info


def shape(p4info: p4info_pb2.P4Info) -> dict[str, object]:
    actions = {a.preamble.id: a.preamble.name for a in p4info.actions}
    return {
        "tables": sorted(
            (
                t.preamble.name,
                tuple((m.name, m.bitwidth, m.match_type) for m in t.match_fields),
                tuple(sorted((actions[r.id], r.scope) for r in t.action_refs)),
                t.size,
            )
            for t in p4info.tables
        ),
        "actions": sorted(
            (a.preamble.name, tuple((p.name, p.bitwidth) for p in a.params)) for a in p4info.actions
        ),
        "registers": sorted(
            (r.preamble.name, r.size, r.type_spec.bitstring.bit.bitwidth) for r in p4info.registers
        ),
        "counters": sorted((c.preamble.name, c.size, c.spec.unit) for c in p4info.counters),
        "direct_counters": sorted(d.preamble.name for d in p4info.direct_counters),
        "controller_packet_metadata": sorted(
            (m.preamble.name, tuple((f.name, f.bitwidth) for f in m.metadata))
            for m in p4info.controller_packet_metadata
        ),
    }


def test_the_hand_written_p4info_matches_the_compiled_one() -> None:
    compiled = compile_file(P4_SOURCE_PATH).p4info
    assert shape(load_p4info()) == shape(compiled)
