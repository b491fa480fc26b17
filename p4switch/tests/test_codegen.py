"""The peephole pass over generated source: invariant field reads hoisted, and only those."""

from __future__ import annotations

from p4switch.compiler.source import hoist_invariant_fields

BODY = """def A(S):
    x = R[S[7]] + R[S[7]]
    R[S[7]] = x
    S[3] = S[3] + 1
    S[4] = 1
"""


def test_a_field_read_often_and_never_written_is_read_once() -> None:
    out = hoist_invariant_fields(BODY)
    assert out.splitlines()[1] == "    _s7 = S[7]"
    assert "S[7]" not in "\n".join(out.splitlines()[2:])
    assert "    S[3] = S[3] + 1" in out  # written: left alone


def test_nothing_is_hoisted_when_s_is_handed_on_or_sliced() -> None:
    handed = BODY + "    B(S)\n"
    assert hoist_invariant_fields(handed) == handed
    sliced = BODY + "    S[1:9] = T.unpack(d)\n"
    assert hoist_invariant_fields(sliced) == sliced


def test_hoisted_code_computes_the_same() -> None:
    src = hoist_invariant_fields(BODY)
    assert src != BODY
    results = []
    for text in (BODY, src):
        ns: dict = {"R": [0] * 10}
        exec(text, ns)
        state = [0] * 10
        state[7], ns["R"][5] = 5, 2
        ns["A"](state)
        results.append((state, ns["R"]))
    assert results[0] == results[1]
