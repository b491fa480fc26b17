"""varbit fields (IPv4 options after a header that counts them): `extract(h, bits)`, emit of
as many bytes as were extracted, copies, and the parser errors the spec names. The python back
end runs them; the native one refuses them by name (the switch then runs python, saying so)."""

from __future__ import annotations

import zlib
from pathlib import Path

import pytest

from p4switch.exceptions import NativeUnsupported, P4CompileError
from p4switch.program import compile_file

PROGRAM = """\
#include <core.p4>
#include <v1model.p4>
header eth_t { bit<48> dst; bit<48> src; bit<16> eth_type; }
header ip_t { bit<4> version; bit<4> ihl; bit<8> tos; bit<8> ttl; bit<8> proto; }
header opts_t { varbit<96> options; }
struct headers { eth_t eth; ip_t ip; opts_t opts; }
struct meta { }
parser P(packet_in p, out headers h, inout meta m, inout standard_metadata_t s) {
    state start {
        p.extract(h.eth);
        transition select(h.eth.eth_type) { 0x0800: ip; default: accept; }
    }
    state ip {
        p.extract(h.ip);
        p.extract(h.opts, (bit<32>) (h.ip.ihl - 1) * 32);  // ihl counts 4-byte words
        transition accept;
    }
}
control V(inout headers h, inout meta m) { apply { } }
control I(inout headers h, inout meta m, inout standard_metadata_t s) {
    apply {
        s.egress_spec = 1;
        opts_t saved = h.opts;  // a copy keeps the value and its length
        h.ip.ttl = h.ip.ttl - 1;
        if (h.eth.dst[0:0] == 1) { h.opts.setInvalid(); h.ip.ihl = 1; }
        if (h.eth.dst[1:1] == 1) { h.opts = saved; }
    }
}
control E(inout headers h, inout meta m, inout standard_metadata_t s) { apply { } }
control C(inout headers h, inout meta m) { apply { } }
control D(packet_out p, in headers h) { apply { p.emit(h); } }
V1Switch(P(), V(), I(), E(), C(), D()) main;
"""


def compiled(tmp_path: Path, text: str = PROGRAM):
    path = tmp_path / "varbit.p4"
    path.write_text(text)
    return compile_file(path)


def frame(flags: int, ihl: int, options: bytes) -> bytes:
    eth = bytes(5) + bytes([flags]) + bytes(6) + b"\x08\x00"
    return eth + bytes([0x40 | ihl, 0, 64, 17]) + options + b"payload"


def run(tmp_path: Path, data: bytes, text: str = PROGRAM):
    program = compiled(tmp_path, text)
    pipe = program.pipeline(program.new_state())
    return pipe, list(pipe.process(0, data))


@pytest.mark.parametrize("words", [0, 1, 3])
def test_options_of_any_length_go_through(tmp_path: Path, words: int) -> None:
    options = bytes(range(1, 4 * words + 1))
    _, ((port, out),) = run(tmp_path, frame(0, words + 1, options))
    assert port == 1
    assert out == frame(0, words + 1, options).replace(b"\x40\x11", b"\x3f\x11", 1)


def test_options_stripped_and_copied_back(tmp_path: Path) -> None:
    options = bytes(range(1, 9))
    _, ((_, out),) = run(tmp_path, frame(1, 3, options))
    assert out[14:] == bytes([0x41, 0, 63, 17]) + b"payload"  # stripped
    _, ((_, out),) = run(tmp_path, frame(3, 3, options))
    assert out[14:] == bytes([0x41, 0, 63, 17]) + options + b"payload"  # the copy restored


@pytest.mark.parametrize(
    ("ihl", "options", "error"),
    [
        (5, bytes(16), "HeaderTooShort"),  # 128 bits into a varbit<96>
        (0, b"", "HeaderTooShort"),  # ihl - 1 wraps around: far too many
        (3, bytes(4), "PacketTooShort"),  # 64 bits announced, 32 there
    ],
)
def test_what_the_parser_rejects(tmp_path: Path, ihl: int, options: bytes, error: str) -> None:
    data = frame(0, ihl, options)[: 18 + len(options)]  # no payload after the options
    pipe, _ = run(tmp_path, data)
    assert pipe.counts.get(f"parser_error.{error}") == 1


def test_a_size_that_is_not_whole_bytes(tmp_path: Path) -> None:
    text = PROGRAM.replace("(bit<32>) (h.ip.ihl - 1) * 32", "(bit<32>) h.ip.tos")
    pipe, _ = run(tmp_path, frame(0, 1, b"")[:14] + bytes([0x41, 12, 64, 17]) + bytes(8), text)
    assert pipe.counts.get("parser_error.ParserInvalidArgument") == 1


def test_the_native_back_end_refuses_varbit_by_name(tmp_path: Path) -> None:
    program = compiled(tmp_path)
    with pytest.raises(NativeUnsupported) as err:
        program.pipeline(program.new_state(), backend="native")
    assert "varbit<96>" in str(err.value)


BAD = [
    (
        "p.extract(h.opts, (bit<32>) (h.ip.ihl - 1) * 32);",
        "p.extract(h.opts);",
        "takes 2 argument(s), got 1",
    ),
    (
        "header opts_t { varbit<96> options; }",
        "header opts_t { varbit<96> options; bit<8> x; }",
        "must be its header's last field",
    ),
    (
        "header opts_t { varbit<96> options; }",
        "header opts_t { varbit<12> options; }",
        "a multiple of 8",
    ),
    ("struct meta { }", "struct meta { varbit<8> v; }", "belong in headers"),
]


@pytest.mark.parametrize(("old", "new", "words"), BAD)
def test_what_varbit_refuses(tmp_path: Path, old: str, new: str, words: str) -> None:
    assert old in PROGRAM
    with pytest.raises(P4CompileError) as err:
        compiled(tmp_path, PROGRAM.replace(old, new, 1))
    assert words in err.value.what and err.value.line > 0, err.value


def test_a_varbit_variable_of_the_control(tmp_path: Path) -> None:
    """A control's own `varbit<96>` variable holds a copy, value and length (p4c's issue447)."""
    text = (
        PROGRAM.replace(
            "control I(inout headers h, inout meta m, inout standard_metadata_t s) {\n",
            "control I(inout headers h, inout meta m, inout standard_metadata_t s) {\n"
            "    varbit<96> kept;\n",
        )
        .replace("opts_t saved = h.opts;", "opts_t saved = h.opts;\n        kept = h.opts.options;")
        .replace(
            "if (h.eth.dst[1:1] == 1) { h.opts = saved; }",
            "if (h.eth.dst[1:1] == 1) { h.opts.setValid(); h.opts.options = kept; }",
        )
    )
    options = bytes(range(1, 9))
    _, ((_, out),) = run(tmp_path, frame(3, 3, options), text)
    assert out[14:] == bytes([0x41, 0, 63, 17]) + options + b"payload"


SUMMED = (
    PROGRAM.replace(
        "header eth_t { bit<48> dst; bit<48> src; bit<16> eth_type; }",
        "header eth_t { bit<48> dst; bit<32> src; bit<16> sum; bit<16> eth_type; }",
    )
    .replace(
        "h.ip.ttl = h.ip.ttl - 1;",
        "h.ip.ttl = h.ip.ttl - 1;\n"
        "        hash(h.eth.src, HashAlgorithm.crc32, 32w0, {h.ip.proto, h.opts}, 33w0x100000000);",
    )
    .replace(
        "control C(inout headers h, inout meta m) { apply { } }",
        "control C(inout headers h, inout meta m) { apply {\n"
        "    update_checksum(true, {h.ip.version, h.ip.ihl, h.ip.tos, h.ip.ttl, h.ip.proto,\n"
        "                           h.opts.options}, h.eth.sum, HashAlgorithm.csum16);\n"
        "} }",
    )
)


def internet_checksum(data: bytes) -> int:
    total = sum(int.from_bytes(data[i : i + 2], "big") for i in range(0, len(data), 2))
    while total >> 16:
        total = (total & 0xFFFF) + (total >> 16)
    return ~total & 0xFFFF


@pytest.mark.parametrize("words", [0, 1, 3])
def test_hashes_and_checksums_take_varbit_fields_as_long_as_they_are(
    tmp_path: Path, words: int
) -> None:
    """A checksum over the IP header and its options (RFC 1071), and a CRC-32 over the
    protocol and the options header, with 0, 4 and 12 bytes of options."""
    program = compiled(tmp_path, SUMMED)
    options = bytes(range(1, 4 * words + 1))
    ((_, out),) = program.pipeline(program.new_state()).process(0, frame(0, 1 + words, options))
    ip = bytes([0x40 | (1 + words), 0, 63, 17])
    assert int.from_bytes(out[10:12], "big") == internet_checksum(ip + options)
    assert int.from_bytes(out[6:10], "big") == zlib.crc32(bytes([17]) + options)


STACKED = """\
#include <core.p4>
#include <v1model.p4>
header tlv_t { bit<8> len; varbit<32> value; }
header same_t { bit<8> bits; }
struct headers { tlv_t[2] tlvs; same_t same; }
struct meta { }
parser P(packet_in p, out headers h, inout meta m, inout standard_metadata_t s) {
    state start {
        p.extract(h.tlvs.next, (bit<32>) p.lookahead<bit<8>>() * 8);
        p.extract(h.tlvs.next, (bit<32>) p.lookahead<bit<8>>() * 8);
        transition accept;
    }
}
control V(inout headers h, inout meta m) { apply { } }
control I(inout headers h, inout meta m, inout standard_metadata_t s) {
    apply {
        s.egress_spec = 1;
        h.same.setValid();
        h.same.bits = 0;
        if (h.tlvs[0].value == h.tlvs[1].value) { h.same.bits = h.same.bits | 1; }
        if (h.tlvs[0].value != h.tlvs[1].value) { h.same.bits = h.same.bits | 2; }
        if (h.tlvs[0] == h.tlvs[1]) { h.same.bits = h.same.bits | 4; }
        tlv_t[2] copy = h.tlvs;
        if (copy == h.tlvs) { h.same.bits = h.same.bits | 8; }
    }
}
control E(inout headers h, inout meta m, inout standard_metadata_t s) { apply { } }
control C(inout headers h, inout meta m) { apply { } }
control D(packet_out p, in headers h) { apply { p.emit(h); } }
V1Switch(P(), V(), I(), E(), C(), D()) main;
"""


@pytest.mark.parametrize(
    ("first", "second", "same"),
    [
        (b"\x02\xab\xcd", b"\x02\xab\xcd", 0b1101),  # equal, headers too
        (b"\x02\xab\xcd", b"\x02\xab\xce", 0b1010),  # one bit apart
        (b"\x01\x00", b"\x02\x00\x00", 0b1010),  # the same value 0, not as long
    ],
    ids=["equal", "one bit apart", "not as long"],
)
def test_varbit_values_compare_with_their_lengths(
    tmp_path: Path, first: bytes, second: bytes, same: int
) -> None:
    """As p4c's equality-bmv2.p4: varbit values are equal when as long, with the same bits;
    headers holding them and stacks of those compare them so; `extract(hs.next, bits)` of
    such a stack fills one element after another."""
    program = compiled(tmp_path, STACKED)
    pipe = program.pipeline(program.new_state())
    ((_, out),) = list(pipe.process(0, first + second + b"payload"))
    assert out == first + second + bytes([same]) + b"payload"
