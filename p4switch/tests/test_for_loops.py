"""`for` loops (P4_16 1.2.5), unrolled at compile time as p4c does for such targets: the
three-part form, `for (T v in lo .. hi)`, `for (H h in stack)`, `break` and `continue`
(also under run-time conditions), nested loops; on both back ends. What is refused."""

from __future__ import annotations

from pathlib import Path

import pytest

from p4switch.exceptions import P4CompileError
from p4switch.program import compile_file

PROGRAM = """\
#include <core.p4>
#include <v1model.p4>
header eth_t { bit<48> dst; bit<48> src; bit<16> eth_type; }
header word_t { bit<8> v; }
struct headers { eth_t eth; word_t[4] words; }
struct meta { }
parser P(packet_in p, out headers h, inout meta m, inout standard_metadata_t s) {
    state start { p.extract(h.eth); transition words; }
    state words {
        p.extract(h.words.next);
        transition select(h.words.nextIndex) { 4: accept; default: words; }
    }
}
control V(inout headers h, inout meta m) { apply { } }
control I(inout headers h, inout meta m, inout standard_metadata_t s) {
    apply {
        s.egress_spec = 1;
        bit<8> sum = 0;
        for (bit<8> i = 0; i < 4; i = i + 1) {
            sum = sum + h.words[i].v;  // a constant element in each iteration
        }
        h.eth.src[7:0] = sum;
        bit<8> first_big = 0xff;
        for (bit<8> i = 0; i < 4; i += 1) {  // the first word over 0x10: break at run time
            if (h.words[i].v > 0x10) { first_big = i; break; }
        }
        h.eth.src[15:8] = first_big;
        bit<8> odd = 0;
        for (word_t w in h.words) {  // each element, read
            if (w.v[0:0] == 0) { continue; }
            odd = odd + 1;
        }
        h.eth.src[23:16] = odd;
        bit<8> pairs = 0;
        for (bit<8> a in 1 .. 3) {
            for (bit<8> b in 1 .. 3) {
                if (b > a) { break; }
                pairs = pairs + 1;  // b <= a: 1 + 2 + 3
            }
        }
        h.eth.src[31:24] = pairs;
    }
}
control E(inout headers h, inout meta m, inout standard_metadata_t s) { apply { } }
control C(inout headers h, inout meta m) { apply { } }
control D(packet_out p, in headers h) { apply { p.emit(h); } }
V1Switch(P(), V(), I(), E(), C(), D()) main;
"""


def compiled(tmp_path: Path, text: str = PROGRAM):
    path = tmp_path / "loops.p4"
    path.write_text(text)
    return compile_file(path)


@pytest.mark.parametrize(
    "words", [bytes([1, 2, 3, 4]), bytes([0x20, 0x11, 5, 7]), bytes([2, 4, 6, 8])]
)
def test_unrolled_loops(tmp_path: Path, backend: str, words: bytes) -> None:
    program = compiled(tmp_path)
    pipe = program.pipeline(program.new_state())
    ((_, out),) = list(pipe.process(0, bytes(14) + words))
    src = out[6:12]
    assert src[5] == sum(words) & 0xFF
    big = [i for i, w in enumerate(words) if w > 0x10]
    assert src[4] == (big[0] if big else 0xFF)
    assert src[3] == sum(w % 2 for w in words)
    assert src[2] == 6
    assert out[14:] == words


BAD = [
    (
        "for (bit<8> i = 0; i < 4; i = i + 1) {",
        "for (bit<8> i = h.eth.dst[7:0]; i < 4; i = i + 1) {",
        "known at compile time",
    ),
    (
        "for (bit<8> i = 0; i < 4; i = i + 1) {",
        "for (bit<8> i = 0; i < 4; sum = sum + 1) {",
        "an update assigns a loop variable",
    ),
    (
        "for (bit<8> i = 0; i < 4; i = i + 1) {",
        "for (bit<8> i = 0; i < 4; i = i) {",
        "runs more than 1024 times",
    ),
    ("sum = sum + h.words[i].v;", "i = 2;", "cannot be assigned"),
    ("s.egress_spec = 1;", "s.egress_spec = 1; break;", "break outside a loop"),
    ("for (word_t w in h.words)", "for (eth_t w in h.words)", "are not eth_t"),
]


@pytest.mark.parametrize(("old", "new", "words"), BAD)
def test_what_loops_refuse(tmp_path: Path, old: str, new: str, words: str) -> None:
    assert old in PROGRAM
    with pytest.raises(P4CompileError) as err:
        compiled(tmp_path, PROGRAM.replace(old, new, 1))
    assert words in err.value.what and err.value.line > 0, err.value


def test_static_assert(tmp_path: Path) -> None:
    good = 'const bool words_ok = static_assert(4 == 4, "four words");\n' + PROGRAM
    compiled(tmp_path, good.replace("bit<8> sum = 0;", "bit<8> sum = 0; static_assert(true);"))
    bad = PROGRAM.replace("bit<8> sum = 0;", 'static_assert(8 == 9, "widths differ");', 1)
    with pytest.raises(P4CompileError) as err:
        compiled(tmp_path, bad)
    line = next(i for i, x in enumerate(bad.splitlines(), 1) if "widths differ" in x)
    assert err.value.what == "static_assert failed: widths differ" and err.value.line == line
    with pytest.raises(P4CompileError) as err:
        compiled(tmp_path, bad.replace("8 == 9", "h.eth.dst == 0"))
    assert "needs a constant bool" in err.value.what
