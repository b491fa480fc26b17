"""Front-end: programs p4switch refuses are reported at the user's file:line:col."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from p4switch import EXAMPLES
from p4switch.exceptions import P4CompileError
from p4switch.program import compile_file

PROGRAMS = Path(__file__).parent / "programs"
L2 = (EXAMPLES / "l2.p4").read_text()


def variant(tmp_path: Path, old: str, new: str, base: str = L2) -> tuple[Path, str]:
    assert old in base, old
    text = base.replace(old, new, 1)
    path = tmp_path / "bad.p4"
    path.write_text(text)
    return path, text


def position(text: str, needle: str, nth: int = 0) -> tuple[int, int]:
    """1-based line and column of the nth occurrence of `needle` in `text`."""
    at = -1
    for _ in range(nth + 1):
        at = text.index(needle, at + 1)
    line = text.count("\n", 0, at) + 1
    return line, at - (text.rfind("\n", 0, at) + 1) + 1


def refused(path: Path) -> P4CompileError:
    with pytest.raises(P4CompileError) as info:
        compile_file(path)
    return info.value


@pytest.mark.parametrize(
    "path", sorted([*PROGRAMS.glob("*.p4"), *EXAMPLES.glob("*.p4")]), ids=lambda p: p.name
)
def test_every_test_and_example_program_compiles(path: Path) -> None:
    compiled = compile_file(path)
    assert compiled.p4info.pkg_info.arch == "v1model"
    assert "def parse(S, data):" in compiled.code.source


def test_syntax_error_points_at_the_token(tmp_path: Path) -> None:
    path, text = variant(tmp_path, "standard_metadata.egress_spec = port;", "egress_spec = = port;")
    err = refused(path)
    assert (err.path, (err.line, err.col)) == (str(path), position(text, "= port", 0))
    assert "syntax error" in err.what and "'='" in err.what
    assert str(err) == f"{path}:{err.line}:{err.col}: error: {err.what}"


def test_unknown_field(tmp_path: Path) -> None:
    path, text = variant(tmp_path, "hdr.ethernet.dstAddr: exact", "hdr.ethernet.dstMac: exact")
    err = refused(path)
    assert (err.line, err.col) == position(text, "dstMac")
    assert "ethernet_t has no field 'dstMac'" in err.what


def test_assigning_a_wider_value_needs_a_cast(tmp_path: Path) -> None:
    path, text = variant(
        tmp_path,
        "standard_metadata.egress_spec = port;",
        "standard_metadata.egress_spec = hdr.ethernet.etherType;",
    )
    err = refused(path)
    assert err.line == position(text, "hdr.ethernet.etherType;")[0]
    assert "expected a value of type bit<9>, got bit<16>" in err.what


def test_mixing_widths_in_an_operation(tmp_path: Path) -> None:
    path, text = variant(
        tmp_path,
        "standard_metadata.egress_spec = port;",
        "standard_metadata.egress_spec = port + standard_metadata.mcast_grp;",
    )
    err = refused(path)
    assert err.line == position(text, "port + standard")[0]
    assert "cannot mix bit<9> and bit<16>" in err.what


def test_a_cast_makes_it_legal(tmp_path: Path) -> None:
    path, _ = variant(
        tmp_path,
        "standard_metadata.egress_spec = port;",
        "standard_metadata.egress_spec = port + (bit<9>) standard_metadata.mcast_grp;",
    )
    assert compile_file(path).tables


def test_undeclared_name(tmp_path: Path) -> None:
    path, text = variant(tmp_path, "dmac.apply();", "dmac.apply();\n        nosuch = 1;")
    err = refused(path)
    assert (err.line, err.col) == position(text, "nosuch")
    assert "'nosuch' is not declared" in err.what


def test_wrong_argument_count(tmp_path: Path) -> None:
    path, text = variant(tmp_path, "default_action = drop();", "default_action = forward();")
    err = refused(path)
    assert err.line == position(text, "forward();")[0]
    assert "takes 1 arguments" in err.what


def test_non_constant_where_a_constant_is_needed(tmp_path: Path) -> None:
    path, text = variant(tmp_path, "size = 256;", "size = hdr.ethernet.etherType;")
    err = refused(path)
    assert err.line == position(text, "size = hdr")[0]
    assert "compile-time integer constant" in err.what


def test_conditions_must_be_bool(tmp_path: Path) -> None:
    path, text = variant(tmp_path, "dmac.apply();", "if (hdr.ethernet.etherType) { dmac.apply(); }")
    err = refused(path)
    assert err.line == position(text, "if (hdr")[0]
    assert "must be bool, not bit<16>" in err.what


def test_unsupported_extern_is_named(tmp_path: Path) -> None:
    path, text = variant(tmp_path, "dmac.apply();", "dmac.apply();\n        assert(true);")
    err = refused(path)
    assert err.line == position(text, "assert(")[0]
    assert "assert is not supported by p4switch" in err.what, err


def test_a_selector_key_needs_an_action_selector(tmp_path: Path) -> None:
    path, text = variant(tmp_path, "hdr.ethernet.dstAddr: exact", "hdr.ethernet.dstAddr: selector")
    err = refused(path)
    assert err.line == position(text, "hdr.ethernet.dstAddr: selector")[0]
    assert "`selector` keys need `implementation = action_selector`" in err.what


UNSUPPORTED = [
    ("typedef bit<9> port_t;", "bit<8> f<T>(in T x) { return 1; }", "generic functions"),
    ("dmac.apply();", "recirculate(hdr.ethernet);", "recirculate is not supported"),
    ("state start {", "value_set<bit<16>>(0) vs;", "a value set's size must be positive"),
    ("dmac.apply();", "clone3(CloneType.I2E, 1, {hdr.ethernet.etherType});", "clone3 is not"),
    ("dmac.apply();", "digest(1, hdr.ethernet.etherType);", "digest data must be a struct"),
    ("dmac.apply();", "switch (hdr.ethernet.etherType) { 1: {} 1: {} }", "appears twice"),
    ("actions = { forward; drop; }", "actions = { forward(1); drop; }", "binding them in the"),
]


@pytest.mark.parametrize(("anchor", "added", "message"), UNSUPPORTED)
def test_unsupported_constructs_are_named(
    tmp_path: Path, anchor: str, added: str, message: str
) -> None:
    in_place = anchor in ("dmac.apply();", "actions = { forward; drop; }")
    path, text = variant(tmp_path, anchor, added if in_place else f"{added}\n{anchor}")
    err = refused(path)
    assert message in err.what
    assert err.line == position(text, added)[0]


def test_errors_in_an_included_file_point_into_it(tmp_path: Path) -> None:
    (tmp_path / "types.p4").write_text("header h_t {\n    bit<8> a;\n    bit<12> b;\n}\n")
    path, _ = variant(
        tmp_path, "typedef bit<48> mac_t;", '#include "types.p4"\ntypedef bit<48> mac_t;'
    )
    err = refused(path)
    assert err.path.endswith("types.p4") and err.line == 1
    assert "20 bits; headers must be whole bytes" in err.what


def test_missing_include_is_reported_by_the_preprocessor(tmp_path: Path) -> None:
    path, text = variant(tmp_path, "#include <core.p4>", '#include "nowhere.p4"')
    err = refused(path)
    assert err.line == position(text, "#include")[0]
    assert "nowhere.p4" in err.what


def test_columns_survive_the_preprocessor_collapsing_blanks(tmp_path: Path) -> None:
    path, text = variant(
        tmp_path,
        "standard_metadata.egress_spec = port;",
        "standard_metadata.egress_spec   =     bogus;",
    )
    err = refused(path)
    assert (err.line, err.col) == position(text, "bogus")


def test_command_line_exits_2_with_one_line(tmp_path: Path) -> None:
    path, _ = variant(tmp_path, "bit<16> etherType;", "varbit<16> etherType;")
    run = subprocess.run(
        [sys.executable, "-m", "p4switch.program", str(path)], capture_output=True, text=True
    )
    assert run.returncode == 2
    assert run.stderr.strip().count("\n") == 0
    assert run.stderr.startswith(f"{path}:")


def test_command_line_writes_p4info(tmp_path: Path) -> None:
    out = tmp_path / "l2.p4info.txt"
    run = subprocess.run(
        [sys.executable, "-m", "p4switch.program", str(EXAMPLES / "l2.p4"), "--p4info", str(out)],
        capture_output=True,
        text=True,
    )
    assert run.returncode == 0, run.stderr
    assert 'name: "L2Ingress.dmac"' in out.read_text()


# Refusals raised while the syntax tree is built used to come out wrapped in lark's VisitError
# (a Python traceback); they are the user's file:line:col errors like any other.
WRAPPED = [
    (
        "typedef bit<48> mac_t;",
        "ethernet_t stray;\ntypedef bit<48> mac_t;",
        "ethernet_t stray",
        "only constants and instantiations at top level",
    ),
    (
        "apply {\n        dmac.apply();",
        "apply {\n        hdr.ethernet tmp;\n        dmac.apply();",
        "hdr.ethernet tmp",
        "expected a type name here",
    ),
]


@pytest.mark.parametrize(("old", "new", "at", "message"), WRAPPED)
def test_refusals_inside_the_tree_builder_are_compile_errors(
    tmp_path: Path, old: str, new: str, at: str, message: str
) -> None:
    path, text = variant(tmp_path, old, new)
    err = refused(path)
    assert err.line == position(text, at)[0]
    assert message in err.what
    run = subprocess.run(
        [sys.executable, "-m", "p4switch.program", str(path)], capture_output=True, text=True
    )
    assert run.returncode == 2 and "Traceback" not in run.stderr
    assert run.stderr.strip().count("\n") == 0 and run.stderr.startswith(f"{path}:")


def test_an_in_parameter_where_the_architecture_says_inout(tmp_path: Path) -> None:
    """Older v1model programs declare VerifyChecksum's headers `in`: the stricter promise is
    accepted (and the block may then not write them); `out` for `inout` is still refused."""
    old = "control L2VerifyChecksum(inout headers_t hdr"
    path, _ = variant(tmp_path, old, "control L2VerifyChecksum(in headers_t hdr")
    compile_file(path)
    path, text = variant(tmp_path, old, "control L2VerifyChecksum(out headers_t hdr")
    err = refused(path)
    assert "parameter hdr must be inout" in err.what
    assert err.line == position(text, "L2VerifyChecksum(out")[0]


def test_a_compiler_bug_is_one_line_not_a_traceback(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from p4switch import program
    from p4switch.exceptions import CompilerBug

    def broken(*args: object, **kwargs: object) -> None:
        raise CompilerBug("a test stand-in")

    monkeypatch.setattr(program, "compile_file", broken)
    assert program.main([str(EXAMPLES / "l2.p4")]) == 3
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "internal error" in err and "please report it" in err


def test_a_package_of_its_own_named_v1switch_is_refused_at_main(tmp_path: Path) -> None:
    # the shape of p4c's issue793.p4 and newtype2.p4: no v1model.p4, a one-block V1Switch
    path = tmp_path / "own_package.p4"
    path.write_text(
        "#include <core.p4>\n"
        "control Ingress(inout bit<8> x);\n"
        "package V1Switch(Ingress ig);\n"
        "control I(inout bit<8> x) { apply { x = 1; } }\n"
        "V1Switch(I()) main;\n"
    )
    err = refused(path)
    assert err.line == 5 and "a package of 1 blocks; p4switch runs v1model.p4's, of 6" in err.what


def test_a_const_entry_among_entries_is_refused_by_name(tmp_path: Path) -> None:
    # the shape of p4c's init-entries-bmv2.p4: `const` on one entry of a table's `entries`
    base = (PROGRAMS / "features.p4").read_text()
    old = "const entries = {\n            0x01 &&& 0xff: arith();"
    new = "entries = {\n            const 0x01 &&& 0xff: arith();"
    path, text = variant(tmp_path, old, new, base)
    err = refused(path)
    assert (err.line, err.col) == position(text, "const 0x01")
    assert err.what == "a `const` entry in `entries` is not supported (declare `const entries`)"
